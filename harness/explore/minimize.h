// Minimal counterexamples: a delta-debugging pass that runs after RapidCheck's shrinking. It deletes
// turns, attempts, events, faults and slicing one at a time, resets runtime settings and simplifies
// texts, arguments and fault fields, keeping each edit that leaves a scenario that still lints clean
// and still breaks every invariant of the original failure, until a whole pass keeps nothing. The
// result is then 1-minimal (Zeller & Hildebrandt 2002, "Simplifying and isolating failure-inducing
// input"): deleting any one turn, attempt, event, fault or slicing gives a case that no longer fails
// those invariants. Every edit is enumerated from the scenario model in one place (`deletions`,
// `simplifications`), so a new scenario field gets its edits there.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/invariants.h"
#include "harness/runner.h"
#include "harness/scenario.h"

namespace harness::explore {

/// One candidate edit of a scenario.
struct Edit {
  /// What the edit removes or simplifies; the first five are the deletions of 1-minimality.
  enum class Kind { kTurn, kAttempt, kEvent, kFault, kSlicing, kInterrupt, kSession, kRuntime, kSimplify };
  Kind kind = Kind::kSimplify;
  std::string pointer;      ///< RFC 6901 pointer into the scenario file of what is edited
  std::string description;  ///< e.g. "delete event" or "args → {}"
  /// Applies the edit to a copy of the scenario it was enumerated from.
  std::function<void(Scenario&)> apply;
};

/// "turn", "attempt", "event", "fault", "slicing", "interrupt", "session", "runtime", "simplify".
std::string_view edit_kind_name(Edit::Kind kind);

/// Every single deletion of `scenario`: in a session, the first prompt with turns 0..t (the next
/// prompt becomes `prompt`) and the last session prompt with turns t.. (for every t); then each
/// turn, each attempt, each event (a fault after it moves
/// back one event, so it stays after the same events), each fault, each slicing, the user's
/// interrupt, each session prompt; in that order. A deleted turn, attempt or event before the
/// interrupt's point moves the point back with it; deleting the turn, attempt or event it points
/// at deletes the interrupt too.
std::vector<Edit> deletions(const Scenario& scenario);

/// Runs of units to delete at once, for a judge whose every candidate costs real runs (a black
/// box): with 3 or more turns, all turns from k on and all turns before the last k (k = 1..n-1,
/// alternately), then each turn between the first and the last alone (with 2 turns, each turn
/// alone); per turn with 2 or more failed attempts, all of them and each half (its last
/// attempt kept); when 2 or more attempts have events after a fault that ends their stream (any
/// fault but a stall or a malformed frame, which go on, and a cut, which sends the first bytes of
/// the next frame; after a partly sent call, the events after it), all those events at once
/// (never delivered: the agent sees the same bytes); per attempt, the events
/// after its fault (2 or more) and, with 4 or more events, each half. Each is the single deletions of deletions() applied from the highest index down, so
/// faults and the user's interrupt follow as they do there.
std::vector<Edit> coarse_deletions(const Scenario& scenario);
/// For a black box, before coarse_deletions(): with 2 or more failed attempts in the whole
/// scenario (every attempt of a turn but its last), for each failed attempt the candidate that
/// deletes every other failed attempt of every turn (each turn's last attempt kept). A failure
/// usually needs one fault, and a failed attempt is what costs a real agent the most time (its
/// backoff before the retry: 5 s for gemini-cli after an HTTP error); a judge that rules out a
/// candidate whose failure's fault is gone (agent_explorer.h: can_show_fault) runs only the ones
/// that keep an attempt with that fault. Each is the single deletions of deletions() applied
/// from the highest index down.
std::vector<Edit> focus_deletions(const Scenario& scenario);
/// Every single simplification of `scenario`: each set runtime setting reset (defects kept), then
/// per attempt its Retry-After dropped, a max_tokens finish made `stop`, a fault's after_fragment
/// dropped and its numeric fields reset to their defaults, each text replaced by "ok", each call's
/// args by {}, its id and its argument fragments by the defaults.
std::vector<Edit> simplifications(const Scenario& scenario);

/// The invariants a counterexample must keep breaking: the catalogue invariants among `violations`,
/// or, when only `expect.<field>` checks failed, those names.
std::set<std::string> failure_target(const std::vector<Violation>& violations);

/// Whether `violations` break every name of `target` (and `target` is not empty).
bool breaks_all(const std::vector<Violation>& violations, const std::set<std::string>& target);

/// Runs candidates and judges whether they still fail: a candidate fails when, with expect from the
/// oracle, its run breaks every invariant of `target` and it lints clean (it is written and parsed
/// back without problems). With seeded defects (`options.extra_defects` or the candidate's
/// runtime.defects) the defect must be the cause: the same candidate on the runtime without them
/// must pass. Otherwise an edit could keep the failure by making a case the reference runtime fails
/// too (e.g. an answer without text, which the next prompt's request carries as an empty turn that
/// Anthropic rejects), and the counterexample of a defect would no longer show the defect. A
/// candidate the harness cannot run does not fail.
class FailureJudge {
 public:
  FailureJudge(RunOptions options, std::set<std::string> target)
      : options_(std::move(options)), target_(std::move(target)) {}
  /// The candidate's run when it fails as above (its scenario holds the oracle's expect); nullopt
  /// otherwise.
  std::optional<CaseResult> fails(const Scenario& candidate);
  /// Whether `candidate` (expect already set) passes on the runtime without seeded defects; true
  /// when no defect is seeded (nothing to compare with).
  bool passes_without_defects(const Scenario& candidate) const;
  const std::set<std::string>& target() const { return target_; }
  int runs() const { return runs_; }
  /// Only candidates under this recovery design ("hold" or "continue"; "" = any) still fail: an
  /// exploration fixed to one design (ExploreOptions::recovery) keeps its counterexamples in it.
  void keep_recovery(std::string recovery) { recovery_ = std::move(recovery); }
  /// `hiccup explore --from`: only candidates that keep `base`'s conversation still fail: as many
  /// turns as it, each ending with its turn's last attempt unchanged (the answer the recording
  /// holds), and every text and call's arguments among `base`'s (never replaced by "ok" or {}).
  /// What was drawn onto it (inserted attempts, their events and faults) and the base's own
  /// earlier attempts may still be deleted and simplified.
  void keep_content(const Scenario& base);

