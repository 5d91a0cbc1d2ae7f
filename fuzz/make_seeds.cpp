// hiccup_fuzz_seeds SOURCE_DIR OUT_DIR: writes the seed corpora of the libFuzzer targets at run
// time (nothing binary is committed). From every bundled scenario: its file (scenario_loader); per
// provider, the runtime's first streaming and non-streaming request bodies (mock_request_<p>) and
// the mock's answers to them, every attempt of the first turn (codec_stream_<p>, sse_decoder):
// SSE streams with their faults, unary bodies and error envelopes. For server_bytes (input byte 0
// even: an HTTP byte stream; odd: a control call, byte 1 its index): each scenario created over the
// control API as an object and as text, and the runtime's requests as whole HTTP requests
// (Content-Length and chunked).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "harness/scenario_io.h"
#include "mock_server/eventstream/cloud_paths.h"
#include "mock_server/script_engine.h"
#include "mock_server/websocket/ws_frame.h"
#include "runtime_under_test/codec.h"

namespace fs = std::filesystem;

namespace {

void write_seed(const fs::path& dir, const std::string& bytes, int& count) {
  fs::create_directories(dir);
  std::ofstream(dir / ("seed-" + std::to_string(count++)), std::ios::binary) << bytes;
}

/// The tool names the scenario's calls use (the runtime declares them in its request).
std::vector<std::string> tool_names(const mock::Script& script) {
  std::set<std::string> names;
  for (const auto& turn : script.turns) {
    for (const auto& attempt : turn.attempts) {
      for (const auto& e : attempt.events) {
        if (const auto* c = std::get_if<mock::CallEvent>(&e)) names.insert(c->name);
      }
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: hiccup_fuzz_seeds SOURCE_DIR OUT_DIR\n";
    return 2;
  }
  const fs::path source = argv[1], out = argv[2];
  std::vector<harness::LoadProblem> problems;
  const auto files = harness::collect_scenario_files({(source / "scenarios").string()}, problems);
  int count = 0;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    write_seed(out / "scenario_loader", text, count);
    write_seed(out / "server_bytes", std::string("\x01\x00", 2) + nlohmann::json{{"scenario", text}}.dump(), count);
    if (const auto parsed = nlohmann::json::parse(text, nullptr, false, /*ignore_comments=*/true); !parsed.is_discarded()) {
      write_seed(out / "server_bytes", std::string("\x01\x00", 2) + nlohmann::json{{"scenario", parsed}, {"id", "x"}}.dump(), count);
      const std::string body = nlohmann::json{{"scenario", parsed}}.dump();
      write_seed(out / "server_bytes",
                 std::string("\0\x10", 2) + "POST /_hiccup/sessions HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\n\r\n" + body + "GET /_hiccup/sessions HTTP/1.0\r\n\r\n",
                 count);
    }
    const harness::LoadResult loaded = harness::parse_scenario(text, file);
    if (!loaded.scenario) continue;
    for (const auto& provider : rut::codec_names()) {
      mock::Script script = loaded.scenario->script;
      script.provider = provider;
      const rut::ICodec* codec = rut::codec_for(provider);
      const nlohmann::json contents =
          nlohmann::json::array({{{"role", "user"}, {"parts", {{{"text", loaded.scenario->prompt}}}}}});
      const std::size_t attempts = script.turns.empty() ? 0 : script.turns[0].attempts.size();
      for (bool stream : {true, false}) {
        const rut::HttpRequest request = codec->make_request(contents, codec->default_model(), tool_names(script), stream);
        write_seed(out / ("mock_request_" + provider), request.body, count);
        const std::string head = "POST /s/default" + request.target + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
        write_seed(out / "server_bytes",
                   std::string("\0\0", 2) + head + "Content-Length: " + std::to_string(request.body.size()) + "\r\n\r\n" +
                       request.body,
                   count);
        write_seed(out / "server_bytes",
                   std::string("\0\x20", 2) + head + "Transfer-Encoding: chunked\r\n\r\n" + "5\r\n" + request.body.substr(0, 5) +
                       "\r\n" + [&] {
                         std::ostringstream size;
                         size << std::hex << request.body.size() - std::min<std::size_t>(5, request.body.size());
                         return size.str();
                       }() + ";ext=1\r\n" + request.body.substr(std::min<std::size_t>(5, request.body.size())) + "\r\n0\r\n\r\n",
                   count);
        mock::ScriptEngine engine(script);
        for (std::size_t a = 0; a < std::max<std::size_t>(attempts, 1); ++a) {
          const mock::Plan plan = engine.respond(mock::Request{"POST", request.target, request.body});
          std::string bytes = plan.body;
          for (const auto& action : plan.actions) {
            if (const auto* w = std::get_if<mock::WriteAction>(&action)) bytes += w->bytes;
          }
          write_seed(out / ("codec_stream_" + provider), bytes, count);
          if (plan.streaming) write_seed(out / "sse_decoder", bytes, count);
          if (plan.streaming && provider == "anthropic") {  // the same stream as Bedrock's event stream
            std::string es;
            for (const std::string& w : mock::cloud::sse_writes_to_eventstream({std::string_view(bytes)})) es += w;
            write_seed(out / "eventstream", es, count);
          }
        }
      }
    }
  }
  for (const char* body : {R"({"name":"shell","args":{"command":"./deploy.sh"},"call_id":"c1"})", R"({"outcome":"completed","final_text":"Done."})"}) {
    write_seed(out / "server_bytes", std::string("\x01\x01", 2) + body, count);
    write_seed(out / "server_bytes", std::string("\x01\x02", 2) + body, count);
  }
  // The MCP endpoint: initialize, then each of the fuzz scenario's scripted tool calls and the
  // other methods, as one HTTP byte stream (the session id is deterministic: hiccup-mcp-1).
  {
    auto post = [](const std::string& body, bool session) {
      return "POST /mcp HTTP/1.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n" +
             std::string(session ? "Mcp-Session-Id: hiccup-mcp-1\r\n" : "") + "Content-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    };
    std::string stream = post(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})", false) +
                         post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", true) +
                         post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", true);
    for (int i = 0; i < 6; ++i) {
      stream += post(R"({"jsonrpc":"2.0","id":)" + std::to_string(i + 2) +
                         R"(,"method":"tools/call","params":{"name":"shell","arguments":{"command":"ls"},"_meta":{"progressToken":1}}})",
                     true);
    }
    stream += post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})", true);
    write_seed(out / "server_bytes", std::string("\0\xff", 2) + stream, count);
    write_seed(out / "server_bytes", std::string("\x01\x0c", 2) + R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})", count);
  }
  {
    // ws_frame (byte 0 even: frames a client sends, masked; odd: a server's): a response.create
    // whole and fragmented around a ping, a close; and a server's events.
    using mock::ws::encode_frame;
    using mock::ws::Opcode;
    const std::string create = R"({"type":"response.create","model":"m","input":"go"})";
    write_seed(out / "ws_frame", std::string("\x10", 1) + encode_frame(Opcode::kText, create, true, 0x37fa213d), count);
    write_seed(out / "ws_frame",
               std::string("\x20", 1) + encode_frame(Opcode::kText, create.substr(0, 9), false, 1) +
                   encode_frame(Opcode::kPing, "p", true, 2) + encode_frame(Opcode::kContinuation, create.substr(9), true, 3) +
                   encode_frame(Opcode::kClose, mock::ws::close_payload(1000, "bye"), true, 4),
               count);
    write_seed(out / "ws_frame",
               std::string("\x31", 1) + encode_frame(Opcode::kText, R"({"type":"response.created"})") +
                   encode_frame(Opcode::kText, std::string(300, 'x')) + encode_frame(Opcode::kClose, mock::ws::close_payload(1011, "")),
               count);
  }
  std::cout << "hiccup_fuzz_seeds: " << count << " seeds from " << files.size() << " scenarios in " << out.string() << "\n";
  return 0;
}
