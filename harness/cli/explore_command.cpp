// `hiccup explore`: property-based exploration of the reference runtime (harness/explore/).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <regex>
#include <vector>

#include "harness/agents/agent_explorer.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/explore/explorer.h"
#include "harness/report/report.h"
#include "harness/report/report_dir_lock.h"
#include "harness/scenario_io.h"
#include "runtime_under_test/cloud_transport.h"
#include "runtime_under_test/codec.h"
#include "runtime_under_test/defects.h"

namespace harness::cli {
namespace {

constexpr const char* kExploreUsage = R"(usage: hiccup explore [options]

Generates scenarios from a seed (1-6 turns, 0-4 parallel calls a turn, every fault kind at every
position, HTTP statuses with and without Retry-After, content-filter and malformed-call finishes,
slice_bytes, random runtime settings, in one case in three a user interrupt (half of them followed
by a second session prompt), and in one case in four of the others a session of 2-3 prompts),
predicts each with the oracle (an independent model of docs/POLICY.md), runs it against the
reference runtime and checks every invariant. The first failure
is shrunk, minimized to a 1-minimal case (no single turn, attempt, event, fault, slicing,
interrupt or session prompt can go) and written to REPORT_DIR/counterexamples/NAME.json, a scenario
file (docs/SCENARIO-FORMAT.md) replayable with `hiccup run`; over http, a failure the in-memory transport reproduces is shrunk in memory and
its counterexample must then fail over http too (else it is shrunk over http). At the end it
prints its coverage (per fault kind, finish, status, provider, fault position, and per invariant
the cases where its precondition held; docs/COVERAGE.md) and warns about every invariant never
exercised.

options (each at most once, unless marked repeatable):
  --cases N                 cases to generate (default 100)
  --seed S                  exploration seed (default 1); same seed, same cases, same verdicts
  --defect NAME             switch a seeded defect on (repeatable; see `hiccup defects`)
  --provider NAME           play every case in this wire format: gemini, openai-chat,
                            openai-responses or anthropic (default: drawn per case from its seed)
  --from FILE               every case is FILE's scenario (a `hiccup record` recording or any
                            scenario file) with 0-2 failures drawn before each turn's
                            scripted attempts (an HTTP status, or the turn's own answer with any
                            fault at any event; an interrupt's attempt moves with them); its
                            provider, runtime settings, session, turns, texts and calls stay,
                            expectations come from the oracle, and the counterexample keeps
                            FILE's turns, each ending with FILE's answer unchanged, and no
                            text or arguments but FILE's (only what was drawn onto it is cut
                            down; docs/RECORDING.md). A FILE with an interrupt, a session,
                            the continue design, max_virtual_s or event timing is refused
                            (exit 3): the oracle does not predict them under drawn failures
                            yet. Not with --provider, --recovery
  --recovery DESIGN         every case under this recovery design: hold or continue (default: drawn
                            per case, one in three continue; when every --defect has a site in one
                            design only, that design)
  --transport KIND          memory (default for explore: in-process, fast), http (a mock server on
                            127.0.0.1, real time; sse is the same), websocket (the Responses API's
                            WebSocket mode on that server), bedrock, vertex or foundry (cloud
                            paths of the anthropic format over http; docs/WIRE-FORMATS.md), or
                            any (each case's transport drawn from (seed, case) among those its
                            format plays: openai-responses http or websocket, anthropic http,
                            bedrock, vertex or foundry, the others http; the cases per transport
                            are printed at the end, and a failing case's transport is named in
                            its FAIL line and its replay line).
                            websocket plays openai-responses cases only and a cloud path
                            anthropic cases only: without --provider every case is drawn in that
                            format (the cases of --provider openai-responses or anthropic, same
                            seed); another --provider is a usage error, a --from FILE of another
                            provider invalid input (exit 3). Over websocket an attempt that ends
                            the connection with close code 1011 or without a close frame, where
                            over http the stream would end cleanly, is a lost connection, not an
                            incomplete stream: such a case's transcript is not compared with its
                            in-memory run (--http-reruns). A fault drawn after a response's
                            terminal event plays inside that response's cycle, and the runtime
                            reopens a kept connection found dead before its next response began
                            (not an attempt): no verdict depends on when the next request meets
                            that fault
  --report-dir DIR          where junit.xml, summary.json, summary.md and counterexamples/ go
                            (default: reports); summary.md is also appended to
                            $GITHUB_STEP_SUMMARY when that is set. One exploration at a time
                            per directory: a second one started while the first runs exits 3
                            and touches nothing. An earlier exploration's counterexamples there
                            (explore-sS-cN.json) are removed once this run's reports replace its
                            reports, never before
  --transcripts             every case's transcript in summary.json (`explored`); the failing
                            property always carries its counterexample's
  --check-determinism [P]   re-run P % of the cases (default 10; `all` = every case) and compare
                            transcript digests; a mismatch exits with 4. Without it 1 %: cases
                            0, 100, 200, ... (failing cases are always re-run once)
  --shard K/N               run only cases with index % N == K-1 (same cases as an unsharded run);
                            a shard that holds no case (--cases below K) is a usage error
  --max-shrinks N           candidate runs spent shrinking through RapidCheck's shrink tree at most
                            (default 2000; the minimization after it has its own budget, 3000);
                            0: neither shrinks nor minimizes, the counterexample is the failing
                            case as generated
  --http-idle-floor-ms MS   over http (and websocket, bedrock, vertex, foundry: every transport but
                            memory), the shortest real idle timeout (default 300; `hiccup run`
                            always 500): virtual seconds of silence are scaled so the idle timeout
                            lasts at least MS (a case the machine's load made time out is run
                            again slower: --http-reruns)
  --http-reruns N           over http (and every transport but memory), a case that met an idle timeout or a cap and whose
                            transcript differs from its in-memory run's is run again over http
                            at 4x the real time per virtual second, then 16x, ... up to N times
                            (default 2; 0..4; the 4th re-run lasts 256x the first): a loaded
                            machine's scheduling delays can trip an idle timeout the scenario did
                            not ask for. A case that still differs is judged on its slowest run
                            and listed as HTTP DIFFERS (WEBSOCKET DIFFERS, ...: the transport's
                            name); 0: every run judged as it came (on a
                            loaded machine then raise --http-idle-floor-ms: at 300 ms two
                            explorations at once gave spurious idle timeouts, exit 4)
  --jobs N                  cases run at once, at most 256 (default 64 over the network; in memory one per
                            hardware thread, at most 8); verdicts and digests do not depend on
                            it, nor in memory anything else; over http which cases took a slower
                            re-run, and an interrupted request's delivered counts, can
  --keep-going              do not stop at the first failure (later failures are listed, not shrunk)
  --progress-every S        when stderr is not a terminal, a progress line on it every S seconds
                            (default 10; 0: none); on a terminal one live line instead
  -h, --help                this text

Exploring an external agent (a black box), instead of the reference runtime:
  --agent NAME              explore an agent CLI by recipe name (harness/agents/recipes/NAME.json)
                            or recipe path, as `hiccup run --agent` runs it
  --agent-cmd COMMAND       explore COMMAND (through /bin/sh -c; any program, a test suite too) as
                            the agent; it gets HICCUP_BASE_URL, HICCUP_PROMPT, HICCUP_LEDGER and the
                            provider's base-URL variable, as with `hiccup run --agent-cmd`; it
                            runs in a scratch folder with PATH, HOME, TMPDIR, LANG and HICCUP_*
                            alone: paths absolute, other variables set in COMMAND
  --tool NAME:ARG           with --agent-cmd: the agent's shell tool and the argument holding its
                            command line (default run_shell_command:command)
  --provider NAME           with --agent-cmd: the wire format it speaks (default gemini); with
                            --agent it must be the recipe's own
  --cases N, --seed S       as above: same seed, same generated cases (summary.json `digest`)
  --jobs N                  agent runs at once (default 2; each its own server and scratch folder)
  --confirm K               re-runs of a failing case (default 3; 0..20): confirmed when K-1 of
                            them (at least 1) fail with the same signature (the violated
                            invariants, the fault kind and where it fell), else reported as flaky
                            with its rate and not shrunk; a re-run starts only while the verdict
                            can still change (K = 3: two, a third when they disagree), every
                            failure's re-runs sharing the --jobs slots; a
                            signature's smallest case is tried first
  --time-budget S           seconds (default 600): no case starts after S, and each distinct
                            confirmed failure is shrunk for at most S (the smallest failing case
                            found by then is kept)
  --shrink-budget S         seconds each distinct confirmed failure is shrunk for at most
                            (default: --time-budget's); a candidate's agent runs get at most what
                            is left of it, and one killed on that shorter limit shows nothing
  --agent-timeout S         wall-clock limit per agent run in seconds (default: the recipe's, 120)
  The generated cases are limited to what the agent can play: its wire format, its tool with the
  ledger placeholder, 1-4 turns, at most min(3, budget-1) failing attempts a turn (its recipe's max_attempts;
  10 for --agent-cmd) and a last one that completes, no repeated call ids; one prompt, unless the
  recipe declares a `cancel` (SIGINT, then a resume command): then sessions of 2-3 prompts and the
  user's cancel while the answer streams (after an event, or inside a call's arguments, on an
  attempt that scripts no fault; every drawn cancel is placed there, never while a tool runs or
  during a backoff) are drawn too, and a failure after a cancel is signed by it (e.g.
  "history-integrity | cancel after text"). Time is real: a stall's virtual second is a real second (stalls last 0.5-1 s here,
  none long enough to trip an idle timeout), Retry-After is at most 1 s and the agent must wait it,
  a reset's idle_ms and a FIN's delay_ms are real milliseconds, and the agent's own backoff is
  real time. Each case runs through the black-box judge (as `hiccup run --agent`); failures are
  grouped by signature, and each distinct confirmed failure is shrunk by re-running the agent (each
  failed attempt alone, the others deleted, then runs of turns, each turn alone, runs of failed
  attempts, the events after every disconnect, reset, end and error event, runs of events, then single deletions, no simplification of texts; an edit is kept when the smaller case fails the
  same way in 2 of 3 runs, and a candidate that no longer scripts the failure's fault, or its
  cancel, or any call when at-most-once or recorded-execution is broken, is ruled out without a
  run, as is one rejected before; a `kept:` line per edit kept, with the size and the time so
  far) and written to
  REPORT_DIR/counterexamples/AGENT-explore-sS-cN.json with its replay line, a suggested pin
  for harness/agents/known-failures.json (AGENT-explore-sS-cN.pin.json) and whether the
  reference runtime passes the same file. A black box's verdicts may vary between runs. Exit 0 when
  no failure was confirmed (flaky ones are reported, not failed), 1 a confirmed failure or a case
  that could not run (an agent that exits non-zero before any request to the mock is one). The
  flags of the reference runtime (--defect, --recovery, --transport, --shard,
  --check-determinism, --max-shrinks, --http-*, --keep-going, --transcripts, --progress-every) do not
  apply: a black box's exploration prints a line per case run, per confirmation and per shrink edit kept.

exit codes: 0 no failure, 1 a failure found, 2 usage error (e.g. an unknown --defect), 3 invalid input,
4 determinism mismatch, 5 internal error (never a verdict)
)";

}  // namespace

