// run_process: exit codes, the explicit environment, exec failures, and the timeout that kills the
// whole process group.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "harness/agents/subprocess.h"

namespace harness::agents {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ProcessSpec sh(const std::string& command, double timeout_s = 10) {
  const std::string base = "/tmp/hiccup-subprocess-test-" + std::to_string(::getpid());
  return {{"/bin/sh", "-c", command}, {"PATH=/usr/bin:/bin", "ONLY=this"}, "/tmp", base + ".out", base + ".err", timeout_s};
}

TEST_CASE("a child's exit code, output and environment come back") {
  const ProcessSpec spec = sh("echo \"$ONLY $HOME\"; echo oops >&2; exit 3");
  const ProcessResult r = run_process(spec);
  CHECK(r.started);
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.timed_out);
  CHECK(slurp(spec.stdout_path) == "this \n");
  CHECK(slurp(spec.stderr_path) == "oops\n");
}

TEST_CASE("a missing program is an error that names it") {
  ProcessSpec spec = sh("");
  spec.argv = {"/nonexistent/agent"};
  const ProcessResult r = run_process(spec);
  CHECK_FALSE(r.started);
  CHECK(r.error == "cannot run /nonexistent/agent: No such file or directory");
}

TEST_CASE("the timeout kills the whole process group, grandchildren included") {
  const std::string marker = "/tmp/hiccup-subprocess-grandchild-" + std::to_string(::getpid());
  std::remove(marker.c_str());
  // The grandchild would write the marker after 2 s unless the group is killed.
  const ProcessResult r = run_process(sh("(sleep 2; touch " + marker + ") & sleep 30", 0.5));
  CHECK(r.timed_out);
  CHECK(r.wall_ms < 5000);
  ::sleep(3);
  CHECK(::access(marker.c_str(), F_OK) != 0);
}

TEST_CASE("on_start gives the child's process group: SIGINT to it reaches a child that traps it") {
  const std::string ready = "/tmp/hiccup-subprocess-ready-" + std::to_string(::getpid());
  std::remove(ready.c_str());
  ProcessSpec spec = sh("trap 'exit 7' INT; touch " + ready + "; while :; do sleep 0.05; done", 10);
  std::atomic<int> group{0};
  spec.on_start = [&](int g) { group = g; };
  auto running = std::async(std::launch::async, [spec] { return run_process(spec); });
  while (!std::filesystem::exists(ready)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(group.load() > 0);
  ::kill(-group.load(), SIGINT);
  const ProcessResult r = running.get();
  CHECK(r.exit_code == 7);  // its trap ran: not killed by the default action (130)
  CHECK_FALSE(r.timed_out);
  std::remove(ready.c_str());
}

}  // namespace
}  // namespace harness::agents
