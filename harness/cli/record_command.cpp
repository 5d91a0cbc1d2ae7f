// `hiccup record`: a recording proxy in front of a real provider (harness/record/); on SIGINT,
// SIGTERM or when the agent it started ends, writes the session as a scenario file.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "harness/agents/subprocess.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/cli/record_agent.h"
#include "harness/record/recording_proxy.h"
#include "harness/record/session_recorder.h"
#include "harness/scenario_io.h"

namespace harness::cli {

namespace {

constexpr const char* kRecordUsage = R"(usage: hiccup record --upstream URL [--port N] [--out FILE] [--name NAME] [--timing]
                     [--agent NAME | --agent-cmd COMMAND] [--prompt TEXT] [--agent-timeout S]

Runs a recording proxy on 127.0.0.1 in front of a model provider: every request goes to URL
unchanged (its headers too: API keys, Authorization, cookies are passed upstream and never stored)
and the provider's answer streams back to the client as it arrives. Point your agent's base URL at
the address printed on stdout (GOOGLE_GEMINI_BASE_URL, OPENAI_BASE_URL=ADDRESS/v1,
ANTHROPIC_BASE_URL). The wire format is the request's path, as `hiccup serve` routes it (gemini,
openai-chat, openai-responses, anthropic; docs/WIRE-FORMATS.md).

On SIGINT or SIGTERM (an agent still running is ended first: SIGTERM to its process group, SIGKILL
after 2 s), or when the agent (--agent, --agent-cmd) ends, the session is written to
FILE as a scenario (docs/SCENARIO-FORMAT.md) that `hiccup lint` accepts and `hiccup run` replays:
one turn per turn index (the model contents in a request's history, as the server matches), its
attempts in the order they were sent, each with the events as delivered (text per SSE frame,
whole function calls with their argument fragment count, reasoning, the finish), or the HTTP error
status (with Retry-After) or the fault the attempt met upstream (a cut frame: cut; a closed or
reset connection: disconnect; an in-stream error: error_event; an undecodable frame: malformed; no
terminal event: end; inside a call's arguments: the call with the fragments it delivered and the
fault's after_fragment). A client that closes its connection mid-answer is recorded as what it
got (the proxy stops reading upstream there), and the file's description and a note say so.
Provider ids are left out (the server makes its own), the prompt is the last text of the first
user message, `runtime.model` the model asked for.

options (each at most once):
  --upstream URL       the provider: http://HOST[:PORT][/PATH] or https://…; PATH goes before
                       every request's path (required)
  --port N             the proxy's port (default 0: any free port)
  --out FILE           the scenario file to write (default recording.json)
  --name NAME          the scenario's name (default: FILE's name without .json)
  --timing             record each event's timing as `delay_s` (seconds from the request, or the
                       previous event, to its arrival); replays play it as stalls, scaled and
                       capped by the scenario's `timing` {"scale", "max_delay_s"}
                       (docs/SCENARIO-FORMAT.md "Event timing")
  --agent-cmd COMMAND  run COMMAND (through /bin/sh -c) as the agent, with HICCUP_BASE_URL,
                       GOOGLE_GEMINI_BASE_URL, OPENAI_BASE_URL (…/v1), ANTHROPIC_BASE_URL set to
                       the proxy and the rest of hiccup's environment; its output goes to
                       FILE.agent-stdout.log and FILE.agent-stderr.log; the recording is written
                       when it exits
  --agent NAME         run a bundled agent CLI (a recipe, as `hiccup run --agent` runs it: codex,
                       claude-code, gemini-cli, qwen-code, opencode, …; or a recipe .json) headless
                       with --prompt, pointed at the proxy, in this folder, HOME and TMPDIR a
                       scratch folder holding the recipe's settings; a variable the recipe sets to
                       its placeholder key (OPENAI_API_KEY=hiccup-not-a-key, …) takes this
                       environment's value when set (your real key); output to the same .log
                       files; the recording is tagged NAME. Not installed: exit 3 naming the
                       install command (scripts/install_agents.sh NAME)
  --prompt TEXT        the agent's prompt: HICCUP_PROMPT (--agent-cmd), the recipe's {prompt}
                       (--agent: required); also the recording's prompt (else the last text of
                       the first user message, which clients may prefix with context of theirs)
  --agent-timeout S    wall-clock limit of the agent in seconds (default 600); then it is killed
                       and the recording written
  -h, --help           this text

exit codes: 0 recording written (it lints clean), 1 no model request was recorded (nothing
written), 2 usage error (a bad --upstream URL, an --out FILE that cannot be written: checked
before the proxy starts), 3 the port cannot be bound, --agent names no recipe or an agent that is
not installed, FILE could not be written at the end, or the recording does not lint (written
anyway, the problems listed), or it is over 16 MiB, the most a scenario file may hold (written
anyway, with its size: `lint`, `run` and `serve` refuse it), 5 internal error

