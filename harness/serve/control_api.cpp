// The control API and session routing of `hiccup serve` (docs/CONTROL-API.md). Request bodies are
// decoded in two phases (the JSON, then each field with its pointer); a scenario goes through
// parse_scenario, the code path of `hiccup lint`, so a session accepts exactly what lint accepts.
#include "harness/serve/control_api.h"

#include "mock_server/eventstream/cloud_paths.h"

#include <cmath>
#include <vector>

#include "harness/scenario_io.h"
#include "mock_server/json_text.h"
#include "mock_server/wire_format.h"

namespace harness::serve {
namespace {

using nlohmann::json;
using mock::json_text::escape_input;
using mock::json_text::quote_input;

/// A value of the request body as a message shows it: its JSON text, at most 80 bytes of it.
std::string shown(const json& j) { return escape_input(j.dump(), 80); }

mock::DirectAnswer json_answer(int status, const json& body) {
  mock::DirectAnswer a;
  a.status = status;
  a.body = body.dump() + "\n";
  return a;
}

json ok(json body = json::object()) {
  body["version"] = kControlApiVersion;
  return body;
}

mock::DirectAnswer method_not_allowed(const std::string& method, const std::string& path, const std::string& allow) {
  mock::DirectAnswer a = error_answer(405, "method_not_allowed",
                                      escape_input(method) + " is not allowed on " + escape_input(path) + " (allowed: " + allow + ")");
  a.headers.emplace_back("Allow", allow);
  return a;
}

/// Splits "a/b/c" into its segments ("" segments dropped).
std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= path.size()) {
    const std::size_t slash = path.find('/', at);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > at) out.emplace_back(path.substr(at, end - at));
    if (slash == std::string_view::npos) break;
    at = slash + 1;
  }
  return out;
}

/// A decoded request body, or the answer explaining why it is not one.
struct Body {
  json value;
  std::optional<mock::DirectAnswer> error;
};

Body parse_body(const std::string& body, bool empty_is_object) {
  if (body.empty() && empty_is_object) return {json::object(), std::nullopt};
  // Depth-limited as it parses (mock::kMaxJsonDepth): nlohmann's recursive copies and destructor
  // overflow a connection thread's stack near 100,000 levels. A key named twice is refused
  // (nlohmann keeps the last: a scenario object naming "faults" twice would lose the first without
  // a word, where `hiccup lint` refuses the same scenario as a file); only a body that fails is
  // parsed again, to tell that from invalid JSON.
  LoadProblem parse_problem;
  std::optional<json> parsed = parse_json_text(body, {/*ignore_comments=*/false, /*refuse_duplicate_keys=*/true}, parse_problem);
  if (!parsed && !parse_problem.pointer.empty()) {
    // A key named twice, or a number beyond a double's range (1e400): the pointer says where.
    const bool duplicate = parse_problem.message.find("appears twice") != std::string::npos;
    return {json(), error_answer(400, "bad_request",
                                 duplicate ? "the request body names a key twice" : "the request body holds a number out of range",
                                 json::array({{{"pointer", parse_problem.pointer}, {"message", parse_problem.message}}}))};
  }
  json j = parsed ? std::move(*parsed) : json(json::value_t::discarded);
  if (j.is_discarded() || !j.is_object()) {
    return {json(), error_answer(400, "bad_request", "the request body must be a JSON object",
                                 json::array({{{"pointer", ""}, {"message", j.is_discarded()
                                     ? "not valid JSON, or nested deeper than " + std::to_string(mock::kMaxJsonDepth) + " levels" +
                                           (parse_problem.message.empty() ? "" : " (" + parse_problem.message + ")")
                                     : "expected an object, found " + std::string(j.type_name())}}}))};
  }
  return {std::move(j), std::nullopt};
}

json problem(const std::string& pointer, const std::string& message) {
  return {{"pointer", pointer}, {"message", message}};
}

