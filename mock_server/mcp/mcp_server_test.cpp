// Tests of the MCP mock's pure handler: the transport's methods and headers, JSON-RPC's error
// codes for every malformed message, the MCP lifecycle, tools/list, and each scripted tools/call
// behaviour as the plan the HTTP server would play, settled as a delivery would settle it.
#include <catch2/catch.hpp>

#include <string>
#include <variant>

#include "mock_server/json_text.h"
#include "mock_server/mcp/mcp_server.h"

using mock::Plan;
using mock::Request;
using mock::mcp::McpServer;
using mock::mcp::Tool;
using mock::mcp::ToolCall;
using mock::mcp::ToolScript;
using nlohmann::json;

namespace {

constexpr const char* kBoth = "application/json, text/event-stream";

Request post(const std::string& body, const std::string& session = "", const std::string& accept = kBoth) {
  Request r;
  r.method = "POST";
  r.target = "/mcp";
  r.body = body;
  r.arrived_ms = 5;
  if (!accept.empty()) r.headers.emplace_back("Accept", accept);
  r.headers.emplace_back("Content-Type", "application/json");
  if (!session.empty()) r.headers.emplace_back("Mcp-Session-Id", session);
  return r;
}

std::string header(const Plan& p, const std::string& name) {
  for (const auto& [n, v] : p.headers) {
    if (n == name) return v;
  }
  return "";
}

/// The JSON-RPC messages a plan sends: its body, or the data of each SSE event written.
std::vector<json> messages(const Plan& p) {
  std::vector<json> out;
  if (!p.streaming) {
    if (!p.body.empty()) out.push_back(json::parse(p.body));
    return out;
  }
  for (const auto& a : p.actions) {
    if (const auto* w = std::get_if<mock::WriteAction>(&a)) {
      const std::string& b = w->bytes;
      REQUIRE(b.rfind("event: message\ndata: ", 0) == 0);
      REQUIRE(b.size() >= 2);
      REQUIRE(b.substr(b.size() - 2) == "\n\n");
      out.push_back(json::parse(b.substr(21, b.size() - 23)));
    }
  }
  return out;
}

/// Virtual seconds of the plan's stalls.
double stalled_s(const Plan& p) {
  double s = 0;
  for (const auto& a : p.actions) {
    if (const auto* st = std::get_if<mock::StallAction>(&a)) s += st->seconds;
  }
  return s;
}

ToolScript script() {
  ToolScript t;
  Tool write;
  write.name = "write_file";
  write.description = "Writes a file.";
  write.input_schema = {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}};
  write.annotations = json{{"idempotentHint", false}};
  ToolCall slow;
  slow.duration_s = 30;
  slow.reply_lost = true;
  ToolCall ok;
  ok.result = "written";
  write.calls = {slow, ok};
  t.tools.push_back(write);
  Tool fail;
  fail.name = "deploy";
  ToolCall error;
  error.is_error = true;
  error.result = "deploy failed: quota";
  fail.calls = {error};
  t.tools.push_back(fail);
  Tool rpc;
  rpc.name = "lookup";
  ToolCall e;
  e.jsonrpc_error = mock::mcp::JsonRpcError{-32603, "backend down"};
  rpc.calls = {e};
  t.tools.push_back(rpc);
  Tool hang;
  hang.name = "wait";
  ToolCall h;
  h.hang = true;
  h.progress = 2;
  hang.calls = {h};
  t.tools.push_back(hang);
  Tool prog;
  prog.name = "build";
  ToolCall p;
  p.duration_s = 9;
  p.progress = 2;
  p.result = "built";
  prog.calls = {p};
  t.tools.push_back(prog);
  Tool plain;
  plain.name = "echo";
  t.tools.push_back(plain);
  return t;
}

