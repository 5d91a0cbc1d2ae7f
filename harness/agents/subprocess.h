// Running one external command as a child process: its own process group, stdin from /dev/null,
// stdout/stderr to files, an explicit environment, a working directory and a wall-clock timeout
// after which the whole process group is killed. The only place the agent runner touches
// fork/exec; nothing here knows about scenarios.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace harness::agents {

/// What to run. `argv[0]` is looked up in `env`'s PATH when it has no slash (execvpe).
struct ProcessSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  ///< "KEY=VALUE" entries; the child gets exactly these
  std::string cwd;               ///< working directory ("" = inherit)
  std::string stdout_path;       ///< file receiving the child's stdout (created/truncated)
  std::string stderr_path;       ///< file receiving the child's stderr
  double timeout_s = 120;        ///< wall-clock limit; then SIGTERM to the group, SIGKILL 2 s later
  /// Called from run_process's thread once the child runs in its own process group, with that
  /// group's id (the child's pid): a caller that runs run_process on a thread of its own signals
  /// the group with it (the user's cancel: SIGINT). Not called when fork fails.
  std::function<void(int process_group)> on_start;
};

struct ProcessResult {
  bool started = false;     ///< false when fork/exec failed (see `error`)
  int exit_code = -1;       ///< exit status when it exited normally; 128+N when killed by signal N
  bool timed_out = false;   ///< the timeout fired and the group was killed
  double wall_ms = 0;       ///< start to reaping
  std::string error;        ///< why it did not start ("" otherwise)
};

/// Runs `spec` to its end (or its timeout). Leftover processes of the child's group (e.g. a shell
/// tool's background job) are killed once the child itself has exited. Never throws.
[[nodiscard]] ProcessResult run_process(const ProcessSpec& spec);

/// Sends `sig` to the process group of every child run_process is running now: how a command that
/// handles its stop signals itself (`hiccup record` waiting on its agent) ends its agents, whose own
/// process groups a terminal's Ctrl-C does not reach. Async-signal-safe.
void signal_running_agents(int sig);

}  // namespace harness::agents
