// The tool port: how the runtime reaches the tools a session offers (a real agent's MCP servers),
// passed in like its transport and clock (env.h) so a run stays deterministic in virtual time. The
// tool scheduler (tool_scheduler.h) sends a call through it when the port offers the call's name;
// other calls stay simulated. The harness implements it by playing a scenario's tool script
// (harness/scripted_tools.h); the runtime never knows what is behind it. docs/POLICY.md "Tools".
#pragma once

#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rut {

/// `ToolRequest::timeout_s` of a runtime that sets no tool timeout (waits on a tool for ever).
inline constexpr double kNoToolTimeout = std::numeric_limits<double>::infinity();

/// One `tools/call` the runtime sends (MCP 2025-11-25 server/tools "Calling Tools").
struct ToolRequest {
  std::string name;                                    ///< params.name
  nlohmann::json arguments = nlohmann::json::object(); ///< params.arguments: the call's args
  int request_seq = 0;   ///< the model call it serves: the request (send order) whose answer delivered it
  int call_index = 0;    ///< and its position among that answer's calls
  std::string call_id;   ///< the id history gives the call (runtime.h LedgerEntry::call_id)
  /// How long the runtime waits for the reply, in virtual seconds; kNoToolTimeout: for ever. The
  /// port ends the wait then (as ITransport ends a stream silent for idle_timeout_s).
  double timeout_s = 60;
};

/// How one `tools/call` ended, as an MCP client observes it.
enum class ToolEnd {
  kResult,          ///< a CallToolResult arrived (ToolReply::is_error false or true)
  kJsonRpcError,    ///< a JSON-RPC error arrived instead of a result (JSON-RPC 2.0 §5.1)
  kTimedOut,        ///< no reply within timeout_s: the call may or may not have taken effect
  kReplyLost,       ///< the connection dropped before the reply: the call may or may not have taken effect
  kSessionExpired,  ///< HTTP 404 with -32001 "Session not found": the server did not run the call
                    ///< (MCP 2025-11-25 basic/transports "Session Management")
};

/// "result", "jsonrpc_error", "timed_out", "reply_lost", "session_expired".
std::string_view tool_end_name(ToolEnd end);

/// Whether a call that ended so has an unknown outcome (timed out, reply lost): it may have
/// taken effect, so the runtime never sends it again for the same model call.
inline bool outcome_unknown(ToolEnd end) { return end == ToolEnd::kTimedOut || end == ToolEnd::kReplyLost; }

/// What came back.
struct ToolReply {
  ToolEnd end = ToolEnd::kResult;
  /// kResult: the result's text content; kJsonRpcError: the error's message; "" otherwise.
  std::string text;
  bool is_error = false;     ///< kResult: the result's `isError` (the tool ran and failed)
  long long error_code = 0;  ///< kJsonRpcError: the error's code
};

/// The tools behind the runtime. Implementations advance the run's clock by the time a call takes
/// (at most request.timeout_s) and may throw to stop a run (a harness cap), as a transport may.
class IToolPort {
 public:
  virtual ~IToolPort() = default;
  /// Whether the port offers a tool named `name` (a call of another name is simulated).
  virtual bool offers(std::string_view name) const = 0;
  /// Sends one call and waits for its end, at most request.timeout_s virtual seconds.
  virtual ToolReply call(const ToolRequest& request) = 0;
};

}  // namespace rut
