// Tests of the stdio bridge: endpoint URLs, SSE splitting in any pieces, and a bridge run against
// a real MockHttpServer serving an McpServer on 127.0.0.1 (messages in on a stream, answers out
// one per line, a lost reply writing nothing).
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "mock_server/http_server.h"
#include "mock_server/mcp/mcp_server.h"
#include "mock_server/mcp/stdio_bridge.h"

using mock::mcp::Endpoint;
using mock::mcp::parse_endpoint;
using mock::mcp::SseSplitter;
using nlohmann::json;

namespace {

/// Every request to one MCP server.
class McpRouter : public mock::RequestRouter {
 public:
  explicit McpRouter(std::shared_ptr<mock::mcp::McpServer> mcp) : mcp_(std::move(mcp)) {}
  mock::Route route(const std::string&, const std::string& target, const std::string&) override {
    return mock::Route{mcp_, target, {}, {}};
  }

 private:
  std::shared_ptr<mock::mcp::McpServer> mcp_;
};

}  // namespace

TEST_CASE("mcp bridge: endpoint URLs are read with their host, port and path") {
  std::string error;
  const auto a = parse_endpoint("http://127.0.0.1:8080/s/x/mcp", error);
  REQUIRE(a);
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 8080);
  CHECK(a->path == "/s/x/mcp");
  const auto b = parse_endpoint("http://[::1]:9/mcp", error);
  REQUIRE(b);
  CHECK(b->host == "::1");
  CHECK(b->port == 9);
  const auto c = parse_endpoint("http://localhost", error);
  REQUIRE(c);
  CHECK(c->port == 80);
  CHECK(c->path == "/mcp");
  for (const char* bad : {"https://x/mcp", "http://:80/mcp", "http://x:0/mcp", "http://x:99999/", "http://x:/", "http://[::1/",
                          "ftp://x", ""}) {
    INFO(bad);
    error.clear();
    CHECK_FALSE(parse_endpoint(bad, error));
    CHECK_FALSE(error.empty());
  }
}

TEST_CASE("mcp bridge: SSE events split the same whatever the pieces") {
  const std::string stream = ": comment\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\nid: 3\ndata: x\ndata: y\n\ndata:z\r\r";
  const std::vector<std::string> want = {R"({"a":1})", "x\ny", "z"};
  for (std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, stream.size()}) {
    INFO(piece);
    SseSplitter s;
    std::vector<std::string> got;
    for (std::size_t at = 0; at < stream.size(); at += piece) {
      for (auto& e : s.feed(std::string_view(stream).substr(at, piece))) got.push_back(e);
    }
    CHECK(got == want);
  }
}

TEST_CASE("mcp bridge: stdin messages reach the endpoint and every answer comes back as one line") {
  mock::mcp::ToolScript tools;
  mock::mcp::Tool ok;
  ok.name = "echo";
  ok.calls = {mock::mcp::ToolCall{}};
  ok.calls[0].result = "hello";
  ok.calls[0].progress = 2;
  mock::mcp::Tool lost;
  lost.name = "lost";
  lost.calls = {mock::mcp::ToolCall{}};
  lost.calls[0].reply_lost = true;
  tools.tools = {ok, lost};
  auto mcp = std::make_shared<mock::mcp::McpServer>(tools);
  McpRouter router(mcp);
  mock::MockHttpServer server(router, mock::ServerOptions{});
  const int port = server.start();

  std::istringstream in(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\r\n\n"
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":"p"}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lost"}})"
      "\n"
      "{not json\n");
  std::ostringstream out, log;
  mock::mcp::StdioBridge bridge(Endpoint{"127.0.0.1", port, "/mcp"});
  bridge.run(in, out, log, /*wait=*/true);
  server.stop();
  CHECK(bridge.posted() == 5);

  std::vector<json> lines;
  std::istringstream read(out.str());
  for (std::string line; std::getline(read, line);) lines.push_back(json::parse(line));
  INFO(out.str());
  INFO(log.str());
  REQUIRE(lines.size() == 5);  // initialize, two progress notifications, the echo result, the parse error
  CHECK(lines[0]["result"]["serverInfo"]["name"] == "hiccup");
  auto has = [&](auto pred) { return std::count_if(lines.begin(), lines.end(), pred); };
  CHECK(has([](const json& m) { return m.value("method", "") == "notifications/progress"; }) == 2);
  CHECK(has([](const json& m) { return m.contains("id") && m["id"] == 1 && m["result"]["content"][0]["text"] == "hello"; }) == 1);
  CHECK(has([](const json& m) { return m.contains("error") && m["error"]["code"] == -32700; }) == 1);
  CHECK(has([](const json& m) { return m.contains("id") && m["id"] == 2; }) == 0);  // the lost reply
  CHECK(log.str().find("the connection ended before the reply") != std::string::npos);
  // Both calls ran, on the session initialize opened.
  CHECK(mcp->executions() == std::map<std::string, std::size_t>{{"echo", 1}, {"lost", 1}});
  for (const auto& c : mcp->tool_calls()) CHECK(c.session == "hiccup-mcp-1");
}

