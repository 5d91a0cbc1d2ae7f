// The oracle: an independent model of the reference runtime's CORRECT policy (docs/POLICY.md),
// written apart from runtime_under_test/. Given a scenario it predicts the run's outcome, ledger,
// request count and backoff time without any network or runtime; defects are ignored. The
// explorer uses it for generated scenarios and the suite's tests cross-check hand-written expects.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/scenario.h"

namespace harness {

/// The predicted result of one correct run.
struct OracleResult {
  bool completed = false;
  /// "" when completed; else "retries_exhausted", "non_retryable", "content_filter",
  /// "invalid_request", "cancelled" or "max_turns".
  std::string error;
  /// Text of the last committed turn (its text events up to the finish, concatenated); when the
  /// run completed this is the final turn's text; "" when no turn committed.
  std::string final_text;
  /// Only when completed: the final turn ended with a max_tokens finish (a truncated answer).
  bool truncated = false;
  /// Executed tool calls aggregated by (name, args) with counts, in first-execution order; `args`
  /// always set.
  std::vector<ExpectedExecution> executions;
  int requests = 0;       ///< total model requests sent
  double waited_s = 0;    ///< total virtual seconds of backoff (idle timeouts excluded)
  /// Turns a correct client requests at least once: turn indexes 0 … turns_reached - 1 (a request
  /// past the script counts). Black-box verdicts require an agent to request each of them.
  int turns_reached = 0;
  bool operator==(const OracleResult&) const = default;
};

/// The reference runtime's cap on model turns per prompt's run (docs/POLICY.md "Retries"): the
/// 32nd turn in a row that commits with calls ends the run with error "max_turns".
inline constexpr int kReferenceMaxTurns = 32;

/// Whether the policy retries an HTTP status: 429, 500, 502, 503, 504 and 529 (docs/POLICY.md,
/// "Retryable"); 400, 401, 403, 404 and every other status end the run.
[[nodiscard]] bool retryable_status(int status);

/// Predicts the correct run of `scenario` (a session: every prompt in turn, a turn without calls
/// ending one prompt's run; a failed prompt ends the session) (its runtime settings with SCENARIO-FORMAT.md defaults:
/// max_attempts 4, backoff_s [10, 20, 60], idle_timeout_s 60, no fallback). A request past the
/// last scripted turn is modelled as the server's HTTP 500 (retryable). `max_turns`: the turns a
/// prompt's run may take (kReferenceMaxTurns for the reference runtime; nullopt for a client
/// without a cap of its own, as an external agent is judged: its cap is its business). Pure;
/// never throws on a validated scenario.
[[nodiscard]] OracleResult predict(const Scenario& scenario, std::optional<int> max_turns = kReferenceMaxTurns);

/// The recovery design `scenario` plays: its `runtime.recovery`, else "hold".
[[nodiscard]] std::string recovery_of(const Scenario& scenario);

/// The design the reference runtime follows in `scenario`: recovery_of(), except that a
/// non-streaming answer arrives whole, so `continue` with `runtime.stream: false` behaves as
/// `hold` (no call can run before its answer completes; docs/POLICY.md "Recovery designs"). A
/// defect bound to one design (DefectInfo::design) has a site exactly when this names it.
[[nodiscard]] std::string design_in_effect(const Scenario& scenario);

/// `scenario` as played under recovery design `recovery` ("hold" or "continue"; `hiccup run
/// --recovery`, docs/POLICY.md "Recovery designs"). A scenario that pins its design
/// (runtime.recovery set) or has a user interrupt (defined under hold only) is returned unchanged.
/// Otherwise runtime.recovery is set and each `expect` field written, whose value the oracle
/// predicts differently under the two designs, takes the prediction under `recovery` (a field the
/// prediction leaves unset, e.g. final_text of a failed run, is removed); fields the designs agree
/// on keep the author's value.
[[nodiscard]] Scenario played_under(const Scenario& scenario, const std::string& recovery);

/// Replaces each field `x` sets whose prediction differs between `before` and `after` (two
/// oracle_expect results for a scenario and a changed copy of it) with the `after` prediction
/// (removed when `after` leaves it unset); fields `x` leaves unset stay unset, and fields the
/// change does not move keep their written value. played_under and the black-box judge use it.
void take_changed_predictions(Expect& x, const Expect& before, const Expect& after);

/// predict() as an Expect with every field set: outcome, error (only when failed), final_text
/// and truncated (only when completed), executions, requests, waited_s.
[[nodiscard]] Expect oracle_expect(const Scenario& scenario);

}  // namespace harness
