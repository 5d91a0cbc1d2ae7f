// `hiccup`: the command-line entry point; dispatches to one subcommand per file in harness/cli/.
#include <cstdio>
#include <iostream>
#include <map>

#include "harness/agents/recipe.h"
#include "harness/cli/commands.h"
#include "harness/version.h"

namespace {

constexpr const char* kMainUsage = R"(hiccup: deterministic fault-injection test harness for streaming agent runtimes

usage: hiccup COMMAND [OPTIONS]

commands:
  run PATH...        run scenario files (or folders of *.json) against the reference runtime
  explore            property-based exploration: generated fault schedules, shrunk counterexamples
  lint PATH...       validate scenario files without running them
  matrix --agent A,B PATH...
                     real agent CLIs × the scenarios each can play, against pinned known failures
  report DIR         regenerate DIR/report.html (self-contained HTML report) from DIR/summary.json
  report merge OUT DIR...
                     join explore shard report directories into one report
  serve [SCENARIO]   run the mock model server standalone for any client (without a scenario:
                     sessions loaded over its control API); prints the base URL
  record --upstream URL
                     a recording proxy in front of a real provider; writes the session as a
                     scenario file on exit
  proxy --upstream URL SCENARIO
                     a proxy in front of a real provider applying SCENARIO's faults to live answers
  mcp URL            the MCP stdio transport bridged to a running serve's MCP endpoint (URL:
                     http://HOST:PORT/mcp or /s/ID/mcp), for clients that spawn MCP servers
  defects            list the reference runtime's seeded defects
  faults             list the fault catalogue with its fields
  invariants         list the invariants every run is checked against

`hiccup COMMAND --help` explains each command; `hiccup --version` prints the version.
Scenario files: docs/SCENARIO-FORMAT.md; the design and the invariants: docs/DESIGN.md; the wire
formats: docs/WIRE-FORMATS.md (in the source tree).
exit codes: 0 all passed, 1 some verdict failed, 2 usage error, 3 invalid input,
            4 determinism mismatch (a case explore re-ran gave another digest), 5 internal error (a bug in hiccup)
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace harness::cli;
  // Every line on stdout reaches a pipe or file as it is written (std::cout writes through C's
  // stdout): block-buffered, the progress and result lines of a run killed midway (a CI timeout)
  // stayed in the buffer and its log was empty.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  if (argc < 2) {
    std::cerr << kMainUsage;
    return kExitUsage;
  }
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kMainUsage;
    return kExitPassed;
  }
  if (command == "--version" || command == "version") {
    std::cout << "hiccup " << harness::kHiccupVersion << '\n'
              << "data: " << harness::agents::repo_root() << " (agent recipes, known-failure pins)\n";
    return kExitPassed;
  }
  const Args args(argv + 2, argv + argc);
  static const std::map<std::string, int (*)(const Args&)> kCommands = {
      {"run", run_command},         {"explore", explore_command},       {"lint", lint_command},
      {"serve", serve_command},     {"defects", defects_command},       {"faults", faults_command},
      {"invariants", invariants_command}, {"matrix", matrix_command}, {"mcp", mcp_command},
      {"report", report_command}, {"record", record_command}, {"proxy", proxy_command}};
  auto it = kCommands.find(command);
  if (it == kCommands.end()) {
    std::cerr << "error: unknown command \"" << command
              << "\" (the commands: run, explore, lint, serve, record, proxy, mcp, matrix, report, defects, faults, invariants)\n"
                 "(see `hiccup --help`)\n";
    return kExitUsage;
  }
  try {
    return it->second(args);
  } catch (const std::exception& e) {
    return internal_error(command, e.what());
  }
}