namespace {

/// The counterexamples an earlier exploration left in REPORT_DIR/counterexamples
/// (explore-sSEED-cCASE.json, the names explore gives; regular files or symlinks), listed when this
/// run starts: they are removed once this run's reports are written (remove_replaced_counterexamples),
/// never before, so the directory's reports point at existing files at every moment. False, with the
/// error on stderr, when the folder cannot be listed: the run then stops, as for a report file that
/// cannot be written.
bool list_earlier_counterexamples(const std::string& report_dir, std::vector<std::filesystem::path>& out) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(report_dir) / "counterexamples";
  static const std::regex kName(R"(explore-s(0|[1-9][0-9]*)-c(0|[1-9][0-9]*)\.json)");
  std::error_code list;
  fs::directory_iterator it(dir, list);
  if (list && list != std::errc::no_such_file_or_directory && list != std::errc::not_a_directory) {
    std::cerr << "error: " << dir.string() << ": cannot look for an earlier exploration's counterexamples: "
              << list.message() << '\n';
    return false;
  }
  for (fs::directory_iterator end; !list && it != end; it.increment(list)) {
    std::error_code type;
    if (std::regex_match(it->path().filename().string(), kName) &&
        (it->is_regular_file(type) || it->is_symlink(type))) {
      out.push_back(it->path());
    }
  }
  std::sort(out.begin(), out.end());
  return true;
}