More: docs/RECORDING.md (what the proxy does, what the file holds, replaying, `hiccup proxy`).
)";

constexpr const char* kProxyUsage = R"(usage: hiccup proxy --upstream URL SCENARIO [--port N] [--journal FILE] [--stall-ms-per-s X]

Runs a proxy on 127.0.0.1 in front of a real provider (as `hiccup record` does: every request goes
to URL with its headers, the answer streams back as it arrives) that applies SCENARIO's faults to
the live answers, for a real model in the loop. Requests are matched to SCENARIO's turns and
attempts as `hiccup serve` matches them (turn index = model contents in the request's history; the
last attempt of a turn repeats; a turn past the script is relayed untouched):
  - an attempt with `status` is answered with that status (and Retry-After) in the provider's
    envelope, without asking upstream;
  - an attempt with a `fault` applies it to the live stream after `after_event` events have been
    delivered whole (counted by decoding the provider's frames): cut (the first `bytes` bytes of
    the next frame, then FIN), disconnect, reset (RST after idle_ms), end (the answer ends without
    its terminal event), error_event (the provider's in-stream error), malformed, stall;
  - an attempt whose events hold a `content_filter` finish puts the provider's content-filter
    finish in place of the live finish;
  - an attempt whose events carry timing (`delay_s`, scaled and capped by SCENARIO's `timing`)
    pauses before the live frame that delivers its event k for event k's delay, at
    --stall-ms-per-s (on top of the live model's own latency; journaled as "delay_s");
  - any other attempt is relayed untouched. Faults act on streamed answers only.
The attempt's own events are not played: the content is the live model's.

On SIGINT or SIGTERM it stops and prints its journal, one JSON line per model request:
{"request","turn","attempt","played": "live"|"status"|"live+fault"|"upstream-failed","status","fault",
"upstream"} (to FILE with --journal; "request" counts from 0, as `hiccup serve`'s journal index does); an upstream that gave no answer (down, refused, timed out)
is "played": "upstream-failed" with "status": 502 (the proxy's own answer), and any failed
exchange carries "upstream_error": the reason in words ("connection refused", …); an answer the
client left before its end carries "client_left": true, one cut by the stop itself (Ctrl-C during
a stall or delay among them) "proxy_stopped": true.

options (each at most once):
  --upstream URL       the provider: http://HOST[:PORT][/PATH] or https://… (required)
  --port N             the proxy's port (default 0: any free port)
  --journal FILE       write the journal to FILE (JSON lines) instead of stderr
  --stall-ms-per-s X   real milliseconds per virtual second of a stall fault or an event's
                       delay_s (default 1000)
  -h, --help           this text

exit codes: 0 stopped by a signal, 2 usage error (a bad --upstream URL among them), 3 invalid
SCENARIO, an unwritable --journal FILE or a port that cannot be bound, 5 internal error
)";

/// Whether `path` can be created or overwritten; else why not. Opens it for writing (creating it,
/// and removing it again when it did not exist) instead of asking access(2), which says yes to root
/// for folders that take no files (/proc, a read-only mount).
std::optional<std::string> unwritable(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "is a folder";
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) return "its folder " + parent.string() + " does not exist";
  const bool existed = fs::exists(path, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return std::string(std::strerror(errno));
  ::close(fd);
  if (!existed) ::unlink(path.c_str());
  return std::nullopt;
}

/// A relay writes to sockets whose peer may hang up at any time (an upstream that answers 413
/// and closes while a large body is still being sent): that must fail the write, not kill hiccup.
void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

}  // namespace

int record_command(const Args& args) {
  ignore_sigpipe();
  std::string upstream_text, port_text = "0", out = "recording.json", name, agent_cmd, prompt, timeout_text = "600";
  std::string agent_name;
  bool timing = false;
  ArgReader r(args);
  while (!r.done()) {
    if (r.flag("-h") || r.flag("--help")) {
      std::cout << kRecordUsage;
      return kExitPassed;
    }
    if (r.flag("--timing")) {
      // A flag given twice is a usage error, as a single-valued option given twice is.
      if (timing) return usage_error("record", "--timing given twice");
      timing = true;
      continue;
    }
    if (r.value("--upstream", upstream_text) || r.value("--port", port_text) || r.value("--out", out) ||
        r.value("--name", name) || r.value("--agent-cmd", agent_cmd) || r.value("--prompt", prompt) ||
        r.value("--agent-timeout", timeout_text) || r.value("--agent", agent_name)) {
      if (!r.error().empty()) return usage_error("record", r.error());
      continue;
    }
    const std::string a = r.take();
    return usage_error("record", a.rfind("-", 0) == 0 ? "unknown option \"" + a + "\"" : "unexpected argument \"" + a + "\"");
  }
  if (upstream_text.empty()) return usage_error("record", "--upstream URL is required");
  std::string url_error;
  const auto upstream = record::parse_upstream_url(upstream_text, url_error);
  if (!upstream) return usage_error("record", "--upstream: " + url_error);
  const auto port = r.number<int>("--port", port_text, 0, 65535, "a port number");
  const auto timeout_s = r.number<int>("--agent-timeout", timeout_text, 1, 86400, "seconds");
  if (!port || !timeout_s) return usage_error("record", r.error());
  if (!agent_name.empty() && !agent_cmd.empty()) return usage_error("record", "give --agent or --agent-cmd, not both");
  if (!prompt.empty() && agent_cmd.empty() && agent_name.empty()) {
    return usage_error("record", "--prompt needs --agent or --agent-cmd");
  }
  if (!agent_name.empty() && prompt.empty()) return usage_error("record", "--agent NAME needs --prompt TEXT");
  // Before the proxy starts: a session recorded into a file that cannot be written is lost.
  if (auto why = unwritable(out)) return usage_error("record", "--out " + out + ": cannot write the recording: " + *why);
  if (name.empty()) name = std::filesystem::path(out).stem().string();
  RecordAgent recorded_agent{std::nullopt, agent_cmd, prompt, static_cast<double>(*timeout_s), ""};
  if (!agent_name.empty()) {
    std::string why;
    recorded_agent.recipe = record_recipe(agent_name, why);
    if (!recorded_agent.recipe) {
      std::cerr << "error: --agent: " << why << '\n';
      return kExitInvalidInput;
    }
  }
  const bool has_agent = recorded_agent.recipe || !agent_cmd.empty();

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);  // the agent ended
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // Real time lives here, in the I/O shell: the recorder reads the clock it is given.
  record::SessionRecorder recorder(timing ? record::SessionRecorder::Clock([] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }) : record::SessionRecorder::Clock());
  record::ProxyOptions options;
  options.port = *port;
  options.upstream = *upstream;
  record::RecordingProxy proxy(options, &recorder);
  try {
    proxy.start();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  std::cout << proxy.base_url() << std::endl;
  std::cerr << "recording to " << out << " through " << upstream->origin() << upstream->prefix
            << (has_agent ? "; the agent runs now" : "; Ctrl-C to stop and write it") << std::endl;

  std::thread agent;
  agents::ProcessResult agent_result;
  std::atomic<bool> agent_done{false};
  if (has_agent) {
    agents::ProcessSpec spec;
    try {
      spec = record_agent_spec(recorded_agent, proxy.base_url(), out, name);
    } catch (const std::exception& e) {
      std::cerr << "error: the agent cannot be prepared: " << e.what() << '\n';
      remove_agent_scratch(recorded_agent);
      proxy.stop();
      return kExitInvalidInput;
    }
    agent = std::thread([spec, &agent_result, &agent_done] {
      agent_result = agents::run_process(spec);
      agent_done = true;
      kill(getpid(), SIGUSR1);
    });
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  if (agent.joinable()) {
    if (sig != SIGUSR1) {
      // The agent runs in a process group of its own, which a terminal's Ctrl-C does not reach:
      // the user's stop ends it here, and what it recorded so far is written.
      std::cerr << "stopping: ending the agent (SIGTERM to its process group, SIGKILL after 2 s)\n";
      agents::signal_running_agents(SIGTERM);
      for (int i = 0; i < 200 && !agent_done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!agent_done.load()) agents::signal_running_agents(SIGKILL);
    }
    agent.join();
    if (!agent_result.started) {
      std::cerr << "error: the agent did not start: " << agent_result.error << '\n';
    } else {
      std::cerr << "the agent exited with " << agent_result.exit_code << (agent_result.timed_out ? " (timed out)" : "")
                << "; its output: " << out << ".agent-stdout.log, " << out << ".agent-stderr.log\n";
    }
  }
  proxy.stop();
  remove_agent_scratch(recorded_agent);

  for (const std::string& n : recorder.notes()) std::cerr << "note: " << n << '\n';
  if (proxy.internal_errors() > 0) {
    std::cerr << "hiccup record: " << proxy.internal_errors()
              << " connection(s) ended by an internal error (a bug in hiccup, please report it); their requests may be missing\n";
  }
  const record::RecordingStats stats = recorder.stats();
  if (stats.requests == 0) {
    std::cerr << "error: no model request was recorded (" << proxy.relayed() << " request(s) relayed); nothing written\n";
    return kExitFailed;
  }
  const std::string text = with_agent_facts(recorder.scenario(name), recorded_agent)
                               .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  {
    std::ofstream file(out, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file) {
      std::cerr << "error: " << out << ": cannot write the recording\n";
      return kExitInvalidInput;
    }
  }
  const auto wrote = [&] {
    std::cerr << "wrote " << out << ": " << stats.requests << " request(s), " << stats.turns << " turn(s), "
              << stats.faults << " attempt(s) with an HTTP error or a fault\n";
  };
  // A session is not recorded twice: a file over the loader's limit is kept (a user can cut it by
  // hand), but it is not a scenario `lint`, `run` or `serve` will read, and the exit code says so.
  if (text.size() > kMaxScenarioBytes) {
    wrote();
    std::cerr << "error: " << out << ": the recording is " << text.size() << " bytes, over the " << kMaxScenarioBytes
              << " bytes (16 MiB) a scenario file may hold: written anyway, but `hiccup lint`, `run` and `serve` "
                 "refuse it; record a shorter session, or delete turns or attempts from the file\n";
    return kExitInvalidInput;
  }
  const LoadResult check = parse_scenario(text, out);
  for (const LoadProblem& p : check.problems) std::cerr << format_problem(p) << '\n';
  wrote();
  return check.problems.empty() ? kExitPassed : kExitInvalidInput;
}

int proxy_command(const Args& args) {
  ignore_sigpipe();
  std::string upstream_text, port_text = "0", journal_path, scale_text = "1000";
  std::vector<std::string> positional;
  ArgReader r(args);
  while (!r.done()) {
    if (r.flag("-h") || r.flag("--help")) {
      std::cout << kProxyUsage;
      return kExitPassed;
    }
    if (r.value("--upstream", upstream_text) || r.value("--port", port_text) || r.value("--journal", journal_path) ||
        r.value("--stall-ms-per-s", scale_text)) {
      if (!r.error().empty()) return usage_error("proxy", r.error());
      continue;
    }
    const std::string a = r.take();
    if (a.rfind("-", 0) == 0) return usage_error("proxy", "unknown option \"" + a + "\"");
    positional.push_back(a);
  }
  if (upstream_text.empty()) return usage_error("proxy", "--upstream URL is required");
  std::string url_error;
  const auto upstream = record::parse_upstream_url(upstream_text, url_error);
  if (!upstream) return usage_error("proxy", "--upstream: " + url_error);
  if (positional.size() != 1) return usage_error("proxy", "expected one SCENARIO file, found " + std::to_string(positional.size()));
  const auto port = r.number<int>("--port", port_text, 0, 65535, "a port number");
  if (!port) return usage_error("proxy", r.error());
  double scale = 0;
  try {
    std::size_t used = 0;
    scale = std::stod(scale_text, &used);
    if (used != scale_text.size() || !(scale >= 0) || scale > 1e6) throw std::invalid_argument("");
  } catch (const std::exception&) {
    return usage_error("proxy", "--stall-ms-per-s expects a number of milliseconds in 0..1000000, found \"" + scale_text + "\"");
  }
  LoadResult loaded = load_scenario_file(positional.front());
  for (const LoadProblem& p : loaded.problems) std::cerr << format_problem(p) << '\n';
  if (!loaded.scenario) return kExitInvalidInput;
  if (!journal_path.empty()) {
    if (auto why = unwritable(journal_path)) {
      std::cerr << "error: " << journal_path << ": cannot write the journal: " << *why << '\n';
      return kExitInvalidInput;
    }
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  record::ProxyOptions options;
  options.port = *port;
  options.upstream = *upstream;
  options.faults = &loaded.scenario->script;
  options.stall_ms_per_s = scale;
  record::RecordingProxy proxy(options, nullptr);
  try {
    proxy.start();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitInvalidInput;
  }
  std::cout << proxy.base_url() << std::endl;
  std::cerr << "applying the faults of \"" << loaded.scenario->name << "\" to " << upstream->origin() << upstream->prefix
            << "; Ctrl-C to stop" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  proxy.stop();
  std::string lines;
  for (const nlohmann::json& e : proxy.journal()) lines += e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (journal_path.empty()) {
    std::cerr << lines;
  } else {
    std::ofstream file(journal_path, std::ios::binary | std::ios::trunc);
    file << lines;
    if (!file) {
      std::cerr << "error: " << journal_path << ": cannot write the journal\n";
      return kExitInvalidInput;
    }
  }
  if (proxy.internal_errors() > 0) {
    // The other connections were served; the run still ends as a harness error (exit 5), as serve's does.
    std::cerr << "hiccup proxy: " << proxy.internal_errors()
              << " connection(s) ended by an internal error (a bug in hiccup, please report it)\n";
    return kExitInternal;
  }
  return kExitPassed;
}

}  // namespace harness::cli