json outcome_json(const std::optional<Outcome>& o) {
  if (!o) return nullptr;
  json j = {{"outcome", o->completed ? "completed" : "failed"}, {"final_text", o->final_text}};
  if (o->shown_text) j["shown_text"] = *o->shown_text;
  return j;
}

}  // namespace

mock::DirectAnswer error_answer(int status, std::string code, std::string message, json problems) {
  json error = {{"status", status}, {"code", std::move(code)}, {"message", std::move(message)}};
  if (!problems.is_null()) error["problems"] = std::move(problems);
  return json_answer(status, {{"version", kControlApiVersion}, {"error", std::move(error)}});
}

json verdict_to_json(const Session& session, const SessionVerdict& v) {
  json violations = json::array(), differences = json::array(), na = json::array();
  for (const Violation& x : v.violations) violations.push_back(violation_to_json(x));
  for (const Violation& x : v.differences) differences.push_back(violation_to_json(x));
  for (const NotApplicable& n : v.not_applicable) na.push_back({{"name", n.name}, {"reason", n.reason}});
  json out = ok({{"session", session.id()},
             {"scenario", session.scenario().name},
             {"verdict", v.verdict()},
             {"passed", v.passed()},
             {"strict", session.options().strict},
             {"max_attempts", session.max_attempts()},
             {"outcome", outcome_json(v.outcome)},
             {"requests", v.requests},
             {"executions", v.executions},
             {"violations", std::move(violations)},
             {"differences", std::move(differences)},
             {"checked", v.checked},
             {"not_applicable", std::move(na)}});
  // The recovery design: as declared (null when none), and as the run showed it (null when no
  // attempt failed after delivering a call).
  out["recovery"] = session.options().recovery.empty() ? json(nullptr) : json(session.options().recovery);
  out["design"] = v.design.empty() ? json(nullptr) : json(v.design);
  if (!v.design.empty()) out["design_evidence"] = v.design_evidence;
  if (v.window.partial()) out["window"] = window_json(v.window);
  return out;
}

json window_json(const WindowInfo& w) {
  return {{"journal_window", w.journal_window},
          {"requests_evicted", w.requests_evicted},
          {"executions_evicted", w.executions_evicted},
          {"evicted_summary", mock::journal_summary_to_json(w.evicted_summary)},
          {"message", "judged over a window: " + std::to_string(w.requests_evicted) + " request(s) and " +
                          std::to_string(w.executions_evicted) + " execution(s) left the session's window of " +
                          std::to_string(w.journal_window) + " before this verdict; what they showed is not judged, "
                          "so the verdict is unknown (create the session with a larger \"journal_window\", or reset it)"}};
}

void ControlApi::set_server_url(std::string url) {
  std::lock_guard lock(mu_);
  server_url_ = std::move(url);
}

void ControlApi::set_internal_errors(std::function<std::uint64_t()> count) {
  std::lock_guard lock(mu_);
  internal_errors_ = std::move(count);
}

json ControlApi::session_json(const Session& s) const {
  const std::string path = std::string(kSessionPrefix) + s.id();
  json j = {{"id", s.id()},
            {"path", path},
            {"scenario", s.scenario().name},
            {"provider", s.scenario().script.provider},
            {"max_attempts", s.max_attempts()},
            {"strict", s.options().strict},
            {"recovery", s.options().recovery.empty() ? json(nullptr) : json(s.options().recovery)},
            {"journal_window", s.options().journal_window},
            {"journal_file", s.journal_path().empty() ? json(nullptr) : json(s.journal_path())},
            {"timing_scale", s.scenario().script.timing.scale},
            {"requests", s.engine()->journal_size()},
            {"executions", s.executions_recorded()},
            {"outcome", outcome_json(s.outcome())}};
  std::lock_guard lock(mu_);
  if (!server_url_.empty()) j["base_url"] = server_url_ + path;
  return j;
}

