// `hiccup run --agent/--agent-cmd`: the CLI side of the external-agent runner (run_command.cpp
// routes here), reporting through the same listeners as reference-runtime runs.
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "harness/agents/agent_runner.h"

namespace harness::agents {

int run_agent_command(const std::vector<Scenario>& given, const std::string& agent,
                      const std::string& agent_cmd, AgentRunOptions options, const std::string& report_dir,
                      const std::string& provider_override) {
  Recipe recipe;
  try {
    recipe = agent_cmd.empty() ? load_recipe(agent, default_recipes_dir()) : command_recipe(agent_cmd);
  } catch (const std::exception& e) {
    std::cerr << error_lines(e, "error: --agent: ") << '\n';
    return 3;
  }
  if (agent_cmd.empty() && !provider_override.empty() && provider_override != recipe.provider) {
    std::cerr << "error: --provider " << provider_override << ": agent " << recipe.name << " speaks "
              << recipe.provider << " only\n";
    return 2;
  }
  // --agent-cmd speaks whatever format each scenario names.
  auto recipe_for = [&](const Scenario& s) {
    Recipe r = recipe;
    if (!agent_cmd.empty()) r.provider = s.script.provider;
    return r;
  };
  // A scenario named or tagged for other agents is theirs alone, as in `hiccup matrix`: skipped
  // with a note. --agent-cmd is no agent of its own and plays what it is given. A scenario the
  // agent cannot play (another format, an interrupt or session without a recipe cancel, a
  // misplaced ledger placeholder: check_agent_scenario) is skipped with a note naming why, and the
  // run goes on with the others.
  std::vector<Scenario> scenarios;
  const std::set<std::string> agent_names = known_agent_names({recipe.name});
  for (const Scenario& s : given) {
    const std::optional<std::string> others = agent_cmd.empty() ? written_for_others(s, recipe.name, agent_names)
                                                                : std::nullopt;
    if (others) {
      std::cerr << "note: " << s.source_path << ": skipped, " << *others << '\n';
      continue;
    }
    const std::vector<std::string> problems = check_agent_scenario(s, recipe_for(s));
    if (!problems.empty()) {
      std::cerr << "note: " << s.source_path << ": skipped, not playable by agent " << recipe.name << ": ";
      for (std::size_t i = 0; i < problems.size(); ++i) std::cerr << (i ? "; " : "") << problems[i];
      std::cerr << '\n';
      continue;
    }
    scenarios.push_back(s);
  }
  if (scenarios.empty()) {
    std::cerr << "error: --agent " << recipe.name << ": no scenario to play: every one given is written for other "
              << "agents (named AGENT-… or tagged AGENT) or not playable by this one (the notes above say why)\n";
    return 3;
  }

  std::error_code ec;
  std::filesystem::create_directories(report_dir, ec);
  if (ec) {
    std::cerr << "error: " << report_dir << ": cannot create the report directory: " << ec.message() << '\n';
    return 3;
  }
  options.output_dir = report_dir + "/agents/" + recipe.name;
  FanoutListener report;
  report.add(make_console_listener(std::cout));
  report.add(make_junit_listener(report_dir + "/junit.xml"));
  report.add(make_summary_listener(report_dir + "/summary.json"));
  report.add(make_markdown_listener(report_dir + "/summary.md", github_step_summary_path()));
  report.add(make_html_listener(report_dir + "/report.html"));
  report.run_starting(RunInfo{"run", 0, "http", {}, "", recipe.name});
  RunTotals totals;
  int internal_errors = 0;
  for (const Scenario& s : scenarios) {
    const AgentCaseResult r = run_agent_scenario(s, recipe_for(s), options);
    if (r.internal_error) {
      // A bug in hiccup says nothing about the agent: no verdict for this case.
      std::cerr << "error: hiccup run: internal error in scenario " << s.name << ": " << r.harness_error
                << "\n(exit 5: not a verdict; please report it with the command line)\n";
      ++internal_errors;
      continue;
    }
    ReportCase c = to_report_case(r, recipe, "hiccup.agents." + recipe.name);
    if (!s.source_path.empty()) {
      // Pasted in any folder, it runs: the binary and the file by absolute paths.
      // An agent given as a folder (it holds a '/') by its absolute path too.
      const std::string how = !agent_cmd.empty() ? "--agent-cmd " + shell_quote(agent_cmd)
                              : "--agent " + shell_quote(agent.find('/') != std::string::npos ? absolute_path(agent) : agent);
      // The format the file was played in when --provider named another than its own.
      const std::string provider = provider_override.empty() ? "" : " --provider " + shell_quote(provider_override);
      c.extra["replay"] = running_binary() + " run " + how + provider + " " + shell_quote(absolute_path(s.source_path));
    }
    (c.passed ? totals.passed : totals.failed) += 1;
    if (c.passed && c.extra.value("verdict", "") == "difference") ++totals.differences;
    totals.wall_ms += c.wall_ms;
    report.case_ended(c);
  }
  report.run_ended(totals);
  if (internal_errors > 0) return 5;
  return totals.failed == 0 ? 0 : 1;
}

}  // namespace harness::agents
