// The invariant checkers (DESIGN.md "The invariants"): named checks over the scenario, the
// runtime's result and the server's journal, each returning violations as data. Plus the checks of
// a scenario's `expect` fields, reported as `expect.<field>` violations.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario.h"
#include "harness/scripted_tools.h"
#include "mock_server/journal.h"
#include "runtime_under_test/runtime.h"

namespace harness {

/// One broken promise. `invariant` is a catalogue name or "expect.<field>"; `request` is the
/// journal index it points at (-1 when none), with that request's turn and attempt.
struct Violation {
  std::string invariant;
  std::string message;  ///< says what was expected, what was seen, and where
  int request = -1;
  int turn = -1;
  int attempt = -1;
  /// The request whose answer the violation follows from, when it is an earlier one than
  /// `request` (honest-outcome's refusal continued: `request` goes on from this one's
  /// content-filter finish); -1 when it is `request`'s own. A black-box failure signature anchors
  /// on it (agents/agent_explorer.h). Not written to reports.
  int cause_request = -1;
  bool operator==(const Violation&) const = default;
};

nlohmann::json violation_to_json(const Violation& v);

/// The reason of the first finish event among the events journal entry `e` delivered of the
/// scripted attempt it played (its turn and script_attempt in `s`), if any.
std::optional<mock::FinishReason> delivered_finish(const Scenario& s, const mock::JournalEntry& e);

/// " [request R, turn T, attempt A]" with only the known parts; "" when no request.
std::string violation_location(const Violation& v);

struct InvariantInfo {
  std::string_view name;
  std::string_view doc;
};

/// The invariants: DESIGN.md's eight in its order, then no-unchanged-content-filter-retry and
/// liveness.
const std::vector<InvariantInfo>& invariant_catalogue();

/// What the checkers look at. `cap_message` is non-empty when the run hit a harness cap.
struct Evidence {
  const Scenario& scenario;
  const rut::RunResult& run;
  const mock::Journal& journal;
  int max_attempts = 4;
  std::string cap_message;
  /// The run waited in real time (an external agent): the journal's arrived_ms/answered_ms are
  /// compared with Retry-After instead of the runtime's retry events.
  bool real_time = false;
  /// The cap was reached while the runtime waited on a silent stream (the runner's watchdog): a
  /// `liveness` violation instead of a `bounded-retries` one.
  bool hung = false;
  /// The run's outcome can say it was truncated (RunResult::truncated; the reference runtime's
  /// does). An external agent's exit code and output cannot: false for black boxes, where only
  /// "a call the token limit cut never runs" is judged of truncation.
  bool reports_truncation = true;
  /// The tools' own record of each tools/call (ScriptedToolPort, `turn` filled; null or empty when
  /// the scenario has no tools or the tool side is not observed).
  const std::vector<ToolCallRecord>* tool_calls = nullptr;
  /// A real-time run's cancel (an external agent's SIGINT): the journal entries and ledger
  /// entries (in their order) that had begun when it went out; -1 for a run in virtual time, where
  /// the cancel point alone says what comes after it. A request or an execution that began before
  /// the user's cancel is never judged as coming after it.
  int requests_before_cancel = -1;
  int executions_before_cancel = -1;
};

/// Slack in ms allowed when judging a real-time gap against Retry-After (clock and scheduling
/// granularity; the client starts its wait after our last byte, so the gap errs long, not short).
inline constexpr double kRetryAfterSlackMs = 20;

/// Every invariant, in catalogue order.
std::vector<Violation> check_invariants(const Evidence& evidence);

/// The request the scenario's mid-stream interrupt (after_event e of attempt a of turn t) cancels:
/// the journal index of the first request that played attempt a of turn t, when its scripted
/// attempt reaches event e (no fault before it; a stall shorter than the idle timeout only
/// delays); -1 when there is none. Read from the scenario and journal only.
int interrupted_request(const Scenario& scenario, const std::vector<mock::JournalEntry>& journal);

/// The request during or after whose answer the scenario's interrupt fires: for after_event the
/// interrupted_request; for after_calls k the turn's first completed request, when it delivered
/// more than k calls; for before_attempt a the turn's first request played as attempt a - 1 that
/// did not complete (the backoff after it is where the cancel lands). -1 when there is none.
/// Read from the scenario and journal only.
int cancel_point_request(const Scenario& scenario, const std::vector<mock::JournalEntry>& journal);

/// Whether `contents` (a request's history, the neutral view) keeps, as its `cut.turn`-th model
/// turn, whole units of what the cut attempt `cut` delivered (a prefix of its text, and in order
/// calls it delivered whole; at least one of them): the `continue` recovery design's kept turn.
bool keeps_cut_turn(const nlohmann::json& contents, const mock::JournalEntry& cut);

/// The text of the cut turn a runtime kept from the failed attempt `journal[i]` (the `continue`
/// design), or nullopt when it kept none, or gave it up later (a later model request's history no
/// longer starts that turn with the kept text): the text of model turn `journal[i].turn` in the next
/// model request's history when that request asks for the next turn, else, when no request
/// follows, in `final_history` (null for a black box, whose history is unknown); when the next
/// request asks for the same turn, the text the runtime merged into the cut turn it had kept
/// before (a failed continuation's text appended to it: qwen-code; with the start that repeated
/// the kept text's end, which the turn leaves out but the user was shown). One definition for
/// clean-output and the black-box judge's shown-text check.
std::optional<std::string> kept_cut_text(const mock::Journal& journal, std::size_t i, const nlohmann::json& final_history);

/// Whether the completed attempt `journal[i]` was thrown away by the runtime: the next model
/// request asks for its turn (or an earlier one) again, so the conversation did not keep that
/// answer (opencode retries a stream cut after its finish was delivered, before `data: [DONE]`).
/// False for an attempt that did not complete, or that no model request follows.
bool answer_discarded(const mock::Journal& journal, std::size_t i);

/// Whether the runtime merged what attempt `journal[i]` delivered into the model turn it had kept
/// before (qwen-code's continuation: merged_continuation in invariants.cpp; docs/DESIGN.md
/// "Recovery designs"): the next model request asks for `journal[i].turn` again with that turn
/// grown by the delivery.
bool continuation_merged(const mock::Journal& journal, std::size_t i);

/// The start of what attempt `journal[i]` delivered that repeated the end of the turn it was
/// merged into, and that the runtime left out of that turn (qwen-code drops such a repeat from
/// the history, though the user may have seen it stream); "" when it was merged whole or not
/// merged.
std::string merged_repeat(const mock::Journal& journal, std::size_t i);

/// Every `expect` field present in the scenario.
std::vector<Violation> check_expect(const Evidence& evidence);

}  // namespace harness
