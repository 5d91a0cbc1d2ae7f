// `hiccup run` (play scenario files against the reference runtime and judge them, optionally
// with each defect a scenario `catches`: the suite's kill matrix) and `hiccup lint`.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <set>

#include "harness/agents/agent_runner.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "runtime_under_test/cloud_transport.h"
#include "harness/oracle.h"
#include "harness/report/report.h"
#include "mock_server/json_text.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "harness/transcript.h"
#include "runtime_under_test/codec.h"
#include "runtime_under_test/defects.h"

namespace harness::cli {
namespace {

constexpr const char* kRunUsage = R"(usage: hiccup run PATH... [OPTIONS]

Runs scenario files (or folders, searched recursively for scenario files: *.json with "turns";
report directories, hidden folders and other JSON are skipped with a note) against the reference
runtime, checks every invariant and every expect field, and writes reports (summary.md is also
appended to $GITHUB_STEP_SUMMARY when that is set). The scenario format, every field:
docs/SCENARIO-FORMAT.md (JSON Schema: schema/scenario.schema.json); the invariants:
docs/DESIGN.md; the policy the expect fields follow: docs/POLICY.md.

options (each at most once, unless marked repeatable):
  --defect NAME        switch a seeded defect on for every scenario (repeatable; see `hiccup defects`)
  --catches            kill matrix: also run each scenario once per defect in its `catches`;
                       such a run passes when its verdict fails (the defect was caught)
  --tag TAG            run only scenarios with this tag (repeatable: any of them)
  --transport KIND     http or sse (default: a mock server per run on 127.0.0.1, the provider's
                       own path and SSE), memory (in-process), websocket (the Responses API's
                       WebSocket mode on that server; plays openai-responses scenarios, others
                       are skipped unless --provider openai-responses;
                       docs/WIRE-FORMATS.md "Responses over WebSocket"), or a cloud path of the
                       anthropic format over HTTP: bedrock (/model/{id}/invoke-with-response-stream,
                       AWS event-stream frames), vertex (:streamRawPredict) or foundry
                       (/anthropic/v1/messages); docs/WIRE-FORMATS.md "Cloud paths"
  --provider NAME      play every scenario in this wire format instead of its own `provider`:
                       gemini, openai-chat, openai-responses or anthropic; a scenario it
                       cannot play (a per-day quota in anthropic) is skipped with a note,
                       and when none is left the run exits 3
  --recovery DESIGN    play every scenario that does not pin runtime.recovery (and has no
                       interrupt) under this recovery design: hold or continue (docs/POLICY.md
                       "Recovery designs"); expect fields whose oracle prediction differs
                       between the designs are replaced by the prediction for DESIGN, and
                       --catches runs only the catches of scenarios played under their own
                       design, and skips defects with no site in the design played
  --report-dir DIR     where junit.xml, report.html, summary.json and summary.md go (default:
                       reports); a folder scan skips it (docs/REPORTS.md)
  --transcripts        every case's transcript in summary.json (failing cases always carry theirs)
  --seed N             the runtime's random seed (default 1)
  --agent NAME         run an external agent CLI instead of the reference runtime, by recipe
                       name (harness/agents/recipes/NAME.json, e.g. gemini-cli) or recipe path;
                       install agents with scripts/install_agents.sh; hiccup finds them in
                       $HICCUP_AGENT_CACHE when set (the script installs there too), else in
                       .cache/npm/ of this source tree. A scenario named AGENT-… or tagged
                       AGENT for other agents is skipped with a note (as `hiccup matrix` does).
                       A scenario with `session` or an `after_event` `interrupt` plays where the
                       recipe declares `cancel` (codex, claude-code): SIGINT at the held event,
                       then its resume command with the next prompt (docs/AGENTS.md); one the
                       agent cannot play (no `cancel`, another format) is skipped with a note
  --agent-cmd COMMAND  run COMMAND (through /bin/sh -c) as the agent; it gets HICCUP_BASE_URL,
                       HICCUP_PROMPT, HICCUP_LEDGER and the provider's base-URL variable; it
                       runs in a scratch folder with a scratch HOME and TMPDIR (the folder hiccup
                       was started from is in HICCUP_INVOKE_DIR: give paths absolute or from it)
                       and an environment of PATH, HOME, TMPDIR, LANG and HICCUP_* alone: set
                       anything else in COMMAND (`FAKE_AGENT_MODE=duplicate exec python3 ...`)
  --agent-timeout S    wall-clock limit per agent run in seconds (default: the recipe's, 120)
  --strict             with --agent/--agent-cmd: policy differences fail too (below)
  --timing-scale X     play every scenario's event timing (`delay_s`) at X times, in place of its
                       own `timing.scale` (its `max_delay_s` still caps): 0 plays none, 0.1 ten
                       times faster (docs/SCENARIO-FORMAT.md "Event timing"); X in 0..1000000
  -h, --help           this text

With --agent/--agent-cmd the verdict is black-box, in real time: every invariant the journal and
the ledger can judge (Retry-After against measured gaps), plus scenario-coverage (every turn a
correct client reaches was requested), outcome-agreement (where a correct client completes, the
agent reports success and shows the final text) and liveness; `hiccup invariants` lists what
stays n/a and why. An agent that fails honestly (reports failure, breaks no invariant, made a
request) where docs/POLICY.md would have retried and completed is a policy difference, not a bug:
DIFF, passing unless --strict. Time is real for agents: a fault's idle_ms / delay_ms are real
milliseconds, a stall's virtual second is a real second, and Retry-After (header or RetryInfo) is
a real delay the agent must wait, judged against the measured gap between the end of the answer
and the next request of the turn (20 ms slack).

exit codes: 0 all passed, 1 some verdict failed, 2 usage error, 3 invalid input, 5 internal error
(never a verdict)
)";

constexpr const char* kLintUsage = R"(usage: hiccup lint PATH...

Validates scenario files (or folders, searched like `hiccup run` does) without running them
against the scenario format (docs/SCENARIO-FORMAT.md, every field and every cross-field rule): one
line per problem,
`error: FILE: /json/pointer: what was expected, what was found`. Warnings (the file stays
valid): a stall that races the idle timeout over HTTP, and a run the reference runtime ends at
its cap of 32 model turns per prompt (error max_turns) without `expect.error: "max_turns"`.

exit codes: 0 all valid, 2 usage error, 3 invalid input
)";

/// Loads every scenario under `paths` (a folder scan skips `skip_dir`, the run's own report
/// directory); prints problems and skip notes; returns false when any problem.
bool load_all(const std::vector<std::string>& paths, std::vector<Scenario>& out, const std::string& skip_dir = "") {
  std::vector<LoadProblem> problems;
  std::vector<std::string> notes;
  const std::vector<std::string> files =
      collect_scenario_files(paths, problems, ScanOptions{skip_dir.empty() ? std::vector<std::string>{} : std::vector<std::string>{skip_dir}}, &notes);
  for (const std::string& n : notes) std::cerr << "note: " << n << '\n';
  std::map<std::string, std::string> names;
  for (const std::string& file : files) {
    LoadResult r = load_scenario_file(file);
    for (LoadProblem& p : r.problems) problems.push_back(std::move(p));
    if (!r.scenario) continue;
    auto [it, fresh] = names.emplace(r.scenario->name, file);
    if (!fresh) {
      problems.push_back({file, "/name", "name " + mock::json_text::quote_input(r.scenario->name) + " is already used by " + it->second});
      continue;
    }
    out.push_back(std::move(*r.scenario));
  }
  if (files.empty() && problems.empty()) problems.push_back({"", "", "no scenario files found"});
  for (const LoadProblem& p : problems) std::cerr << format_problem(p) << '\n';
  return problems.empty();
}

std::string classname_of(const Scenario& s) {
  const std::filesystem::path p(s.source_path);
  const std::string folder = p.parent_path().filename().string();
  return "hiccup." + (folder.empty() ? std::string("scenarios") : folder);
}

/// The command line that replays one case: `/ABS/hiccup run /ABS/FILE` with the run's options. The
/// running binary (running_binary()) and the file by absolute paths, so the line runs when pasted
/// in any folder (it said `build/hiccup`, found only from the source tree's root).
std::string replay_command(const Scenario& s, const RunOptions& o, const std::string& provider,
                           const std::string& recovery, const std::string& timing_scale = "") {
  std::string cmd = running_binary() + " run " + shell_quote(absolute_path(s.source_path));
  for (const std::string& d : o.extra_defects) cmd += " --defect " + d;
  if (!o.cloud.empty()) cmd += " --transport " + o.cloud;
  else if (o.transport != TransportKind::kHttp) cmd += " --transport " + std::string(transport_name(o.transport));
  if (!provider.empty()) cmd += " --provider " + provider;
  if (!recovery.empty()) cmd += " --recovery " + recovery;
  if (o.seed != 1) cmd += " --seed " + std::to_string(o.seed);
  if (!timing_scale.empty()) cmd += " --timing-scale " + shell_quote(timing_scale);
  return cmd;
}

/// What a valid scenario file should still change (scenario_warnings: stalls that race their idle
/// timeout over HTTP, a fallback model equal to the model in use), as warnings on stderr.
/// `timing`: include the stalls (they matter over HTTP only).
void print_scenario_warnings(const std::vector<Scenario>& scenarios, bool timing) {
  for (const Scenario& s : scenarios) {
    for (const LoadProblem& p : timing ? scenario_warnings(s) : fallback_warnings(s)) {
      std::cerr << "warning: " << p.file << ": " << p.pointer << ": " << p.message << "\n";
    }
  }
}

/// The scenarios whose run the reference runtime ends at its turn cap (the oracle predicts
/// "max_turns") while `expect.error` does not say so, as warnings on stderr pointing at the first
/// turn it never requests. The file stays valid: an external agent may play every turn.
void print_turn_cap_warnings(const std::vector<Scenario>& scenarios) {
  for (const Scenario& s : scenarios) {
    if (s.expect.error == "max_turns") continue;
    const OracleResult r = predict(s);
    if (r.error != "max_turns") continue;
    const std::size_t next = static_cast<std::size_t>(r.turns_reached);
    const std::string pointer = next < s.script.turns.size() ? "/turns/" + std::to_string(next) : "/turns";
    std::cerr << "warning: " << s.source_path << ": " << pointer << ": the reference runtime ends a prompt's run after "
              << kReferenceMaxTurns << " model turns with error \"max_turns\" (docs/POLICY.md \"Retries\"), so it "
              << "never requests turn " << next << "; say so with \"expect\": {\"outcome\": \"failed\", "
              << "\"error\": \"max_turns\"}, or end the run sooner\n";
  }
}

/// A report case; its transcript when it failed or `transcripts` asks for every one.
ReportCase to_report_case(const CaseResult& r, std::string name, std::string classname, bool transcripts) {
  ReportCase c;
  c.name = std::move(name);
  c.classname = std::move(classname);
  c.passed = r.passed();
  c.violations = r.violations;
  c.digest = r.digest;
  c.wall_ms = r.wall_ms;
  c.extra = {{"requests", r.run.requests}, {"waited_s", r.run.waited_s},
             {"outcome", r.run.completed ? "completed" : "failed"},
             {"provider", r.scenario.script.provider}};
  if (!r.run.error.empty()) c.extra["error"] = r.run.error;
  if (!r.scenario.source_path.empty()) c.extra["file"] = r.scenario.source_path;
  if (!r.scenario.tags.empty()) c.extra["tags"] = r.scenario.tags;
  // Over HTTP: judged on a slower re-run (RunOptions::http_slower_reruns), or different from memory.
  if (r.slower_reruns > 0) c.extra["http_slower_reruns"] = r.slower_reruns;
  if (r.differs_from_memory) c.extra["http_differs_from_memory"] = true;
  if (r.run.truncated) c.extra["truncated"] = true;  // shown on the console line, passed or not
  if (transcripts || !r.passed()) {
    c.transcript = make_review_transcript(r.scenario, r.run, r.journal, r.violations, r.sent_at_s);
    c.extra["scenario_text"] = write_scenario(r.scenario);
  }
  return c;
}

}  // namespace