std::optional<mock::DirectAnswer> ControlApi::refusal(int status, const std::string& message, std::string_view target) {
  if (target.rfind("/_hiccup", 0) != 0) return std::nullopt;
  const char* code = status == 413 ? "payload_too_large" : status == 431 ? "headers_too_large"
                   : status == 501 ? "not_implemented" : status == 500 ? "internal_error" : "bad_request";
  return error_answer(status, code, message);
}

namespace {

/// A session's engine, behind the cloud path's responder when `target` is one (Bedrock, Vertex,
/// Foundry: mock_server/eventstream/cloud_paths.h).
mock::Route engine_route(std::shared_ptr<mock::Responder> engine, std::string target) {
  if (auto cloud = mock::cloud::make_cloud_responder(engine, target)) return mock::Route{std::move(cloud), std::move(target), {}, {}};
  return mock::Route{std::move(engine), std::move(target), {}, {}};
}

}  // namespace

mock::Route ControlApi::route(const std::string& method, const std::string& target, const std::string& body) {
  const std::string path = target.substr(0, target.find('?'));
  if (path.rfind(kControlPrefix, 0) == 0 || path == kControlPrefix.substr(0, kControlPrefix.size() - 1)) {
    const std::vector<std::string> seg = segments(path);
    if (method == "GET" && seg.size() == 4 && seg[1] == "sessions" && (seg[3] == "verdict" || seg[3] == "journal" || seg[3] == "tool_calls")) {
      // A verdict or a journal of a full window takes milliseconds to make: made on a worker
      // thread, so the event loop goes on serving every other session meanwhile.
      mock::Route r{nullptr, target, {}, {}};
      r.deferred = [this, method, path] { return control(method, path, ""); };
      return r;
    }
    return mock::Route{nullptr, target, control(method, path, body), {}};
  }
  if (path.rfind(kSessionPrefix, 0) == 0) {
    const std::size_t id_start = kSessionPrefix.size();
    const std::size_t id_end = std::min(target.find_first_of("/?", id_start), target.size());
    const std::string id = target.substr(id_start, id_end - id_start);
    std::shared_ptr<Session> s = registry_.find(id);
    if (!s) {
      return mock::Route{nullptr, target,
                         error_answer(404, "unknown_session",
                                      "no session " + quote_input(id) + " (create one with POST /_hiccup/sessions)")};
    }
    std::string rest = target.substr(id_end);
    if (rest.empty() || rest[0] == '?') rest = "/" + rest;
    if (rest.substr(0, rest.find('?')) == kMcpPath) return mock::Route{s->mcp(), std::move(rest), {}, {}};
    return engine_route(s->engine(), std::move(rest));
  }
  if (std::shared_ptr<Session> s = registry_.find(SessionRegistry::kDefaultId)) {
    if (path == kMcpPath) return mock::Route{s->mcp(), target, {}, {}};
    return engine_route(s->engine(), target);
  }
  return mock::Route{nullptr, target,
                     error_answer(404, "no_default_session",
                                  escape_input(path) + " is not served: this server has no default session (it started without a "
                                         "SCENARIO); create a session with POST /_hiccup/sessions and use its base "
                                         "URL /s/{id}")};
}

