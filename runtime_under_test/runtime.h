// The reference agent runtime's public face: its settings, the result of one run, and the entry
// point. One run = one prompt driven to an outcome: stream a turn, commit it when its stream
// completes, execute its committed calls, send their function responses, until a turn has no calls
// or the run fails. The policy is DESIGN.md's "reference runtime's correct policy", pinned further
// in docs/POLICY.md; seeded defects (defects.h) bend it at one site each.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime_under_test/defects.h"
#include "runtime_under_test/env.h"
#include "runtime_under_test/tool_port.h"

namespace rut {

/// Who consumes the streaming turn's events; both handle Retry explicitly.
enum class ConsumerKind { kHeadless, kSubagent };

/// A scripted user interrupt (docs/POLICY.md "Cancellation"): a virtual point, not a signal. With
/// `after_event` the user cancels once part `after_event` (0-based, text and call parts in
/// delivered order) of attempt `attempt` of model turn `turn` has been received; with
/// `after_calls` once that many of turn `turn`'s committed calls have run; with `before_attempt`
/// halfway through the backoff before attempt `before_attempt` (>= 1) of turn `turn` (the pending
/// retry is dropped). With `after_event` and `after_fragment`, part `after_event` is a call and the
/// user cancels inside it, once its start and `after_fragment` of its argument fragments have
/// been received (formats that stream arguments in pieces; DecodedChunk::open_call_fragments).
/// Fires at most once.
struct UserInterrupt {
  int turn = 0;
  int attempt = 0;
  std::optional<int> after_event;
  std::optional<int> after_calls;
  std::optional<int> before_attempt;
  std::optional<int> after_fragment;
};

/// What the runtime does when an attempt fails after it delivered content (docs/POLICY.md
/// "Recovery designs"; both are legitimate, the invariants hold under each).
enum class Recovery {
  /// Calls run only once their attempt completes; a failed attempt's content is discarded and the
  /// turn is retried (the default).
  kHold,
  /// Each call runs as soon as it is complete in the stream; when a streamed attempt fails after
  /// delivering a whole call (or text, with a continuation prompt), the delivered whole units are
  /// kept as the turn, the results of the calls that ran are sent, and the run goes on.
  kContinue,
};

/// Settings of one run (SCENARIO-FORMAT.md "Runtime"). Seconds are virtual seconds.
struct Config {
  /// Wire format spoken (rut::codec_names(): "gemini", "openai-chat", "openai-responses",
  /// "anthropic"); run_agent throws std::invalid_argument for an unknown one.
  std::string provider = "gemini";
  /// Streaming (true) or the provider's non-streaming endpoint (false; SCENARIO-FORMAT.md
  /// `runtime.stream`).
  bool stream = true;
  std::string model;                           ///< "" = the provider's default model
  int max_attempts = 4;                        ///< attempts per turn, first included (>= 1)
  std::vector<double> backoff_s = {10, 20, 60};  ///< wait before retry n; the last step repeats
  std::optional<std::string> fallback_model;   ///< model for the one retry after a content filter
  double idle_timeout_s = 60;                  ///< a stream silent this long has failed
  DefectSet defects;
  ConsumerKind consumer = ConsumerKind::kHeadless;
  int max_turns = 32;                          ///< safety cap on model turns per run; beyond
                                               ///< it the run fails with error "max_turns"
  /// How long a call sent through the tool port (tool_port.h) is waited on, in virtual seconds
  /// (docs/POLICY.md "Tools"): a tool that has not answered by then ends as "outcome unknown".
  /// 60 s is the MCP TypeScript SDK's DEFAULT_REQUEST_TIMEOUT_MSEC (src/shared/protocol.ts).
  double tool_timeout_s = 60;
  /// Tool names declared in each request's `tools[0].functionDeclarations` (open object schema);
  /// empty (default): no `tools` member. Any called name executes either way.
  std::vector<std::string> tool_names;
  /// The user's interrupt, if any: it ends the current prompt's run with error "cancelled".
  std::optional<UserInterrupt> interrupt;
  Recovery recovery = Recovery::kHold;
  /// Under kContinue: a user message `{role:"user", parts:[{text}]}` added after each kept cut
  /// turn (and its function responses), as HagiCode's coordinator does; it also lets a cut turn
  /// of text only be kept. nullopt: none.
  std::optional<std::string> continuation_prompt;
};

/// One tool execution the runtime decided on (one per model call it ran, whether simulated or
/// sent through the tool port): the ledger of side effects as the runtime knows them.
struct LedgerEntry {
  std::string name;
  nlohmann::json args = nlohmann::json::object();
  int request_seq = 0;   ///< which request (0-based, in send order) delivered the call
  int call_index = 0;    ///< the call's position among that attempt's calls
  /// The id history gives the call: as delivered unless another call of the conversation has it
  /// (docs/POLICY.md "Call ids"), or the runtime's own "call-SEQ-INDEX" when none was sent.
  std::string call_id;
  bool operator==(const LedgerEntry&) const = default;
};

/// The outcome of one run plus everything the harness needs to judge it.
struct RunResult {
  bool completed = false;
  /// "" when completed; else "retries_exhausted", "non_retryable", "content_filter" or
  /// "invalid_request" (SCENARIO-FORMAT.md "Expect"), "cancelled" (the user interrupted the last
  /// prompt's run) or "max_turns" (the turn cap, `max_turns`).
  std::string error;
  std::string error_message;     ///< human-readable, for reports
  std::string final_text;        ///< text of the last model turn as shown to the user
  /// Only with `completed`: the last model turn ended with a max-tokens finish, so `final_text` is
  /// a truncated answer (docs/POLICY.md "Truncation").
  bool truncated = false;
  std::string shown_output;      ///< all text shown to the user during the run, in order
  std::vector<LedgerEntry> ledger;
  /// Runtime events in order, each a JSON object with "type" in: "request" {seq, turn, attempt,
  /// model}, "content" {text}, "tool_call" {name, args, id}, "retry" {turn, attempt, error,
  /// wait_s}, "finished" {reason}, "error" {code, message}, "commit" {turn}, "keep" {turn, attempt,
  /// seq, error, wait_s} (continue: a cut turn kept), "execute"
  /// {name, args, request_seq, call_index}, "prompt" {index} (a session's prompt starts),
  /// "cancel" {turn, attempt?, seq?, after_event?, after_calls?, before_attempt?, waited_s?,
  /// cancelled_calls} (the user interrupted),
  /// "tool_result" {name, request_seq, call_index, end, is_error?, sent} (a call sent through the tool
/// port ended: end as tool_end_name, sent = how many times it went to the tool),
/// "outcome" {completed, error, truncated?}; "finished" carries truncated (and dropped_call,
  /// the name of a call the limit cut) after a max-tokens finish.
  std::vector<nlohmann::json> events;
  nlohmann::json final_history = nlohmann::json::array();  ///< history `contents` at the end
  int requests = 0;              ///< requests sent
  double waited_s = 0;           ///< virtual seconds spent in backoff (not idle timeouts)
};

/// Runs `prompt` to an outcome against whatever `transport` reaches. A call whose name `tools`
/// offers is sent through it (docs/POLICY.md "Tools"); any other call, and every call when `tools`
/// is null, is simulated. Deterministic: same inputs, same result. Exceptions thrown by the
/// transport, the tool port or the clock (e.g. a harness cap) propagate.
RunResult run_agent(const Config& config, const std::string& prompt, IClock& clock,
                    IRandom& random, ITransport& transport, IToolPort* tools = nullptr);

/// A session: `prompts` (at least one) in order over one history. Prompt i > 0 is appended as a
/// user turn once prompt i - 1's run completed; the session ends at the first prompt whose run
/// fails (the result is that run's outcome) or after the last one. With several prompts each
/// prompt's run logs a "prompt" {index} event first. run_agent(c, p, …) is run_session(c, {p}, …).
RunResult run_session(const Config& config, const std::vector<std::string>& prompts, IClock& clock,
                      IRandom& random, ITransport& transport, IToolPort* tools = nullptr);

}  // namespace rut