/// initialize + notifications/initialized; returns the session id.
std::string open(McpServer& s, const std::string& version = "2025-11-25") {
  const Plan p = s.respond(post(json{{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                                     {"params", {{"protocolVersion", version}, {"capabilities", json::object()},
                                                 {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}}.dump(), "", kBoth));
  const std::string sid = header(p, "Mcp-Session-Id");
  REQUIRE(!sid.empty());
  const Plan n = s.respond(post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", sid));
  REQUIRE(n.status == 202);
  return sid;
}

Plan call(McpServer& s, const std::string& sid, const std::string& tool, json id = 7, json extra = json::object(),
          const std::string& accept = kBoth) {
  json params = {{"name", tool}, {"arguments", {{"path", "a.txt"}}}};
  params.update(extra);
  return s.respond(post(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}}.dump(), sid, accept));
}

/// Settles `p` as if every action went out and the answer ended normally at `ended_ms`.
void deliver(McpServer& s, const Plan& p, double ended_ms = 9) {
  s.settle(p.journal_index, mock::Delivery{static_cast<int>(p.actions.size()), p.ending != mock::Ending::kTerminator && !p.streaming, ended_ms});
}

}  // namespace

TEST_CASE("mcp: initialize negotiates the protocol version and opens a session") {
  McpServer s(script(), "1.2.3");
  const Plan p = s.respond(post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"0"}}})"));
  CHECK(p.status == 200);
  CHECK(p.content_type == "application/json");
  const json m = messages(p).at(0);
  CHECK(m["id"] == 1);
  CHECK(m["result"]["protocolVersion"] == "2025-06-18");
  CHECK(m["result"]["capabilities"]["tools"].is_object());
  CHECK(m["result"]["serverInfo"] == json{{"name", "hiccup"}, {"version", "1.2.3"}});
  CHECK(header(p, "Mcp-Session-Id") == "hiccup-mcp-1");
  CHECK(s.open_sessions() == 1);

  // A revision the server does not speak: it answers its newest.
  const Plan q = s.respond(post(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01"}})"));
  CHECK(messages(q).at(0)["result"]["protocolVersion"] == "2025-11-25");
  CHECK(header(q, "Mcp-Session-Id") == "hiccup-mcp-2");
  // Without protocolVersion: -32602.
  const Plan r = s.respond(post(R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{}})"));
  CHECK(messages(r).at(0)["error"]["code"] == -32602);
  CHECK(header(r, "Mcp-Session-Id").empty());
}

TEST_CASE("mcp: ping, tools/list and the notifications of a session") {
  McpServer s(script());
  const std::string sid = open(s);
  const Plan ping = s.respond(post(R"({"jsonrpc":"2.0","id":"p","method":"ping"})", sid));
  CHECK(messages(ping).at(0) == json{{"jsonrpc", "2.0"}, {"id", "p"}, {"result", json::object()}});
  const Plan list = s.respond(post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}})", sid));
  const json tools = messages(list).at(0)["result"]["tools"];
  REQUIRE(tools.size() == 6);
  CHECK(tools[0]["name"] == "write_file");
  CHECK(tools[0]["description"] == "Writes a file.");
  CHECK(tools[0]["inputSchema"]["properties"]["path"]["type"] == "string");
  CHECK(tools[0]["annotations"] == json{{"idempotentHint", false}});
  CHECK(tools[5] == json{{"name", "echo"}, {"inputSchema", {{"type", "object"}}}});
  // Any notification is accepted with 202 and no body; so is a client's response.
  const Plan other = s.respond(post(R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})", sid));
  CHECK(other.status == 202);
  CHECK(other.body.empty());
  const Plan response = s.respond(post(R"({"jsonrpc":"2.0","id":99,"result":{}})", sid));
  CHECK(response.status == 202);
}

TEST_CASE("mcp: the answer's media type follows the client's Accept header") {
  McpServer s(script());
  const std::string sid = open(s);
  // JSON only: the call comes back as one JSON body.
  const Plan json_only = call(s, sid, "echo", 1, json::object(), "application/json");
  CHECK_FALSE(json_only.streaming);
  CHECK(json_only.content_type == "application/json");
  CHECK(messages(json_only).at(0)["result"]["content"][0]["text"] == "ok");
  // SSE allowed: tools/call streams; a list still answers JSON.
  const Plan sse = call(s, sid, "echo", 2);
  CHECK(sse.streaming);
  CHECK(sse.content_type == "text/event-stream");
  CHECK(messages(sse).at(0)["result"]["isError"] == false);
  // SSE only: every answer is a stream.
  const Plan list = s.respond(post(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})", sid, "text/event-stream"));
  CHECK(list.streaming);
  CHECK(messages(list).at(0)["result"]["tools"].size() == 6);
  // Wildcards count; an Accept allowing neither gets 406.
  CHECK(call(s, sid, "echo", 4, json::object(), "*/*").status == 200);
  const Plan none = call(s, sid, "echo", 5, json::object(), "text/html");
  CHECK(none.status == 406);
  CHECK(messages(none).at(0)["error"]["code"] == -32000);
}

