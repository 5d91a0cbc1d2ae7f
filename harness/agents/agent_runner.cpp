// run_agent_scenario: the scratch folder, the mock server with real timings, the agent process,
// its ledger and output; judge.cpp turns what it collected into verdicts.
#include "harness/agents/agent_runner.h"

#include "harness/scenario_io.h"
#include "harness/transcript.h"
#include "harness/stopwatch.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <set>
#include <sstream>

#include "harness/agents/cancel_hold.h"
#include "harness/agents/judge.h"
#include "harness/oracle.h"
#include "mock_server/faults.h"
#include "mock_server/http_server.h"
#include "mock_server/mcp/mcp_server.h"
#include "mock_server/json_text.h"
#include "mock_server/script_engine.h"
#include "mock_server/wire_format.h"

namespace harness::agents {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Replaces {name} variables in one pass (substituted text is never re-scanned).
std::string expand(const std::string& s, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '{') {
      const auto close = s.find('}', i);
      if (close != std::string::npos) {
        auto it = vars.find(s.substr(i + 1, close - i - 1));
        if (it != vars.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += s[i++];
  }
  return out;
}

/// `expand` applied to every string inside `j` (keys are left alone).
json expand_json(const json& j, const std::map<std::string, std::string>& vars) {
  if (j.is_string()) return expand(j.get<std::string>(), vars);
  if (j.is_array()) {
    json out = json::array();
    for (const json& v : j) out.push_back(expand_json(v, vars));
    return out;
  }
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : j.items()) out[k] = expand_json(v, vars);
    return out;
  }
  return j;
}

std::string tail_of(const std::string& path, std::size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    // An agent's output is bytes: each line made text that drives no terminal and fits JSON
    // (C0 controls as \xNN, an ill-formed byte as \xNN), cut at 400 bytes on a character boundary.
    lines.push_back(mock::json_text::escape_input(line, 400));
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

/// Lines of the agent's output a screen keeps (the last ones, as a terminal shows them).
constexpr std::size_t kScreenLines = 40;

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string base_url_variable(const std::string& provider) {
  if (provider == "gemini") return "GOOGLE_GEMINI_BASE_URL";
  if (provider == "openai-chat" || provider == "openai-responses") return "OPENAI_BASE_URL";
  if (provider == "anthropic") return "ANTHROPIC_BASE_URL";
  return "";
}


/// Routes the run's MCP endpoint (`/mcp`, any query) to its MCP server, when the scenario offers
/// MCP tools, and every other request to the model side (the ScriptEngine, or the CancelHold that
/// serves through it).
struct AgentRouter final : mock::RequestRouter {
  std::shared_ptr<mock::Responder> models;
  std::shared_ptr<mock::mcp::McpServer> mcp;  // null: no MCP tools
  mock::Route route(const std::string&, const std::string& target, const std::string&) override {
    mock::Route r;
    if (mcp && target.substr(0, target.find('?')) == "/mcp") r.engine = mcp;
    else r.engine = models;
    r.target = target;
    return r;
  }
};

struct LaunchOutcome {
  ProcessResult process;
  bool cancelled = false;          ///< SIGINT went to the agent at the hold
  double exit_after_cancel_ms = -1;  ///< from SIGINT to the agent's exit
  std::string overdue;             ///< the agent did not exit within cancel.exit_wait_s of SIGINT
};

/// The user's Ctrl-C comes this long after the server reports the hold: the write carrying the
/// interrupt point's last event goes out as it reports, and the agent must have read it.
constexpr auto kCancelSettle = std::chrono::milliseconds(300);

/// Runs `spec` to its end; when `point_reached()` turns true while it runs (and not yet
/// cancelled), calls `at_cancel()`, sends SIGINT to its process group and waits at most the
/// recipe's cancel.exit_wait_s for it to exit (then SIGKILL). `point_reached` empty: no cancel.
/// The I/O shell of the cancel: real time, real signals.
/// `overdue` (may be empty) is polled about every 100 ms while the agent runs: a message from it
/// (the agent waits on a tool past its timeout) kills the process group and becomes the outcome's
/// `overdue`.
LaunchOutcome launch_with_cancel(ProcessSpec spec, const std::function<bool()>& point_reached,
                                 const std::function<void()>& at_cancel, const Recipe& recipe,
                                 const std::function<std::string()>& overdue = {}) {
  LaunchOutcome out;
  auto group = std::make_shared<std::atomic<int>>(0);
  spec.on_start = [group](int g) { group->store(g); };
  const bool may_cancel = point_reached && !point_reached() && recipe.cancel;
  std::future<ProcessResult> running = std::async(std::launch::async, [spec] { return run_process(spec); });
  using Clock = std::chrono::steady_clock;
  int polls = 0;
  while (running.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
    if (overdue && ++polls % 10 == 0) {
      if (std::string why = overdue(); !why.empty() && group->load() > 0) {
        kill(-group->load(), SIGKILL);
        out.process = running.get();
        out.overdue = why + "; the agent was killed";
        return out;
      }
    }
    if (!may_cancel || out.cancelled || !point_reached()) continue;
    if (running.wait_for(kCancelSettle) == std::future_status::ready) break;  // it ended by itself
    const int g = group->load();
    if (g <= 0) continue;
    if (at_cancel) at_cancel();
    kill(-g, SIGINT);
    out.cancelled = true;
    const auto sent = Clock::now();
    const auto wait = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(recipe.cancel->exit_wait_s));
    if (running.wait_for(wait) != std::future_status::ready) {
      kill(-g, SIGKILL);
      std::ostringstream m;
      m << "agent " << recipe.name << " did not exit within " << recipe.cancel->exit_wait_s
        << " s of SIGINT (the user's cancel) and was killed";
      out.overdue = m.str();
    }
    out.process = running.get();
    out.exit_after_cancel_ms = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
    return out;
  }
  out.process = running.get();
  return out;
}

}  // namespace

