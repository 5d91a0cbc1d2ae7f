// The MCP mock server: JSON-RPC 2.0 over MCP's Streamable HTTP transport, serving a scenario's
// tools (tool_script.h) and playing what each `tools/call` does as a mock::Plan the HTTP server
// executes like a model stream's (durations as stalls, progress notifications as SSE writes, a lost
// reply as a dropped connection). Pure: no sockets and no clock (arrival and end times come in
// with the request and the delivery report), so every answer is a function of the script, the
// requests so far and their bytes. The protocol facts follow the MCP specification, revision
// 2025-11-25 (https://modelcontextprotocol.io/specification/2025-11-25: basic/transports
// "Streamable HTTP", basic/lifecycle, server/tools, basic/utilities/progress and cancellation)
// and JSON-RPC 2.0 (https://www.jsonrpc.org/specification).
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/mcp/tool_script.h"
#include "mock_server/script_engine.h"

namespace mock::mcp {

/// The protocol revisions the server speaks, newest first. `initialize` answers the client's
/// `protocolVersion` when it is one of these, else the newest (MCP basic/lifecycle "Version
/// Negotiation"); a request whose `MCP-Protocol-Version` header names another gets 400.
inline constexpr std::array<std::string_view, 4> kProtocolVersions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                                    "2024-11-05"};

/// JSON-RPC 2.0's error codes (§5.1) and the transport's, as the MCP SDKs send them.
inline constexpr int kParseError = -32700;      ///< the body is not JSON (or not UTF-8)
inline constexpr int kInvalidRequest = -32600;  ///< not a JSON-RPC 2.0 message
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;   ///< also an unknown tool (MCP server/tools "Error Handling")
inline constexpr int kServerError = -32000;     ///< the SDKs' transport errors (missing session id, 406, …)
inline constexpr int kSessionNotFound = -32001;  ///< with HTTP 404: the client must initialize again

/// How long a hung call waits, in virtual seconds (over HTTP the server's pause cap, two real days,
/// ends it first; a client that hangs up ends it at once).
inline constexpr double kHangS = 1e9;

/// One `tools/call` the server received, in the tool-call journal.
struct ToolCallEntry {
  std::size_t index = 0;          ///< arrival order among tools/call requests, from 0
  std::string session;            ///< the request's Mcp-Session-Id
  nlohmann::json request_id;      ///< the JSON-RPC id as sent (a string or an integer)
  std::string tool;               ///< params.name as sent (valid UTF-8)
  nlohmann::json arguments = nlohmann::json::object();
  /// The tool's call number (from 0) that picked the behaviour; -1 when the call was refused
  /// (unknown tool, invalid params: `behaviour` "invalid_params") and so not executed. A call
  /// whose behaviour is session_expired takes its number but does not run.
  int call_index = -1;
  /// behaviour_name of the call played ("result", "is_error", "jsonrpc_error", "hang",
  /// "reply_lost", "session_expired"), or "invalid_params".
  std::string behaviour;
  double duration_s = 0;          ///< scripted, virtual seconds
  int progress = 0;               ///< progress notifications in the answer (0 without a progressToken or SSE)
  int progress_sent = 0;          ///< of those, written to the socket
  std::string framing;            ///< "sse" or "json": how the answer was sent
  /// The tool ran (counted in executions()): a known tool, valid params, not session_expired.
  bool executed = false;
  bool reply_sent = false;        ///< the whole reply (result or error) was written
  bool settled = false;           ///< the HTTP server reported the answer's end
  bool cancelled = false;         ///< a notifications/cancelled named this request
  std::string cancel_reason;      ///< its `reason` (valid UTF-8), "" for none
  double arrived_ms = -1;         ///< real ms since the server started (-1: no real time)
  double ended_ms = -1;           ///< when the answer ended (last byte written, or the connection dropped)
};

/// JSON form of one entry: {index, session, request_id, tool, arguments, call_index, behaviour,
/// duration_s, progress, progress_sent, framing, executed, reply_sent, settled, cancelled,
/// cancel_reason?, arrived_ms, ended_ms}.
nlohmann::json tool_call_to_json(const ToolCallEntry& entry);