TEST_CASE("mcp: a call with a result, then the reply lost, counted per tool") {
  McpServer s(script());
  const std::string sid = open(s);
  // write_file's call 0: 30 s, then the reply is lost (the connection drops after the head).
  const Plan lost = call(s, sid, "write_file", 1);
  CHECK(lost.streaming);
  CHECK(lost.ending == mock::Ending::kFin);
  CHECK(messages(lost).empty());
  CHECK(stalled_s(lost) == 30);
  deliver(s, lost, 40);
  // Call 1: the result.
  const Plan ok = call(s, sid, "write_file", 2);
  CHECK(ok.ending == mock::Ending::kTerminator);
  const json m = messages(ok).at(0);
  CHECK(m["id"] == 2);
  CHECK(m["result"] == json{{"content", {{{"type", "text"}, {"text", "written"}}}}, {"isError", false}});
  deliver(s, ok, 50);
  // The last scripted call repeats.
  CHECK(messages(call(s, sid, "write_file", 3)).at(0)["result"]["content"][0]["text"] == "written");

  CHECK(s.executions() == std::map<std::string, std::size_t>{{"write_file", 3}});
  const auto calls = s.tool_calls();
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].tool == "write_file");
  CHECK(calls[0].arguments == json{{"path", "a.txt"}});
  CHECK(calls[0].call_index == 0);
  CHECK(calls[0].behaviour == "reply_lost");
  CHECK(calls[0].executed);
  CHECK_FALSE(calls[0].reply_sent);
  CHECK(calls[0].settled);
  CHECK(calls[0].arrived_ms == 5);
  CHECK(calls[0].ended_ms == 40);
  CHECK(calls[0].session == sid);
  CHECK(calls[0].request_id == 1);
  CHECK(calls[1].behaviour == "result");
  CHECK(calls[1].reply_sent);
  CHECK(calls[1].ended_ms == 50);
  CHECK(calls[2].call_index == 2);
  CHECK_FALSE(calls[2].settled);
}

TEST_CASE("mcp: a lost reply over plain JSON sends the head and drops the connection") {
  McpServer s(script());
  const std::string sid = open(s);
  const Plan lost = call(s, sid, "write_file", 1, json::object(), "application/json");
  CHECK_FALSE(lost.streaming);
  CHECK(lost.ending == mock::Ending::kFin);
  CHECK(lost.body_bytes == 0);
  CHECK(stalled_s(lost) == 30);
  s.settle(lost.journal_index, mock::Delivery{0, true, 12});
  CHECK_FALSE(s.tool_calls().at(0).reply_sent);
  CHECK(s.tool_calls().at(0).framing == "json");
}

TEST_CASE("mcp: an error result and a JSON-RPC error are separate channels") {
  McpServer s(script());
  const std::string sid = open(s);
  const json error_result = messages(call(s, sid, "deploy", "a")).at(0);
  CHECK(error_result["id"] == "a");
  CHECK(error_result["result"]["isError"] == true);
  CHECK(error_result["result"]["content"][0]["text"] == "deploy failed: quota");
  CHECK_FALSE(error_result.contains("error"));
  const json rpc = messages(call(s, sid, "lookup", "b")).at(0);
  CHECK(rpc["error"] == json{{"code", -32603}, {"message", "backend down"}});
  CHECK_FALSE(rpc.contains("result"));
  const auto calls = s.tool_calls();
  CHECK(calls[0].behaviour == "is_error");
  CHECK(calls[1].behaviour == "jsonrpc_error");
  // Both ran: the tool was reached.
  CHECK(s.executions() == std::map<std::string, std::size_t>{{"deploy", 1}, {"lookup", 1}});
}

