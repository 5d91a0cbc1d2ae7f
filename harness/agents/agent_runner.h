// The external-agent runner: plays one scenario against an unmodified agent CLI treated as a black
// box. Per scenario: a mock server with real timings, a scratch HOME/TMPDIR/workdir with the
// recipe's settings files, the agent run headless with the prompt and a timeout, then a verdict
// from what can be seen from outside — the ledger (real tool executions), the server's journal and
// the exit code. Invariants that need the runtime's insides are reported as not applicable.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/agents/judge.h"
#include "harness/agents/ledger.h"
#include "harness/agents/recipe.h"
#include "harness/agents/subprocess.h"
#include "harness/invariants.h"
#include "harness/report/report.h"
#include "harness/scenario.h"
#include "mock_server/journal.h"
#include "mock_server/mcp/tool_script.h"

namespace harness::agents {

struct AgentRunOptions {
  double timeout_s = 0;        ///< wall-clock limit per run; 0 = the recipe's timeout_s
  std::string output_dir;      ///< when set: OUTPUT_DIR/SCENARIO/{stdout,stderr,ledger,journal.json,scenario.json}
  bool keep_scratch = false;   ///< keep the scratch folder (its path is in the result)
  bool strict = false;         ///< policy differences fail too (see AgentCaseResult::differences)
};

/// The agents a scenario was written for: each name of `agent_names` it is named for
/// ("AGENT-…") or tagged with. A scenario written for some agents is theirs alone: another CLI,
/// even one that speaks the same format, does not play it (`hiccup matrix` leaves its cell empty,
/// `hiccup run --agent` skips it with a note). Empty: written for no agent in particular.
std::set<std::string> scenario_owners(const Scenario& scenario, const std::set<std::string>& agent_names);

/// The agent names scenario_owners looks for: the bundled recipes' (default_recipes_dir()) and
/// `also` (the agents of this run, which may be recipes given by path).
std::set<std::string> known_agent_names(const std::vector<std::string>& also = {});

/// When `scenario` was written for other agents only (scenario_owners, not `agent` among them):
/// the note saying so, e.g. "written for agent codex (named codex-…), not for gemini-cli"; else
/// nullopt (the agent may play it, if check_agent_scenario finds no problem).
std::optional<std::string> written_for_others(const Scenario& scenario, const std::string& agent,
                                              const std::set<std::string>& agent_names);

/// Problems that make `scenario` unplayable for `recipe`'s agent (lower-case messages, each
/// naming a JSON pointer): a provider the agent does not speak, a `{{ledger}}` placeholder
/// outside the recipe's shell tool command argument, a `session` or `interrupt` for a recipe
/// without `cancel`, or an interrupt the runner cannot hold (cancel_hold_problem).
std::vector<std::string> check_agent_scenario(const Scenario& scenario, const Recipe& recipe);

/// The tools `scenario` offers `recipe`'s agent over MCP: its `tools` entries but the one that
/// scripts the shell tool's ledger command (named like the recipe's shell tool, or like a call
/// holding {{ledger}}). Empty: the run registers no MCP server (the recipe's `mcp` is not applied).
mock::mcp::ToolScript mcp_tools(const Scenario& scenario, const Recipe& recipe);

/// When `recipe`'s binary (agent_binary) is missing or not executable: the message saying so and
/// naming the command that installs it, e.g. "agent qwen-code is not installed: PATH is missing or
/// not executable; run scripts/install_agents.sh qwen-code" (prefixed with HICCUP_AGENT_CACHE=…
/// when that variable chose the folder). nullopt when it is installed or the recipe has no binary
/// (--agent-cmd).
std::optional<std::string> agent_not_installed(const Recipe& recipe);

/// What one launch of a recipe's agent is given (the variables {prompt}, {base_url}, … of recipe.h).
struct AgentLaunchInputs {
  std::string prompt;         ///< {prompt}, HICCUP_PROMPT
  std::string base_url;       ///< {base_url}, HICCUP_BASE_URL and the provider's base-URL variable
  std::string provider;       ///< wire format whose base-URL variable is set (gemini: GOOGLE_GEMINI_BASE_URL)
  std::string scenario_name;  ///< HICCUP_SCENARIO
  double timeout_s = 0;       ///< the process's wall-clock limit; 0 = the recipe's timeout_s
  std::string mcp_url;        ///< {mcp_url}: the run's MCP endpoint ("" when the scenario offers no MCP tools)
};

/// A new scratch folder (under $HICCUP_SCRATCH_DIR, else /tmp) for one agent run. Throws
/// std::runtime_error when it cannot be made.
std::string make_agent_scratch();

/// Prepares one run of `recipe`'s agent in `scratch` (from make_agent_scratch) as
/// run_agent_scenario runs it: makes SCRATCH/home, SCRATCH/tmp, SCRATCH/work, writes the recipe's
/// home_files into SCRATCH/home, and returns the process: the recipe's argv with its variables
/// expanded, the environment documented at run_agent_scenario (HICCUP_LEDGER = SCRATCH/ledger),
/// cwd SCRATCH/work, output to SCRATCH/stdout and SCRATCH/stderr. The caller may change cwd and
/// the output paths. Throws std::runtime_error when a file cannot be written.
ProcessSpec prepare_agent_launch(const Recipe& recipe, const std::string& scratch, const AgentLaunchInputs& inputs);

/// Runs `scenario` against `recipe`'s agent and judges it. The agent runs in SCRATCH/work with
/// HOME=SCRATCH/home and TMPDIR=SCRATCH/tmp; its environment is exactly PATH, HOME, TMPDIR, LANG,
/// HICCUP_BASE_URL, HICCUP_PROMPT, HICCUP_LEDGER, HICCUP_SCENARIO, HICCUP_MODEL (when the recipe
/// names one), HICCUP_INVOKE_DIR (hiccup's working directory), the provider's base-URL variable
/// (gemini: GOOGLE_GEMINI_BASE_URL) and the recipe's `env`. Never throws for agent failures;
/// a harness failure (server cannot bind, agent binary missing) is set in `harness_error`.
/// With a recipe `cancel` and a scenario `session` or `interrupt`: one process per prompt (the
/// first with cancel.argv, the later ones with cancel.resume_argv); at an `after_event` interrupt
/// the server holds the stream (CancelHold) and the agent gets SIGINT, then has cancel.exit_wait_s
/// to exit (else it is killed: `liveness`) before the next prompt runs (docs/AGENTS.md "Cancel and
/// sessions"). AgentCaseResult::prompt_runs, cancel_prompt and cancel_exit_ms say what happened.
AgentCaseResult run_agent_scenario(const Scenario& scenario, const Recipe& recipe,
                                   const AgentRunOptions& options);

/// The report form of a result: violations, wall time, and extra fields agent, exit_code,
/// exit_meaning, outcome, requests, ledger, not_applicable, timed_out.
ReportCase to_report_case(const AgentCaseResult& result, const Recipe& recipe, std::string classname);

}  // namespace harness::agents

namespace harness::agents {

/// `hiccup run --agent NAME | --agent-cmd COMMAND PATH...`: skips (with a note on stderr) each
/// scenario written for other agents (written_for_others; --agent only, as `hiccup matrix` does;
/// and each one the agent cannot play (check_agent_scenario: another format, an interrupt or
/// session without a recipe cancel, …) with a note naming why; exit 3 when that leaves none. Runs
/// each other scenario against the agent, streams the console report and writes junit.xml, summary.json and
/// each case's agent output (REPORT_DIR/agents/AGENT/SCENARIO/) under `report_dir`.
/// `provider_override` is `--provider` ("" when not given): it must be the agent's own format.
/// Returns the CLI exit code: 0 all passed, 1 some verdict failed (or the agent is not installed),
/// 2 a --provider the agent does not speak, 3 invalid input, 5 a case met an internal error (an
/// exception in hiccup: printed on stderr and left out of the verdicts and reports, never a FAIL).
int run_agent_command(const std::vector<Scenario>& scenarios, const std::string& agent,
                      const std::string& agent_cmd, AgentRunOptions options, const std::string& report_dir,
                      const std::string& provider_override = "");

}  // namespace harness::agents
