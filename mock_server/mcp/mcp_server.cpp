// The MCP mock server's pure handler: HTTP method and headers, then the JSON-RPC message (parse,
// shape, session), then the MCP method; a tools/call becomes a plan of stalls and writes from its
// scripted behaviour. Every text that reaches JSON is valid UTF-8: request values come from the
// parser, which refuses ill-formed UTF-8, and quoted input goes through json_text::escape_input.
#include "mock_server/mcp/mcp_server.h"

#include <algorithm>
#include <utility>

#include "mock_server/json_text.h"
#include "mock_server/wire_format.h"

namespace mock::mcp {
namespace {

using nlohmann::json;

/// JSON text of `j`, never throwing: an ill-formed UTF-8 string (none should reach here) becomes U+FFFD.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json rpc_error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json rpc_result(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

/// One SSE event carrying one JSON-RPC message, as the MCP SDKs' servers send it.
std::string sse_event(const json& message) { return "event: message\ndata: " + dump(message) + "\n\n"; }

/// A whole application/json answer.
Plan json_plan(int status, const json& message) {
  Plan p;
  p.journal_index = McpServer::kNoEntry;
  p.status = status;
  p.content_type = "application/json";
  p.body = dump(message);
  return p;
}

/// An answer with no body (202 to a notification, 200 to a DELETE, 405).
Plan empty_plan(int status) {
  Plan p;
  p.journal_index = McpServer::kNoEntry;
  p.status = status;
  p.content_type = "";
  return p;
}

/// A JSON-RPC message in one SSE event (the client accepts text/event-stream only).
Plan sse_plan(const json& message) {
  Plan p;
  p.journal_index = McpServer::kNoEntry;
  p.status = 200;
  p.content_type = "text/event-stream";
  p.streaming = true;
  p.headers.emplace_back("Cache-Control", "no-cache");
  p.actions.emplace_back(WriteAction{sse_event(message), 1, true});
  return p;
}

/// Whether the media range list `accept` allows `type` ("application/json"): the type itself,
/// its "major/*", or "*/*" (RFC 9110 §12.5.1; a `q=0` is not honoured: no client sends one).
bool accepts(std::string_view accept, std::string_view type) {
  const std::string_view major = type.substr(0, type.find('/'));
  std::size_t at = 0;
  while (at <= accept.size()) {
    std::size_t end = accept.find(',', at);
    if (end == std::string_view::npos) end = accept.size();
    std::string_view range = accept.substr(at, end - at);
    range = range.substr(0, range.find(';'));
    while (!range.empty() && (range.front() == ' ' || range.front() == '\t')) range.remove_prefix(1);
    while (!range.empty() && (range.back() == ' ' || range.back() == '\t')) range.remove_suffix(1);
    auto iequal = [](std::string_view a, std::string_view b) {
      return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return (x >= 'A' && x <= 'Z' ? x + 32 : x) == (y >= 'A' && y <= 'Z' ? y + 32 : y);
             });
    };
    if (range == "*/*" || iequal(range, type)) return true;
    if (range.size() == major.size() + 2 && iequal(range.substr(0, major.size()), major) &&
        range.substr(major.size()) == "/*") {
      return true;
    }
    at = end + 1;
  }
  return false;
}

/// A short form of a JSON value for a message: its text, at most 80 bytes, fit to quote.
std::string shown(const json& j) { return json_text::escape_input(dump(j), 80); }

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

json tool_call_to_json(const ToolCallEntry& e) {
  json j = {{"index", e.index},
            {"session", e.session},
            {"request_id", e.request_id},
            {"tool", e.tool},
            {"arguments", e.arguments},
            {"call_index", e.call_index},
            {"behaviour", e.behaviour},
            {"duration_s", e.duration_s},
            {"progress", e.progress},
            {"progress_sent", e.progress_sent},
            {"framing", e.framing},
            {"executed", e.executed},
            {"reply_sent", e.reply_sent},
            {"settled", e.settled},
            {"cancelled", e.cancelled},
            {"arrived_ms", e.arrived_ms},
            {"ended_ms", e.ended_ms}};
  if (!e.cancel_reason.empty()) j["cancel_reason"] = e.cancel_reason;
  return j;
}

