// Helpers the wire-format tests share: the bytes a streaming plan writes and the JSON of its frames.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/script_engine.h"

namespace mock::testing {

/// The units of an event, joined.
inline std::string join(const std::vector<std::string>& units) {
  std::string s;
  for (const auto& u : units) s += u;
  return s;
}

/// A call event with `name`, `args`, `id` ("" = the format's default) and `fragments`.
inline CallEvent call(std::string name, nlohmann::json args, std::string id, int fragments = 0) {
  CallEvent c;
  c.name = std::move(name);
  c.args = std::move(args);
  c.id = std::move(id);
  c.fragments = fragments;
  return c;
}

/// Every WriteAction's bytes of `plan`, concatenated (stalls and drains left out).
inline std::string played_bytes(const Plan& plan) {
  std::string bytes;
  for (const auto& act : plan.actions) {
    if (auto* w = std::get_if<WriteAction>(&act)) bytes += w->bytes;
  }
  return bytes;
}

/// The parsed data of every complete SSE frame ("\n\n"-terminated) with a parsable `data:` line;
/// a cut's partial frame and a malformed frame are left out.
inline std::vector<nlohmann::json> parsed_frames(const std::string& bytes) {
  std::vector<nlohmann::json> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t end = bytes.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string frame = bytes.substr(at, end - at);
    at = end + 2;
    const std::size_t d = frame.find("data: ");
    if (d == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(frame.substr(d + 6), nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

/// Fault kind `kind` (catalogue order: disconnect, reset, end, cut, error_event, malformed, stall)
/// after `after_event` events, cutting the next call after `frag` fragments when set.
inline Fault fault_of(int kind, int after_event, std::optional<int> frag, int status = 503) {
  switch (kind) {
    case 0: return DisconnectFault{after_event, 0, frag};
    case 1: return ResetFault{after_event, 200, frag};
    case 2: return EndFault{after_event, frag};
    case 3: return CutFault{after_event, 30, frag};
    case 4: return ErrorEventFault{after_event, status, frag};
    case 5: return MalformedFault{after_event, frag};
    default: return StallFault{after_event, 1.0, frag};
  }
}

/// The plan a fresh engine answers a POST of `body` to `target` with, for a one-attempt script
/// of `events` and `fault` whose provider is `provider`.
inline Plan play_attempt(const std::string& provider, const std::string& target, const std::string& body,
                         const std::vector<Event>& events, std::optional<Fault> fault) {
  Script script;
  script.provider = provider;
  Attempt a;
  a.events = events;
  a.fault = std::move(fault);
  script.turns.push_back({{a}});
  ScriptEngine engine(script);
  return engine.respond({"POST", target, body});
}

}  // namespace mock::testing
