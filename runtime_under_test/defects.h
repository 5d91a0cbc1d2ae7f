// The seeded-defect catalogue: each defect is one switch consulted at exactly one site in the
// runtime (execute-after-cancel: one per cancellation point, docs/POLICY.md) and reproduces a known bug of real agent runtimes. `hiccup defects` prints the catalogue;
// the kill matrix expects the suite and exploration to catch every one.
#pragma once

#include <optional>
#include <set>
#include <string_view>
#include <vector>

namespace rut {

enum class Defect {
  kKeepCallsOnRetry,       ///< a consumer keeps the failed attempt's calls when Retry fires
  kEagerExecution,         ///< calls run as they stream, before the turn commits
  kContentFilterAsSuccess, ///< a content-filter finish ends the turn as a (possibly empty) success
  kCommitIncompleteStream, ///< a stream that ends cleanly without its terminal event counts as complete
  kKeepRejectedTurn,       ///< after a 400 the rejected turn stays in history
  kNoPairingGuard,         ///< no pre-send guard dropping function responses without a matching call
  kUnboundedRetry,         ///< retries ignore max_attempts
  kRetryNonRetryable,      ///< 400/401/403/404 are retried like 503
  kIgnoreRetryAfter,       ///< waits use the schedule only, ignoring Retry-After / RetryInfo
  kKeepPartialText,        ///< a failed attempt's text stays in the shown output
  kRestartRunOnFailure,    ///< a failed run is started again from the prompt, re-running tools
  kExecutePartialArgs,     ///< a call cut mid-arguments is repaired and its turn taken as complete
  kCollapseParallelCalls,  ///< parallel calls keyed by their position in a frame merge into one:
                           ///< the first runs, history holds it with the last one's arguments
  kDuplicateCallIds,       ///< a retried attempt's calls are committed after the failed attempt's,
                           ///< with the failed attempt's ids: the next request repeats an id
  kRetryContentFilterUnchanged,  ///< a content-filter finish with no fallback left is retried like a
                                 ///< 503: the same model, the same history, after backoff
  kIgnoreErrorEvent,       ///< an in-stream error after HTTP 200 ends the attempt as a complete answer
  kMalformedCallAsStop,    ///< a malformed-function-call finish is read as a normal stop
  kNoIdleTimeout,          ///< no idle timeout: a stalled stream is waited on forever
  kOrphanCallAfterCancel,  ///< after a cancel the calls that did not run are left without results
  kCancelResultsSplit,     ///< after a cancel the synthetic results go out one user turn per call
  kExecuteAfterCancel,     ///< after a cancel the calls that had not started still run
  kDoubleResultAfterCancel,  ///< after a cancel the calls that ran get a "cancelled" result too
  kGiveUpOnRetryable,      ///< a retryable 429 / 5xx / in-stream error ends the run with budget left
  kKeepHalfDeliveredCall,  ///< continue: a call whose arguments were cut is repaired, run and kept
  kDropRanCall,            ///< continue: the kept cut turn leaves out its last call, which ran
  kContinuePastContentFilter,  ///< continue: a content-filter finish is kept and continued like a cut
  kShowCutTextTwice,       ///< continue: a kept cut turn's text is shown again when it is kept
  kTruncationAsComplete,   ///< a max-tokens finish is read as a stop: no truncation reported, a cut
                           ///< call repaired and run
  kCollapseCallsById,      ///< calls are keyed by their provider id: a call whose id an earlier
                           ///< call of the conversation has is taken for it, never runs
  kDropReasoningInHistory, ///< a turn is recorded without its reasoning (thinking blocks, reasoning
                           ///< items, thought signatures): the next request is rejected (400)
  kRetryAfterCancel,       ///< a cancel during a retry's backoff is lost: the pending retry fires
  kContinueLoopAfterCancel,  ///< after a cancel while tools run, the results go back to the model
                             ///< before the next prompt
  kReplayUnknownOutcome,   ///< a tool call whose outcome is unknown (timed out, reply lost) is sent again
  kNoToolTimeout,          ///< no per-call tool timeout: a tool that never answers is waited on forever
  kToolErrorAsSuccess,     ///< a tool's error (isError result, JSON-RPC error) is answered as its output
  kDropFailedToolResult,   ///< a call whose tool failed or timed out gets no function response
  kReplayLostContext,      ///< told previous_response_not_found, the WebSocket transport sends the
                           ///< continuation's new items again without the context the server lost
};

struct DefectInfo {
  Defect defect;
  std::string_view name;  ///< stable kebab-case name, e.g. "keep-calls-on-retry"
  std::string_view doc;   ///< one line: the bug it reproduces
  /// A wire format in which the defect has no site the stream reaches ("" = none), and why:
  /// a kill matrix skips the pair there (e.g. Anthropic has no malformed-call finish).
  std::string_view unreachable_in = "";
  std::string_view unreachable_why = "";
  /// The recovery design (runtime.recovery) in which the defect has a site ("" = both): a kill
  /// matrix skips the pair under the other design (e.g. under continue calls run as they stream
  /// by design, so eager-execution changes nothing).
  std::string_view design = "";
  /// The one transport whose code holds the defect's site ("" = every transport), as
  /// harness::transport_name spells it: a kill matrix over another transport skips the defect
  /// (e.g. replay-lost-context lives in the WebSocket transport's continuation, which in memory
  /// and over HTTP never happens).
  std::string_view transport = "";
};

/// Every defect, in enum order.
const std::vector<DefectInfo>& defect_catalogue();
std::string_view defect_name(Defect defect);
std::optional<Defect> defect_from_name(std::string_view name);

using DefectSet = std::set<Defect>;

}  // namespace rut