McpServer::McpServer(ToolScript tools, std::string server_version)
    : tools_(std::move(tools)), server_version_(std::move(server_version)) {}

Plan McpServer::respond(const Request& request) {
  std::lock_guard lock(mu_);
  try {
    return respond_locked(request);
  } catch (const std::exception& e) {
    // No request may end the server: an exception here is hiccup's bug, answered as one.
    return json_plan(500, rpc_error(nullptr, -32603, "Internal error in hiccup's MCP mock: " +
                                                         json_text::escape_input(e.what(), 200)));
  }
}

Plan McpServer::respond_locked(const Request& request) {
  const std::string_view accept_header = request.header("Accept");
  Framing framing;
  // No Accept header: the client takes what it gets; JSON is the plainer answer.
  framing.json = accept_header.empty() || accepts(accept_header, "application/json");
  framing.sse = accepts(accept_header, "text/event-stream");
  if (request.method == "POST") {
    if (!framing.json && !framing.sse) {
      return json_plan(406, rpc_error(nullptr, kServerError,
                                      "Not Acceptable: the Accept header must allow application/json or "
                                      "text/event-stream, found " + json_text::quote_input(accept_header, 80)));
    }
    return post(request, framing);
  }
  const std::string session(request.header("Mcp-Session-Id"));
  if (request.method == "DELETE") {
    if (session.empty()) {
      return json_plan(400, rpc_error(nullptr, kServerError, "Bad Request: Mcp-Session-Id header is required"));
    }
    if (sessions_.erase(session) == 0) {
      return json_plan(404, rpc_error(nullptr, kSessionNotFound, "Session not found"));
    }
    session_order_.erase(std::remove(session_order_.begin(), session_order_.end(), session), session_order_.end());
    return empty_plan(200);
  }
  // GET would open a stream for server-initiated messages, which this server never sends
  // (basic/transports: "the server MUST either return Content-Type: text/event-stream … or else
  // return HTTP 405 Method Not Allowed").
  Plan p = json_plan(405, rpc_error(nullptr, kServerError,
                                    "Method Not Allowed: " + json_text::escape_input(request.method, 20) +
                                        " (this MCP endpoint takes POST and DELETE; it offers no server-initiated stream)"));
  p.headers.emplace_back("Allow", "POST, DELETE");
  return p;
}

