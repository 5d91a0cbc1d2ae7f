// The fault catalogue and the JSON form of faults (two-phase decoding: kind, then fields).
#include "mock_server/faults.h"

#include <algorithm>
#include <cmath>

#include "mock_server/json_text.h"

namespace mock {
namespace {

std::string escape_pointer_token(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string json_type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "integer";
    case nlohmann::json::value_t::number_float: return "number";
    case nlohmann::json::value_t::string: return "string";
    case nlohmann::json::value_t::array: return "array";
    case nlohmann::json::value_t::object: return "object";
    default: return "value";
  }
}

std::string known_kinds() {
  std::string out;
  for (const auto& k : fault_catalogue()) {
    if (!out.empty()) out += ", ";
    out += k.name;
  }
  return out;
}

// Reads the fields of one fault object. Each reader records a problem and returns false on error.
class FieldReader {
 public:
  FieldReader(const nlohmann::json& j, const std::string& pointer,
              std::vector<DecodeProblem>& problems)
      : j_(j), pointer_(pointer), problems_(problems) {}

  void problem(const std::string& key, std::string message) {
    problems_.push_back({key.empty() ? pointer_ : pointer_ + "/" + escape_pointer_token(key),
                         std::move(message)});
    ok_ = false;
  }

  /// Integer field in `min`..kMaxFaultInteger; absent leaves `out` untouched unless `required`.
  /// A value out of range or not an integer is a problem naming the range and the value found.
  void integer(const std::string& key, int min, bool required, int& out, bool* present = nullptr) {
    seen_.push_back(key);
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) problem("", "missing required field \"" + key + "\"");
      return;
    }
    const std::string range = "an integer in " + std::to_string(min) + ".." + std::to_string(kMaxFaultInteger);
    // A number_unsigned above LLONG_MAX would wrap in get<long long>(): compare it unsigned.
    const bool in_range =
        it->is_number_unsigned()
            ? it->get<unsigned long long>() <= static_cast<unsigned long long>(kMaxFaultInteger) &&
                  it->get<unsigned long long>() >= static_cast<unsigned long long>(std::max(min, 0))
            : it->is_number_integer() && it->get<long long>() >= min && it->get<long long>() <= kMaxFaultInteger;
    if (!in_range) {
      problem(key, "expected " + range + ", found " + found_text(*it));
      return;
    }
    out = static_cast<int>(it->get<long long>());
    if (present) *present = true;
  }

  void number(const std::string& key, double min, bool required, double& out) {
    seen_.push_back(key);
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) problem("", "missing required field \"" + key + "\"");
      return;
    }
    const double v = it->is_number() ? it->get<double>() : 0;
    if (!it->is_number() || !std::isfinite(v) || v < min) {
      problem(key, "expected a number >= " + nlohmann::json(min).dump() + ", found " + found_text(*it));
      return;
    }
    out = v;
  }

  /// Reads `after_event` and `after_fragment` (which needs `after_event`: the call it cuts is
  /// the event right after those delivered).
  template <typename F>
  void position(F& f) {
    int v = 0;
    bool present = false;
    integer("after_event", 0, false, v, &present);
    if (present) f.after_event = v;
    int frag = 0;
    bool frag_present = false;
    integer("after_fragment", 0, false, frag, &frag_present);
    if (frag_present) {
      f.after_fragment = frag;
      if (!present) problem("after_fragment", "after_fragment needs after_event (the call it cuts is event after_event)");
    }
  }

  /// Every field the kind's reader did not read is a problem that names the kind's fields.
  void reject_unknown(std::string_view kind) {
    std::string known = "kind";
    for (const std::string& k : seen_) known += ", " + k;
    for (const auto& [key, value] : j_.items()) {
      if (key == "kind") continue;
      if (std::find(seen_.begin(), seen_.end(), key) != seen_.end()) continue;
      problem(key, "unknown field " + json_text::quote_input(key) + " for fault " + json_text::quote_input(kind) + " (known: " + known + ")");
    }
  }

  bool ok() const { return ok_; }

 private:
  const nlohmann::json& j_;
  const std::string& pointer_;
  std::vector<DecodeProblem>& problems_;
  std::vector<std::string> seen_;
  bool ok_ = true;
};

}  // namespace

std::string found_text(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return j.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "integer " + j.dump();
    case nlohmann::json::value_t::number_float: return "number " + j.dump();
    case nlohmann::json::value_t::string: {
      std::string s = j.get<std::string>();
      if (s.size() > 40) s = std::string(json_text::cut_utf8(s, 40)) + "…";
      return "string " + nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    default: return "a binary value";
  }
}