/// Removes the earlier exploration's counterexamples (list_earlier_counterexamples) now that this
/// run's reports replace that exploration's, except `written`, this run's own (the same name when
/// it found the same case); they would otherwise read as this run's finding. A note on stderr
/// counts them. False, with the error on stderr, when one cannot be removed.
bool remove_replaced_counterexamples(const std::vector<std::filesystem::path>& earlier, const std::string& written,
                                     const std::string& report_dir) {
  namespace fs = std::filesystem;
  int removed = 0;
  for (const fs::path& path : earlier) {
    std::error_code rm;
    if (!written.empty() && fs::equivalent(path, written, rm)) continue;
    if (!fs::remove(path, rm) && !rm) continue;  // already gone
    if (rm) {
      std::cerr << "error: " << path.string() << ": cannot remove this counterexample of an earlier exploration ("
                << rm.message() << "); left there it would read as this run's\n";
      return false;
    }
    ++removed;
  }
  if (removed > 0) {
    std::cerr << "note: removed " << removed << " counterexample(s) of an earlier exploration from "
              << (fs::path(report_dir) / "counterexamples").string() << "\n";
  }
  return true;
}

}  // namespace

namespace {

/// `hiccup explore --agent NAME | --agent-cmd CMD`: the black-box exploration
/// (harness/agents/agent_explorer.h) after its flags were read: `provider` is --provider ("" when
/// not given), `tool` is --tool ("" when not given). Returns the exit code.
int explore_agent_command(const Args& args, agents::AgentExploreOptions options, const std::string& provider,
                          const std::string& tool) {
  agents::Recipe recipe;
  try {
    recipe = options.agent_cmd.empty() ? agents::load_recipe(options.agent, agents::default_recipes_dir())
                                       : agents::command_recipe(options.agent_cmd, provider.empty() ? "gemini" : provider);
  } catch (const std::exception& e) {
    std::cerr << agents::error_lines(e, "error: --agent: ") << '\n';
    return kExitInvalidInput;
  }
  if (options.agent_cmd.empty() && !provider.empty() && provider != recipe.provider) {
    return usage_error("explore", "--provider " + provider + ": agent " + recipe.name + " speaks " + recipe.provider + " only");
  }
  if (!options.agent_cmd.empty()) {
    const std::string t = tool.empty() ? std::string("run_shell_command:command") : tool;
    const auto colon = t.find(':');
    recipe.tool_name = t.substr(0, colon);
    recipe.tool_command_arg = t.substr(colon + 1);
  } else if (recipe.tool_name.empty()) {
    std::cerr << "error: --agent " << recipe.name << ": its recipe names no shell tool (\"tool\"), so exploration "
              << "cannot see its executions\n";
    return kExitInvalidInput;
  }
  if (const std::string binary = agents::agent_binary(recipe); !binary.empty() && ::access(binary.c_str(), X_OK) != 0) {
    std::cerr << "error: agent " << recipe.name << " is not installed: " << binary << " is missing or not executable; run "
              << (recipe.install_hint.empty() ? std::string("scripts/install_agents.sh") : recipe.install_hint) << '\n';
    return kExitFailed;
  }
  std::error_code ec;
  std::filesystem::create_directories(options.report_dir, ec);
  if (ec || !std::filesystem::is_directory(options.report_dir)) {
    std::cerr << "error: " << options.report_dir << ": cannot create the report directory"
              << (ec ? ": " + ec.message() : std::string()) << '\n';
    return kExitInvalidInput;
  }
  std::string lock_error;
  const std::optional<ReportDirLock> lock =
      ReportDirLock::take(options.report_dir, command_line("explore", args), lock_error);
  if (!lock) {
    std::cerr << "error: " << lock_error << '\n';
    return kExitInvalidInput;
  }
  FanoutListener report;
  report.set_command_line(command_line("explore", args));
  report.add(make_junit_listener((std::filesystem::path(options.report_dir) / "junit.xml").string()));
  report.add(make_summary_listener((std::filesystem::path(options.report_dir) / "summary.json").string()));
  report.add(make_markdown_listener((std::filesystem::path(options.report_dir) / "summary.md").string(),
                                    github_step_summary_path()));
  report.add(make_html_listener((std::filesystem::path(options.report_dir) / "report.html").string()));
  try {
    return agents::explore_agent(recipe, options, std::cout, &report).exit_code();
  } catch (const ReportWriteError& e) {
    std::cerr << "error: report not written: " << e.what() << "\n";
    return kExitInvalidInput;
  } catch (const std::exception& e) {
    return internal_error("explore", e.what());
  }
}

}  // namespace