std::vector<std::string> AgentCaseResult::violated() const {
  std::set<std::string> names;
  for (const Violation& v : violations) names.insert(v.invariant);
  for (const Violation& v : differences) names.insert(v.invariant);
  return {names.begin(), names.end()};
}

std::set<std::string> scenario_owners(const Scenario& scenario, const std::set<std::string>& agent_names) {
  std::set<std::string> out;
  for (const std::string& a : agent_names) {
    if (scenario.name.rfind(a + "-", 0) == 0 ||
        std::find(scenario.tags.begin(), scenario.tags.end(), a) != scenario.tags.end()) {
      out.insert(a);
    }
  }
  return out;
}

std::set<std::string> known_agent_names(const std::vector<std::string>& also) {
  std::set<std::string> names;
  for (const std::string& n : recipe_names(default_recipes_dir())) names.insert(n);
  names.insert(also.begin(), also.end());
  return names;
}

std::optional<std::string> written_for_others(const Scenario& scenario, const std::string& agent,
                                              const std::set<std::string>& agent_names) {
  const std::set<std::string> owners = scenario_owners(scenario, agent_names);
  if (owners.empty()) return std::nullopt;
  // The owners that claim the scenario: an owner yields to a variant of it that is also an owner
  // (codex-websocket-… is codex-websocket's, not codex's). A recipe variant (claude-code-bedrock)
  // also plays what its agent's scenarios say (claude-code-…), unless another variant claims them.
  for (const std::string& claimant : owners) {
    const bool yields = std::any_of(owners.begin(), owners.end(),
                                    [&](const std::string& o) { return o.rfind(claimant + "-", 0) == 0; });
    if (yields) continue;
    if (agent == claimant || agent.rfind(claimant + "-", 0) == 0) return std::nullopt;
  }
  std::string who;
  for (const std::string& o : owners) {
    const bool named = scenario.name.rfind(o + "-", 0) == 0;
    who += (who.empty() ? "" : ", ") + o + (named ? " (named " + o + "-…)" : " (tagged " + o + ")");
  }
  return "written for agent" + std::string(owners.size() > 1 ? "s " : " ") + who + ", not for " + agent;
}

namespace {
/// Names of the calls whose arguments hold the ledger placeholder.
std::set<std::string> ledger_tool_names(const Scenario& scenario) {
  std::set<std::string> out;
  for (const auto& turn : scenario.script.turns) {
    for (const auto& attempt : turn.attempts) {
      for (const auto& ev : attempt.events) {
        const auto* c = std::get_if<mock::CallEvent>(&ev);
        if (c != nullptr && has_placeholder(c->args)) out.insert(c->name);
      }
    }
  }
  return out;
}
}  // namespace

