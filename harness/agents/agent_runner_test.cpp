// The agent runner end to end with a tiny fake Gemini agent (testdata/fake_agent.py) run through
// --agent-cmd: a correct agent passes; one that keeps a failed attempt's calls is caught by
// at-most-once (from the ledger) and pairing (from the journal); timeouts, missing binaries and
// unplayable scenarios are clear errors; n/a invariants are never reported as passed.
#include <catch2/catch.hpp>

#include <algorithm>

#include "harness/agents/agent_runner.h"
#include "harness/scenario_io.h"

namespace harness::agents {
namespace {

constexpr const char* kResetAfterCall = R"({
  "schema": 1, "name": "fake-reset-after-call", "prompt": "Deploy.",
  "turns": [
    { "attempts": [
        { "events": [ { "call": { "name": "run_shell_command", "args": { "command": "{{ledger}}" } } } ],
          "fault": { "kind": "reset", "after_event": 1, "idle_ms": 50 } },
        { "events": [ { "call": { "name": "run_shell_command", "args": { "command": "{{ledger}}" } } },
                      { "finish": "stop" } ] } ] },
    { "attempts": [ { "events": [ { "text": "Deployed." }, { "finish": "stop" } ] } ] }
  ],
  "expect": { "outcome": "completed", "final_text": "Deployed.", "requests": 3,
              "executions": [ { "name": "run_shell_command", "count": 1 } ] }
})";

Scenario load(const char* text) {
  LoadResult r = parse_scenario(text, "test.json");
  for (const auto& p : r.problems) INFO(format_problem(p));
  REQUIRE(r.scenario);
  return *r.scenario;
}

Recipe fake_agent(const std::string& mode) {
  Recipe r = command_recipe("exec python3 " + std::string(HICCUP_SOURCE_DIR) + "/harness/agents/testdata/fake_agent.py");
  r.tool_name = "run_shell_command";
  r.tool_command_arg = "command";
  r.env["FAKE_AGENT_MODE"] = mode;
  r.timeout_s = 60;
  return r;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_CASE("a correct agent passes the reset-after-call scenario, inside-only checks are n/a") {
  const AgentCaseResult r = run_agent_scenario(load(kResetAfterCall), fake_agent("correct"), {});
  INFO(r.harness_error << r.output_tail);
  for (const auto& v : r.violations) INFO(v.invariant << ": " << v.message);
  CHECK(r.harness_error.empty());
  CHECK(r.process.exit_code == 0);
  CHECK(r.completed);
  CHECK(r.violations.empty());
  CHECK(r.ledger == std::vector<LedgerToken>{{0, 1, 0}});
  CHECK(has(r.not_applicable, "honest-outcome"));
  CHECK(has(r.not_applicable, "clean-output"));
  CHECK(has(r.not_applicable, "expect.final_text"));
  const ReportCase c = to_report_case(r, fake_agent("correct"), "hiccup.agents.test");
  CHECK(c.passed);
  CHECK(c.extra["ledger"] == nlohmann::json::array({"hiccup:t0:a1:c0"}));
  CHECK(c.extra["not_applicable"].size() == 5);  // 3 invariants + expect.final_text, expect.requests
}

TEST_CASE("an agent that keeps a failed attempt's call is caught by at-most-once and pairing") {
  const AgentCaseResult r = run_agent_scenario(load(kResetAfterCall), fake_agent("duplicate"), {});
  INFO(r.harness_error << r.output_tail);
  REQUIRE(r.harness_error.empty());
  CHECK(r.ledger == std::vector<LedgerToken>{{0, 0, 0}, {0, 1, 0}});
  const auto names = r.violated();
  CHECK(has(names, "at-most-once"));
  CHECK(has(names, "pairing"));
  CHECK(has(names, "expect.executions"));
  CHECK_FALSE(has(names, "honest-outcome"));
}

TEST_CASE("an agent that outlives its timeout is killed and judged a bounded-retries violation") {
  Recipe slow = command_recipe("sleep 30");
  AgentRunOptions options;
  options.timeout_s = 0.5;
  const AgentCaseResult r = run_agent_scenario(load(kResetAfterCall), slow, options);
  CHECK(r.process.timed_out);
  CHECK(r.wall_ms < 10000);
  CHECK(has(r.violated(), "bounded-retries"));
  CHECK_FALSE(r.completed);
}

TEST_CASE("a missing agent binary names the install script") {
  Recipe r = fake_agent("correct");
  r.name = "ghost";
  r.binary = "/nonexistent/ghost";
  r.install_hint = "scripts/install_agents.sh ghost";
  const AgentCaseResult res = run_agent_scenario(load(kResetAfterCall), r, {});
  CHECK_FALSE(res.passed());
  CHECK(res.harness_error ==
        "agent ghost is not installed: /nonexistent/ghost is missing or not executable; run scripts/install_agents.sh ghost");
}

TEST_CASE("the ledger placeholder must sit in the recipe's shell tool command") {
  Scenario s = load(kResetAfterCall);
  std::get<mock::CallEvent>(s.script.turns[0].attempts[0].events[0]).name = "shell";
  std::get<mock::CallEvent>(s.script.turns[0].attempts[1].events[0]).args = {{"cmd", "{{ledger}}"}};
  const auto problems = check_agent_scenario(s, fake_agent("correct"));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] ==
        "/turns/0/attempts/0/events/0/call/name: the ledger placeholder needs agent agent-cmd's shell tool "
        "\"run_shell_command\", found \"shell\"");
  CHECK(problems[1] ==
        "/turns/0/attempts/1/events/0/call/args: the ledger placeholder belongs in \"command\" (the command "
        "run_shell_command runs)");
}

}  // namespace
}  // namespace harness::agents