namespace {

/// Why `--from` cannot use `base` yet: every field in the way, each as its JSON pointer and the
/// reason, in file order of the checks (empty when it can). Each is a field whose effect under
/// drawn failures the oracle does not predict, so a case would fail on a correct runtime: an
/// interrupt whose point moves with the attempts that fail, the continue design (its kept cut
/// turns add turns), the run's time cap, and event timing (an event's `delay_s` is named only
/// when the scenario has no `timing`, which already covers it).
std::vector<std::pair<std::string, std::string>> unexplorable_base(const Scenario& s) {
  std::vector<std::pair<std::string, std::string>> out;
  if (s.interrupt) out.emplace_back("/interrupt", "the user's interrupt lands at a point that the drawn failures move");
  if (!s.session.empty()) out.emplace_back("/session", "later prompts continue a history the drawn failures change");
  if (s.runtime.recovery == std::optional<std::string>("continue")) {
    out.emplace_back("/runtime/recovery", "under the continue design a kept cut turn adds a turn the file does not script");
  }
  if (s.max_virtual_s) out.emplace_back("/max_virtual_s", "the oracle does not model the run's time cap");
  if (s.script.timing != mock::Script::Timing{}) {
    out.emplace_back("/timing", "the oracle does not model event timing");
    return out;
  }
  for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
    const auto& attempts = s.script.turns[t].attempts;
    for (std::size_t a = 0; a < attempts.size(); ++a) {
      for (std::size_t e = 0; e < attempts[a].events.size(); ++e) {
        const bool delayed = std::visit([](const auto& ev) { return ev.delay_s.has_value(); }, attempts[a].events[e]);
        if (delayed) {
          out.emplace_back("/turns/" + std::to_string(t) + "/attempts/" + std::to_string(a) + "/events/" + std::to_string(e) +
                               "/delay_s",
                           "the oracle does not model event timing (record without --timing to explore)");
        }
      }
    }
  }
  return out;
}

}  // namespace

