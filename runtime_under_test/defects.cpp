// The seeded-defect catalogue (see defects.h). Each defect's consulting site is grep-able as
// `defects.contains(Defect::kX)` / `defects_.contains(Defect::kX)` in the runtime's sources.
#include "runtime_under_test/defects.h"

namespace rut {

const std::vector<DefectInfo>& defect_catalogue() {
  static const std::vector<DefectInfo> catalogue = {
      {Defect::kKeepCallsOnRetry, "keep-calls-on-retry",
       "a consumer keeps the failed attempt's calls on Retry: they run too and get a second response", "", "", "hold"},
      {Defect::kEagerExecution, "eager-execution",
       "calls run as they stream, before the turn commits, so a failed attempt's calls run", "", "", "hold"},
      {Defect::kContentFilterAsSuccess, "content-filter-as-success",
       "a SAFETY/RECITATION finish is treated like STOP and ends as a (possibly empty) success"},
      {Defect::kCommitIncompleteStream, "commit-incomplete-stream",
       "a stream that ends cleanly without its terminal frame is committed as complete"},
      {Defect::kKeepRejectedTurn, "keep-rejected-turn",
       "after a 400 the rejected user content stays in history"},
      {Defect::kNoPairingGuard, "no-pairing-guard",
       "no pre-send guard: function responses without a matching call are sent"},
      {Defect::kUnboundedRetry, "unbounded-retry",
       "retries ignore max_attempts and go on forever"},
      {Defect::kRetryNonRetryable, "retry-non-retryable",
       "400/401/403/404 are retried like 503"},
      {Defect::kIgnoreRetryAfter, "ignore-retry-after",
       "waits use the backoff schedule only, ignoring Retry-After / RetryInfo"},
      {Defect::kKeepPartialText, "keep-partial-text",
       "a failed attempt's partial text stays in the buffer and is shown with the retry's text"},
      {Defect::kRestartRunOnFailure, "restart-run-on-failure",
       "a failed run starts again from the prompt with fresh history, re-running completed tools"},
      {Defect::kExecutePartialArgs, "execute-partial-args",
       "a call whose arguments were cut mid-stream is repaired (its JSON closed) and executed"},
      {Defect::kCollapseParallelCalls, "collapse-parallel-calls",
       "parallel calls are keyed by their position in a frame, not the provider's index: the first runs, history records it with the last one's arguments, the rest never run"},
      {Defect::kDuplicateCallIds, "duplicate-call-ids",
       "a retried attempt's calls are committed after the failed attempt's calls with the same ids, so the next request repeats an id", "", "", "hold"},
      {Defect::kRetryContentFilterUnchanged, "retry-content-filter-unchanged",
       "a content-filter finish with no fallback left is retried like a 503: the identical request (same model, same history) is sent again after backoff"},
      {Defect::kIgnoreErrorEvent, "ignore-error-event",
       "an in-stream error after HTTP 200 (Gemini {\"error\"}, Anthropic event: error, OpenAI error / response.failed) is taken as the end of a complete answer and committed"},
      {Defect::kMalformedCallAsStop, "malformed-call-as-stop",
       "a malformed-function-call finish (Gemini MALFORMED_FUNCTION_CALL or the provider's equivalent) is read as a normal stop: the turn commits without its call",
       "anthropic",
       "Anthropic has no malformed-call finish: a scripted malformed_call goes out as an in-stream error event, which ignore-error-event covers"},
      {Defect::kNoIdleTimeout, "no-idle-timeout",
       "no idle timeout on the stream: a stalled stream is waited on forever and the run hangs"},
      {Defect::kOrphanCallAfterCancel, "orphan-call-after-cancel",
       "when the user cancels, the cancelled turn's calls that did not run are left in history without results: the next prompt's request carries orphan calls and the provider answers 400", "", "", "hold"},
      {Defect::kCancelResultsSplit, "cancel-results-split",
       "when the user cancels, the synthetic \"cancelled\" results go out in one user turn per call instead of one turn with every result (Gemini and Anthropic answer 400)", "", "", "hold"},
      {Defect::kExecuteAfterCancel, "execute-after-cancel",
       "a call that arrives after the user cancels still runs: while tools run, the calls that had not started run anyway; while the answer streams, the runtime reads on past the cancel and runs each call that arrives after it as it streams", "", "", "hold"},
      {Defect::kDoubleResultAfterCancel, "double-result-after-cancel",
       "when the user cancels while tools run, a call that ran gets both its real result and a synthetic \"cancelled\" one", "", "", "hold"},
      {Defect::kGiveUpOnRetryable, "give-up-on-retryable",
       "a failure the provider marks retryable (HTTP 429 / 5xx / 529, an in-stream overloaded or server error) ends the run with budget left (veryfront and llxprt-code fixed this)"},
      {Defect::kKeepHalfDeliveredCall, "keep-half-delivered-call",
       "when a cut turn is kept, the call whose arguments the cut left open is repaired, run and kept with it: a command the model never sent whole runs and enters history",
       "", "", "continue"},
      {Defect::kDropRanCall, "drop-ran-call",
       "when a cut turn is kept, its last call, which already ran, is left out of the kept turn and gets no result: a side effect the model never hears of",
       "", "", "continue"},
      {Defect::kContinuePastContentFilter, "continue-past-content-filter",
       "a content-filter / refusal finish is handled like a cut: the refused turn is kept and the run goes on as if the model had answered",
       "", "", "continue"},
      {Defect::kShowCutTextTwice, "show-cut-text-twice",
       "a kept cut turn's text, already shown while it streamed, is shown again when the turn is kept",
       "", "", "continue"},
      {Defect::kTruncationAsComplete, "truncation-as-complete",
       "a max-tokens finish (MAX_TOKENS, length, response.incomplete max_output_tokens, max_tokens) is read as a normal stop: the outcome does not say the answer was truncated, and a call whose arguments the token limit cut is repaired and run (openai-agents-python users report the first; MiqroForge #1094 the second)"},
      {Defect::kCollapseCallsById, "collapse-calls-by-id",
       "calls are keyed by their provider id, not their position: a call whose id an earlier call of the conversation already has (a duplicate in one answer, an id a gateway reuses in a later turn) is taken for a replay of it whatever its arguments, so it never runs and is answered with the other call's result (qwen-code's id-only replay check before PR #9436)"},
      {Defect::kDropReasoningInHistory, "drop-reasoning-in-history",
       "a turn is recorded in history without its reasoning (Anthropic thinking blocks, Responses reasoning items, Gemini thought signatures), so the next request sends its calls without it and the provider rejects it with 400: the session is dead (cline #12242, mastra #8738, dartantic #86, opencode #3077)",
       "openai-chat", "Chat Completions has no reasoning round trip: the server sends no reasoning to drop"},
      {Defect::kRetryAfterCancel, "retry-after-cancel",
       "when the user cancels during a retry's backoff, the pending retry fires anyway: its request goes out after the cancel and the turn goes on as if nobody had cancelled (devo #140, pi #566)",
       "", "", "hold"},
      {Defect::kContinueLoopAfterCancel, "continue-loop-after-cancel",
       "when the user cancels while tools run, the loop goes on: the results (real and synthetic \"cancelled\") are fed back to the model in a request the user never asked for, before the next prompt (qwen-code #10170)",
       "", "", "hold"},
      {Defect::kReplayUnknownOutcome, "replay-unknown-outcome",
       "a tool call whose outcome is unknown (it timed out, or the connection dropped before its reply) is sent to the tool again for the same model call: a tool that already took effect runs twice (claude-code's write_file sent 3 times in a public MCP fault experiment; qwen-code #9962 and smg #2441 answer \"outcome unknown\" instead)"},
      {Defect::kNoToolTimeout, "no-tool-timeout",
       "no per-call tool timeout: a tools/call that never answers is waited on forever and the run hangs (claude-code, opencode, codex and strands time out only an MCP server's start-up)"},
      {Defect::kToolErrorAsSuccess, "tool-error-as-success",
       "a tool's failure (an isError result, a JSON-RPC error) is answered to the model as a success: its text goes back as the tool's output, so the model builds on an effect that never happened"},
      {Defect::kDropFailedToolResult, "drop-failed-tool-result",
       "a call whose tool failed or whose outcome is unknown gets no function response: the next request carries the call without its result, the provider answers 400 and the session is dead"},
      {Defect::kReplayLostContext, "replay-lost-context",
       "told previous_response_not_found (the server no longer holds the response a continuation names, as after a reconnect to another node), the Responses WebSocket transport sends the continuation's new items again without previous_response_id instead of the full input: the model answers without the conversation before them (the user's prompt, the calls its tool results answer), or the provider rejects the orphan tool results with 400 and the session is dead",
       "", "", "", "websocket"},
  };
  return catalogue;
}

std::string_view defect_name(Defect defect) {
  for (const DefectInfo& info : defect_catalogue()) {
    if (info.defect == defect) return info.name;
  }
  return "unknown";
}

std::optional<Defect> defect_from_name(std::string_view name) {
  for (const DefectInfo& info : defect_catalogue()) {
    if (info.name == name) return info.defect;
  }
  return std::nullopt;
}

}  // namespace rut