mock::mcp::ToolScript mcp_tools(const Scenario& scenario, const Recipe& recipe) {
  const std::set<std::string> ledger_tools = ledger_tool_names(scenario);
  mock::mcp::ToolScript out;
  for (const mock::mcp::Tool& t : scenario.tools.tools) {
    if (t.name != recipe.tool_name && !ledger_tools.contains(t.name)) out.tools.push_back(t);
  }
  return out;
}

std::vector<std::string> check_agent_scenario(const Scenario& scenario, const Recipe& recipe) {
  std::vector<std::string> problems;
  if (!recipe.mcp && !mcp_tools(scenario, recipe).tools.empty()) {
    problems.push_back("/tools: the scenario offers MCP tools (\"" + mcp_tools(scenario, recipe).tools.front().name +
                       "\"), but agent " + recipe.name + "'s recipe declares no MCP settings (recipe field \"mcp\")");
  }
  if (scenario.script.provider != recipe.provider) {
    problems.push_back("/provider: agent " + recipe.name + " speaks " + recipe.provider + ", the scenario " +
                       scenario.script.provider);
  }
  if ((!scenario.session.empty() || scenario.interrupt) && !recipe.cancel) {
    if (!scenario.session.empty()) {
      problems.push_back("/session: agent " + recipe.name + "'s recipe declares no resume command (recipe field "
                         "\"cancel\"), so a session of several prompts plays against the reference runtime only");
    }
    if (scenario.interrupt) {
      problems.push_back("/interrupt: agent " + recipe.name + "'s recipe declares no cancel method (recipe field "
                         "\"cancel\": SIGINT and a resume command), so the user's interrupt plays against the reference "
                         "runtime only");
    }
  }
  if (auto p = cancel_hold_problem(scenario)) problems.push_back(*p);
  std::set<std::string> ledger_tools;  // names of the calls whose command holds the ledger placeholder
  for (std::size_t t = 0; t < scenario.script.turns.size(); ++t) {
    const auto& attempts = scenario.script.turns[t].attempts;
    for (std::size_t a = 0; a < attempts.size(); ++a) {
      for (std::size_t i = 0; i < attempts[a].events.size(); ++i) {
        const auto* c = std::get_if<mock::CallEvent>(&attempts[a].events[i]);
        if (c != nullptr && has_placeholder(c->args)) ledger_tools.insert(c->name);
        if (c == nullptr || !has_placeholder(c->args) || recipe.tool_name.empty()) continue;
        const std::string at = "/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a) + "/events/" +
                               std::to_string(i) + "/call";
        if (c->name != recipe.tool_name) {
          problems.push_back(at + "/name: the ledger placeholder needs agent " + recipe.name + "'s shell tool \"" +
                             recipe.tool_name + "\", found \"" + c->name + "\"");
        } else if (!c->args.contains(recipe.tool_command_arg) || !has_placeholder(c->args[recipe.tool_command_arg])) {
          problems.push_back(at + "/args: the ledger placeholder belongs in \"" + recipe.tool_command_arg +
                             "\" (the command " + recipe.tool_name + " runs)");
        }
      }
    }
  }
  // A `tools` entry named like the shell tool scripts its ledger command (ledger_command): only
  // what a shell command can do.
  for (std::size_t i = 0; i < scenario.tools.tools.size(); ++i) {
    const mock::mcp::Tool& tool = scenario.tools.tools[i];
    if (!ledger_tools.contains(tool.name)) continue;
    for (std::size_t j = 0; j < tool.calls.size(); ++j) {
      if (auto why = shell_call_problem(tool.calls[j])) {
        problems.push_back("/tools/" + std::to_string(i) + "/calls/" + std::to_string(j) + ": " + tool.name +
                           " runs the ledger command, which can be slow (duration_s), print a result, fail (is_error) "
                           "or hang, but not play " + *why);
      }
    }
  }
  return problems;
}

std::optional<std::string> agent_not_installed(const Recipe& recipe) {
  const std::string binary = agent_binary(recipe);
  if (binary.empty() || access(binary.c_str(), X_OK) == 0) return std::nullopt;
  // The install script reads the same variable: the command that installs where we look.
  const char* cache = std::getenv("HICCUP_AGENT_CACHE");
  const bool in_cache = recipe.binary.rfind(kAgentCachePrefix, 0) == 0 && cache != nullptr && *cache != '\0';
  return "agent " + recipe.name + " is not installed: " + binary + " is missing or not executable; run " +
         (in_cache ? "HICCUP_AGENT_CACHE=" + shell_quote(cache) + " " : std::string()) +
         (recipe.install_hint.empty() ? std::string("scripts/install_agents.sh") : recipe.install_hint);
}

