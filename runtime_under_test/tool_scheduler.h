// The tool scheduler (docs/POLICY.md "Tools"): executes calls of a committed turn, in call order,
// once each. Each execution appends one LedgerEntry. A call whose name the tool port offers
// (tool_port.h) is sent through it once, with the per-call tool timeout, and answered with what
// came back (an error, or "outcome unknown" when it timed out or its reply was lost); any other
// call is simulated and answered `{"output":"NAME: ok"}`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/defects.h"
#include "runtime_under_test/gemini_codec.h"
#include "runtime_under_test/run_log.h"
#include "runtime_under_test/tool_port.h"

namespace rut {

/// A call seen in the stream, with where it came from.
struct PendingCall {
  FunctionCall call;       ///< as history keeps it: its id is the conversation's (call_ids.h)
  int request_seq = 0;     ///< the request whose attempt delivered it
  int call_index = 0;      ///< position among that attempt's calls
  bool executed = false;   ///< already executed (under continue, or the eager-execution defect)
  /// A replay of an earlier call (the same id, name and arguments; docs/POLICY.md "Call ids"):
  /// that call's history id. Never run; answered with that call's result.
  std::optional<std::string> replay_of;
  /// The result a replay of a call of an earlier turn is answered with (history's response to it);
  /// nullopt for a replay of a call of the same turn, answered with that call's response of the
  /// same batch.
  std::optional<nlohmann::json> replay_response;
  /// Once executed: the function response's `response` object ({"output": …} or {"error": …}).
  std::optional<nlohmann::json> result;
  /// Once executed: its tool failed, or its outcome is unknown (result holds an "error").
  bool failed = false;
};

/// The function response `response` for a call of tool `name` that ended with `reply`, waited on
/// for `timeout_s` (docs/POLICY.md "Tools"): {"output": text} for a result, {"error": …} for an
/// error result, a JSON-RPC error, an expired session, and for an unknown outcome (timed out,
/// reply lost) {"error": "outcome unknown: …"}.
[[nodiscard]] nlohmann::json tool_response(const std::string& name, const ToolReply& reply, double timeout_s);

/// The runtime's own id for a call delivered without one: "call-SEQ-INDEX".
std::string own_call_id(const PendingCall& call);

class ToolScheduler {
 public:
  /// `tools`: the tool port (null: every call simulated); `tool_timeout_s`: Config::tool_timeout_s.
  ToolScheduler(const DefectSet& defects, RunLog& log, Recovery recovery = Recovery::kHold,
                IToolPort* tools = nullptr, double tool_timeout_s = 60)
      : defects_(defects), log_(log), recovery_(recovery), tools_(tools), tool_timeout_s_(tool_timeout_s) {}

  /// A call just streamed, whole (its turn has not committed). Under hold nothing happens; under
  /// continue it runs now (docs/POLICY.md "Recovery designs"). A call
  /// that arrived `after_cancel` (the runtime read on past the user's cancel, defect
  /// execute-after-cancel) is run at once: the streaming executor does not check the cancel.
  void on_streamed_call(PendingCall& call, bool after_cancel = false);

  /// Executes `calls` (a committed turn's, in call order), skipping any already executed, and
  /// returns one functionResponse part per call, in order (the call's result: tool_response). A replay (PendingCall::replay_of) is
  /// never run: it is answered with the result of the call it replays. After cancel_after(k) the
  /// user cancels once k calls have run (docs/POLICY.md "Cancellation"): calls k.. do not start
  /// and each gets one synthetic response `{"error": "cancelled by the user"}`.
  [[nodiscard]] std::vector<nlohmann::json> run_committed(std::vector<PendingCall>& calls);

  /// The next run_committed is interrupted once `calls_run` of its calls have run.
  void cancel_after(int calls_run) { cancel_after_ = calls_run; }
  /// How many synthetic "cancelled" responses the last run_committed returned (they come after
  /// the real ones); 0 when it was not interrupted.
  [[nodiscard]] int cancelled_responses() const { return cancelled_; }
  /// Whether the last run_committed was interrupted.
  [[nodiscard]] bool interrupted() const { return interrupted_; }

 private:
  void execute(PendingCall& call);
  const DefectSet& defects_;
  RunLog& log_;
  Recovery recovery_;
  IToolPort* tools_;
  double tool_timeout_s_;
  std::optional<int> cancel_after_;
  int cancelled_ = 0;
  bool interrupted_ = false;
};

}  // namespace rut
