// run_process: fork + execvpe into a fresh process group, poll for exit, kill the group on timeout
// (or when hiccup itself is stopped by a signal).
#include "harness/agents/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace harness::agents {
namespace {

using Clock = std::chrono::steady_clock;

/// The process groups of the agents running now (0: a free slot), for the stop-signal handler: a
/// hiccup killed by SIGTERM, SIGINT or SIGHUP (a CI timeout, Ctrl-C) takes its agents with it
/// instead of leaving them running under init. Lock-free atomics: read from a signal handler.
std::array<std::atomic<pid_t>, 512> g_live_groups{};

extern "C" void kill_agents_and_die(int sig) {
  for (auto& slot : g_live_groups) {
    const pid_t group = slot.load();
    if (group > 0) kill(-group, SIGKILL);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);  // the default action: hiccup ends as killed by `sig`
}

}  // namespace

void signal_running_agents(int sig) {
  for (auto& slot : g_live_groups) {
    const pid_t group = slot.load();
    if (group > 0) kill(-group, sig);
  }
}

namespace {

/// Installs kill_agents_and_die for the stop signals whose action is still the default (a
/// command that handles them itself, like `serve`, keeps its own). Once per process.
void install_stop_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int sig : {SIGTERM, SIGINT, SIGHUP}) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = kill_agents_and_die;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, nullptr);
    }
  });
}

/// Holds `group` in g_live_groups while it lives (a full table: the group is not tracked).
class LiveGroup {
 public:
  explicit LiveGroup(pid_t group) {
    for (auto& slot : g_live_groups) {
      pid_t free = 0;
      if (slot.compare_exchange_strong(free, group)) {
        slot_ = &slot;
        return;
      }
    }
  }
  ~LiveGroup() {
    if (slot_) slot_->store(0);
  }
  LiveGroup(const LiveGroup&) = delete;
  LiveGroup& operator=(const LiveGroup&) = delete;

 private:
  std::atomic<pid_t>* slot_ = nullptr;
};

/// Waits up to `limit` for `pid`; returns true and fills `status` when it was reaped.
bool wait_for(pid_t pid, Clock::duration limit, int& status) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return true;  // nothing to wait for any more
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult result;
  if (spec.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // A pipe closed on exec tells the parent whether exec succeeded (and errno when not).
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  install_stop_handlers();
  const auto started = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    close(report[0]);
    close(report[1]);
    return result;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on. The agent gets the default actions back.
    for (const int sig : {SIGTERM, SIGINT, SIGHUP}) signal(sig, SIG_DFL);
    setpgid(0, 0);
    close(report[0]);
    auto fail = [&](int err) {
      [[maybe_unused]] auto n = write(report[1], &err, sizeof err);
      _exit(127);
    };
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(spec.stdout_path.empty() ? "/dev/null" : spec.stdout_path.c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path.c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) fail(errno);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) fail(errno);
    if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) fail(errno);
    // Nothing else of ours leaks into the agent: other threads' mock-server sockets (a matrix
    // runs cases in parallel) must not stay open in it, or closing a connection would send no
    // FIN or RST. The report pipe closes on exec by itself.
    const unsigned keep = static_cast<unsigned>(report[1]);
    if (keep > 3) close_range(3, keep - 1, 0);
    close_range(keep + 1, ~0U, 0);
    execvpe(argv[0], argv.data(), envp.data());
    fail(errno);
  }
  setpgid(pid, pid);  // also from the parent, so the group exists before any kill
  const LiveGroup live(pid);
  if (spec.on_start) spec.on_start(pid);
  close(report[1]);
  int exec_errno = 0;
  const ssize_t got = read(report[0], &exec_errno, sizeof exec_errno);
  close(report[0]);

  int status = 0;
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.timeout_s));
  bool reaped = wait_for(pid, limit, status);
  if (!reaped) {
    result.timed_out = true;
    kill(-pid, SIGTERM);
    reaped = wait_for(pid, std::chrono::seconds(2), status);
    if (!reaped) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
  kill(-pid, SIGKILL);  // stragglers of the group (tool subprocesses); ESRCH when none
  result.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    result.error = "cannot run " + spec.argv[0] + ": " + std::strerror(exec_errno);
    return result;
  }
  result.started = true;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

}  // namespace harness::agents