mock::DirectAnswer ControlApi::control(const std::string& method, const std::string& path, const std::string& body) {
  const std::vector<std::string> seg = segments(path);  // seg[0] == "_hiccup"
  auto unknown = [&] {
    return error_answer(404, "unknown_path",
                        "no control API path " + escape_input(path) + " (see docs/CONTROL-API.md: /_hiccup/health, "
                        "/_hiccup/sessions, /_hiccup/sessions/{id}[/reset|/journal|/executions|/outcome|/verdict|/tool_calls])");
  };
  if (seg.size() == 2 && seg[1] == "health") {
    if (method != "GET") return method_not_allowed(method, path, "GET");
    std::uint64_t internal_errors = 0;
    {
      std::lock_guard lock(mu_);
      if (internal_errors_) internal_errors = internal_errors_();
    }
    return json_answer(200, ok({{"ok", true}, {"sessions", registry_.size()}, {"internal_errors", internal_errors}}));
  }
  if (seg.size() < 2 || seg[1] != "sessions") return unknown();

  if (seg.size() == 2) {
    if (method == "GET") {
      json list = json::array();
      for (const auto& s : registry_.list()) list.push_back(session_json(*s));
      return json_answer(200, ok({{"sessions", std::move(list)}}));
    }
    if (method != "POST") return method_not_allowed(method, path, "GET, POST");
    Body b = parse_body(body, false);
    if (b.error) return *b.error;
    const json& in = b.value;
    json problems = json::array();
    std::string id;
    SessionOptions options;
    if (in.contains("id")) {
      if (!in["id"].is_string() || !SessionRegistry::valid_id(in["id"].get_ref<const std::string&>())) {
        problems.push_back(problem("/id", "expected 1 to 64 of [A-Za-z0-9._-], not \".\" or \"..\", found " + shown(in["id"])));
      } else {
        id = in["id"].get<std::string>();
      }
    }
    if (in.contains("max_attempts")) {
      if (!in["max_attempts"].is_number_integer() || in["max_attempts"].get<long long>() < 1 ||
          in["max_attempts"].get<long long>() > 1000) {
        problems.push_back(problem("/max_attempts", "expected a whole number 1..1000, found " + shown(in["max_attempts"])));
      } else {
        options.max_attempts = in["max_attempts"].get<int>();
      }
    }
    if (in.contains("strict")) {
      if (!in["strict"].is_boolean()) problems.push_back(problem("/strict", "expected true or false, found " + shown(in["strict"])));
      else options.strict = in["strict"].get<bool>();
    }
    if (in.contains("recovery")) {
      if (!in["recovery"].is_string() || (in["recovery"] != "hold" && in["recovery"] != "continue")) {
        problems.push_back(problem("/recovery", "expected \"hold\" or \"continue\" (the recovery design the client follows), found " +
                                                    in["recovery"].dump()));
      } else {
        options.recovery = in["recovery"].get<std::string>();
      }
    }
    if (in.contains("journal_window")) {
      const json& w = in["journal_window"];
      // A whole number, written as JSON writes it: 1000000 or 1e6 (a float that is whole).
      const double v = w.is_number() ? w.get<double>() : 0;
      if (!w.is_number() || v != std::floor(v) || v < 1 || v > static_cast<double>(kMaxJournalWindow)) {
        problems.push_back(problem("/journal_window", "expected a whole number 1.." + std::to_string(kMaxJournalWindow) +
                                                          ", found " + w.dump()));
      } else {
        options.journal_window = static_cast<std::size_t>(v);
      }
    }
    if (in.contains("timing_scale")) {
      const json& t = in["timing_scale"];
      if (!t.is_number() || !(t.get<double>() >= 0) || t.get<double>() > kMaxTimingScale) {
        problems.push_back(problem("/timing_scale", "expected a number in 0.." + std::to_string(static_cast<long long>(kMaxTimingScale)) +
                                                        " (the scenario's event timing played at that many times), found " + t.dump()));
      } else {
        options.timing_scale = t.get<double>() == 0 ? 0.0 : t.get<double>();  // -0.0 is 0, echoed as 0
      }
    }
    if (in.contains("journal_file")) {
      if (!in["journal_file"].is_boolean()) {
        problems.push_back(problem("/journal_file", "expected true or false, found " + in["journal_file"].dump()));
      } else if (in["journal_file"].get<bool>() && registry_.journal_dir().empty()) {
        problems.push_back(problem("/journal_file", "this server writes no session journals: start it with "
                                                    "hiccup serve --session-journals DIR"));
      } else {
        options.journal_file = in["journal_file"].get<bool>();
      }
    }
    for (const auto& [key, value] : in.items()) {
      if (key != "id" && key != "scenario" && key != "max_attempts" && key != "strict" && key != "recovery" &&
          key != "journal_window" && key != "journal_file" && key != "timing_scale") {
        problems.push_back(problem("/" + pointer_escape(key), "unknown field (expected scenario, id, max_attempts, strict, "
                                                              "recovery, journal_window, journal_file, timing_scale)"));
      }
    }
    if (!in.contains("scenario")) {
      problems.push_back(problem("/scenario", "missing: the scenario (SCENARIO-FORMAT.md) as a JSON object, or its file text as a string"));
    } else if (!in["scenario"].is_object() && !in["scenario"].is_string()) {
      problems.push_back(problem("/scenario", "expected an object or a string, found " + std::string(in["scenario"].type_name())));
    }
    if (!problems.empty()) return error_answer(400, "bad_request", "the session request is invalid", std::move(problems));

    // The scenario's own pointers, as `hiccup lint` reports them, are relative to the scenario.
    const std::string text = in["scenario"].is_string() ? in["scenario"].get<std::string>() : in["scenario"].dump();
    LoadResult loaded = parse_scenario(text, "scenario");
    if (!loaded.scenario) {
      for (const LoadProblem& p : loaded.problems) problems.push_back(problem(p.pointer, escape_input(p.message, 1000)));
      return error_answer(400, "invalid_scenario",
                          "the scenario is invalid (" + std::to_string(loaded.problems.size()) +
                              " problem(s); pointers are into the scenario, as hiccup lint reports them)",
                          std::move(problems));
    }
    std::shared_ptr<Session> s = registry_.create(id, std::move(*loaded.scenario), options);
    if (!s) return error_answer(409, "session_exists", "a session " + quote_input(id) + " exists already");
    return json_answer(201, ok({{"session", session_json(*s)}}));
  }

  const std::string& id = seg[2];
  std::shared_ptr<Session> s = registry_.find(id);
  if (seg.size() > 4) return unknown();
  const std::string action = seg.size() == 4 ? seg[3] : "";
  if (!action.empty() && action != "reset" && action != "journal" && action != "executions" && action != "outcome" &&
      action != "verdict" && action != "tool_calls") {
    return unknown();
  }
  if (!s) return error_answer(404, "unknown_session", "no session " + quote_input(id));

  if (action.empty()) {
    if (method == "GET") return json_answer(200, ok({{"session", session_json(*s)}}));
    if (method != "DELETE") return method_not_allowed(method, path, "GET, DELETE");
    registry_.remove(id);
    return json_answer(200, ok({{"deleted", id}}));
  }
  if (action == "reset") {
    if (method != "POST") return method_not_allowed(method, path, "POST");
    s->reset();
    return json_answer(200, ok({{"session", session_json(*s)}}));
  }
  if (action == "journal") {
    if (method != "GET") return method_not_allowed(method, path, "GET");
    // The summary first: an entry leaving the window in between is then in neither, never in both.
    const WindowInfo w = s->window();
    json entries = json::array();
    for (const mock::JournalEntry& e : s->journal()) entries.push_back(mock::journal_entry_to_json(e));
    json answer = ok({{"session", id}, {"journal", std::move(entries)}});
    if (w.requests_evicted > 0) {
      answer["evicted"] = {{"journal_window", w.journal_window},
                           {"summary", mock::journal_summary_to_json(w.evicted_summary)}};
    }
    return json_answer(200, answer);
  }
  if (action == "tool_calls") {
    if (method != "GET") return method_not_allowed(method, path, "GET");
    const std::shared_ptr<mock::mcp::McpServer> mcp = s->mcp();
    json entries = json::array();
    for (const mock::mcp::ToolCallEntry& e : mcp->tool_calls()) entries.push_back(mock::mcp::tool_call_to_json(e));
    json executions = json::object();
    for (const auto& [tool, n] : mcp->executions()) executions[tool] = n;
    return json_answer(200, ok({{"session", id},
                                {"received", mcp->tool_calls_received()},
                                {"executions", std::move(executions)},
                                {"mcp_sessions", mcp->open_sessions()},
                                {"tool_calls", std::move(entries)}}));
  }
  if (action == "executions") {
    if (method == "GET") {
      json list = json::array();
      for (const Execution& x : s->ledger()) {
        json e = {{"name", x.name}, {"args", x.args}, {"journal_size", x.journal_size}};
        if (!x.call_id.empty()) e["call_id"] = x.call_id;
        list.push_back(std::move(e));
      }
      return json_answer(200, ok({{"session", id}, {"executions", std::move(list)}}));
    }
    if (method != "POST") return method_not_allowed(method, path, "GET, POST");
    Body b = parse_body(body, false);
    if (b.error) return *b.error;
    const json& in = b.value;
    json problems = json::array();
    if (!in.contains("name") || !in["name"].is_string() || in["name"].get_ref<const std::string&>().empty()) {
      problems.push_back(problem("/name", "expected the tool's name as a non-empty string"));
    }
    if (in.contains("args") && !in["args"].is_object()) {
      problems.push_back(problem("/args", "expected the call's arguments as an object, found " + std::string(in["args"].type_name())));
    }
    if (in.contains("call_id") && !in["call_id"].is_string()) {
      problems.push_back(problem("/call_id", "expected the provider's call id as a string"));
    }
    for (const auto& [key, value] : in.items()) {
      if (key != "name" && key != "args" && key != "call_id") {
        problems.push_back(problem("/" + pointer_escape(key), "unknown field (expected name, args, call_id)"));
      }
    }
    if (!problems.empty()) return error_answer(400, "bad_request", "the execution is invalid", std::move(problems));
    const std::size_t index = s->record_execution(in["name"].get<std::string>(), in.value("args", json::object()),
                                                  in.value("call_id", ""));
    return json_answer(201, ok({{"session", id}, {"index", index}}));
  }
  if (action == "outcome") {
    if (method != "POST" && method != "PUT") return method_not_allowed(method, path, "POST, PUT");
    Body b = parse_body(body, false);
    if (b.error) return *b.error;
    const json& in = b.value;
    json problems = json::array();
    const std::string outcome = in.contains("outcome") && in["outcome"].is_string() ? in["outcome"].get<std::string>() : "";
    if (outcome != "completed" && outcome != "failed") {
      problems.push_back(problem("/outcome", "expected \"completed\" or \"failed\", found " +
                                                 (in.contains("outcome") ? shown(in["outcome"]) : std::string("nothing"))));
    }
    for (const char* f : {"final_text", "shown_text"}) {
      if (in.contains(f) && !in[f].is_string()) problems.push_back(problem(std::string("/") + f, "expected a string"));
    }
    for (const auto& [key, value] : in.items()) {
      if (key != "outcome" && key != "final_text" && key != "shown_text") {
        problems.push_back(problem("/" + pointer_escape(key), "unknown field (expected outcome, final_text, shown_text)"));
      }
    }
    if (!problems.empty()) return error_answer(400, "bad_request", "the outcome is invalid", std::move(problems));
    Outcome o;
    o.completed = outcome == "completed";
    o.final_text = in.value("final_text", "");
    if (in.contains("shown_text")) o.shown_text = in["shown_text"].get<std::string>();
    s->record_outcome(o);
    return json_answer(200, ok({{"session", id}, {"outcome", outcome_json(o)}}));
  }
  // verdict
  if (method != "GET") return method_not_allowed(method, path, "GET");
  return json_answer(200, verdict_to_json(*s, s->verdict()));
}

}  // namespace harness::serve