 private:
  bool content_kept(const Scenario& candidate) const;
  std::set<std::string> texts_;  // with keep_content: the base's texts
  std::set<std::string> args_;   // with keep_content: the base's calls' arguments (dump())
  std::vector<mock::Attempt> answers_;  // with keep_content: each base turn's last attempt
  bool keep_content_ = false;
  RunOptions options_;
  std::set<std::string> target_;
  std::string recovery_;
  int runs_ = 0;
};

/// The deletions of `scenario` whose result still fails under `judge`; empty means `scenario` is
/// 1-minimal.
std::vector<Edit> failing_deletions(const Scenario& scenario, FailureJudge& judge);

struct MinimizeResult {
  Scenario scenario;         ///< the smallest failing scenario found, expect from the oracle
  CaseResult result;         ///< its run
  int tries = 0;             ///< candidate runs
  int accepted = 0;          ///< edits kept
  /// A whole pass over every deletion and simplification kept nothing: the result is 1-minimal.
  bool one_minimal = false;
};

/// Minimizes `start` (whose run `start_result` fails under `judge`) by deleting and simplifying as
/// described above, spending at most `max_tries` candidate runs. Deterministic: the same start and
/// judge give the same result.
MinimizeResult minimize(const Scenario& start, const CaseResult& start_result, FailureJudge& judge,
                        int max_tries = 3000);

/// Whether a candidate still fails, for minimize_by: the scenario to keep (the candidate as it was
/// judged, e.g. with the oracle's expect) when it does, nullopt when it does not. Any judge fits:
/// FailureJudge runs the reference runtime; the black-box explorer (harness/agents/agent_explorer.h)
/// re-runs an agent process and keeps a candidate that fails the same way in 2 of 3 runs.
using StillFails = std::function<std::optional<Scenario>(const Scenario& candidate)>;

/// `fails` with a memory of its rejections: a candidate whose scenario file (write_scenario) it
/// rejected before is rejected again without asking it, and `repeats` counts those answers. For
/// judges whose verdict costs agent runs (seconds each): minimize_by meets a candidate a second time
/// when the next pass reaches the edits after a pass's last kept one (tried on the same scenario
/// already), and when a run of units is a single unit. A flaky judge's rejection stands, as its
/// second verdict on the same file would be no better evidence. Kept candidates are not remembered
/// (the scenario moves on). Not thread-safe; `repeats` must outlive the returned judge.
StillFails remember_rejections(StillFails fails, int& repeats);

/// What minimize_by found.
struct MinimizeByResult {
  Scenario scenario;         ///< the smallest failing scenario found (the last one `fails` returned, else start)
  int tries = 0;             ///< candidates judged
  int accepted = 0;          ///< edits kept
  bool one_minimal = false;  ///< a whole pass kept nothing (false when the budget or `stop` ended it)
};

/// The delta-debugging passes of minimize() with any judge: deletions then simplifications of
/// `start` (assumed failing), each candidate judged by `fails`, at most `max_tries` of them, and
/// none once `stop` (when given) returns true (a wall-clock budget). With `black_box` (every
/// candidate costs agent runs), the first pass begins with focus_deletions(), then
/// coarse_deletions(), which reach a small case in fewer candidates (each phase's list walked
/// from its start), and no simplification is tried: texts, arguments and fault fields stay
/// as generated, and the result is 1-minimal in deletions (a whole pass of them kept nothing).
/// Deterministic when `fails` is. `kept`, when given, is told each edit kept, with the scenario it
/// left (for progress lines: a black box's shrinking can take minutes).
MinimizeByResult minimize_by(const Scenario& start, const StillFails& fails, int max_tries,
                             const std::function<bool()>& stop = {}, bool black_box = false,
                             const std::function<void(const Edit&, const Scenario&)>& kept = {});

}  // namespace harness::explore
