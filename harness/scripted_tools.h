// The harness's side of the reference runtime's tool port (runtime_under_test/tool_port.h): plays
// a scenario's tool script (mock_server/mcp/tool_script.h, SCENARIO-FORMAT.md "Tools") in virtual
// time, as the MCP server (mock_server/mcp/mcp_server.h) plays it over HTTP for real clients, and
// keeps one record per tools/call: the tool's own truth, which the invariants judge the runtime's
// answers to the model by (at-most-once, honest-outcome).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/mcp/mcp_server.h"
#include "mock_server/mcp/tool_script.h"
#include "runtime_under_test/env.h"
#include "runtime_under_test/tool_port.h"

namespace harness {

/// One tools/call the tool received.
struct ToolCallRecord {
  int index = 0;                ///< arrival order among the run's tool calls, from 0
  std::string tool;             ///< the tool's name
  /// The name the model called it by, when the runtime names MCP tools otherwise (a real CLI's
  /// "mcp__SERVER__TOOL"); "" when it is `tool` (the reference runtime).
  std::string call_name;
  nlohmann::json arguments = nlohmann::json::object();
  /// The tool's call number (from 0, per tool over the run) that picked the behaviour
  /// (mock::mcp::call_behaviour), as the MCP server's journal counts it.
  int tool_call = 0;
  /// The model call it served: the model turn (the journal's, -1 until the runner fills it),
  /// the request whose answer delivered it, its position among that answer's calls, its history id.
  int turn = -1;
  int request_seq = 0;
  int call_index = 0;
  std::string call_id;
  /// mock::mcp::behaviour_name of the scripted call: "result", "is_error", "jsonrpc_error",
  /// "hang", "reply_lost", "session_expired".
  std::string behaviour;
  /// The tool ran (its effect is committed), with the MCP server's meaning (ToolCallEntry::executed):
  /// every behaviour but session_expired, whether or not a reply reached the runtime.
  bool executed = false;
  /// What the runtime saw (rut::tool_end_name): "result", "jsonrpc_error", "timed_out",
  /// "reply_lost", "session_expired"; "waiting" when the run was stopped while it waited.
  std::string outcome = "waiting";
  bool is_error = false;        ///< outcome "result": the result's isError
  double timeout_s = 0;         ///< the runtime's timeout for it, virtual seconds (null in JSON when none)
  double started_s = 0;         ///< virtual seconds since the run started, at the send
  double ended_s = 0;           ///< and when the wait ended (= started_s while waiting)
  bool operator==(const ToolCallRecord&) const = default;
};

/// JSON form: {index, tool, call_name (only when not ""), arguments, tool_call, turn, request_seq, call_index, call_id,
/// behaviour, executed, outcome, is_error, timeout_s (null: none), started_s, ended_s}.
nlohmann::json tool_call_record_to_json(const ToolCallRecord& record);

/// Plays `script` behind the runtime's tool port. A call of tool call number n of a tool plays
/// mock::mcp::call_behaviour(tool, n): `duration_s` (a hang: for ever) passes on `clock`, at most
/// the request's timeout_s; a call whose duration is at least the timeout times out (its effect
/// is committed all the same, as over MCP, where the tool does not stop when the client stops
/// waiting). Otherwise the ending: a result (isError as scripted), a JSON-RPC error, the reply
/// lost, or the session expired (the call does not run). With no timeout a hang sleeps
/// mock::mcp::kHangS on `clock` (a capped clock stops the run). Deterministic; not thread-safe.
class ScriptedToolPort final : public rut::IToolPort {
 public:
  ScriptedToolPort(const mock::mcp::ToolScript& script, rut::IClock& clock) : script_(script), clock_(clock) {}
  bool offers(std::string_view name) const override { return script_.find(name) != nullptr; }
  rut::ToolReply call(const rut::ToolRequest& request) override;
  /// Every call so far, in arrival order (the last one "waiting" when a throw ended its wait).
  const std::vector<ToolCallRecord>& records() const { return records_; }
  /// The last call's wait was played only up to a harness cap (the runtime would still be waiting
  /// there): its outcome becomes "waiting".
  void cut_at_cap() {
    if (!records_.empty()) records_.back().outcome = "waiting";
  }

 private:
  const mock::mcp::ToolScript& script_;
  rut::IClock& clock_;
  std::map<std::string, int, std::less<>> calls_per_tool_;
  std::vector<ToolCallRecord> records_;
};

}  // namespace harness
