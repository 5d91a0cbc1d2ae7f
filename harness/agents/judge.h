// The black-box judge: turns what can be seen from outside a runtime (the server's journal, the
// tool executions its ledger records, its exit code and output) into verdicts. It feeds the
// invariant checkers (harness/invariants.h) the same rut::RunResult shape the reference runtime
// produces, adds the verdicts only black boxes get (scenario-coverage, outcome-agreement,
// liveness, recovery-design), tells a policy difference (DIFF) from a harm, and infers the run's
// recovery design (DESIGN.md "Recovery designs"), so that each legitimate design is judged by the
// harms it causes, never by the design itself. Called by `hiccup run --agent`, `hiccup matrix`
// and the control API's session verdicts; pure (no process, no socket).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/agents/ledger.h"
#include "harness/agents/recipe.h"
#include "harness/agents/subprocess.h"
#include "harness/invariants.h"
#include "harness/scenario.h"
#include "mock_server/journal.h"
#include "mock_server/mcp/mcp_server.h"

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
  /// A run of several processes (a recipe's `cancel`: the user's cancel, a session's later prompts
  /// run with its resume command): each prompt's process in order (`process` is the last one), and
  /// the last one's output, where success or failure is read (`output` holds them all, what the
  /// user saw over the session). One process: `prompt_runs` has it, `final_output` is "".
  std::vector<ProcessResult> prompt_runs;
  std::string final_output;
  /// `output` without what the process the user cancelled printed (the cancelled answer's text
  /// streamed while the person watched; they stopped it): where clean-output reads the shown text
  /// of a run with a cancel. Unused when cancel_prompt is -1.
  std::string uncancelled_output;
  int cancel_prompt = -1;                   ///< the prompt whose run the user cancelled (SIGINT); -1: none
  double cancel_exit_ms = -1;               ///< from SIGINT to that process's exit
  bool cancel_ended_run = false;            ///< the cancel ended the last prompt's run (no prompt followed)
  /// At the SIGINT: requests journaled and ledger lines written so far (-1: no cancel). What began
  /// before the user's cancel is not judged as coming after it.
  int requests_before_cancel = -1;
  int executions_before_cancel = -1;
  /// The screens of a run with a cancel: the last lines of the cancelled process's output when
  /// the SIGINT went out, and of the last process's at its end (what the person saw).
  std::string screen_at_cancel;
  std::string screen_at_end;
  double wall_ms = 0;                       ///< whole case: server, agent, judging
  /// The MCP server's tool-call journal (every `tools/call` that reached it, in arrival order),
  /// when the scenario offered MCP tools; the judge counts executions at the tool from it.
  std::vector<mock::mcp::ToolCallEntry> tool_calls;
  /// When the last process ended, in ms on the server's clock (the journals' arrived_ms); -1 unknown.
  double agent_exit_ms = -1;
  /// The recovery design the run showed (infer_recovery_design): "hold", "continue", "mixed", or
  /// "" when no attempt failed after delivering text or a call; with the sentence that shows it.
  std::string design;
  std::string design_evidence;
  /// The review transcript (transcript.h's shape) judge_agent_run builds: requests, executions,
  /// outcome; null before judging.
  nlohmann::json transcript;
  bool passed() const { return harness_error.empty() && violations.empty(); }
  /// Sorted, unique invariant names of the violations and differences (what known-failure pins
  /// assert).
  std::vector<std::string> violated() const;
};

/// How a run recovered when an attempt failed after it delivered text or a call whole, read from
/// the journal and the executions only:
/// - "hold": the failed attempt's calls did not run from it, and the turn was asked for again;
/// - "continue": the next request kept the cut turn (whole units of what it delivered) and went on
///   to the next turn;
/// - "mixed": neither (e.g. a call ran from the cut attempt, then the turn was asked for again:
///   gemini-cli's duplicate execution), or both designs in one run;
/// - "" when no attempt failed after delivering text or a call whole (or the run ended there).
struct RecoveryDesign {
  std::string name;
  std::string evidence;  ///< one sentence naming the requests that showed it; "" with the name
  /// Where a next request kept a cut turn (continue's way), alone or beside a held one: the
  /// sentence for the first such turn; "" when none was kept.
  std::string kept_cut_turn;
};

RecoveryDesign infer_recovery_design(const mock::Journal& journal, const std::vector<rut::LedgerEntry>& executions);

/// What the server of a black-box run answers a request for a turn past the script's last
/// (mock::ScriptEngine::answer_past_script): a completed answer of this text alone, finish stop.
/// Such a request right after an answer the model did not finish (a max_tokens or content-filter
/// finish delivered: claude-code asks for more of it) is not judged by itself (no
/// history-integrity for it): what the agent then does with the answer is (honest-outcome for a
/// refusal it went on from). Any other request past the script is still history-integrity's.
inline constexpr std::string_view kPastScriptText = "hiccup: this scenario scripts no more turns.";

/// Whether a journal entry is a model request (not a preflight HEAD/GET of "/" nor a 404).
bool is_model_request(const mock::JournalEntry& e);

/// The scripted attempt journal entry `e` played, or null (no model request, no scripted attempt).
const mock::Attempt* scripted_attempt(const Scenario& s, const mock::JournalEntry& e);

