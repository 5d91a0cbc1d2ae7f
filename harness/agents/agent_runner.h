// The external-agent runner: plays one scenario against an unmodified agent CLI treated as a black
// box. Per scenario: a mock server with real timings, a scratch HOME/TMPDIR/workdir with the
// recipe's settings files, the agent run headless with the prompt and a timeout, then a verdict
// from what can be seen from outside — the ledger (real tool executions), the server's journal and
// the exit code. Invariants that need the runtime's insides are reported as not applicable.
#pragma once

#include <string>
#include <vector>

#include "harness/agents/ledger.h"
#include "harness/agents/recipe.h"
#include "harness/agents/subprocess.h"
#include "harness/invariants.h"
#include "harness/report/report.h"
#include "harness/scenario.h"
#include "mock_server/journal.h"

namespace harness::agents {

/// A check as it applies to external agents: its name and why it is n/a, or what it judges.
struct BlackBoxCheck {
  std::string name;
  std::string doc;
};

/// Verdicts only black-box runs get, on top of the invariant catalogue: scenario-coverage (every
/// turn a correct client reaches was requested), outcome-agreement (where a correct client
/// completes, the agent reports success and shows the final text) and liveness (it exits within
/// its timeout).
const std::vector<BlackBoxCheck>& black_box_verdicts();

/// Invariants and expect fields no black-box run can judge, each with the reason. Reported as
/// "n/a", never as passed.
const std::vector<BlackBoxCheck>& not_applicable_checks();

/// The names of not_applicable_checks(), in order.
std::vector<std::string> not_applicable_invariants();

struct AgentRunOptions {
  double timeout_s = 0;        ///< wall-clock limit per run; 0 = the recipe's timeout_s
  std::string output_dir;      ///< when set: OUTPUT_DIR/SCENARIO/{stdout,stderr,ledger,journal.json}
  bool keep_scratch = false;   ///< keep the scratch folder (its path is in the result)
  bool strict = false;         ///< policy differences fail too (see AgentCaseResult::differences)
};

struct AgentCaseResult {
  Scenario scenario;
  std::string agent;                        ///< recipe name
  ProcessResult process;
  mock::Journal journal;
  std::vector<LedgerToken> ledger;
  std::vector<std::string> stray_ledger_lines;  ///< ledger lines that are not tokens
  bool completed = false;                   ///< outcome from the exit code
  std::vector<Violation> violations;        ///< invariants and applicable expect.<field> failures
  /// Policy differences, not bugs: the agent failed honestly (reported failure, broke no
  /// invariant, made at least one request) where a correct client by docs/POLICY.md would have
  /// retried and completed, so only scenario-coverage, outcome-agreement and expect.* differ.
  /// They do not fail the case unless the run is strict (then they are moved to `violations`).
  std::vector<Violation> differences;
  std::vector<std::string> not_applicable;  ///< invariant and expect.<field> names not judged
  std::string harness_error;                ///< the run could not happen (e.g. agent not installed)
  /// `harness_error` is an exception hiccup did not expect (a bug in hiccup, not the agent's doing):
  /// never a verdict, `hiccup run` exits 5 (README, exit codes).
  bool internal_error = false;
  std::string output_tail;                  ///< last lines of the agent's stderr and stdout
  /// What the agent showed: the recipe's output stream (stdout unless it says stderr), in full.
  std::string output;
  std::string scratch_dir;
  double wall_ms = 0;                       ///< whole case: server, agent, judging
  /// The review transcript (transcript.h's shape) judge_agent_run builds: requests, executions,
  /// outcome; null before judging.
  nlohmann::json transcript;
  bool passed() const { return harness_error.empty() && violations.empty(); }
  /// Sorted, unique invariant names of the violations and differences (what known-failure pins
  /// assert).
  std::vector<std::string> violated() const;
};

/// Problems that make `scenario` unplayable for `recipe`'s agent (lower-case messages, each
/// naming a JSON pointer): a provider the agent does not speak, or a `{{ledger}}` placeholder
/// outside the recipe's shell tool command argument.
std::vector<std::string> check_agent_scenario(const Scenario& scenario, const Recipe& recipe);

/// Judges one finished black-box run (pure; exposed for tests) against a correct client's run as
/// the oracle predicts it with the recipe's attempt budget. `cap_message` is non-empty when the
/// agent was killed at its timeout (a liveness violation; coverage and outcome are then not judged).
/// The journal's real times judge Retry-After.
void judge_agent_run(AgentCaseResult& result, const Recipe& recipe, const std::string& cap_message,
                     bool strict = false);

/// The tool executions of a ledger of tokens as the invariant checkers see them: per token the
/// journal entry that played its (turn, attempt) as `request_seq` (-1 when none did), its call
/// index, and the call's name and args as scripted ("?" when the script has no such call).
std::vector<rut::LedgerEntry> token_executions(const std::vector<LedgerToken>& ledger, const mock::Journal& journal,
                                               const Scenario& scenario);

/// judge_agent_run with the executions given directly instead of read from `result.ledger`
/// (a test suite records its tool executions over `hiccup serve`'s control API, see
/// harness/serve/session_registry.h). Same verdicts, names and messages.
void judge_black_box(AgentCaseResult& result, const Recipe& recipe, const std::vector<rut::LedgerEntry>& executions,
                     const std::string& cap_message, bool strict = false);

/// Runs `scenario` against `recipe`'s agent and judges it. The agent runs in SCRATCH/work with
/// HOME=SCRATCH/home and TMPDIR=SCRATCH/tmp; its environment is exactly PATH, HOME, TMPDIR, LANG,
/// HICCUP_BASE_URL, HICCUP_PROMPT, HICCUP_LEDGER, HICCUP_SCENARIO, HICCUP_MODEL (when the recipe
/// names one), HICCUP_INVOKE_DIR (hiccup's working directory), the provider's base-URL variable
/// (gemini: GOOGLE_GEMINI_BASE_URL) and the recipe's `env`. Never throws for agent failures;
/// a harness failure (server cannot bind, agent binary missing) is set in `harness_error`.
AgentCaseResult run_agent_scenario(const Scenario& scenario, const Recipe& recipe,
                                   const AgentRunOptions& options);

/// The report form of a result: violations, wall time, and extra fields agent, exit_code,
/// exit_meaning, outcome, requests, ledger, not_applicable, timed_out.
ReportCase to_report_case(const AgentCaseResult& result, const Recipe& recipe, std::string classname);

}  // namespace harness::agents

namespace harness::agents {

/// `hiccup run --agent NAME | --agent-cmd COMMAND PATH...`: checks every scenario is playable,
/// runs each against the agent, streams the console report and writes junit.xml, summary.json and
/// each case's agent output (REPORT_DIR/agents/AGENT/SCENARIO/) under `report_dir`.
/// `provider_override` is `--provider` ("" when not given): it must be the agent's own format.
/// Returns the CLI exit code: 0 all passed, 1 some verdict failed (or the agent is not installed),
/// 2 a --provider the agent does not speak, 3 invalid input, 5 a case met an internal error (an
/// exception in hiccup: printed on stderr and left out of the verdicts and reports, never a FAIL).
int run_agent_command(const std::vector<Scenario>& scenarios, const std::string& agent,
                      const std::string& agent_cmd, AgentRunOptions options, const std::string& report_dir,
                      const std::string& provider_override = "");

}  // namespace harness::agents