Plan McpServer::post(const Request& request, const Framing& framing) {
  // The message: UTF-8, JSON, one JSON-RPC 2.0 object.
  if (!json_text::is_utf8(request.body)) {
    return json_plan(400, rpc_error(nullptr, kParseError, "Parse error: the body is not valid UTF-8"));
  }
  const json message = parse_json(request.body);
  if (message.is_discarded()) {
    return json_plan(400, rpc_error(nullptr, kParseError,
                                    "Parse error: the body is not JSON (or nests deeper than " +
                                        std::to_string(kMaxJsonDepth) + " levels)"));
  }
  if (message.is_array()) {
    return json_plan(400, rpc_error(nullptr, kInvalidRequest,
                                    "Invalid Request: a batch (JSON array) is not supported; MCP 2025-06-18 removed "
                                    "JSON-RPC batching: send one message per POST"));
  }
  if (!message.is_object()) {
    return json_plan(400, rpc_error(nullptr, kInvalidRequest,
                                    "Invalid Request: expected a JSON-RPC message object, found " + shown(message)));
  }
  const bool has_id = message.contains("id");
  const json id = has_id && valid_id(message["id"]) ? message["id"] : json(nullptr);
  if (!message.contains("jsonrpc") || message["jsonrpc"] != "2.0") {
    return json_plan(400, rpc_error(id, kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\", found " +
                                                             (message.contains("jsonrpc") ? shown(message["jsonrpc"]) : "nothing")));
  }
  if (has_id && !valid_id(message["id"])) {
    return json_plan(400, rpc_error(nullptr, kInvalidRequest,
                                    "Invalid Request: \"id\" must be a string or an integer (MCP: not null), found " +
                                        shown(message["id"])));
  }
  const std::string session(request.header("Mcp-Session-Id"));
  if (!message.contains("method")) {
    // A client's response to a server request: this server sends none, so it is accepted and dropped.
    if (has_id && (message.contains("result") || message.contains("error"))) {
      if (!session.empty() && !sessions_.count(session)) {
        return json_plan(404, rpc_error(nullptr, kSessionNotFound, "Session not found"));
      }
      return empty_plan(202);
    }
    return json_plan(400, rpc_error(id, kInvalidRequest, "Invalid Request: missing \"method\""));
  }
  if (!message["method"].is_string()) {
    return json_plan(400, rpc_error(id, kInvalidRequest, "Invalid Request: \"method\" must be a string, found " +
                                                             shown(message["method"])));
  }
  const std::string& method = message["method"].get_ref<const std::string&>();
  const json params = message.contains("params") ? message["params"] : json::object();
  // MCP's params are objects; JSON-RPC allows arrays, MCP has no method that takes one.
  const bool params_ok = params.is_object();

  // The transport's protocol version header, after initialize (basic/transports "Protocol Version Header").
  const std::string_view version_header = request.header("MCP-Protocol-Version");
  if (!version_header.empty() &&
      std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version_header) == kProtocolVersions.end()) {
    return json_plan(400, rpc_error(id, kServerError,
                                    "Bad Request: unsupported MCP-Protocol-Version " + json_text::quote_input(version_header, 40) +
                                        " (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)"));
  }

  // Sessions: initialize opens one; everything else needs a live one.
  if (method == "initialize" && has_id) {
    if (!params_ok || !params.contains("protocolVersion") || !params["protocolVersion"].is_string()) {
      return json_plan(200, rpc_error(id, kInvalidParams, "Invalid params: initialize needs params.protocolVersion as a string"));
    }
    const std::string& asked = params["protocolVersion"].get_ref<const std::string&>();
    const bool known = std::find(kProtocolVersions.begin(), kProtocolVersions.end(), asked) != kProtocolVersions.end();
    const std::string version = known ? asked : std::string(kProtocolVersions.front());
    const std::string sid = "hiccup-mcp-" + std::to_string(next_session_++);
    sessions_[sid] = SessionState{version, false};
    session_order_.push_back(sid);
    while (session_order_.size() > kMaxSessions) {
      sessions_.erase(session_order_.front());
      session_order_.pop_front();
    }
    json result = {{"protocolVersion", version},
                   {"capabilities", {{"tools", {{"listChanged", false}}}}},
                   {"serverInfo", {{"name", "hiccup"}, {"version", server_version_}}}};
    Plan p = framing.json ? json_plan(200, rpc_result(id, std::move(result))) : sse_plan(rpc_result(id, std::move(result)));
    p.headers.emplace_back("Mcp-Session-Id", sid);
    return p;
  }
  if (session.empty()) {
    return json_plan(400, rpc_error(id, kServerError, "Bad Request: Mcp-Session-Id header is required (send initialize first)"));
  }
  const auto live = sessions_.find(session);
  if (live == sessions_.end()) {
    return json_plan(404, rpc_error(id, kSessionNotFound, "Session not found"));
  }

  if (!has_id) {  // a notification: 202, no body, whatever it names
    if (method == "notifications/initialized") live->second.initialized = true;
    if (method == "notifications/cancelled" && params_ok) return cancel(session, params);
    return empty_plan(202);
  }
  auto answer = [&](const json& m) { return framing.json ? json_plan(200, m) : sse_plan(m); };
  if (!params_ok) {
    return answer(rpc_error(id, kInvalidParams, "Invalid params: \"params\" must be an object, found " + shown(params)));
  }
  if (method == "ping") return answer(rpc_result(id, json::object()));
  if (method == "tools/list") {
    json list = json::array();
    for (const Tool& t : tools_.tools) {
      json tj = {{"name", t.name}, {"inputSchema", t.input_schema}};
      if (!t.description.empty()) tj["description"] = t.description;
      if (t.annotations) tj["annotations"] = *t.annotations;
      list.push_back(std::move(tj));
    }
    return answer(rpc_result(id, {{"tools", std::move(list)}}));
  }
  if (method == "tools/call") return call_tool(request, framing, session, id, params);
  if (method == "initialize") {
    return answer(rpc_error(id, kInvalidRequest, "Invalid Request: initialize must be a request (with an id)"));
  }
  return answer(rpc_error(id, kMethodNotFound, "Method not found: " + json_text::quote_input(method, 80)));
}