TEST_CASE("mcp: progress notifications are spread over the call's duration on a stream") {
  McpServer s(script());
  const std::string sid = open(s);
  const Plan p = call(s, sid, "build", 4, {{"_meta", {{"progressToken", "tok"}}}});
  REQUIRE(p.actions.size() == 6);  // stall, progress, stall, progress, stall, result
  CHECK(std::get<mock::StallAction>(p.actions[0]).seconds == 3);
  const auto m = messages(p);
  REQUIRE(m.size() == 3);
  CHECK(m[0] == json{{"jsonrpc", "2.0"}, {"method", "notifications/progress"},
                     {"params", {{"progressToken", "tok"}, {"progress", 1}, {"total", 2}}}});
  CHECK(m[1]["params"]["progress"] == 2);
  CHECK(m[2]["result"]["content"][0]["text"] == "built");
  CHECK(stalled_s(p) == 9);
  // The connection went after the first progress write (actions 0 and 1 done).
  s.settle(p.journal_index, mock::Delivery{2, true, 20});
  CHECK(s.tool_calls().at(0).progress == 2);
  CHECK(s.tool_calls().at(0).progress_sent == 1);
  CHECK_FALSE(s.tool_calls().at(0).reply_sent);
  // Without a progressToken, or over plain JSON, none are sent (the duration stays).
  const Plan quiet = call(s, sid, "build", 5);
  CHECK(messages(quiet).size() == 1);
  CHECK(stalled_s(quiet) == 9);
  const Plan plain = call(s, sid, "build", 6, {{"_meta", {{"progressToken", 1}}}}, "application/json");
  CHECK(messages(plain).size() == 1);
  CHECK(s.tool_calls().at(2).progress == 0);
}

TEST_CASE("mcp: a hung call never answers and can be cancelled") {
  McpServer s(script());
  const std::string sid = open(s);
  const Plan p = call(s, sid, "wait", 8, {{"_meta", {{"progressToken", 8}}}});
  const auto m = messages(p);
  REQUIRE(m.size() == 2);  // the progress notifications, no reply
  CHECK(m[1]["method"] == "notifications/progress");
  CHECK(std::get<mock::StallAction>(p.actions.back()).seconds == mock::mcp::kHangS);
  const Plan c = s.respond(post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8,"reason":"user \u001b[31minterrupt"}})", sid));
  CHECK(c.status == 202);
  s.settle(p.journal_index, mock::Delivery{2, true, 70});
  const auto e = s.tool_calls().at(0);
  CHECK(e.behaviour == "hang");
  CHECK(e.cancelled);
  CHECK(e.cancel_reason == "user \\x1B[31minterrupt");
  CHECK_FALSE(e.reply_sent);
  CHECK(e.progress_sent == 2);
  CHECK(e.executed);
  // A cancel for an id never sent changes nothing.
  s.respond(post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz"}})", sid));
  CHECK(s.tool_calls().size() == 1);
}

TEST_CASE("mcp: unknown tools and bad call params are -32602 and run nothing") {
  McpServer s(script());
  const std::string sid = open(s);
  const json unknown = messages(call(s, sid, "rm_rf", 1)).at(0);
  CHECK(unknown["error"]["code"] == -32602);
  CHECK(unknown["error"]["message"] == "Unknown tool: \"rm_rf\"");
  const json no_name = messages(s.respond(post(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}})", sid))).at(0);
  CHECK(no_name["error"]["code"] == -32602);
  const json bad_args = messages(s.respond(post(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":[1]}})", sid))).at(0);
  CHECK(bad_args["error"]["code"] == -32602);
  const json array_params = messages(s.respond(post(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":["echo"]})", sid))).at(0);
  CHECK(array_params["error"]["code"] == -32602);
  CHECK(s.executions().empty());
  const auto calls = s.tool_calls();
  REQUIRE(calls.size() == 3);  // array params are refused before the call is read
  CHECK(calls[0].behaviour == "invalid_params");
  CHECK_FALSE(calls[0].executed);
  CHECK(calls[0].call_index == -1);
}