TEST_CASE("mcp bridge: at the end of stdin the answers in flight are drained and a hung call is counted") {
  mock::mcp::ToolScript tools;
  mock::mcp::Tool echo;
  echo.name = "echo";
  echo.calls = {mock::mcp::ToolCall{}};
  echo.calls[0].result = "drained";
  mock::mcp::Tool hung;
  hung.name = "hung";
  hung.calls = {mock::mcp::ToolCall{}};
  hung.calls[0].hang = true;
  tools.tools = {echo, hung};
  auto mcp = std::make_shared<mock::mcp::McpServer>(tools);
  McpRouter router(mcp);
  mock::MockHttpServer server(router, mock::ServerOptions{});
  const int port = server.start();
  const std::string initialize =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})"
      "\n";

  SECTION("a call whose stdin closes right after it still gets its answer") {
    std::istringstream in(initialize + R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}})" "\n");
    std::ostringstream out, log;
    mock::mcp::StdioBridge bridge(Endpoint{"127.0.0.1", port, "/mcp"});
    bridge.run(in, out, log, /*wait=*/false);  // returns at the end of stdin, the call may still run
    CHECK(bridge.drain(std::chrono::seconds(60)) == 0);
    INFO(out.str());
    CHECK(out.str().find(R"("text":"drained")") != std::string::npos);
  }
  SECTION("a hung call is still running when the drain time is up") {
    std::istringstream in(initialize + R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hung"}})" "\n");
    std::ostringstream out, log;
    mock::mcp::StdioBridge bridge(Endpoint{"127.0.0.1", port, "/mcp"});
    bridge.run(in, out, log, /*wait=*/false);
    CHECK(bridge.drain(std::chrono::milliseconds(0)) == 1);  // initialize was answered, the call hangs
    server.stop();  // ends the hung call's connection (or refuses it, if it had not connected yet)
    CHECK(bridge.drain(std::chrono::seconds(60)) == 0);
    // Its connection dropped (no answer), or refused when it had not connected yet: then the client
    // gets a JSON-RPC error, never a result.
    CHECK(out.str().find(R"("result")", out.str().find(R"("id":1)")) == std::string::npos);
    INFO(log.str());
    CHECK(log.str().find(R"(no answer to {"jsonrpc":"2.0","id":1,"method":"tools/call")") != std::string::npos);
  }
  SECTION("a hung call given up after --read-timeout-s is noted as a timeout, not a lost reply") {
    std::istringstream in(initialize + R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hung"}})" "\n");
    std::ostringstream out, log;
    mock::mcp::BridgeOptions options;
    options.read_timeout_s = 1;  // the I/O shell's real timeout: the one second this section waits
    mock::mcp::StdioBridge bridge(Endpoint{"127.0.0.1", port, "/mcp"}, options);
    bridge.run(in, out, log, /*wait=*/true);
    INFO(log.str());
    CHECK(log.str().find("no byte for 1 s, --read-timeout-s: given up") != std::string::npos);
    CHECK(log.str().find("the connection ended before the reply") == std::string::npos);
    CHECK(out.str().find(R"("id":1)") == std::string::npos);
  }
  server.stop();
}
