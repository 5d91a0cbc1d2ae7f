// `hiccup serve SCENARIO`: the mock model server standalone, for any client. Prints the base URL,
// serves until SIGINT/SIGTERM, then prints the journal summary (and writes it with --journal).
#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>

#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/scenario_io.h"
#include "mock_server/http_server.h"
#include "mock_server/script_engine.h"
#include "mock_server/wire_format.h"

namespace harness::cli {
namespace {

constexpr const char* kServeUsage = R"(usage: hiccup serve SCENARIO [OPTIONS]

Runs the mock model server for one scenario on 127.0.0.1 and prints its base URL. Every wire
format is served on the one port; the request's path says which (the scenario's `provider` only
picks the error envelope of unknown paths):
@PATHS@
Point a client at it, e.g.
  GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT gemini -p "..."
  OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 (openai SDKs, codex)   ANTHROPIC_BASE_URL=http://127.0.0.1:PORT
A `HEAD /` or `GET /` preflight is answered 200 and journaled as such.
Requests are matched to the script by turn index and attempt index (../shared/SCENARIO-FORMAT.md), whatever
the format. Stops on SIGINT or SIGTERM and prints one line per journaled request.

options:
  --port N              port to bind (default 0: an ephemeral port)
  --stall-ms-per-s X    real milliseconds per virtual second of a stall (default 1000)
  --journal FILE        write the journal as JSON to FILE on exit
  -h, --help            this text
)";

/// The usage text with every format's request targets.
std::string serve_usage() {
  std::string paths;
  for (const mock::WireFormat* f : mock::wire_formats()) {
    for (const std::string& p : f->paths()) {
      std::string name(f->name());
      name.resize(std::max<std::size_t>(name.size(), 18), ' ');
      paths += "  " + name + p + "\n";
    }
  }
  std::string usage = kServeUsage;
  const std::string marker = "@PATHS@\n";
  usage.replace(usage.find(marker), marker.size(), paths);
  return usage;
}

}  // namespace

int serve_command(const Args& args) {
  ArgReader in(args);
  std::string port_text = "0", scale_text = "1000", journal_path, v;
  std::vector<std::string> positional;
  while (!in.done()) {
    if (in.flag("--help") || in.flag("-h")) {
      std::cout << serve_usage();
      return kExitPassed;
    }
    if (in.value("--port", port_text) || in.value("--stall-ms-per-s", scale_text) ||
        in.value("--journal", journal_path)) {
    } else if (in.peek().rfind("-", 0) == 0) in.set_error("unknown option \"" + in.take() + "\"");
    else positional.push_back(in.take());
  }
  const auto port = parse_number<int>(port_text);
  const auto scale = parse_number<int>(scale_text);
  if (!port || *port > 65535) in.set_error("--port expects 0..65535, found \"" + port_text + "\"");
  if (!scale || *scale < 1) in.set_error("--stall-ms-per-s expects a whole number >= 1, found \"" + scale_text + "\"");
  if (positional.size() != 1) in.set_error("expected exactly one SCENARIO file");
  if (!in.error().empty()) {
    std::cerr << "error: " << in.error() << "\n\n" << serve_usage();
    return kExitUsage;
  }
  LoadResult loaded = load_scenario_file(positional.front());
  for (const LoadProblem& p : loaded.problems) std::cerr << format_problem(p) << '\n';
  if (!loaded.scenario) return kExitInvalidInput;

  // Block the stop signals before the server's threads start, so only sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  mock::ScriptEngine engine(loaded.scenario->script);
  mock::ServerOptions options;
  options.port = *port;
  options.stall_ms_per_s = *scale;
  options.max_delay_ms = -1;
  mock::MockHttpServer server(engine, options);
  try {
    server.start();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << " (is the port taken?)\n";
    return kExitInvalidInput;
  }
  std::cout << server.base_url() << std::endl;
  std::cerr << "serving scenario \"" << loaded.scenario->name << "\"; Ctrl-C to stop" << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.stop();

  nlohmann::json journal = nlohmann::json::array();
  for (const mock::JournalEntry& e : engine.journal()) {
    journal.push_back(mock::journal_entry_to_json(e));
    std::cerr << "request " << e.index << ": " << e.method << ' ' << e.target
              << (e.provider.empty() ? "" : " (" + e.provider + ")") << " turn " << e.turn
              << " attempt " << e.attempt << " → " << e.response_status << ' ' << e.played
              << (e.fault.empty() ? "" : " fault " + e.fault) << (e.completed ? " completed" : "")
              << (e.validated ? "" : " REJECTED: " + e.rejection) << '\n';
  }
  if (!journal_path.empty()) std::ofstream(journal_path) << journal.dump(2) << '\n';
  return kExitPassed;
}

}  // namespace harness::cli
