// Black-box exploration (`hiccup explore --agent NAME | --agent-cmd CMD`): the explorer's generator,
// narrowed to what an external agent can play (its wire format, its tool with the ledger
// placeholder, its attempt budget, one prompt, no interrupt, short real waits), the oracle's
// expectations, and each case played against the agent process by run_agent_scenario and judged by
// the black-box judge. A black box races, so a failing case is re-run to confirm it; failures are
// grouped by signature (the harms and the fault that led to them), each distinct confirmed failure
// is shrunk by re-running the agent (delta debugging, minimize.h's minimize_by) and written to
// REPORT_DIR/counterexamples/ with its replay line, a known-failures pin, and whether the reference
// runtime passes the same file.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/agents/agent_runner.h"
#include "harness/agents/recipe.h"
#include "harness/explore/explorer.h"
#include "harness/explore/generators.h"
#include "harness/report/report.h"
#include "harness/scenario.h"
#include "mock_server/journal.h"

namespace harness::agents {

/// How a failing run failed: two runs fail "the same way" when their signatures are equal.
struct FailureSignature {
  /// Sorted, unique names of what the run violated: the invariants of the catalogue (the harms);
  /// when it broke none, the black-box verdicts (scenario-coverage, outcome-agreement, …); when
  /// none of those either, the `expect.<field>` names.
  std::vector<std::string> invariants;
  /// The scripted trouble the failure followed (fault_description of the attempt, e.g. "reset
  /// after a call", "status 503", "finish content_filter"), or "no fault".
  std::string fault;
  /// "at-most-once, pairing | reset after a call".
  std::string text() const;
  bool operator==(const FailureSignature&) const = default;
  auto operator<=>(const FailureSignature&) const = default;
};

/// What went wrong in the scripted attempt that `entry` played, in words, or "" when it completed
/// (or was no model request, or played no scripted attempt): "status 503" (", with Retry-After"
/// when it has one), "KIND before any event" / "after text" / "after a call" / "inside a call's
/// arguments" / "after the finish" for a fault that kept the stream from completing (KIND is the
/// catalogue name, mock::fault_name), "finish content_filter" / "finish malformed_call" for a
/// finish that does not complete the turn, "no terminal event" for a stream scripted without one.
std::string fault_description(const Scenario& scenario, const mock::JournalEntry& entry);

/// The signature of a failing black-box run: its violated names (FailureSignature::invariants)
/// and the trouble they followed: walking back from the earliest request a violation names (its
/// Violation::cause_request when set: a refusal continued is the refusal's, whatever fault the
/// request that went on from it met) to the
/// last request before it (itself included) whose attempt did not complete (fault_description),
/// preferring one that delivered a call or text when a harm of delivery was violated
/// (at-most-once, recorded-execution, history-integrity, pairing, clean-output); when no
/// violation names a request, the last such request of the run; when none precedes the anchor,
/// the first after it; when every attempt completed, the last fault that fired after its
/// attempt's finish ("error_event after the finish": an agent may still react to it); "no fault"
/// when none fired. The request the user's cancel cut or followed (cancel_point_request) counts as
/// trouble of its own on that walk when the first request a violation names comes after it:
/// "cancel after text", "cancel after a call", "cancel inside a call's arguments" (a harm on the
/// next prompt's requests follows the cancel, not a fault before it; a harm of the cancelled
/// request itself was done before the cancel). Pure; empty `invariants` when `violations` is empty.
FailureSignature failure_signature(const Scenario& scenario, const mock::Journal& journal,
                                   const std::vector<Violation>& violations);

/// Whether a run of `scenario` could be signed with `fault` (FailureSignature::fault) at all:
/// "no fault" always; otherwise some attempt scripts it (its status, its fault where it falls, an
/// abnormal finish, no terminal event) or the user's cancel is it. A shrink candidate that cannot
/// show its failure's fault cannot keep its signature, so it is rejected without an agent run.
/// Pure.
bool can_show_fault(const Scenario& scenario, const std::string& fault);

/// Whether a run of `scenario` could break every name of `invariants` (FailureSignature::invariants)
/// as far as the script alone tells: `at-most-once` and `recorded-execution` are about a tool's
/// executions (docs/DESIGN.md, the invariants), and an agent executes a tool only for a function
/// call it was delivered, so a script without any call event cannot break either. Every other name
/// is left to the runs. Used like can_show_fault: a shrink candidate that cannot is rejected
/// without an agent run. Pure.
bool can_break_invariants(const Scenario& scenario, const std::vector<std::string>& invariants);

/// Re-runs a confirmation needs to show the same signature out of `confirm` (--confirm K): K-1,
/// at least 1 (K = 1: that one run); 0 when K = 0 (no re-run: the failure counts as confirmed).
int confirmations_needed(int confirm);

/// Whether `same` of `confirm` re-runs showing the signature confirm a failure
/// (same >= confirmations_needed(confirm)).
bool is_confirmed(int same, int confirm);

/// The generation limits for `recipe`'s agent (explore::GenerateLimits): its tool (`tool_name`
/// with the ledger placeholder in `tool_command_arg`; "run_shell_command" / "command" when the
/// recipe names none, as for --agent-cmd), runtime settings fixed to its attempt budget
/// (max_attempts) with an idle timeout of 2 s (which sizes the stalls), at most 4 turns, at most min(3, budget - 1)
/// failing attempts a turn and a last attempt that completes, stalls of at most 1 s, Retry-After
/// of at most 1 s, no repeated call ids; interrupts and session prompts only when the recipe declares
/// a `cancel`, each interrupt placed while an answer streams on an attempt without a fault
/// (interrupts_while_streaming: what the server's hold can play; black_box_case checks it).
explore::GenerateLimits black_box_limits(const Recipe& recipe);

/// A shrinking step's candidate as the agent would play it (with the oracle's expect), or nullopt
/// when it is no candidate: outside `limits` (another runtime, calls that do not fit, an interrupt
/// the server's hold cannot play), not clean under lint or check_agent_scenario, or failed by the
/// reference runtime in memory (then the scenario, not the agent, would be what fails; e.g. a
/// session prompt left without a turn to answer it). Never throws.
std::optional<Scenario> shrink_candidate(const Scenario& candidate, const Recipe& recipe,
                                         const explore::GenerateLimits& limits);

/// Case `index` of `seed` for the agent (explore::generate_case within `limits`, with the oracle's
/// expect): an interrupt is kept only where the server's hold can play it against a black box (a
/// cancel while the answer streams, cancel_hold_problem silent); others are dropped, the session
/// prompt kept. Same (seed, index, recipe, limits), same case.
Scenario black_box_case(std::uint64_t seed, int index, const Recipe& recipe, const explore::GenerateLimits& limits);

struct AgentExploreOptions {
  std::uint64_t seed = 1;
  int cases = 100;                   ///< case indices 0 … cases-1
  int jobs = 2;                      ///< agent runs at once (each its own server and scratch)
  int confirm = 3;                   ///< re-runs of a failing case (--confirm K; 0: none)
  /// Wall-clock seconds: no case starts after this long, and (unless shrink_budget_s is set) each
  /// distinct failure's shrinking stops after this long (the smallest failing case found by then
  /// is kept).
  double time_budget_s = 600;
  /// Wall-clock seconds each distinct failure's shrinking stops after; 0: time_budget_s.
  double shrink_budget_s = 0;
  double agent_timeout_s = 0;        ///< per agent run; 0 = the recipe's timeout_s
  std::string report_dir = "reports";
  std::string hiccup_path = "build/hiccup";  ///< in printed command lines
  /// How the agent was named on the command line, for replay lines: `--agent NAME` or
  /// `--agent-cmd 'CMD'` (exactly one is set).
  std::string agent;
  std::string agent_cmd;
  int max_representatives = 2;       ///< failing cases of one signature confirmed at most
  int max_shrink_tries = 3000;       ///< candidates judged per failure at most (beside the time budget)
};

/// One distinct failure (a signature), confirmed or flaky.
struct DistinctFailure {
  FailureSignature signature;
  std::vector<int> cases;             ///< case indices whose first run showed the signature
  int case_index = -1;                ///< the case confirmed (flaky: the last one tried)
  int runs = 0;                       ///< runs of that case: the first and its re-runs
  int failed_runs = 0;                ///< of them, those with the signature
  bool confirmed = false;
  std::vector<std::string> other_signatures;  ///< what its re-runs showed instead, each once
  AgentCaseResult original;           ///< the case's first run
  // Confirmed failures, after shrinking:
  Scenario shrunk;                    ///< the counterexample (expect from the oracle)
  AgentCaseResult shrunk_result;      ///< a run of it that showed the signature
  explore::ScenarioSize original_size;
  explore::ScenarioSize shrunk_size;
  int shrink_tries = 0;               ///< candidates judged
  int shrink_steps = 0;               ///< edits kept
  int shrink_runs = 0;                ///< agent runs spent shrinking
  int shrink_ruled_out = 0;           ///< candidates rejected without a run: they lost the failure's fault (or every call it needs)
  int shrink_repeats = 0;             ///< candidates rejected before (the same scenario file): not run again
  bool one_minimal = false;           ///< a whole pass kept nothing (false: budget ran out)
  double shrink_ms = 0;
  /// The counterexample on the reference runtime (in memory): whether it passes there, and its
  /// violations when it does not (then the scenario, not the agent, fails).
  bool reference_passes = false;
  std::vector<Violation> reference_violations;
  std::string path;                   ///< counterexample file ("" when not written)
  std::string replay_command;         ///< `hiccup run --agent NAME FILE` / `--agent-cmd 'CMD'`
  nlohmann::json pin;                 ///< suggested harness/agents/known-failures.json entry
};

/// A signature to confirm and the cases whose first run showed it (not empty), in the order they
/// are tried (explore_agent: smallest_first).
struct ConfirmGroup {
  FailureSignature signature;
  std::vector<int> cases;
};

/// Orders each group's cases smallest first: by the units of `size(case index)` (turns + attempts +
/// events), then by index. The case confirmed is the one shrunk, so shrinking starts nearer its end.
void smallest_first(std::vector<ConfirmGroup>& groups, const std::function<explore::ScenarioSize(int)>& size);

/// Confirms each group (--confirm K = `confirm`) by re-running its first case until the verdict
/// is decided: confirmed once confirmations_needed(K) re-runs showed the signature, flaky once the
/// re-runs left cannot get there. With K = 3 that is two re-runs, and a third only when they
/// disagree. A flaky case hands over to the group's next case, at most `max_representatives` (at
/// least 1) cases a group. Every group's re-runs share one pool of `jobs` runs at a time, so no
/// run waits for another group's to end. `rerun(case index)` runs a case once (called from
/// several threads at once; must not throw). `decided(failure, cases in its group)` hears each
/// case's verdict as it lands, under the pool's lock. Returns one DistinctFailure per group, in the
/// groups' order, with signature, cases, case_index, runs (the first run and its re-runs),
/// failed_runs, confirmed and other_signatures filled (`original` and the sizes are the caller's).
std::vector<DistinctFailure> confirm_failures(const std::vector<ConfirmGroup>& groups, int confirm,
                                              int max_representatives, int jobs,
                                              const std::function<AgentCaseResult(int)>& rerun,
                                              const std::function<void(const DistinctFailure&, std::size_t)>& decided);

struct AgentExploreOutcome {
  int cases_generated = 0;
  int cases_run = 0;
  int passed = 0;                     ///< of the cases run (policy differences included)
  int differences = 0;                ///< of the passed: policy differences (DIFF)
  int failed = 0;                     ///< cases whose first run failed
  int errors = 0;                     ///< cases the harness could not run (harness_error)
  int internal_errors = 0;            ///< of them, hiccup's own exceptions (exit 5)
  bool stopped_by_time_budget = false;
  std::vector<DistinctFailure> failures;  ///< confirmed, by first case index
  std::vector<DistinctFailure> flaky;     ///< not confirmed, by first case index
  /// [index, FNV-1a 64 of the generated scenario's file text] per generated case: the same seed
  /// and cases give the same list whatever the agent does.
  std::vector<std::pair<int, std::string>> case_digests;
  std::string digest;                 ///< FNV-1a 64 over the "index digest" lines
  double wall_ms = 0;
  /// 0 nothing confirmed, 1 a confirmed failure or a harness error, 5 an internal error.
  int exit_code() const;
};

/// Runs the black-box exploration of `recipe`'s agent (its provider is the wire format of every
/// case; for --agent-cmd the caller sets it from --provider), writing progress lines to `log` and
/// report events to `listener` (when not null). Never throws for what the agent does; a report
/// file that cannot be written throws ReportWriteError from the listener.
AgentExploreOutcome explore_agent(const Recipe& recipe, const AgentExploreOptions& options, std::ostream& log,
                                  ReportListener* listener = nullptr);

/// The one-line note every black-box exploration report carries: its verdicts come from real
/// processes and real time, so they may vary between runs; and whether failures were re-run
/// (`confirm`, --confirm K: 0 none, else K).
std::string black_box_note(int confirm);

}  // namespace harness::agents