std::string make_agent_scratch() {
  const char* base = std::getenv("HICCUP_SCRATCH_DIR");
  std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/hiccup-agent-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("cannot create a scratch folder " + tmpl);
  return tmpl;
}

ProcessSpec prepare_agent_launch(const Recipe& recipe, const std::string& scratch_dir, const AgentLaunchInputs& in) {
  const fs::path scratch = scratch_dir;
  const fs::path home = scratch / "home", tmp = scratch / "tmp", work = scratch / "work";
  fs::create_directories(home);
  fs::create_directories(tmp);
  fs::create_directories(work);
  const std::string ledger = (scratch / "ledger").string();
  const std::string binary = agent_binary(recipe);
  const std::map<std::string, std::string> vars = {
      {"binary", binary}, {"prompt", in.prompt}, {"model", recipe.model},
      {"base_url", in.base_url}, {"home", home.string()}, {"tmpdir", tmp.string()},
      {"workdir", work.string()}, {"ledger", ledger}, {"mcp_url", in.mcp_url},
      {"mcp_server", recipe.mcp ? recipe.mcp->server : std::string()}};
  for (const auto& [rel, content] : recipe.home_files) {
    if (rel.back() == '/') {
      fs::create_directories(home / rel);
      continue;
    }
    const json expanded = expand_json(content, vars);
    write_file(home / rel, expanded.is_string() ? expanded.get<std::string>() : expanded.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  }

  ProcessSpec spec;
  for (const std::string& a : recipe.argv) spec.argv.push_back(expand(a, vars));
  const char* path = std::getenv("PATH");
  std::map<std::string, std::string> env = {
      {"PATH", path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"},
      {"HOME", home.string()}, {"TMPDIR", tmp.string()}, {"LANG", "C.UTF-8"},
      {"HICCUP_BASE_URL", in.base_url}, {"HICCUP_PROMPT", in.prompt},
      {"HICCUP_LEDGER", ledger}, {"HICCUP_SCENARIO", in.scenario_name},
      {"HICCUP_INVOKE_DIR", fs::current_path().string()}};
  if (!recipe.model.empty()) env["HICCUP_MODEL"] = recipe.model;
  if (const std::string var = base_url_variable(in.provider); !var.empty()) env[var] = in.base_url;
  for (const auto& [k, v] : recipe.env) env[k] = expand(v, vars);
  for (const auto& [k, v] : env) spec.env.push_back(k + "=" + v);
  spec.cwd = work.string();
  spec.stdout_path = (scratch / "stdout").string();
  spec.stderr_path = (scratch / "stderr").string();
  spec.timeout_s = in.timeout_s > 0 ? in.timeout_s : recipe.timeout_s;
  return spec;
}

AgentCaseResult run_agent_scenario(const Scenario& scenario, const Recipe& recipe, const AgentRunOptions& options) {
  const Stopwatch stopwatch;
  AgentCaseResult result;
  result.scenario = scenario;
  result.agent = recipe.name;
  auto finish = [&]() -> AgentCaseResult& {
    result.wall_ms = stopwatch.elapsed_ms();
    return result;
  };

  if (auto missing = agent_not_installed(recipe)) {
    result.harness_error = *missing;
    return finish();
  }
  for (const std::string& p : check_agent_scenario(scenario, recipe)) {
    result.harness_error += (result.harness_error.empty() ? "" : "; ") + p;
  }
  if (!result.harness_error.empty()) return finish();

  try {
    const fs::path scratch = make_agent_scratch();
    result.scratch_dir = scratch.string();
    const std::string ledger = (scratch / "ledger").string();
    const std::string out_path = (scratch / "stdout").string(), err_path = (scratch / "stderr").string();

    // The user's cancel (cancel_hold_problem says which points play): at after_event the server
    // holds the stream at the interrupt point for at most the agent's timeout.
    const double timeout_s = options.timeout_s > 0 ? options.timeout_s : recipe.timeout_s;
    std::unique_ptr<CancelHold> hold;
    if (scenario.interrupt) hold = std::make_unique<CancelHold>(*scenario.interrupt, timeout_s);
    // The scenario's `tools` entry named like the shell tool scripts what each execution of the
    // ledger command does (checked above: nothing a shell command cannot play).
    mock::ScriptEngine engine(scenario.script, [ledger, tools = scenario.tools, h = hold.get(),
                                                &turns = scenario.script.turns](int turn, int attempt, mock::Attempt& a) {
      substitute_ledger(turn, attempt, a, ledger, tools);
      // A turn's last attempt repeats for an agent that asks for the turn again; a fault it places
      // after its finish (a cut, FIN, reset or error after the terminal frame, which a client may
      // take for a failed answer and retry: claude-code does at a FIN before the chunked body's end)
      // plays the first time only, so that the repeats end and such a client is not held to the
      // same fault until its timeout (docs/AGENTS.md "Past the script").
      if (turn >= 0 && static_cast<std::size_t>(turn) < turns.size() &&
          static_cast<std::size_t>(attempt) >= turns[static_cast<std::size_t>(turn)].attempts.size() && a.fault) {
        const std::size_t finish = first_finish(a);
        if (finish < a.events.size() && mock::fault_after_event(*a.fault, a.events.size()) > static_cast<int>(finish)) a.fault.reset();
      }
      if (h != nullptr) h->rewrite(turn, attempt, a);
    });
    // A request past the script's last turn (an agent asking for more after a truncated or
    // refused answer) is answered as a provider would, with a completed answer, not a 500 the
    // agent retries with real backoffs until its timeout; the judge reads it (judge.cpp,
    // kPastScriptText).
    engine.answer_past_script(std::string(kPastScriptText));
    mock::ServerOptions server_options;
    server_options.max_delay_ms = -1;       // real idle_ms / delay_ms: clients tell cuts apart by timing
    server_options.stall_ms_per_s = 1000;   // a virtual second of stall is a real second
    // The scenario's MCP tools (not the shell tool's ledger script) on the same port, at /mcp;
    // the recipe's `mcp` settings point the agent there.
    const mock::mcp::ToolScript offered = mcp_tools(scenario, recipe);
    const Recipe run_recipe = offered.tools.empty() ? recipe : with_mcp(recipe);
    // An MCP client keeps its connection between tools/list at start-up and a tools/call maybe
    // many seconds later; a server that closes it idle after 5 s races the client's reuse of it
    // (gemini-cli's POST on a socket closed under it: "fetch failed", the call never arrives).
    if (!offered.tools.empty()) server_options.keep_alive_timeout_ms = 120000;
    AgentRouter router;
    if (!offered.tools.empty()) router.mcp = std::make_shared<mock::mcp::McpServer>(offered, "agent-run");
    if (hold) {
      hold->serve(engine);
      router.models = std::shared_ptr<mock::Responder>(hold.get(), [](mock::Responder*) {});
    } else {
      router.models = std::shared_ptr<mock::Responder>(&engine, [](mock::Responder*) {});
    }
    const auto server_made = std::chrono::steady_clock::now();  // the server's clock origin, within a ms
    auto since_server_ms = [server_made] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - server_made).count();
    };
    mock::MockHttpServer server(router, server_options);
    server.start();
    const std::string mcp_url = router.mcp ? server.base_url() + "/mcp" : std::string();
    // A hung or slow tool call the agent still waits on past its configured timeout (and the
    // grace) ends the run: liveness, and no row waits out the run's whole timeout.
    std::function<std::string()> tool_watch;
    if (router.mcp && recipe.mcp && recipe.mcp->tool_timeout_s > 0) {
      tool_watch = [&] {
        return overdue_tool_wait(router.mcp->tool_calls(), engine.journal(), recipe.mcp->tool_timeout_s, since_server_ms())
            .value_or("");
      };
    }

    // One process per prompt: the first prompt with the recipe's argv (its cancel.argv when the
    // run has a cancel or later prompts), each later prompt with cancel.resume_argv once the
    // previous process has exited. A cancel (SIGINT at the hold) ends that prompt's run; the
    // session then goes on with its next prompt, as after a person's Ctrl-C.
    std::vector<std::string> prompts = {scenario.prompt};
    for (const SessionPrompt& p : scenario.session) prompts.push_back(p.prompt);
    const bool several = recipe.cancel && (prompts.size() > 1 || hold);
    // The interrupt point: the server's hold (after_event), the watched attempt's end
    // (before_attempt), or call k's ledger line (after_calls k: it began and runs). At the SIGINT the
    // runner notes how many requests and executions had begun: those the judge does not count as
    // coming after the cancel (a black box's parallel calls may have begun before it).
    std::function<bool()> point_reached;
    if (hold && scenario.interrupt->after_calls) {
      const int turn = scenario.interrupt->turn, k = *scenario.interrupt->after_calls;
      point_reached = [ledger, turn, k] {  // while call k runs: its ledger line is written
        const std::vector<LedgerToken> lines = read_ledger(ledger);
        return std::count_if(lines.begin(), lines.end(), [turn](const LedgerToken& t) { return t.turn == turn; }) > k;
      };
    } else if (hold) {
      point_reached = [h = hold.get()] { return h->reached(); };
    }
    ProcessSpec spec;
    const std::function<void()> at_cancel = [&result, &engine, &ledger, &spec, &recipe] {
      result.requests_before_cancel = static_cast<int>(engine.journal_size());
      result.executions_before_cancel = static_cast<int>(read_ledger(ledger).size());
      // What the person saw when they pressed Ctrl-C: the cancelled process's output so far.
      result.screen_at_cancel = tail_of(recipe.output_stream == "stderr" ? spec.stderr_path : spec.stdout_path, kScreenLines);
    };
    std::string cap;
    std::string shown_all;
    bool cancel_ended_last = false;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      Recipe launch = run_recipe;
      if (several) launch.argv = i == 0 ? (run_recipe.cancel->argv.empty() ? run_recipe.argv : run_recipe.cancel->argv) : run_recipe.cancel->resume_argv;
      spec = prepare_agent_launch(launch, scratch.string(),
                                  AgentLaunchInputs{prompts[i], server.base_url(), scenario.script.provider, scenario.name,
                                                    options.timeout_s, mcp_url});
      if (i > 0) {
        spec.stdout_path = out_path + "." + std::to_string(i);
        spec.stderr_path = err_path + "." + std::to_string(i);
      }
      const LaunchOutcome launched = launch_with_cancel(spec, point_reached, at_cancel, recipe, tool_watch);
      result.agent_exit_ms = since_server_ms();
      result.process = launched.process;
      result.prompt_runs.push_back(launched.process);
      std::ifstream shown(recipe.output_stream == "stderr" ? spec.stderr_path : spec.stdout_path, std::ios::binary);
      std::stringstream text;
      text << shown.rdbuf();
      result.final_output = text.str();
      shown_all += result.final_output;
      if (!launched.cancelled) result.uncancelled_output += result.final_output;
      if (launched.cancelled) {
        result.cancel_prompt = static_cast<int>(i);
        result.cancel_exit_ms = launched.exit_after_cancel_ms;
      }
      if (!launched.overdue.empty()) {
        cap = launched.overdue;
        break;
      }
      if (launched.cancelled) {
        cancel_ended_last = i + 1 == prompts.size();
        continue;  // the cancel ended this prompt's run; the next prompt follows
      }
      const bool ok = launched.process.started && !launched.process.timed_out &&
                      std::find(recipe.success_exit_codes.begin(), recipe.success_exit_codes.end(),
                                launched.process.exit_code) != recipe.success_exit_codes.end();
      if (!ok) break;  // the session ends at the first prompt whose run fails
    }
    const bool strict = options.strict;
    server.stop();
    result.journal = engine.journal();
    if (router.mcp) result.tool_calls = router.mcp->tool_calls();
    result.ledger = read_ledger(ledger, &result.stray_ledger_lines);
    result.output_tail = "stderr:\n" + tail_of(spec.stderr_path, 8) + "stdout:\n" + tail_of(spec.stdout_path, 8);
    if (result.cancel_prompt >= 0) {
      result.screen_at_end = tail_of(recipe.output_stream == "stderr" ? spec.stderr_path : spec.stdout_path, kScreenLines);
    }
    result.output = shown_all;
    if (result.prompt_runs.size() <= 1) result.final_output.clear();  // one process: output is all of it
    result.cancel_ended_run = cancel_ended_last;
    if (scenario.interrupt && result.cancel_prompt < 0) {
      // The cancel never went out (the agent never reached the point, or ended before the runner's
      // settle): nothing came after a cancel.
      result.requests_before_cancel = static_cast<int>(engine.journal_size());
      result.executions_before_cancel = static_cast<int>(result.ledger.size());
      if (point_reached && point_reached() && recipe.cancel) {
        // The point came, but the prompt's run ended within the settle: the scenario did not test
        // a cancel, and what the agent did next is no verdict on one.
        result.harness_error = "the interrupt point was reached, but the agent's run of that prompt ended before the "
                               "SIGINT (0.3 s after the point): the scenario must keep the agent busy there (after_calls: "
                               "give call " + std::to_string(scenario.interrupt->after_calls.value_or(0)) +
                               " a duration_s in `tools`; before_attempt: a longer retry_after_s)";
      }
    }
    if (scenario.interrupt && scenario.interrupt->before_attempt && result.cancel_prompt >= 0) {
      // A cancel during a backoff lands only if the retry had not gone out before the SIGINT: an
      // agent whose own backoff is shorter than the settle retried first, and what it did next is
      // no verdict on a cancel during a backoff (a newcomer saw such a row pass, stop 53).
      const Interrupt& in = *scenario.interrupt;
      for (std::size_t k = 0; k < result.journal.size() && static_cast<int>(k) < result.requests_before_cancel; ++k) {
        const mock::JournalEntry& e = result.journal[k];
        if (e.turn == in.turn && e.attempt >= *in.before_attempt && is_model_request(e)) {
          result.harness_error = "the agent's backoff ended before the SIGINT (0.3 s after the failed answer): its retry, "
                                 "request " + std::to_string(k) + ", went out first, so the cancel did not land in a "
                                 "backoff; script a longer retry_after_s on /turns/" + std::to_string(in.turn) +
                                 "/attempts/" + std::to_string(*in.before_attempt - 1);
          break;
        }
      }
    }

    const bool no_request = std::none_of(result.journal.begin(), result.journal.end(), is_model_request);
    if (server.internal_errors() > 0) {
      // The mock server answered some request 500 after an exception of its own: what the agent
      // did next says nothing about it.
      result.harness_error = "harness: the mock server met " + std::to_string(server.internal_errors()) +
                             " internal error(s) while the agent ran";
      result.internal_error = true;
    } else if (!result.process.started) {
      result.harness_error = "agent " + recipe.name + ": " + result.process.error;
    } else if (!result.process.timed_out && no_request &&
               (result.process.exit_code == 126 || result.process.exit_code == 127)) {
      // The shell's "cannot execute" / "not found": the agent never ran, which is no verdict on it.
      result.harness_error = "agent " + recipe.name + " could not start (exit " + std::to_string(result.process.exit_code) +
                             ": a command was not found or not executable; it runs in a scratch folder, so a relative "
                             "path needs $HICCUP_INVOKE_DIR, and its PATH is hiccup's)\n" + tail_of(err_path, 4);
    } else if (result.harness_error.empty()) {  // (set above when the cancel did not land: no verdict)
      if (cap.empty() && result.process.timed_out) {
        std::ostringstream m;
        m << "agent " << recipe.name << " did not exit within " << spec.timeout_s << " s and was killed ("
          << result.journal.size() << " request(s) seen)";
        cap = m.str();
      }
      judge_agent_run(result, recipe, cap, strict);
    }

    if (!options.output_dir.empty()) {
      const fs::path dir = fs::path(options.output_dir) / scenario.name;
      fs::create_directories(dir);
      for (const char* f : {"stdout", "stderr", "ledger"}) {
        std::error_code ec;
        fs::copy_file(scratch / f, dir / f, fs::copy_options::overwrite_existing, ec);
      }
      for (std::size_t i = 1; i < result.prompt_runs.size(); ++i) {  // a session's later prompts
        for (const std::string f : {"stdout", "stderr"}) {
          std::error_code ec;
          const std::string name = f + "." + std::to_string(i);
          fs::copy_file(scratch / name, dir / name, fs::copy_options::overwrite_existing, ec);
        }
      }
      json j = json::array();
      for (const auto& e : result.journal) j.push_back(mock::journal_entry_to_json(e));
      write_file(dir / "journal.json", j.dump(2) + "\n");
      // The scenario as played (a generated case exists nowhere else): `hiccup run --agent` replays it.
      write_file(dir / "scenario.json", write_scenario(scenario));
    }
    if (!options.keep_scratch) {
      std::error_code ec;
      fs::remove_all(scratch, ec);
    }
  } catch (const std::exception& e) {
    result.harness_error = "harness: " + mock::json_text::escape_input(e.what(), 1000);
    result.internal_error = true;
  }
  return finish();
}

