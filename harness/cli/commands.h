// The `hiccup` subcommands. Each takes its arguments after the subcommand name and returns the
// process exit code: 0 all passed, 1 some verdict failed, 2 usage error, 3 invalid input,
// 4 determinism mismatch (a case explore re-ran gave another digest).
#pragma once

#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/report/report.h"
#include "harness/runner.h"
#include "runtime_under_test/cloud_transport.h"

namespace harness::cli {

inline constexpr int kExitPassed = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInvalidInput = 3;
inline constexpr int kExitNondeterministic = 4;
/// An exception no command expected (a bug in hiccup, or the machine failing under it): main's
/// catch-all. Not 1, which says a verdict failed: CI must not read a crash of hiccup as a caught bug.
inline constexpr int kExitInternal = 5;

using Args = std::vector<std::string>;

/// A usage error as every subcommand reports it, on stderr: `error: hiccup COMMAND: MESSAGE` and a
/// pointer to `hiccup COMMAND --help`, not the whole help text (which would scroll the message off
/// the screen). Returns kExitUsage.
inline int usage_error(std::string_view command, std::string_view message) {
  std::cerr << "error: hiccup " << command << ": " << message << "\n(see `hiccup " << command << " --help`)\n";
  return kExitUsage;
}

/// An exception no command expected, as the catch-alls report it on stderr: `error: hiccup
/// COMMAND: internal error: WHAT` and a line saying it is not a verdict. Returns kExitInternal.
inline int internal_error(std::string_view command, std::string_view what) {
  std::cerr << "error: hiccup " << command << ": internal error: " << what
            << "\n(exit 5: not a verdict; please report it with the command line)\n";
  return kExitInternal;
}

/// `hiccup COMMAND ARGS…` as a shell would read it back (arguments with spaces or quotes in single
/// quotes), for reports.
/// `--transport NAME` of `run` and `explore` ("sse" already read as "http"): a cloud path of the
/// anthropic format (bedrock, vertex, foundry: rut::cloud_path_from_name) goes over HTTP with
/// `cloud` set to it; else transport_from_name. False for a name that is none of them.
inline bool transport_option(const std::string& name, TransportKind& kind, std::string& cloud) {
  if (rut::cloud_path_from_name(name)) {
    cloud = name;
    kind = TransportKind::kHttp;
    return true;
  }
  return transport_from_name(name, kind);
}

inline std::string command_line(const std::string& command, const Args& args) {
  std::string out = "hiccup " + command;
  for (const std::string& a : args) out += ' ' + shell_quote(a);
  return out;
}

int run_command(const Args& args);
int explore_command(const Args& args);
int lint_command(const Args& args);
int serve_command(const Args& args);
int mcp_command(const Args& args);
int defects_command(const Args& args);
int faults_command(const Args& args);
int invariants_command(const Args& args);
int matrix_command(const Args& args);
int report_command(const Args& args);
int record_command(const Args& args);
int proxy_command(const Args& args);

}  // namespace harness::cli