int run_command(const Args& args) {
  ArgReader in(args);
  std::vector<std::string> paths, defects, tags;
  std::string report_dir = "reports", transport = "http", seed_text = "1", v;
  std::string agent, agent_cmd, agent_timeout, provider, recovery, timing_scale_text;
  bool provider_given = false, seed_given = false,
       transport_given = false;
  bool catches = false, strict = false, transcripts = false;
  while (!in.done()) {
    if (in.flag("--help") || in.flag("-h")) {
      std::cout << kRunUsage;
      return kExitPassed;
    }
    if (in.repeatable_value("--defect", v)) {
      if (std::find(defects.begin(), defects.end(), v) == defects.end()) defects.push_back(v);  // twice = once
    }
    else if (in.repeatable_value("--tag", v)) tags.push_back(v);
    else if (in.value("--report-dir", report_dir) ||
             (in.value("--transport", transport) && (transport_given = true)) ||
             (in.value("--provider", provider) && (provider_given = true)) ||
             in.value("--recovery", recovery) ||
             (in.value("--seed", seed_text) && (seed_given = true)) ||
             in.value("--agent", agent) ||
             in.value("--agent-cmd", agent_cmd) ||
             in.value("--agent-timeout", agent_timeout) ||
             in.value("--timing-scale", timing_scale_text)) {
    } else if (in.flag("--catches")) catches = true;
    else if (in.flag("--transcripts")) transcripts = true;
    else if (in.flag("--strict")) strict = true;
    else if (in.peek().rfind("-", 0) == 0) in.set_error("unknown option \"" + in.take() + "\"");
    else paths.push_back(in.take());
  }
  RunOptions options;
  const auto seed = in.number<std::uint64_t>("--seed", seed_text, 0, std::numeric_limits<std::uint64_t>::max(),
                                             "a whole number");
  if (transport == "sse") transport = "http";
  if (!transport_option(transport, options.transport, options.cloud)) {
    in.set_error("--transport expects http, sse, memory, websocket, bedrock, vertex or foundry, found \"" + transport + "\"");
  }
  if (transport == "websocket" && provider_given && provider != "openai-responses") {
    in.set_error("--transport websocket plays the openai-responses format (the WebSocket mode is the Responses API's), found --provider " + provider);
  }
  if (provider_given && !rut::codec_for(provider)) {
    in.set_error("--provider expects gemini, openai-chat, openai-responses or anthropic, found \"" +
                 provider + "\"");
  }
  if (!recovery.empty() && recovery != "hold" && recovery != "continue") {
    in.set_error("--recovery expects hold or continue, found \"" + recovery + "\"");
  }
  // After the option values: `run --recovery FILE` took FILE as the design, which is the error to name.
  if (paths.empty()) in.set_error("no PATH given");
  if (!agent.empty() && !agent_cmd.empty()) in.set_error("--agent and --agent-cmd exclude each other");
  const bool black_box = !agent.empty() || !agent_cmd.empty();
  if (black_box && seed_given) in.set_error("--seed applies to the reference runtime, not to --agent/--agent-cmd");
  if (!options.cloud.empty() && black_box) {
    in.set_error("--transport " + transport + " applies to the reference runtime, not to --agent/--agent-cmd");
  } else if (black_box && transport_given && transport != "http") {
    in.set_error("--agent/--agent-cmd runs over HTTP only (an external process), found --transport " + transport);
  }
  if (!black_box && !agent_timeout.empty()) in.set_error("--agent-timeout applies to --agent/--agent-cmd runs");
  if ((!agent.empty() || !agent_cmd.empty()) && (!defects.empty() || catches)) {
    in.set_error("--defect and --catches apply to the reference runtime, not to --agent/--agent-cmd");
  }
  if (strict && agent.empty() && agent_cmd.empty()) in.set_error("--strict applies to --agent/--agent-cmd runs");
  if (!recovery.empty() && black_box) in.set_error("--recovery applies to the reference runtime, not to --agent/--agent-cmd");
  if (transcripts && black_box) in.set_error("--transcripts applies to the reference runtime, not to --agent/--agent-cmd");
  std::optional<unsigned> agent_timeout_s;  // --agent-timeout, when given
  if (!agent_timeout.empty()) {
    agent_timeout_s = in.number("--agent-timeout", agent_timeout, 1u, std::numeric_limits<unsigned>::max(), "whole seconds >= 1");
  }
  for (const std::string& d : defects) {
    if (!rut::defect_from_name(d)) in.set_error("--defect: unknown defect \"" + d + "\" (see `hiccup defects`)");
  }
  std::optional<double> timing_scale;  // --timing-scale, when given
  if (!timing_scale_text.empty()) timing_scale = in.decimal("--timing-scale", timing_scale_text, 0, 1e6, "a number in 0..1000000");
  if (!in.error().empty()) {
    return usage_error("run", in.error());
  }
  options.seed = *seed;
  options.extra_defects = defects;

  std::vector<Scenario> scenarios;
  if (!load_all(paths, scenarios, report_dir)) return kExitInvalidInput;
  if (!tags.empty()) {
    std::erase_if(scenarios, [&](const Scenario& s) {
      for (const auto& t : s.tags) {
        if (std::find(tags.begin(), tags.end(), t) != tags.end()) return false;
      }
      return true;
    });
    if (scenarios.empty()) {
      std::cerr << "error: no scenario under the given paths has any of the tags given with --tag\n";
      return kExitInvalidInput;
    }
  }

  // --timing-scale: every scenario's `timing.scale`, in place of its own (before the warnings,
  // which judge the delays as they will play).
  if (timing_scale) {
    for (Scenario& s : scenarios) s.script.timing.scale = *timing_scale;
  }
  print_scenario_warnings(scenarios, over_network(options.transport) && agent.empty());
  if (!provider.empty()) {
    for (Scenario& s : scenarios) {
      // A status the played provider never sends is still sent as scripted, in its envelope.
      for (const LoadProblem& p : status_problems(s, provider, s.source_path)) {
        std::cerr << "warning: " << s.source_path << ": " << p.pointer << ": " << p.message
                  << " (played as scripted with --provider " << provider << ")\n";
      }
      s.script.provider = provider;
    }
    // A scenario that says what the played provider cannot (a per-day quota in Anthropic) is
    // skipped: its expectations could not hold there.
    std::erase_if(scenarios, [&](const Scenario& s) {
      const auto why = unplayable_in(s, provider);
      if (why) std::cout << "SKIP " << s.name << ": not playable with --provider " << provider << ": " << *why << '\n';
      return why.has_value();
    });
    if (scenarios.empty()) {
      std::cerr << "error: no scenario under the given paths can be played with --provider " << provider << '\n';
      return kExitInvalidInput;
    }
  }
  if (transport == "websocket") {
    // The WebSocket mode is the Responses API's: other providers' scenarios are skipped.
    std::erase_if(scenarios, [&](const Scenario& s) {
      if (s.script.provider == "openai-responses") return false;
      std::cout << "SKIP " << s.name << ": --transport websocket plays openai-responses scenarios (its provider is "
                << s.script.provider << "; add --provider openai-responses)\n";
      return true;
    });
    if (scenarios.empty()) {
      std::cerr << "error: --transport websocket plays openai-responses scenarios only; none is (add --provider openai-responses)\n";
      return kExitInvalidInput;
    }
  }
  if (!options.cloud.empty()) {
    // A cloud path is a path of the anthropic format: other providers' scenarios are skipped.
    std::erase_if(scenarios, [&](const Scenario& s) {
      if (s.script.provider == "anthropic") return false;
      std::cout << "SKIP " << s.name << ": --transport " << options.cloud << " plays anthropic scenarios (its provider is "
                << s.script.provider << "; add --provider anthropic)\n";
      return true;
    });
    if (scenarios.empty()) {
      std::cerr << "error: --transport " << options.cloud << " plays anthropic scenarios only; none is (add --provider anthropic)\n";
      return kExitInvalidInput;
    }
  }
  std::set<std::string> redesigned;  // scenarios --recovery moved to another design
  if (!recovery.empty()) {
    // After --provider: the oracle predicts in the format played (the same in every format).
    for (Scenario& s : scenarios) {
      Scenario played = played_under(s, recovery);
      if (recovery_of(played) != recovery_of(s)) redesigned.insert(s.source_path + "\n" + s.name);
      s = std::move(played);
    }
  }

  if (!agent.empty() || !agent_cmd.empty()) {
    agents::AgentRunOptions agent_options;
    if (agent_timeout_s) agent_options.timeout_s = *agent_timeout_s;
    agent_options.strict = strict;
    return agents::run_agent_command(scenarios, agent, agent_cmd, agent_options, report_dir, provider);
  }

  std::error_code ec;
  std::filesystem::create_directories(report_dir, ec);
  if (ec || !std::filesystem::is_directory(report_dir)) {
    std::cerr << "error: " << report_dir << ": cannot create the report directory" << (ec ? ": " + ec.message() : std::string()) << '\n';
    return kExitInvalidInput;
  }
  FanoutListener report;
  report.set_command_line(command_line("run", args));
  report.add(make_console_listener(std::cout));
  report.add(make_junit_listener(report_dir + "/junit.xml"));
  report.add(make_summary_listener(report_dir + "/summary.json"));
  report.add(make_markdown_listener(report_dir + "/summary.md", github_step_summary_path()));
  report.add(make_html_listener(report_dir + "/report.html"));
  RunInfo info{"run", options.seed, options.cloud.empty() ? std::string(transport_name(options.transport)) : options.cloud, defects, provider};
  info.recovery = recovery;
  info.scenarios = static_cast<int>(scenarios.size());
  for (const Scenario& s : scenarios) {
    if (!s.runtime.defects.empty()) ++info.scenarios_with_defects;
    for (const std::string& d : s.runtime.defects) {
      if (std::find(info.scenario_defects.begin(), info.scenario_defects.end(), d) == info.scenario_defects.end()) {
        info.scenario_defects.push_back(d);
      }
    }
  }
  report.run_starting(info);
  for (const std::string& name : defects) {
    // A defect bound to the other design changes nothing in the streamed scenarios of this run.
    for (const rut::DefectInfo& d : rut::defect_catalogue()) {
      if (d.name == name && !recovery.empty() && !d.design.empty() && d.design != recovery) {
        std::cout << "note: --defect " << name << " bends the " << d.design << " design: under --recovery " << recovery
                  << " it has no site in a streamed scenario that does not pin runtime.recovery (docs/POLICY.md \"Recovery designs\")\n";
      }
      if (d.name == name && !d.transport.empty() && d.transport != transport_name(options.transport)) {
        std::cout << "note: --defect " << name << " has its site in the " << d.transport << " transport: over "
                  << transport_name(options.transport) << " it changes nothing (--transport " << d.transport << ")\n";
      }
    }
  }

  RunTotals totals;
  auto record = [&](const ReportCase& c) {
    (c.passed ? totals.passed : totals.failed) += 1;
    totals.wall_ms += c.wall_ms;
    report.case_ended(c);
  };
  for (const Scenario& s : scenarios) {
    // A file that switches defects on itself (an explore counterexample does) fails without
    // --defect; the header names them too, this note the file.
    if (!s.runtime.defects.empty()) {
      std::cout << "note: " << s.name << " switches on defect" << (s.runtime.defects.size() > 1 ? "s " : " ");
      for (std::size_t i = 0; i < s.runtime.defects.size(); ++i) std::cout << (i ? ", " : "") << s.runtime.defects[i];
      std::cout << " itself (runtime.defects of " << s.source_path << ")\n";
    }
    const CaseResult r = run_scenario(s, options);
    if (r.differs_from_memory) {
      const std::string over = options.cloud.empty() ? std::string(transport_name(options.transport)) : options.cloud;
      std::cout << "note: " << s.name << ": over " << over << " its transcript differs from the in-memory run's even at "
                << rerun_slowdown(r.slower_reruns) << "x the real time (a difference of the " << over << " path, or a machine "
                << "too loaded even for that); judged on that run\n";
    } else if (r.slower_reruns > 0) {
      std::cout << "note: " << s.name << ": the first "
                << (options.cloud.empty() ? std::string(transport_name(options.transport)) : options.cloud)
                << " run differed from memory (the machine's load); judged on a "
                << "slower re-run that agrees\n";
    }
    ReportCase c = to_report_case(r, s.name, classname_of(s), transcripts);
    c.extra["replay"] = replay_command(s, options, provider, recovery, timing_scale_text);
    record(c);
    if (!catches) continue;
    if (!s.catches.empty() && redesigned.contains(s.source_path + "\n" + s.name)) {
      // `catches` are claims for the scenario's own design: a hold scenario may reach a defect's
      // site only on hold's path (a retry after a cut), which continue never takes.
      std::cout << "SKIP " << s.name << " catches: played under --recovery " << recovery
                << ": its catches are claims for hold, the design it was written for (docs/POLICY.md "
                << "\"Recovery designs\")\n";
      continue;
    }
    for (const std::string& defect : s.catches) {
      const auto info = std::find_if(rut::defect_catalogue().begin(), rut::defect_catalogue().end(),
                                     [&](const rut::DefectInfo& d) { return d.name == defect; });
      if (info != rut::defect_catalogue().end() && !info->unreachable_in.empty() &&
          info->unreachable_in == s.script.provider) {
        std::cout << "SKIP " << s.name << " catches " << defect << ": no site in " << s.script.provider << " ("
                  << info->unreachable_why << ")\n";
        continue;
      }
      if (info != rut::defect_catalogue().end() && !info->transport.empty() &&
          info->transport != transport_name(options.transport)) {
        std::cout << "SKIP " << s.name << " catches " << defect << ": no site over " << transport_name(options.transport)
                  << " (its site is the " << info->transport << " transport: --transport " << info->transport << ")\n";
        continue;
      }
      if (info != rut::defect_catalogue().end() && !info->design.empty() && info->design != design_in_effect(s)) {
        std::cout << "SKIP " << s.name << " catches " << defect << ": no site under recovery " << recovery_of(s)
                  << (recovery_of(s) != design_in_effect(s) ? " (which is hold with runtime.stream false: the answer arrives whole)" : "")
                  << " (the defect bends the " << info->design << " design)\n";
        continue;
      }
      if (std::find(options.extra_defects.begin(), options.extra_defects.end(), defect) != options.extra_defects.end()) {
        // The row would run the same defects as the scenario's own run: it kills nothing.
        std::cout << "SKIP " << s.name << " catches " << defect << ": --defect " << defect
                  << " already switched it on for every run\n";
        continue;
      }
      RunOptions with = options;
      with.extra_defects.push_back(defect);
      const CaseResult k = run_scenario(s, with);
      ReportCase c = to_report_case(k, s.name + " catches " + defect, "hiccup.kill-matrix", true);
      c.passed = !k.passed();
      c.extra["replay"] = replay_command(s, with, provider, recovery, timing_scale_text);
      // A caught defect is the expected verdict; a survivor's transcript shows how it got through.
      if (c.passed && !transcripts) {
        c.transcript = nullptr;
        c.extra.erase("scenario_text");
      }
      c.extra["defect"] = defect;
      c.extra["caught_by"] = nlohmann::json::array();
      for (const Violation& viol : k.violations) c.extra["caught_by"].push_back(viol.invariant);
      if (!c.passed) c.detail = "defect " + defect + " survived: the verdict passed with it switched on";
      c.violations.clear();
      record(c);
    }
  }
  try {
    report.run_ended(totals);
  } catch (const ReportWriteError& e) {
    std::cerr << "error: report not written: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  return totals.failed == 0 ? kExitPassed : kExitFailed;
}

int lint_command(const Args& args) {
  std::vector<std::string> paths;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kLintUsage;
      return kExitPassed;
    }
    if (a.rfind("-", 0) == 0) {
      return usage_error("lint", "unknown option \"" + a + "\"");
    }
    paths.push_back(a);
  }
  if (paths.empty()) {
    return usage_error("lint", "no PATH given");
  }
  std::vector<Scenario> scenarios;
  if (!load_all(paths, scenarios)) return kExitInvalidInput;
  print_scenario_warnings(scenarios, true);
  print_turn_cap_warnings(scenarios);
  std::cout << scenarios.size() << " scenario file(s) valid\n";
  return kExitPassed;
}

}  // namespace harness::cli