int explore_command(const Args& args) {
  explore::ExploreOptions options;
  options.hiccup_path = running_binary();  // the replay lines it prints work when pasted, from any folder
  std::string v, transport = "memory", cases_text = "100", seed_text = "1", shard_text, shrinks_text, jobs_text, floor_text,
              reruns_text;
  std::string progress_text = "10";
  bool progress_given = false;
  std::string determinism_text;
  bool determinism = false;
  bool provider_given = false;
  // Black-box exploration (--agent / --agent-cmd) and what only it reads.
  agents::AgentExploreOptions agent_options;
  std::string tool, confirm_text, budget_text, shrink_budget_text, agent_timeout_text;
  bool transport_given = false, keep_going = false;
  ArgReader in(args);
  while (!in.done()) {
    if (in.flag("--help") || in.flag("-h")) {
      std::cout << kExploreUsage;
      return kExitPassed;
    }
    if (in.repeatable_value("--defect", v)) {
      // The same defect twice is that defect once (the header and the reports list it once).
      if (std::find(options.defects.begin(), options.defects.end(), v) == options.defects.end()) options.defects.push_back(v);
    } else if (in.value("--cases", cases_text) || in.value("--seed", seed_text) ||
               (in.value("--transport", transport) && (transport_given = true)) ||
               in.value("--report-dir", options.report_dir) ||
               in.value("--shard", shard_text) || in.value("--max-shrinks", shrinks_text) ||
               in.value("--jobs", jobs_text) || in.value("--http-idle-floor-ms", floor_text) ||
               in.value("--http-reruns", reruns_text) ||
               (in.value("--progress-every", progress_text) && (progress_given = true)) ||
               in.value("--recovery", options.recovery) || in.value("--from", options.base_path) ||
               in.value("--agent", agent_options.agent) || in.value("--agent-cmd", agent_options.agent_cmd) ||
               in.value("--tool", tool) || in.value("--confirm", confirm_text) ||
               in.value("--time-budget", budget_text) || in.value("--shrink-budget", shrink_budget_text) ||
               in.value("--agent-timeout", agent_timeout_text) ||
               (in.value("--provider", options.provider) && (provider_given = true))) {
    } else if (in.flag("--transcripts")) {
      options.transcripts = true;
    } else if (in.flag("--keep-going")) {
      options.stop_at_first_failure = false;
      keep_going = true;
    } else if (in.peek().rfind("--check-determinism=", 0) == 0) {
      determinism = true;
      determinism_text = in.take().substr(std::string("--check-determinism=").size());
      in.once("--check-determinism", determinism_text);
    } else if (in.flag("--check-determinism")) {
      determinism = true;
      determinism_text = "10";
      if (!in.done() && in.peek().rfind("-", 0) != 0) determinism_text = in.take();
      in.once("--check-determinism", determinism_text);
    } else {
      in.set_error("unknown argument \"" + in.take() + "\"");
    }
  }

  constexpr int kIntMax = std::numeric_limits<int>::max();
  const bool black_box = !agent_options.agent.empty() || !agent_options.agent_cmd.empty();
  if (!options.base_path.empty()) {
    // --from: the base fixes the wire format and the runtime settings (its recovery design too).
    if (black_box) in.set_error("--from applies to the reference runtime, not to --agent/--agent-cmd");
    if (provider_given) in.set_error("--from and --provider exclude each other (the scenario file names its provider)");
    if (!options.recovery.empty()) in.set_error("--from and --recovery exclude each other (the scenario file's runtime settings stay)");
  }
  if (black_box) {
    if (!agent_options.agent.empty() && !agent_options.agent_cmd.empty()) {
      in.set_error("--agent and --agent-cmd exclude each other");
    }
    const std::pair<bool, const char*> reference_only[] = {
        {!options.defects.empty(), "--defect"}, {!options.recovery.empty(), "--recovery"},
        {transport_given, "--transport"}, {!shard_text.empty(), "--shard"}, {determinism, "--check-determinism"},
        {!shrinks_text.empty(), "--max-shrinks"}, {!floor_text.empty(), "--http-idle-floor-ms"},
        {!reruns_text.empty(), "--http-reruns"}, {keep_going, "--keep-going"}, {options.transcripts, "--transcripts"},
        {progress_given, "--progress-every"}};
    for (const auto& [given, flag] : reference_only) {
      if (given) in.set_error(std::string(flag) + " applies to the reference runtime, not to --agent/--agent-cmd");
    }
    if (!tool.empty() && agent_options.agent_cmd.empty()) {
      in.set_error("--tool applies to --agent-cmd (a recipe names its own tool)");
    }
    if (!tool.empty()) {
      const auto colon = tool.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == tool.size() || tool.find(':', colon + 1) != std::string::npos) {
        in.set_error("--tool expects NAME:ARG (the tool and the argument holding its command line), found \"" + tool + "\"");
      }
    }
    if (!confirm_text.empty()) {
      if (const auto k = in.number("--confirm", confirm_text, 0, 20, "0..20")) agent_options.confirm = *k;
    }
    if (!budget_text.empty()) {
      if (const auto b = in.number("--time-budget", budget_text, 1, 7 * 86400, "whole seconds >= 1")) agent_options.time_budget_s = *b;
    }
    if (!shrink_budget_text.empty()) {
      if (const auto b = in.number("--shrink-budget", shrink_budget_text, 1, 7 * 86400, "whole seconds >= 1")) {
        agent_options.shrink_budget_s = *b;
      }
    }
    if (!agent_timeout_text.empty()) {
      if (const auto t = in.number("--agent-timeout", agent_timeout_text, 1, 86400, "whole seconds >= 1")) agent_options.agent_timeout_s = *t;
    }
  } else {
    for (const auto& [text, flag] : {std::pair{&tool, "--tool"}, std::pair{&confirm_text, "--confirm"},
                                     std::pair{&budget_text, "--time-budget"}, std::pair{&shrink_budget_text, "--shrink-budget"},
                                     std::pair{&agent_timeout_text, "--agent-timeout"}}) {
      if (!text->empty()) in.set_error(std::string(flag) + " applies to --agent/--agent-cmd explorations");
    }
  }
  if (!floor_text.empty()) {
    if (const auto floor = in.number("--http-idle-floor-ms", floor_text, 1, kIntMax, "a whole number >= 1")) {
      options.http_idle_floor_ms = *floor;
    }
  }
  if (transport == "sse") transport = "http";
  if (transport == "any") {
    // Each case's transport drawn among those its format plays (case_transport), over the network.
    options.draw_transport = true;
    options.transport = TransportKind::kHttp;
  } else if (!transport_option(transport, options.transport, options.cloud)) {
    in.set_error("--transport expects memory, http, websocket, bedrock, vertex, foundry or any, found \"" + transport + "\"");
  }
  if (!over_network(options.transport)) {
    if (!floor_text.empty()) in.set_error("--http-idle-floor-ms applies to a transport over the network (every one but memory)");
    if (!reruns_text.empty()) in.set_error("--http-reruns applies to a transport over the network (every one but memory)");
  }
  // The format a transport plays: websocket is the Responses API's mode, a cloud path a path of
  // the anthropic format. Generation is restricted to it (as by --provider); --from's file is
  // checked once loaded.
  const std::string needed_provider = options.transport == TransportKind::kWebSocket ? "openai-responses"
                                      : !options.cloud.empty()                      ? "anthropic"
                                                                                    : "";
  if (!needed_provider.empty() && provider_given && options.provider != needed_provider) {
    in.set_error("--transport " + transport + " plays " + needed_provider + " cases only (" +
                 (options.cloud.empty() ? "the WebSocket mode is the Responses API's"
                                        : "a cloud path is a path of the anthropic format") +
                 "), found --provider " + options.provider);
  }
  if (!reruns_text.empty()) {
    if (const auto reruns = in.number("--http-reruns", reruns_text, 0, 4, "0..4")) options.http_slower_reruns = *reruns;
  }
  if (const auto every = in.number("--progress-every", progress_text, 0, 86400, "a whole number of seconds")) {
    options.progress_every_s = *every;
  }
  if (!jobs_text.empty()) {
    if (const auto jobs = in.number("--jobs", jobs_text, 1, 256, "1..256")) options.jobs = *jobs;
  }
  if (!options.recovery.empty() && options.recovery != "hold" && options.recovery != "continue") {
    in.set_error("--recovery expects hold or continue, found \"" + options.recovery + "\"");
  }
  if (provider_given && !rut::codec_for(options.provider)) {
    in.set_error("--provider expects gemini, openai-chat, openai-responses or anthropic, found \"" +
                 options.provider + "\"");
  }
  const auto cases = in.number("--cases", cases_text, 1, kIntMax, "a whole number >= 1");
  if (cases) options.cases = *cases;
  const auto seed = in.number<std::uint64_t>("--seed", seed_text, 0, std::numeric_limits<std::uint64_t>::max(),
                                             "a whole number");
  if (seed) options.seed = *seed;
  if (!shard_text.empty()) {
    const auto slash = shard_text.find('/');
    const std::string k_text = slash == std::string::npos ? "" : shard_text.substr(0, slash);
    const std::string n_text = slash == std::string::npos ? "" : shard_text.substr(slash + 1);
    const auto k = parse_number<int>(k_text);
    const auto n = parse_number<int>(n_text);
    if (is_whole_number(k_text) && is_whole_number(n_text) && (!k || !n)) {
      in.set_error("--shard " + shard_text + " is out of range: expected K/N with 1 <= K <= N <= " +
                   std::to_string(kIntMax));
    } else if (!k || !n || *n < 1 || *k < 1 || *k > *n) {
      in.set_error("--shard expects K/N with 1 <= K <= N, found \"" + shard_text + "\"");
    } else {
      options.shard_index = *k;
      options.shard_count = *n;
      // Shard K holds the cases whose index % N is K-1: none when there are fewer than K cases,
      // and a PASS of a shard that checked nothing would rest on no evidence.
      if (cases && *cases < *k) {
        in.set_error("--shard " + shard_text + " holds no cases: shard K/N runs the case indices i with i % N == K-1, and --cases " +
                     cases_text + " has " + (*cases == 1 ? std::string("only 0") : "0.." + std::to_string(*cases - 1)) +
                     "; give --cases " + std::to_string(*k) + " or more, or split " + cases_text + " cases into at most " +
                     cases_text + " shards");
      }
    }
  }
  if (!shrinks_text.empty()) {
    if (const auto n = in.number("--max-shrinks", shrinks_text, 0, kIntMax, "a whole number")) {
      options.max_shrink_tries = *n;
    }
  }
  if (determinism) {
    if (determinism_text == "all") {
      options.determinism_pct = 100;
    } else {
      const auto pct = parse_number<int>(determinism_text);
      if (is_whole_number(determinism_text) && (!pct || *pct < 1 || *pct > 100)) {
        in.set_error("--check-determinism " + determinism_text + " is out of range: expected 1..100 or all");
      } else if (!pct) {
        in.set_error("--check-determinism expects a percentage 1-100 or all, found \"" + determinism_text + "\"");
      } else {
        options.determinism_pct = *pct;
      }
    }
  }
  if (!in.error().empty()) return usage_error("explore", in.error());

  if (black_box) {
    agent_options.seed = options.seed;
    agent_options.cases = options.cases;
    agent_options.jobs = options.jobs > 0 ? options.jobs : 2;
    agent_options.report_dir = options.report_dir;
    agent_options.hiccup_path = options.hiccup_path;
    return explore_agent_command(args, agent_options, provider_given ? options.provider : "", tool);
  }

  for (const auto& d : options.defects) {
    if (!rut::defect_from_name(d)) {
      return usage_error("explore", "--defect: unknown defect \"" + d + "\" (see `hiccup defects`)");
    }
  }
  if (!options.base_path.empty()) {
    LoadResult base = load_scenario_file(options.base_path);
    for (const LoadProblem& p : base.problems) std::cerr << format_problem(p) << '\n';
    if (!base.scenario) return kExitInvalidInput;
    // What the oracle does not predict under drawn failures yet: a case would fail with no defect
    // on, an accusation without a harm. Refused with its pointer instead.
    // Every reason is named, one a line, as lint names every problem.
    if (const auto why = unexplorable_base(*base.scenario); !why.empty()) {
      for (const auto& [pointer, reason] : why) {
        std::cerr << "error: " << options.base_path << ": " << pointer << ": explore --from cannot draw failures onto "
                  << "this scenario yet: " << reason << '\n';
      }
      return kExitInvalidInput;
    }
    if (!needed_provider.empty() && base.scenario->script.provider != needed_provider) {
      std::cerr << "error: " << options.base_path << ": /provider: --transport " << transport << " plays "
                << needed_provider << " scenarios only, found \"" << base.scenario->script.provider << "\"\n";
      return kExitInvalidInput;
    }
    options.base = std::move(*base.scenario);
  } else if (!needed_provider.empty()) {
    options.provider = needed_provider;  // every case drawn in the format the transport plays
  }

  options.progress = ::isatty(::fileno(stderr)) != 0;
  std::error_code ec;
  std::filesystem::create_directories(options.report_dir, ec);
  if (ec || !std::filesystem::is_directory(options.report_dir)) {
    std::cerr << "error: " << options.report_dir << ": cannot create the report directory"
              << (ec ? ": " + ec.message() : std::string()) << '\n';
    return kExitInvalidInput;
  }
  // One exploration per report directory at a time: a second one would remove this one's
  // counterexample and overwrite its reports while they are being written.
  std::string lock_error;
  const std::optional<ReportDirLock> lock =
      ReportDirLock::take(options.report_dir, command_line("explore", args), lock_error);
  if (!lock) {
    std::cerr << "error: " << lock_error << '\n';
    return kExitInvalidInput;
  }
  std::vector<std::filesystem::path> earlier;
  if (!list_earlier_counterexamples(options.report_dir, earlier)) return kExitInvalidInput;
  FanoutListener report;
  report.set_command_line(command_line("explore", args));
  report.add(make_junit_listener((std::filesystem::path(options.report_dir) / "junit.xml").string()));
  report.add(make_summary_listener((std::filesystem::path(options.report_dir) / "summary.json").string()));
  report.add(make_markdown_listener((std::filesystem::path(options.report_dir) / "summary.md").string(),
                                    github_step_summary_path()));
  report.add(make_html_listener((std::filesystem::path(options.report_dir) / "report.html").string()));

  try {
    const explore::ExploreOutcome outcome = explore::explore(options, std::cout, &report);
    if (!remove_replaced_counterexamples(earlier, outcome.failure ? outcome.failure->path : std::string(),
                                         options.report_dir)) {
      return kExitInvalidInput;
    }
    return outcome.exit_code();
  } catch (const ReportWriteError& e) {
    std::cerr << "error: report not written: " << e.what() << "\n";
    return kExitInvalidInput;
  } catch (const std::exception& e) {
    return internal_error("explore", e.what());
  }
}

}  // namespace harness::cli