Plan McpServer::cancel(const std::string& session, const json& params) {
  if (params.contains("requestId") && valid_id(params["requestId"])) {
    // The newest call of this session with that id (ids may be reused once answered).
    for (auto it = journal_.rbegin(); it != journal_.rend(); ++it) {
      if (it->session == session && it->request_id == params["requestId"]) {
        it->cancelled = true;
        if (params.contains("reason") && params["reason"].is_string()) {
          it->cancel_reason = json_text::escape_input(params["reason"].get_ref<const std::string&>(), 400);
        }
        break;
      }
    }
  }
  return empty_plan(202);
}

Plan McpServer::call_tool(const Request& request, const Framing& framing, const std::string& session,
                          const json& id, const json& params) {
  ToolCallEntry e;
  e.index = received_++;
  e.session = session;
  e.request_id = id;
  e.arrived_ms = request.arrived_ms;
  e.framing = framing.sse ? "sse" : "json";
  Record record;
  auto refused = [&](const std::string& message) {
    e.behaviour = "invalid_params";
    const json m = rpc_error(id, kInvalidParams, message);
    Plan p = framing.json ? json_plan(200, m) : sse_plan(m);
    e.framing = framing.json ? "json" : "sse";
    record.streaming = p.streaming;
    record.whole_reply = !p.streaming;
    record.actions = p.streaming ? "r" : "";
    p.journal_index = e.index;
    append(std::move(e), std::move(record));
    return p;
  };
  if (params.contains("name") && params["name"].is_string()) e.tool = params["name"].get<std::string>();
  if (params.contains("arguments")) e.arguments = params["arguments"];
  if (!params.contains("name") || !params["name"].is_string()) {
    return refused("Invalid params: tools/call needs params.name as a string, found " +
                   (params.contains("name") ? shown(params["name"]) : std::string("nothing")));
  }
  const Tool* tool = tools_.find(e.tool);
  if (tool == nullptr) return refused("Unknown tool: " + json_text::quote_input(e.tool, 80));
  if (params.contains("arguments") && !params["arguments"].is_object()) {
    return refused("Invalid params: params.arguments must be an object, found " + shown(params["arguments"]));
  }

  std::size_t& count = calls_per_tool_[tool->name];
  e.call_index = static_cast<int>(count++);
  const ToolCall call = call_behaviour(*tool, static_cast<std::size_t>(e.call_index));
  e.behaviour = std::string(behaviour_name(call));
  e.duration_s = call.duration_s;
  if (call.session_expired) {
    // The server forgets the MCP session, as one that restarted or expired it: this request and
    // every later one with its id get 404 (basic/transports "Session Management"). Nothing runs.
    sessions_.erase(session);
    session_order_.erase(std::remove(session_order_.begin(), session_order_.end(), session), session_order_.end());
    Plan p = json_plan(404, rpc_error(id, kSessionNotFound, "Session not found"));
    if (call.duration_s > 0) p.actions.emplace_back(StallAction{call.duration_s});
    p.journal_index = e.index;
    e.framing = "json";
    record.whole_reply = true;
    append(std::move(e), std::move(record));
    return p;
  }
  e.executed = true;
  ++executions_[tool->name];

  // The reply: a result (isError true or false), or a JSON-RPC error; none for hang and reply_lost.
  json reply;
  if (call.jsonrpc_error) {
    reply = rpc_error(id, 0, call.jsonrpc_error->message);
    reply["error"]["code"] = call.jsonrpc_error->code;
  } else {
    const std::string text = call.result ? *call.result : std::string(call.is_error ? kDefaultErrorResult : kDefaultResult);
    reply = rpc_result(id, {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", call.is_error}});
  }
  const bool replies = !call.hang && !call.reply_lost;

  // Progress only with a token to send it under, and only on a stream (basic/utilities/progress).
  json token;
  if (params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken") &&
      valid_id(params["_meta"]["progressToken"])) {
    token = params["_meta"]["progressToken"];
  }
  const int progress = framing.sse && !token.is_null() ? call.progress : 0;
  e.progress = progress;
  // A hang's duration is for ever; progress notifications are spread over a finite call's
  // duration: one step before each and before the ending.
  const double step = call.hang ? 0 : call.duration_s / (progress + 1);

  Plan p;
  p.journal_index = e.index;
  p.status = 200;
  if (framing.sse) {
    p.streaming = true;
    p.content_type = "text/event-stream";
    p.headers.emplace_back("Cache-Control", "no-cache");
    int events = 0;
    for (int k = 1; k <= progress; ++k) {
      if (step > 0) {
        p.actions.emplace_back(StallAction{step});
        record.actions += 's';
      }
      json note = {{"jsonrpc", "2.0"},
                   {"method", "notifications/progress"},
                   {"params", {{"progressToken", token}, {"progress", k}, {"total", progress}}}};
      p.actions.emplace_back(WriteAction{sse_event(note), ++events, false});
      record.actions += 'p';
    }
    if (call.hang) {
      p.actions.emplace_back(StallAction{kHangS});
      record.actions += 's';
      p.ending = Ending::kFin;
    } else {
      if (step > 0) {
        p.actions.emplace_back(StallAction{step});
        record.actions += 's';
      }
      if (replies) {
        p.actions.emplace_back(WriteAction{sse_event(reply), ++events, true});
        record.actions += 'r';
      } else {
        p.ending = Ending::kFin;  // reply_lost: the stream ends without the response
      }
    }
    record.streaming = true;
  } else {
    p.content_type = "application/json";
    const double wait = call.hang ? kHangS : call.duration_s;
    if (wait > 0) p.actions.emplace_back(StallAction{wait});
    if (replies) {
      p.body = dump(reply);
      record.whole_reply = true;
    } else {
      // reply_lost: the head promises a body, none comes, the connection drops (body_bytes 0).
      p.body = dump(reply);
      p.ending = Ending::kFin;
      p.body_bytes = 0;
    }
  }
  append(std::move(e), std::move(record));
  return p;
}

void McpServer::append(ToolCallEntry entry, Record record) {
  journal_.push_back(std::move(entry));
  records_.push_back(std::move(record));
  if (window_ > 0 && journal_.size() > window_) {
    journal_.pop_front();
    records_.pop_front();
    ++first_index_;
  }
}

ToolCallEntry* McpServer::entry(std::size_t index) {
  if (index == kNoEntry || index < first_index_ || index - first_index_ >= journal_.size()) return nullptr;
  return &journal_[index - first_index_];
}

void McpServer::settle(std::size_t journal_index, const Delivery& delivery) {
  std::lock_guard lock(mu_);
  ToolCallEntry* e = entry(journal_index);
  if (e == nullptr) return;
  const Record& r = records_[journal_index - first_index_];
  e->settled = true;
  if (delivery.ended_ms >= 0) e->ended_ms = delivery.ended_ms;
  if (r.streaming) {
    const std::size_t done = std::min<std::size_t>(static_cast<std::size_t>(std::max(delivery.actions_done, 0)), r.actions.size());
    e->progress_sent = static_cast<int>(std::count(r.actions.begin(), r.actions.begin() + static_cast<long>(done), 'p'));
    e->reply_sent = r.actions.find('r') < done;
  } else {
    e->reply_sent = r.whole_reply && !delivery.client_gone;
  }
}

void McpServer::refuse(std::size_t journal_index, int status, const std::string& reason) {
  (void)status, (void)reason;
  std::lock_guard lock(mu_);
  ToolCallEntry* e = entry(journal_index);
  if (e == nullptr) return;
  e->settled = true;
  e->reply_sent = false;
}

std::vector<ToolCallEntry> McpServer::tool_calls() const {
  std::lock_guard lock(mu_);
  return {journal_.begin(), journal_.end()};
}

std::size_t McpServer::tool_calls_received() const {
  std::lock_guard lock(mu_);
  return received_;
}

std::map<std::string, std::size_t> McpServer::executions() const {
  std::lock_guard lock(mu_);
  return executions_;
}

std::size_t McpServer::open_sessions() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

void McpServer::set_journal_window(std::size_t max_entries) {
  std::lock_guard lock(mu_);
  window_ = std::max<std::size_t>(max_entries, 1);
}

}  // namespace mock::mcp
