// Test doubles for the runtime's tests: FakeTransport answers requests from a per-turn script
// (turn index = model contents in the request, as the mock server matches) and records them;
// frame helpers build Gemini SSE bytes.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/env.h"
#include "runtime_under_test/runtime.h"

namespace rut::test {

using nlohmann::json;

/// `data: {candidates:[{content:{role:model,parts}, finishReason?}]}` + blank line.
inline std::string frame(const json& parts, const std::string& finish = "") {
  json cand = {{"content", {{"role", "model"}, {"parts", parts}}}, {"index", 0}};
  if (!finish.empty()) cand["finishReason"] = finish;
  return "data: " + json{{"candidates", json::array({cand})}}.dump() + "\r\n\r\n";
}
inline std::string text_frame(const std::string& text) {
  return frame(json::array({{{"text", text}}}));
}
inline std::string call_frame(const std::string& name, const json& args = json::object(),
                              const std::string& id = "") {
  json fc = {{"name", name}, {"args", args}};
  if (!id.empty()) fc["id"] = id;
  return frame(json::array({{{"functionCall", fc}}}));
}
inline std::string finish_frame(const std::string& reason = "STOP") {
  return frame(json::array(), reason);
}
inline std::string error_body(int code, const std::string& status, double retry_after_s = 0) {
  json e = {{"code", code}, {"message", "scripted " + status}, {"status", status}};
  if (retry_after_s > 0) {
    e["details"] = json::array({{{"@type", "type.googleapis.com/google.rpc.RetryInfo"},
                                 {"retryDelay", std::to_string(static_cast<int>(retry_after_s)) + "s"}}});
  }
  return json{{"error", e}}.dump();
}

/// One scripted response: status, body chunks, how it ends.
struct FakeResponse {
  int status = 200;
  std::vector<std::string> chunks;
  TransportEnd end = TransportEnd::kComplete;
};

inline FakeResponse stream(std::vector<std::string> chunks,
                           TransportEnd end = TransportEnd::kComplete) {
  return {200, std::move(chunks), end};
}
inline FakeResponse status(int code, const std::string& name, double retry_after_s = 0) {
  return {code, {error_body(code, name, retry_after_s)}, TransportEnd::kComplete};
}
inline FakeResponse text_turn(const std::string& text) {
  return stream({text_frame(text), finish_frame()});
}

class FakeTransport final : public ITransport {
 public:
  /// turns[t][a] answers attempt a of turn t; the last attempt repeats; past the last turn: 500.
  explicit FakeTransport(std::vector<std::vector<FakeResponse>> turns) : turns_(std::move(turns)) {}

  std::vector<HttpRequest> requests;   ///< every request, in order
  std::vector<int> turn_of_request;    ///< turn index the fake computed for each
  bool validate_pairing = true;        ///< answer 400 when response/call counts differ
  int max_requests = 64;               ///< throw beyond this (the harness's cap)

  TransportResult post(const HttpRequest& request,
                       const std::function<bool(std::string_view)>& on_body) override {
    if (static_cast<int>(requests.size()) >= max_requests) throw std::runtime_error("request cap");
    requests.push_back(request);
    json body = json::parse(request.body);
    const json& contents = body["contents"];
    int turn = 0;
    for (const json& c : contents) turn += c["role"] == "model" ? 1 : 0;
    turn_of_request.push_back(turn);
    FakeResponse response;
    if (validate_pairing && !pairing_ok(contents)) {
      response = status(400, "INVALID_ARGUMENT");
    } else if (turn >= static_cast<int>(turns_.size()) || turns_[turn].empty()) {
      response = status(500, "INTERNAL");
    } else {
      if (static_cast<int>(attempts_.size()) <= turn) attempts_.resize(turn + 1, 0);
      const auto& script = turns_[turn];
      const int a = std::min<int>(attempts_[turn]++, static_cast<int>(script.size()) - 1);
      response = script[a];
    }
    for (const std::string& chunk : response.chunks) {
      if (!on_body(chunk)) return {response.status, TransportEnd::kCancelled};
    }
    return {response.end == TransportEnd::kConnectFailed ? 0 : response.status, response.end};
  }

  /// The contents of request i.
  json contents(std::size_t i) const { return json::parse(requests.at(i).body)["contents"]; }

 private:
  static bool pairing_ok(const json& contents) {
    if (contents.empty() || contents.back()["role"] != "user") return false;
    for (std::size_t i = 1; i < contents.size(); ++i) {
      int responses = 0;
      int calls = 0;
      for (const json& p : contents[i]["parts"]) responses += p.contains("functionResponse");
      for (const json& p : contents[i - 1]["parts"]) calls += p.contains("functionCall");
      if (responses > 0 && responses != calls) return false;
    }
    return true;
  }
  std::vector<std::vector<FakeResponse>> turns_;
  std::vector<int> attempts_;
};

/// One run of the runtime against a FakeTransport on a virtual clock; the transport keeps the
/// requests it received and `clock_s` the virtual time at the end.
struct FakeRun {
  RunResult result;
  FakeTransport transport;
  double clock_s = 0;
};

inline FakeRun run_fake(const Config& config, std::vector<std::vector<FakeResponse>> turns,
                        const std::string& prompt, std::uint64_t seed, int max_requests = 64) {
  FakeRun r{{}, FakeTransport(std::move(turns)), 0};
  r.transport.max_requests = max_requests;
  VirtualClock clock;
  SplitMix64 random(seed);
  r.result = run_agent(config, prompt, clock, random, r.transport);
  r.clock_s = clock.now_s();
  return r;
}

}  // namespace rut::test
