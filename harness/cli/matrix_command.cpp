// `hiccup matrix --agent NAME[,NAME...] PATH...`: every agent CLI on the scenarios it can play,
// judged against the pinned known failures, printed and written as a CLI × scenario table.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "harness/agents/matrix.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/report/report.h"
#include "harness/scenario_io.h"
#include "harness/stopwatch.h"

namespace harness::cli {
namespace {

constexpr const char* kMatrixUsage = R"usage(usage: hiccup matrix --agent NAME[,NAME...] PATH... [OPTIONS]

Runs each agent CLI (by recipe, as `hiccup run --agent` does, black box and real time) on every
scenario under PATH it can play: the scenario's provider is the agent's wire format and its
ledger placeholder sits in the agent's shell tool. A scenario named AGENT-ROW (e.g.
codex-reset-after-call) takes row ROW, so each CLI's own scenario of one fault shares a row;
a scenario named or tagged for some agents is theirs alone (another CLI leaves its cell empty).
Each cell is PASS, or the violated invariants; a cell pinned in the known-failures file must fail
with exactly the pinned invariants, or exactly one of the pin's also_violates sets (other
runs of a racy CLI); a CLI update that fixes or changes it is reported.

options (each at most once, unless marked repeatable):
  --agent NAME[,NAME...]  agents by recipe name (harness/agents/recipes/NAME.json) or path;
                          repeatable; install them with scripts/install_agents.sh
                          (found in $HICCUP_AGENT_CACHE when set, as the script installs
                          there, else in .cache/npm/ of this source tree)
  --known-failures FILE   pinned known failures (default: harness/agents/known-failures.json)
  --jobs N                cases run at once (default 1; each has its own server and scratch)
  --agent-timeout S       wall-clock limit per run in seconds (default: each recipe's)
  --tag TAG               only scenarios with this tag (repeatable: any of them)
  --strict                policy differences fail too (DIFF cells become FAIL unless pinned)
  --report-dir DIR        matrix.md, matrix.json, junit.xml, summary.json, summary.md (also
                          appended to $GITHUB_STEP_SUMMARY when set) and each case's agent
                          output under agents/AGENT/SCENARIO/ (default: reports/matrix)
  -h, --help              this text

cells: PASS; DIFF a policy difference, not a bug (the agent failed honestly where docs/POLICY.md
retries: only scenario-coverage, outcome-agreement and expect.* differ); "INVARIANTS (known)"
pinned and reproduced; FAIL a new failure; CHANGED pinned but other invariants; FIXED pinned but
passed; ERROR the run could not happen; — not playable.

exit codes: 0 every cell PASS, DIFF, known or not playable; 1 some cell FAIL, CHANGED, FIXED or
ERROR; 2 usage error; 3 invalid input (unknown agent, bad scenario or known-failures file, an
agent that can play none of the scenarios)
)usage";

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

}  // namespace