/// Serves one scenario's tools over MCP Streamable HTTP at one endpoint (the router sends it the
/// requests of `/mcp` and `/s/{id}/mcp`). Thread-safe.
///
/// POST: one JSON-RPC message. `initialize` opens an MCP session (its `Mcp-Session-Id` header,
/// "hiccup-mcp-N", deterministic); every other message needs that header (missing: 400, unknown or
/// ended: 404 with -32001). Notifications (`notifications/initialized`, `notifications/cancelled`,
/// any other) and client responses get 202 with no body. Requests: `initialize`, `ping`,
/// `tools/list`, `tools/call`; others -32601. A body that is not JSON or not UTF-8: -32700;
/// not a JSON-RPC 2.0 message (a batch included: removed in 2025-06-18): -32600; both with HTTP 400.
/// `tools/call` is answered as an SSE stream when the client's Accept allows text/event-stream
/// (progress needs it), else as application/json; every other request as application/json when
/// allowed, else SSE; an Accept allowing neither gets 406.
/// GET: 405 (the server offers no server-initiated stream). DELETE with the session id: ends the
/// session (200; unknown: 404). Other methods: 405.
class McpServer final : public Responder {
 public:
  /// `server_version` goes in initialize's serverInfo.version.
  explicit McpServer(ToolScript tools, std::string server_version = "0");

  Plan respond(const Request& request) override;
  void settle(std::size_t journal_index, const Delivery& delivery) override;
  void refuse(std::size_t journal_index, int status, const std::string& reason) override;
  std::string error_provider() const override { return ""; }

  /// The tool-call journal (the window's entries, oldest first; their `index` says where they stand).
  std::vector<ToolCallEntry> tool_calls() const;
  /// tools/call requests received so far, in the window or not.
  std::size_t tool_calls_received() const;
  /// Executions per tool name since the server was made: every call of a known tool with valid
  /// params, whatever it then did (a hung or reply-lost call ran), but a session_expired one (it
  /// was refused). Exact: never windowed.
  std::map<std::string, std::size_t> executions() const;
  /// MCP sessions open now (initialized and not ended).
  std::size_t open_sessions() const;
  /// Keeps at most `max_entries` (>= 1) tool-call journal entries; older ones are dropped (counted
  /// by tool_calls_received and executions). Without a call every entry is kept.
  void set_journal_window(std::size_t max_entries);

  const ToolScript& tools() const { return tools_; }

  /// Sessions kept at most; initializing one more ends the oldest (a client looping on initialize
  /// cannot exhaust memory).
  static constexpr std::size_t kMaxSessions = 4096;

  /// Plan::journal_index of an answer that journals nothing (every answer but a tools/call's).
  static constexpr std::size_t kNoEntry = static_cast<std::size_t>(-1);

 private:
  struct SessionState {
    std::string protocol_version;
    bool initialized = false;  // notifications/initialized arrived
  };
  // Per journal entry, what settle needs: per action of a streamed answer, 'p' (a progress
  // write), 'r' (the reply's write) or 's' (a stall); for a whole answer whether it carries the
  // reply.
  struct Record {
    std::string actions;
    bool streaming = false;
    bool whole_reply = false;
  };
  struct Framing {
    bool json = false;  // application/json allowed
    bool sse = false;   // text/event-stream allowed
  };

  Plan respond_locked(const Request& request);
  Plan post(const Request& request, const Framing& framing);
  Plan call_tool(const Request& request, const Framing& framing, const std::string& session,
                 const nlohmann::json& id, const nlohmann::json& params);
  Plan cancel(const std::string& session, const nlohmann::json& params);
  ToolCallEntry* entry(std::size_t index);
  void append(ToolCallEntry entry, Record record);  // into the window, evicting the oldest beyond it

  const ToolScript tools_;
  const std::string server_version_;
  mutable std::mutex mu_;
  std::map<std::string, SessionState> sessions_;
  std::deque<std::string> session_order_;  // ids by age, for kMaxSessions
  std::size_t next_session_ = 1;
  std::map<std::string, std::size_t> calls_per_tool_;  // call numbers taken, by tool
  std::map<std::string, std::size_t> executions_;      // calls that ran, by tool
  std::deque<ToolCallEntry> journal_;
  std::deque<Record> records_;  // parallel to journal_
  std::size_t first_index_ = 0;
  std::size_t received_ = 0;
  std::size_t window_ = 0;      // 0 = keep every entry
};

}  // namespace mock::mcp
