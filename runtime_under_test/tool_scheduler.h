// The tool scheduler (docs/POLICY.md "Tools"): executes calls of a committed turn, in call order,
// once each. Tools are simulated: each execution appends one LedgerEntry and returns
// `{"output":"NAME: ok"}`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/defects.h"
#include "runtime_under_test/gemini_codec.h"
#include "runtime_under_test/run_log.h"

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
};

/// The runtime's own id for a call delivered without one: "call-SEQ-INDEX".
std::string own_call_id(const PendingCall& call);

class ToolScheduler {
 public:
  ToolScheduler(const DefectSet& defects, RunLog& log, Recovery recovery = Recovery::kHold)
      : defects_(defects), log_(log), recovery_(recovery) {}

  /// A call just streamed, whole (its turn has not committed). Under hold nothing happens; under
  /// continue it runs now (docs/POLICY.md "Recovery designs"). A call
  /// that arrived `after_cancel` (the runtime read on past the user's cancel, defect
  /// execute-after-cancel) is run at once: the streaming executor does not check the cancel.
  void on_streamed_call(PendingCall& call, bool after_cancel = false);

  /// Executes `calls` (a committed turn's, in call order), skipping any already executed, and
  /// returns one functionResponse part per call, in order. A replay (PendingCall::replay_of) is
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
  std::optional<int> cancel_after_;
  int cancelled_ = 0;
  bool interrupted_ = false;
};

}  // namespace rut
