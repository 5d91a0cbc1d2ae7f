// libFuzzer target: raw bytes through `hiccup serve`'s request handling without sockets (issue 42):
// the HTTP parser (request line, headers, Content-Length and chunked framing, bodies), the routing
// and control API (harness/serve), the sessions' engines, and the refusals, exactly as the event
// loop runs them (mock::dispatch_request, mock::refusal_bytes), the MCP endpoint among them. Aborts when a request's handling
// threw (an internal error, answered 500) or when any answer's body is not valid UTF-8, or, for
// JSON, not JSON. Input: byte 0 even = an HTTP byte stream (split in two reads at byte 1); odd = a
// control call, byte 1 picking the method and path, the rest its body.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_common.h"
#include "harness/scenario_io.h"
#include "harness/serve/control_api.h"
#include "harness/serve/session_registry.h"
#include "mock_server/http_server.h"
#include "mock_server/http_wire.h"
#include "mock_server/json_text.h"

namespace {

constexpr std::string_view kScenario = R"({"schema": 1, "name": "fuzz", "provider": "gemini", "prompt": "Deploy.",
  "turns": [{"attempts": [{"events": [{"text": "Déployé."}, {"call": {"name": "shell", "args": {"command": "./deploy.sh"}}},
                                      {"finish": "stop"}],
                           "fault": {"kind": "disconnect", "after_event": 1}},
                          {"events": [{"call": {"name": "shell", "args": {"command": "./deploy.sh"}}}, {"finish": "stop"}]}]},
            {"attempts": [{"events": [{"text": "Done."}, {"finish": "stop"}]}]}],
  "tools": [{"name": "shell", "calls": [{"result": "ok ✓"}, {"is_error": true}, {"duration_s": 1, "progress": 2, "result": "x"},
                                       {"jsonrpc_error": {"code": -32603, "message": "down"}}, {"reply_lost": true},
                                       {"hang": true}]}]})";

/// The control calls odd inputs make (method, path); the body is the input's rest.
constexpr std::pair<std::string_view, std::string_view> kCalls[] = {
    {"POST", "/_hiccup/sessions"},
    {"POST", "/_hiccup/sessions/default/executions"},
    {"POST", "/_hiccup/sessions/default/outcome"},
    {"PUT", "/_hiccup/sessions/default/outcome"},
    {"GET", "/_hiccup/sessions/default/verdict"},
    {"GET", "/_hiccup/sessions/default/journal"},
    {"GET", "/_hiccup/sessions/default/executions"},
    {"GET", "/_hiccup/sessions"},
    {"POST", "/s/default/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
    {"POST", "/s/default/v1/chat/completions"},
    {"POST", "/s/default/v1/responses"},
    {"POST", "/s/default/v1/messages"},
    // The MCP endpoint (without headers only initialize gets past the session check; HTTP byte
    // streams carry Mcp-Session-Id, which is "hiccup-mcp-1" after a first initialize).
    {"POST", "/mcp"},
    {"POST", "/s/default/mcp"},
    {"GET", "/_hiccup/sessions/default/tool_calls"},
};

[[noreturn]] void fail(const char* what, std::string_view bytes) {
  std::fprintf(stderr, "server_bytes_fuzz: %s: %.*s\n", what, static_cast<int>(std::min<std::size_t>(bytes.size(), 600)),
               bytes.data());
  std::abort();
}

/// A body the server sends: valid UTF-8 always, and JSON when its type says so (with or without a
/// charset) or when it is an error envelope (Gemini's errors to a stream are text/event-stream).
void check_body(std::string_view content_type, std::string_view body, bool error_envelope = false) {
  if (!mock::json_text::is_utf8(body)) fail("an answer body is not valid UTF-8", body);
  if ((content_type.rfind("application/json", 0) == 0 || error_envelope) && !body.empty() &&
      nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false).is_discarded()) {
    fail("an application/json answer is not JSON", body);
  }
}

/// The body of the answer bytes `bytes` (status line to body, Content-Length framed).
void check_answer_bytes(std::string_view bytes) {
  const std::size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) fail("an answer has no head", bytes);
  check_body("application/json", bytes.substr(end + 4));
}

struct World {
  harness::serve::SessionRegistry registry;
  harness::serve::ControlApi api{registry};
  World() { reset(); }
  /// Back to one default session with an empty journal (each input starts from here).
  void reset() {
    for (const auto& s : registry.list()) registry.remove(s->id());
    harness::LoadResult loaded = harness::parse_scenario(kScenario, "fuzz");
    if (!loaded.scenario) fail("the fuzz scenario does not load", kScenario);
    registry.create(std::string(harness::serve::SessionRegistry::kDefaultId), std::move(*loaded.scenario));
  }
};

void handle(World& w, mock::HttpRequest& request) {
  const mock::Dispatch d = mock::dispatch_request(w.api, request, 0);
  if (d.internal_error) fail("a request's handling threw", d.error);
  if (!d.engine) {
    check_body(d.direct.content_type, d.direct.body, d.direct.content_type == "text/event-stream" && d.direct.status >= 400);
    return;
  }
  check_body(d.plan.content_type, d.plan.body, d.plan.content_type == "text/event-stream" && d.plan.status >= 400);
  for (const auto& action : d.plan.actions) {
    if (const auto* write = std::get_if<mock::WriteAction>(&action)) {
      if (!mock::json_text::is_utf8(write->bytes)) fail("a stream write is not valid UTF-8", write->bytes);
    }
  }
  d.engine->settle(d.plan.journal_index, mock::Delivery{static_cast<int>(d.plan.actions.size()), false, -1});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  if (size < 2) return 0;
  world.reset();
  const std::string_view input = hiccup_fuzz::as_text(data, size);
  if (data[0] % 2 == 1) {
    const auto& [method, path] = kCalls[data[1] % std::size(kCalls)];
    mock::HttpRequest request;
    request.method = std::string(method);
    request.target = std::string(path);
    request.body = std::string(input.substr(2));
    handle(world, request);
  } else {
    mock::RequestParser parser(mock::ParserLimits{4096, 1 << 20});
    const std::size_t split = std::min<std::size_t>(data[1], size - 2);
    const std::string_view stream = input.substr(2);
    parser.feed(stream.data(), split);
    bool fed_all = false;
    for (int requests = 0; requests < 16;) {
      const mock::RequestParser::Status status = parser.parse();
      if (status == mock::RequestParser::Status::kBad) {
        check_answer_bytes(mock::refusal_bytes(parser.error_status(), parser.error(), parser.request().target, world.api));
        break;
      }
      if (status == mock::RequestParser::Status::kDone) {
        handle(world, parser.request());
        parser.next();
        ++requests;
        continue;
      }
      if (status == mock::RequestParser::Status::kHeadDone) continue;
      if (fed_all) break;
      parser.feed(stream.data() + split, stream.size() - split);
      fed_all = true;
    }
  }
  // Whatever came in, what the journal and verdict say is JSON in valid UTF-8.
  for (const char* path : {"/_hiccup/sessions/default/journal", "/_hiccup/sessions/default/verdict",
                           "/_hiccup/sessions/default/tool_calls"}) {
    mock::HttpRequest request;
    request.method = "GET";
    request.target = path;
    handle(world, request);
  }
  return 0;
}