int matrix_command(const Args& args) {
  ArgReader in(args);
  std::vector<std::string> agent_names, paths, tags;
  std::string known_path, jobs_text = "1", timeout_text, report_dir = "reports/matrix", v;
  bool known_given = false, strict = false;
  while (!in.done()) {
    if (in.flag("--help") || in.flag("-h")) {
      std::cout << kMatrixUsage;
      return kExitPassed;
    }
    if (in.repeatable_value("--agent", v)) {
      for (auto& n : split_commas(v)) agent_names.push_back(n);
    } else if (in.repeatable_value("--tag", v)) {
      tags.push_back(v);
    } else if (in.flag("--strict")) {
      strict = true;
    } else if ((in.value("--known-failures", known_path) && (known_given = true)) || in.value("--jobs", jobs_text) ||
               in.value("--agent-timeout", timeout_text) || in.value("--report-dir", report_dir)) {
    } else if (in.peek().rfind("-", 0) == 0) {
      in.set_error("unknown option \"" + in.take() + "\"");
    } else {
      paths.push_back(in.take());
    }
  }
  if (agent_names.empty()) in.set_error("--agent NAME[,NAME...] is required");
  if (paths.empty()) in.set_error("no PATH given");
  const auto jobs = in.number("--jobs", jobs_text, 1u, 64u, "1..64");
  std::optional<unsigned> timeout_s;  // --agent-timeout, when given
  if (!timeout_text.empty()) {
    timeout_s = in.number("--agent-timeout", timeout_text, 1u, std::numeric_limits<unsigned>::max(), "whole seconds >= 1");
  }
  if (!in.error().empty()) {
    return usage_error("matrix", in.error());
  }

  std::vector<agents::Recipe> recipes;
  try {
    for (const std::string& n : agent_names) recipes.push_back(agents::load_recipe(n, agents::default_recipes_dir()));
  } catch (const std::exception& e) {
    std::cerr << agents::error_lines(e, "error: --agent: ") << '\n';
    return kExitInvalidInput;
  }
  agents::KnownFailures known;
  if (!known_given) {
    const std::string def = agents::default_known_failures_path();
    if (std::filesystem::exists(def)) known_path = def;
  }
  if (!known_path.empty()) {
    try {
      known = agents::load_known_failures(known_path);
    } catch (const std::exception& e) {
      std::cerr << "error: --known-failures: " << e.what() << '\n';
      return kExitInvalidInput;
    }
  }

  // Scenarios: same names may repeat across agents' folders (rows), so no suite-wide name check.
  std::vector<LoadProblem> problems;
  std::vector<Scenario> scenarios;
  std::vector<std::string> notes;
  std::set<std::string> filtered_out;  // scenarios under the paths that --tag left out
  for (const std::string& file : collect_scenario_files(paths, problems, ScanOptions{{report_dir}}, &notes)) {
    LoadResult r = load_scenario_file(file);
    for (LoadProblem& p : r.problems) problems.push_back(std::move(p));
    if (!r.scenario) continue;
    bool tagged = tags.empty();
    for (const auto& t : r.scenario->tags) tagged |= std::find(tags.begin(), tags.end(), t) != tags.end();
    if (tagged) scenarios.push_back(std::move(*r.scenario));
    else filtered_out.insert(r.scenario->name);
  }
  for (const std::string& n : notes) std::cerr << "note: " << n << '\n';
  for (const LoadProblem& p : problems) std::cerr << format_problem(p) << '\n';
  if (!problems.empty()) return kExitInvalidInput;

  std::vector<std::string> rows;
  std::map<std::string, std::map<std::string, std::size_t>> chosen;
  try {
    std::vector<std::string> unplayed;
    std::tie(rows, chosen) = agents::assign_scenarios(scenarios, recipes, &unplayed);
    for (const std::string& n : unplayed) std::cerr << "note: " << n << '\n';
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  {
    const auto known_agents = agents::recipe_names(agents::default_recipes_dir());
    for (const auto& [name, pins] : known) {
      const bool given = std::any_of(recipes.begin(), recipes.end(), [&name = name](const auto& r) { return r.name == name; });
      if (!given && std::find(known_agents.begin(), known_agents.end(), name) == known_agents.end()) {
        std::cerr << "error: --known-failures: " << known_path << ": /agents/" << name
                  << ": no agent recipe has this name (known: ";
        for (std::size_t i = 0; i < known_agents.size(); ++i) std::cerr << (i ? ", " : "") << known_agents[i];
        std::cerr << ")\n";
        return kExitInvalidInput;
      }
    }
  }
  if (scenarios.empty() && !tags.empty()) {
    std::cerr << "error: no scenario under the given paths has any of the tags given with --tag\n";
    return kExitInvalidInput;
  }
  for (const agents::Recipe& r : recipes) {
    if (chosen[r.name].empty()) {
      std::cerr << "error: agent " << r.name << " (" << r.provider << ", shell tool \"" << r.tool_name
                << "\") can play none of the scenarios given\n";
      return kExitInvalidInput;
    }
    auto it = known.find(r.name);
    if (it != known.end() && !r.version.empty() && it->second.version != r.version) {
      std::cerr << "warning: known failures of " << r.name << " are pinned for " << it->second.version
                << ", the recipe runs " << r.version << '\n';
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(report_dir, ec);
  if (ec || !std::filesystem::is_directory(report_dir)) {
    std::cerr << "error: " << report_dir << ": cannot create the report directory\n";
    return kExitInvalidInput;
  }

  struct Task {
    const agents::Recipe* recipe;
    const Scenario* scenario;
  };
  std::vector<Task> tasks;
  for (const std::string& row : rows) {
    for (const agents::Recipe& r : recipes) {
      auto it = chosen[r.name].find(row);
      if (it != chosen[r.name].end()) tasks.push_back({&r, &scenarios[it->second]});
    }
  }
  std::string agents_text;
  for (const auto& r : recipes) agents_text += (agents_text.empty() ? "" : ",") + r.name;
  std::cout << "hiccup matrix: " << recipes.size() << " agent(s) × " << rows.size() << " row(s), " << tasks.size()
            << " run(s), " << *jobs << " at a time" << (known_path.empty() ? "" : ", known failures " + known_path)
            << '\n';

  FanoutListener report;
  report.set_command_line(command_line("matrix", args));
  report.add(make_junit_listener(report_dir + "/junit.xml"));
  report.add(make_summary_listener(report_dir + "/summary.json"));
  report.add(make_markdown_listener(report_dir + "/summary.md", github_step_summary_path()));
  report.add(make_html_listener(report_dir + "/report.html"));
  report.run_starting(RunInfo{"matrix", 0, "http", {}, "", agents_text});

  const Stopwatch stopwatch;
  std::vector<agents::MatrixCell> cells(tasks.size());
  std::vector<ReportCase> cases(tasks.size());
  std::atomic<std::size_t> next{0};
  std::mutex out_mu;
  std::size_t finished = 0;
  auto worker = [&] {
    for (std::size_t i = next++; i < tasks.size(); i = next++) {
      const Task& t = tasks[i];
      agents::AgentRunOptions options;
      options.output_dir = report_dir + "/agents/" + t.recipe->name;
      options.strict = strict;
      if (timeout_s) options.timeout_s = *timeout_s;
      const agents::AgentCaseResult r = agents::run_agent_scenario(*t.scenario, *t.recipe, options);
      std::optional<agents::KnownFailure> pin;
      if (auto a = known.find(t.recipe->name); a != known.end()) {
        if (auto p = a->second.known_failures.find(t.scenario->name); p != a->second.known_failures.end()) pin = p->second;
      }
      cells[i] = agents::judge_cell(r, pin);
      ReportCase c = agents::to_report_case(r, *t.recipe, "hiccup.matrix." + t.recipe->name);
      c.passed = agents::cell_ok(cells[i].status);
      c.extra["matrix_status"] = agents::cell_status_name(cells[i].status);
      c.extra["replay"] = running_binary() + " run --agent " + shell_quote(t.recipe->name) + " " +
                         shell_quote(absolute_path(t.scenario->source_path));
      if (pin) {
        c.extra["known_failure"] = {{"violates", pin->violates}, {"why", pin->why}};
        if (!pin->harm.empty()) c.extra["known_failure"]["harm"] = pin->harm;
      }
      cases[i] = c;
      std::lock_guard lock(out_mu);
      ++finished;
      std::cout << "[" << finished << "/" << tasks.size() << "] " << t.recipe->name << " × "
                << agents::row_name(t.scenario->name, t.recipe->name) << ": " << agents::cell_status_name(cells[i].status);
      if (!cells[i].violated.empty()) {
        std::cout << " (";
        for (std::size_t k = 0; k < cells[i].violated.size(); ++k) std::cout << (k ? ", " : "") << cells[i].violated[k];
        std::cout << ")";
      }
      std::cout << std::fixed << std::setprecision(1) << "  " << r.wall_ms / 1000 << " s, exit " << r.process.exit_code << '\n';
      if (!cells[i].detail.empty()) std::cout << "    " << cells[i].detail << '\n';
      if (!agents::cell_ok(cells[i].status)) {
        for (const auto& viol : r.violations) std::cout << "    " << viol.invariant << ": " << viol.message << '\n';
      }
      std::cout.flush();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned j = 0; j < std::min<std::size_t>(*jobs, tasks.size()); ++j) pool.emplace_back(worker);
  for (auto& th : pool) th.join();

  RunTotals totals;
  for (const ReportCase& c : cases) {
    (c.passed ? totals.passed : totals.failed) += 1;
    if (c.passed && c.extra.value("verdict", "") == "difference") ++totals.differences;
    report.case_ended(c);
  }
  totals.wall_ms = stopwatch.elapsed_ms();  // elapsed, not the sum of cases run side by side
  const std::string md = agents::matrix_markdown(rows, recipes, cells);
  try {
    report.run_ended(totals);
    write_report_file(report_dir + "/matrix.md", md);
    write_report_file(report_dir + "/matrix.json", agents::matrix_json(rows, recipes, cells).dump(2) + '\n');
  } catch (const ReportWriteError& e) {
    std::cerr << "error: report not written: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  std::cout << '\n' << md << '\n';
  // A pin of a played agent that matched no scenario it played: a typo, or a scenario renamed.
  for (const agents::Recipe& r : recipes) {
    auto it = known.find(r.name);
    if (it == known.end()) continue;
    for (const auto& [scenario, pin] : it->second.known_failures) {
      const bool played = std::any_of(cells.begin(), cells.end(), [&r, &scenario = scenario](const agents::MatrixCell& c) {
        return c.agent == r.name && c.scenario == scenario;
      });
      if (!played && !filtered_out.contains(scenario)) {
        std::cout << "warning: known failure " << r.name << " / " << scenario
                  << " matched no scenario played (a typo, a renamed scenario, or not under the paths given)\n";
      }
    }
  }
  std::size_t bad = 0;
  for (const auto& c : cells) bad += agents::cell_ok(c.status) ? 0 : 1;
  std::cout << tasks.size() - bad << " of " << tasks.size() << " cell(s) as expected"
            << (bad ? ", " + std::to_string(bad) + " not (FAIL, CHANGED, FIXED or ERROR)" : std::string()) << "; "
            << report_dir << "/matrix.md\n";
  return bad == 0 ? kExitPassed : kExitFailed;
}

}  // namespace harness::cli