TEST_CASE("mcp: malformed bodies get JSON-RPC's parse and invalid-request errors with HTTP 400") {
  McpServer s(script());
  const std::string sid = open(s);
  struct Case {
    std::string body;
    int code;
    json id;
  };
  const std::vector<Case> cases = {
      {"{not json", -32700, nullptr},
      {"", -32700, nullptr},
      {std::string("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\xfe\"}"), -32700, nullptr},
      {std::string(600, '[') + std::string(600, ']'), -32700, nullptr},
      {R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", -32600, nullptr},
      {R"("ping")", -32600, nullptr},
      {R"({"id":1,"method":"ping"})", -32600, 1},
      {R"({"jsonrpc":"1.0","id":1,"method":"ping"})", -32600, 1},
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", -32600, nullptr},
      {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", -32600, nullptr},
      {R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", -32600, nullptr},
      {R"({"jsonrpc":"2.0","id":1})", -32600, 1},
      {R"({"jsonrpc":"2.0","id":1,"method":7})", -32600, 1},
  };
  for (const Case& c : cases) {
    INFO(mock::json_text::escape_input(c.body, 80));
    const Plan p = s.respond(post(c.body, sid));
    CHECK(p.status == 400);
    CHECK(p.content_type == "application/json");
    CHECK(mock::json_text::is_utf8(p.body));
    const json m = json::parse(p.body);
    CHECK(m["jsonrpc"] == "2.0");
    CHECK(m["id"] == c.id);
    CHECK(m["error"]["code"] == c.code);
    CHECK(m["error"]["message"].is_string());
  }
}

TEST_CASE("mcp: a body that is not UTF-8 is a parse error that says so") {
  McpServer s(script());
  const std::string sid = open(s);
  const Plan p = s.respond(post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xc3\x28\"}", sid));
  CHECK(p.status == 400);
  const json m = json::parse(p.body);
  CHECK(m["error"]["code"] == -32700);
  CHECK(m["error"]["message"] == "Parse error: the body is not valid UTF-8");
}

TEST_CASE("mcp: unknown methods are -32601 and params that are not an object -32602") {
  McpServer s(script());
  const std::string sid = open(s);
  const Plan p = s.respond(post(R"({"jsonrpc":"2.0","id":1,"method":"resources/list"})", sid));
  CHECK(p.status == 200);
  CHECK(messages(p).at(0)["error"]["code"] == -32601);
  CHECK(messages(p).at(0)["error"]["message"] == "Method not found: \"resources/list\"");
  // A method name with a control character and an escape sequence reaches the message escaped.
  const Plan q = s.respond(post(R"({"jsonrpc":"2.0","id":2,"method":"x\u0007\u001b[2J"})", sid));
  CHECK(messages(q).at(0)["error"]["message"] == "Method not found: \"x\\x07\\x1B[2J\"");
  const Plan r = s.respond(post(R"({"jsonrpc":"2.0","id":3,"method":"ping","params":"now"})", sid));
  CHECK(messages(r).at(0)["error"]["code"] == -32602);
}

TEST_CASE("mcp: session ids are required, unknown ones are 404, DELETE ends a session") {
  McpServer s(script());
  const Plan missing = s.respond(post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"));
  CHECK(missing.status == 400);
  CHECK(messages(missing).at(0)["error"]["code"] == -32000);
  const Plan unknown = s.respond(post(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", "nope"));
  CHECK(unknown.status == 404);
  CHECK(messages(unknown).at(0)["error"]["code"] == -32001);
  CHECK(s.respond(post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", "nope")).status == 404);

  const std::string sid = open(s);
  Request del;
  del.method = "DELETE";
  del.target = "/mcp";
  del.headers.emplace_back("mcp-session-id", sid);  // header names are case-insensitive
  CHECK(s.respond(del).status == 200);
  CHECK(s.open_sessions() == 0);
  CHECK(s.respond(del).status == 404);
  CHECK(call(s, sid, "echo").status == 404);
  Request no_id;
  no_id.method = "DELETE";
  CHECK(s.respond(no_id).status == 400);
}

TEST_CASE("mcp: GET offers no stream (405) and an unsupported protocol version header is 400") {
  McpServer s(script());
  Request get;
  get.method = "GET";
  get.target = "/mcp";
  get.headers.emplace_back("Accept", "text/event-stream");
  const Plan p = s.respond(get);
  CHECK(p.status == 405);
  CHECK(header(p, "Allow") == "POST, DELETE");
  Request put = get;
  put.method = "PUT";
  CHECK(s.respond(put).status == 405);

  const std::string sid = open(s);
  Request r = post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", sid);
  r.headers.emplace_back("MCP-Protocol-Version", "2025-06-18");
  CHECK(s.respond(r).status == 200);
  r.headers.back().second = "2099-01-01";
  const Plan bad = s.respond(r);
  CHECK(bad.status == 400);
  CHECK(messages(bad).at(0)["error"]["code"] == -32000);
}

TEST_CASE("mcp: the tool-call journal keeps a window, the counts stay exact") {
  McpServer s(script());
  s.set_journal_window(2);
  const std::string sid = open(s);
  for (int i = 0; i < 5; ++i) deliver(s, call(s, sid, "echo", i));
  const auto calls = s.tool_calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].index == 3);
  CHECK(calls[1].index == 4);
  CHECK(calls[1].reply_sent);
  CHECK(s.tool_calls_received() == 5);
  CHECK(s.executions().at("echo") == 5);
  // Settling an entry that left the window does nothing.
  s.settle(0, mock::Delivery{1, false, 1});
  s.settle(McpServer::kNoEntry, mock::Delivery{1, false, 1});
  CHECK(s.tool_calls().size() == 2);
}

TEST_CASE("mcp: tool_call_to_json carries every field") {
  mock::mcp::ToolCallEntry e;
  e.tool = "t";
  e.request_id = "r";
  e.cancel_reason = "why";
  const json j = mock::mcp::tool_call_to_json(e);
  for (const char* key : {"index", "session", "request_id", "tool", "arguments", "call_index", "behaviour", "duration_s",
                          "progress", "progress_sent", "framing", "executed", "reply_sent", "settled", "cancelled",
                          "cancel_reason", "arrived_ms", "ended_ms"}) {
    CHECK(j.contains(key));
  }
}

TEST_CASE("mcp: a cancel names its request by the JSON value of its id, 0 included") {
  McpServer s(script());
  const std::string sid = open(s);
  call(s, sid, "wait", 0);
  call(s, sid, "wait", "0");
  // "0" the string names the second call only; 0 the number the first only.
  s.respond(post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"0"}})", sid));
  auto calls = s.tool_calls();
  CHECK_FALSE(calls[0].cancelled);
  CHECK(calls[1].cancelled);
  s.respond(post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}})", sid));
  calls = s.tool_calls();
  CHECK(calls[0].cancelled);
  CHECK(calls[0].request_id == 0);
  CHECK(calls[1].request_id == "0");
  // Another MCP session's cancel does not reach them.
  McpServer t(script());
  const std::string other = open(t);
  call(t, other, "wait", 5);
  const std::string mine = open(t);
  t.respond(post(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}})", mine));
  CHECK_FALSE(t.tool_calls().at(0).cancelled);
}

TEST_CASE("mcp: an expired session refuses the call with 404 and the client must initialize again") {
  ToolScript tools;
  Tool t;
  t.name = "deploy";
  ToolCall expire;
  expire.session_expired = true;
  expire.duration_s = 2;
  ToolCall ok;
  ok.result = "deployed";
  t.calls = {expire, ok};
  tools.tools = {t};
  McpServer s(tools);
  const std::string sid = open(s);
  const Plan p = call(s, sid, "deploy", 1);
  CHECK(p.status == 404);
  CHECK_FALSE(p.streaming);
  CHECK(stalled_s(p) == 2);
  CHECK(messages(p).at(0) == json{{"jsonrpc", "2.0"}, {"id", 1}, {"error", {{"code", -32001}, {"message", "Session not found"}}}});
  deliver(s, p);
  // The session is gone for every later request.
  CHECK(s.open_sessions() == 0);
  CHECK(s.respond(post(R"({"jsonrpc":"2.0","id":2,"method":"ping"})", sid)).status == 404);
  // A new session: the retry plays call 1.
  const std::string again = open(s);
  CHECK(again != sid);
  CHECK(messages(call(s, again, "deploy", 3)).at(0)["result"]["content"][0]["text"] == "deployed");
  const auto calls = s.tool_calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].behaviour == "session_expired");
  CHECK(calls[0].call_index == 0);
  CHECK_FALSE(calls[0].executed);
  CHECK(calls[0].reply_sent);
  CHECK(calls[1].call_index == 1);
  CHECK(calls[1].executed);
  CHECK(s.executions() == std::map<std::string, std::size_t>{{"deploy", 1}});
}