const std::vector<FaultKindInfo>& fault_catalogue() {
  static const FaultFieldInfo kAfter{
      "after_event", "integer", "events fully delivered before the fault (default: all of them)"};
  static const FaultFieldInfo kFragment{
      "after_fragment", "integer",
      "optional: the next event (a call) is cut after its start and this many argument fragments"};
  static const std::vector<FaultKindInfo> kCatalogue = {
      {"disconnect", "close the connection (TCP FIN) without the chunked terminator",
       {kAfter, kFragment, {"delay_ms", "integer", "milliseconds to wait before closing (default 0)"}}},
      {"reset", "wait while the client idles on read, then abort the connection with TCP RST",
       {kAfter, kFragment, {"idle_ms", "integer", "milliseconds of silence before the RST (default 200)"}}},
      {"end", "end the HTTP response cleanly without the provider's terminal event", {kAfter, kFragment}},
      {"cut", "send only the first bytes of the next frame, then close (TCP FIN)",
       {kAfter, kFragment, {"bytes", "integer", "bytes of the next frame to send (required, >= 1)"}}},
      {"error_event", "send the provider's in-stream error, then end the response",
       {kAfter, kFragment, {"status", "integer", "HTTP-like status of the error, e.g. 503 or 529 (default 503)"}}},
      {"malformed", "send one undecodable frame (valid SSE framing, invalid JSON), then go on",
       {kAfter, kFragment}},
      {"stall", "send nothing for a while (virtual time in-process, scaled over HTTP), then go on",
       {kAfter, kFragment, {"seconds", "number", "virtual seconds of silence (required, >= 0)"}}},
  };
  return kCatalogue;
}

std::string_view fault_name(const Fault& fault) {
  return fault_catalogue()[fault.index()].name;
}

int fault_after_event(const Fault& fault, std::size_t event_count) {
  const auto after = std::visit([](const auto& f) { return f.after_event; }, fault);
  const int count = static_cast<int>(event_count);
  if (!after) return count;
  return std::clamp(*after, 0, count);
}

std::optional<int> fault_after_fragment(const Fault& fault) {
  return std::visit([](const auto& f) { return f.after_fragment; }, fault);
}

nlohmann::json fault_to_json(const Fault& fault) {
  nlohmann::json j = nlohmann::json::object();
  j["kind"] = std::string(fault_name(fault));
  std::visit([&](const auto& f) {
    if (f.after_event) j["after_event"] = *f.after_event;
    if (f.after_fragment) j["after_fragment"] = *f.after_fragment;
  }, fault);
  if (auto* f = std::get_if<DisconnectFault>(&fault)) j["delay_ms"] = f->delay_ms;
  if (auto* f = std::get_if<ResetFault>(&fault)) j["idle_ms"] = f->idle_ms;
  if (auto* f = std::get_if<CutFault>(&fault)) j["bytes"] = f->bytes;
  if (auto* f = std::get_if<ErrorEventFault>(&fault)) j["status"] = f->status;
  if (auto* f = std::get_if<StallFault>(&fault)) j["seconds"] = f->seconds;
  return j;
}

std::optional<Fault> fault_from_json(const nlohmann::json& j, const std::string& pointer,
                                     std::vector<DecodeProblem>& problems) {
  // Phase 1: the envelope and its kind.
  if (!j.is_object()) {
    problems.push_back({pointer, "expected object, found " + json_type_name(j)});
    return std::nullopt;
  }
  auto kind_it = j.find("kind");
  if (kind_it == j.end()) {
    problems.push_back({pointer, "missing required field \"kind\""});
    return std::nullopt;
  }
  if (!kind_it->is_string()) {
    problems.push_back({pointer + "/kind", "expected string, found " + json_type_name(*kind_it)});
    return std::nullopt;
  }
  const std::string kind = kind_it->get<std::string>();
  const auto& cat = fault_catalogue();
  auto info = std::find_if(cat.begin(), cat.end(), [&](const auto& k) { return k.name == kind; });
  if (info == cat.end()) {
    problems.push_back(
        {pointer + "/kind", "unknown fault " + json_text::quote_input(kind) + " (known: " + known_kinds() + ")"});
    return std::nullopt;
  }

  // Phase 2: the kind's fields.
  FieldReader r(j, pointer, problems);
  Fault fault;
  switch (info - cat.begin()) {
    case 0: {
      DisconnectFault f;
      r.position(f);
      r.integer("delay_ms", 0, false, f.delay_ms);
      fault = f;
      break;
    }
    case 1: {
      ResetFault f;
      r.position(f);
      r.integer("idle_ms", 0, false, f.idle_ms);
      fault = f;
      break;
    }
    case 2: {
      EndFault f;
      r.position(f);
      fault = f;
      break;
    }
    case 3: {
      CutFault f;
      r.position(f);
      r.integer("bytes", 1, true, f.bytes);
      fault = f;
      break;
    }
    case 4: {
      ErrorEventFault f;
      r.position(f);
      r.integer("status", 100, false, f.status);
      if (r.ok() && f.status > 599) r.problem("status", "expected an HTTP status (100-599), found " +
                                                            std::to_string(f.status));
      fault = f;
      break;
    }
    case 5: {
      MalformedFault f;
      r.position(f);
      fault = f;
      break;
    }
    default: {
      StallFault f;
      r.position(f);
      r.number("seconds", 0, true, f.seconds);
      fault = f;
      break;
    }
  }
  r.reject_unknown(kind);
  if (!r.ok()) return std::nullopt;
  return fault;
}

}  // namespace mock