/// The position of `a`'s first finish event in a.events; a.events.size() when it has none.
std::size_t first_finish(const mock::Attempt& a);

/// Drops an agent's own context around the prompt (gemini-cli's `<session_context>`, qwen-code's
/// `<system-reminder>` parts, codex's `<environment_context>` message) from each request's
/// history, so history-integrity compares turns, not preambles. With `later_prompts` (a session's
/// prompts after the first), also the agent's own notes between prompts: a user content of text
/// only, after the first prompt's, that holds none of them (codex's `<turn_aborted>` message and
/// claude-code's "[Request interrupted by user]" after the user's cancel), and the text parts of a
/// user content of tool results that holds none of them (claude-code's "[Request interrupted by
/// user for tool use]" beside a tool_result). A prompt's text may end in whitespace the agent
/// added (claude-code's resumed prompt ends in "\n"). A prompt that is lost or out of order is
/// still one (history-integrity).
void strip_preamble(mock::Journal& journal, const std::string& prompt, const std::vector<std::string>& later_prompts = {});

/// After the user's cancel cut an answer (journal[cut], not completed), an agent may put a model
/// turn of its own in the cut turn's place, a note in brackets that the server never sent:
/// gemini-cli 0.61.0, resumed, sends "[The previous response was interrupted before it
/// completed.]" as model turn `journal[cut].turn`. The model is told the truth about its answer,
/// not something it said, so in each later request that turn, when it holds text only, in
/// brackets, at most 200 bytes, saying the answer was interrupted, cancelled or aborted, that the
/// cut attempt did not deliver, is emptied: judged as the cut turn kept with none of its content
/// (history-integrity then compares the rest). Only up to a request that asks for the cancelled
/// turn again (from there on, that model turn is the new answer's). Anything else there is left to
/// history-integrity. Returns how many turns were emptied.
int blank_interruption_notes(mock::Journal& journal, int cut);

/// The text a JSON-lines output shows by the recipe's shown_text rule (recipe.h): the texts of the
/// matching lines in order, each without the recipe's notices, less what a retract line took back;
/// nullopt when the recipe has no rule (clean-output is then not judged).
std::optional<std::string> shown_text(const std::vector<nlohmann::json>& lines, const Recipe& recipe);

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

/// The executions at the tool of a run's MCP tool-call journal, as the invariant checkers see them:
/// `ledger` one entry per model call that reached the tool (its first execution: the call's name
/// as the model called it, recipe `mcp.tool_name`, and its arguments), `records` one per
/// `tools/call` that reached the tool (every execution, and a session-expired call that did not
/// run), each matched to the model call it served: the last model request that arrived before it
/// and delivered a call of that name and those arguments (else of that name; request_seq -1 when
/// none did: a side effect the model never asked for). A record's `outcome` is what the agent can
/// have seen: "result" (is_error as played) or "jsonrpc_error" when the whole reply was written,
/// "reply_lost", "session_expired", and "timed_out" when the agent hung up before the reply (a
/// hung call, or one slower than it waited).
struct McpExecutions {
  std::vector<rut::LedgerEntry> ledger;
  std::vector<ToolCallRecord> records;
};
McpExecutions mcp_executions(const std::vector<mock::mcp::ToolCallEntry>& calls, const mock::Journal& journal,
                             const RecipeMcp& mcp);

/// Seconds past the recipe's mcp.tool_timeout_s that an agent may still wait on a hung or slow
/// tool call before `liveness` accuses it (process start-up, scheduling on a shared machine); the
/// runner kills an agent still waiting then, so a hang costs at most timeout + grace of wall time.
inline constexpr double kToolTimeoutGraceS = 5;

/// liveness across the tool boundary: the first tool call the agent waited on past its configured
/// per-call timeout (`tool_timeout_s`, recipe mcp.tool_timeout_s) plus kToolTimeoutGraceS, as of
/// `now_ms` (the server's clock: the agent's exit, or now while it runs): a call scripted to hang,
/// or to take at least the timeout, after whose arrival no model request came by then. The
/// message says the call, the wait and the timeout; nullopt when there is none (or no timeout).
std::optional<std::string> overdue_tool_wait(const std::vector<mock::mcp::ToolCallEntry>& calls,
                                             const mock::Journal& journal, double tool_timeout_s, double now_ms);

/// judge_agent_run with the executions given directly instead of read from `result.ledger`
/// (a test suite records its tool executions over `hiccup serve`'s control API, see
/// harness/serve/session_registry.h). Same verdicts, names and messages.
/// `declared_design` ("hold" or "continue"; "" for none): a session of the control API may say
/// how its runtime recovers; a run that shows the other design fails `recovery-design`.
/// `tool_calls`: the executions at the tool (mcp_executions' records) that at-most-once and
/// honest-outcome judge across the tool boundary; null: not observed.
void judge_black_box(AgentCaseResult& result, const Recipe& recipe, const std::vector<rut::LedgerEntry>& executions,
                     const std::string& cap_message, bool strict = false, const std::string& declared_design = "",
                     const std::vector<ToolCallRecord>* tool_calls = nullptr);

}  // namespace harness::agents