ReportCase to_report_case(const AgentCaseResult& r, const Recipe& recipe, std::string classname) {
  ReportCase c;
  c.name = r.scenario.name;
  c.classname = std::move(classname);
  c.passed = r.passed();
  c.violations = r.violations;
  c.wall_ms = r.wall_ms;
  c.extra = {{"agent", r.agent}, {"outcome", r.completed ? "completed" : "failed"},
             {"verdict", !r.harness_error.empty() ? "error" : !r.violations.empty() ? "fail"
                         : !r.differences.empty() ? "difference" : "pass"},
             {"exit_code", r.process.exit_code}, {"timed_out", r.process.timed_out},
             {"agent_wall_ms", r.process.wall_ms}, {"not_applicable", r.not_applicable}};
  if (auto it = recipe.exit_code_meanings.find(r.process.exit_code); it != recipe.exit_code_meanings.end()) {
    c.extra["exit_meaning"] = it->second;
  }
  if (r.prompt_runs.size() > 1) {
    c.extra["prompt_exit_codes"] = json::array();
    for (const ProcessResult& p : r.prompt_runs) c.extra["prompt_exit_codes"].push_back(p.exit_code);
  }
  if (r.cancel_prompt >= 0) {
    c.extra["cancel"] = {{"prompt", r.cancel_prompt}, {"signal", "SIGINT"}, {"exit_after_ms", r.cancel_exit_ms}};
    c.extra["screens"] = {{"at_cancel", mock::json_text::to_utf8(r.screen_at_cancel)},
                          {"at_end", mock::json_text::to_utf8(r.screen_at_end)}};
  }
  int requests = 0;
  for (const auto& e : r.journal) requests += is_model_request(e) ? 1 : 0;
  c.extra["requests"] = requests;
  if (!r.design.empty()) {
    c.extra["design"] = r.design;
    c.extra["design_evidence"] = r.design_evidence;
  }
  if (!r.differences.empty()) {
    c.extra["differences"] = json::array();
    for (const Violation& v : r.differences) c.extra["differences"].push_back(violation_to_json(v));
  }
  c.extra["ledger"] = json::array();
  for (const LedgerToken& t : r.ledger) c.extra["ledger"].push_back(token_text(t));
  if (!r.tool_calls.empty()) {  // the MCP tool-call journal: what reached the tool, and what ran
    c.extra["tool_calls"] = json::array();
    for (const mock::mcp::ToolCallEntry& e : r.tool_calls) c.extra["tool_calls"].push_back(mock::mcp::tool_call_to_json(e));
  }
  if (!r.scenario.source_path.empty()) c.extra["file"] = r.scenario.source_path;
  if (!r.scenario.tags.empty()) c.extra["tags"] = r.scenario.tags;
  c.transcript = r.transcript;
  if (!r.transcript.is_null()) c.extra["scenario_text"] = write_scenario(r.scenario);
  std::ostringstream detail;
  if (!r.harness_error.empty()) {
    detail << "error: " << r.harness_error;
  } else {
    if (r.cancel_prompt >= 0) {
      detail << "the user cancelled prompt " << r.cancel_prompt << " (SIGINT); the agent exited "
             << r.prompt_runs[static_cast<std::size_t>(r.cancel_prompt)].exit_code << " " << static_cast<long>(r.cancel_exit_ms)
             << " ms later; ";
    }
    if (r.prompt_runs.size() > 1) detail << r.prompt_runs.size() << " prompts, the last: ";
    detail << "agent " << r.agent << " exited " << r.process.exit_code;
    if (c.extra.contains("exit_meaning")) detail << " (" << c.extra["exit_meaning"].get<std::string>() << ")";
    if (r.process.timed_out) detail << " after its timeout";
    detail << "; ledger " << r.ledger.size() << " execution(s)";
    if (!r.tool_calls.empty()) {
      const auto ran = std::count_if(r.tool_calls.begin(), r.tool_calls.end(),
                                     [](const mock::mcp::ToolCallEntry& e) { return e.executed; });
      detail << "; MCP " << r.tool_calls.size() << " tools/call, " << ran << " execution(s) at the tool";
    }
    detail << "\n" << r.output_tail;
  }
  c.detail = mock::json_text::to_utf8(detail.str());  // the harness error may quote the agent
  return c;
}

}  // namespace harness::agents
