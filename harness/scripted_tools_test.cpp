// The tool side of the reference runtime's runs: the scripted tool port plays a scenario's tools in
// virtual time with the MCP server's meaning of "executed"; the runner keeps its records; the
// invariants follow a call across the tool boundary (at-most-once, honest-outcome, liveness), each
// failing on a seeded tool defect's run and passing on the correct runtime's, on both transports.
#include "harness/scripted_tools.h"

#include <catch2/catch.hpp>

#include "harness/oracle.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "runtime_under_test/env.h"

namespace harness {

namespace scripted_tools_test {

mock::mcp::ToolScript deploy_tool(std::vector<mock::mcp::ToolCall> calls, bool idempotent = false) {
  mock::mcp::Tool t;
  t.name = "deploy";
  t.idempotent = idempotent;
  t.calls = std::move(calls);
  return mock::mcp::ToolScript{{t}};
}

rut::ToolRequest tool_request(double timeout_s = 60) {
  rut::ToolRequest r;
  r.name = "deploy";
  r.arguments = {{"target", "prod"}};
  r.request_seq = 3;
  r.call_index = 1;
  r.call_id = "c1";
  r.timeout_s = timeout_s;
  return r;
}

/// A two-turn scenario: turn 0 calls deploy {target: prod}, turn 1 answers; deploy does `calls`.
Scenario deploy_scenario(std::vector<mock::mcp::ToolCall> calls, const std::string& provider = "gemini",
                         bool idempotent = false) {
  Scenario s;
  s.name = "deploy-tool";
  s.prompt = "Deploy.";
  s.script.provider = provider;
  mock::Attempt call;
  call.events = {mock::CallEvent{"deploy", {{"target", "prod"}}}, mock::FinishEvent{mock::FinishReason::kStop}};
  mock::Attempt answer;
  answer.events = {mock::TextEvent{"Done."}, mock::FinishEvent{mock::FinishReason::kStop}};
  s.script.turns = {mock::Turn{{call}}, mock::Turn{{answer}}};
  s.tools = deploy_tool(std::move(calls), idempotent);
  return s;
}

mock::mcp::ToolCall hang() {
  mock::mcp::ToolCall c;
  c.hang = true;
  return c;
}
mock::mcp::ToolCall error_result() {
  mock::mcp::ToolCall c;
  c.is_error = true;
  c.result = "disk full";
  return c;
}
mock::mcp::ToolCall reply_lost() {
  mock::mcp::ToolCall c;
  c.reply_lost = true;
  c.duration_s = 2;
  return c;
}

CaseResult run(const Scenario& s, std::vector<std::string> defects = {},
               TransportKind transport = TransportKind::kMemory) {
  RunOptions o;
  o.transport = transport;
  o.extra_defects = std::move(defects);
  return run_scenario(s, o);
}

std::vector<Violation> of(const CaseResult& r, const std::string& invariant) {
  std::vector<Violation> out;
  for (const Violation& v : r.violations) {
    if (v.invariant == invariant) out.push_back(v);
  }
  return out;
}

std::string all(const CaseResult& r) {
  std::string out;
  for (const Violation& v : r.violations) out += v.invariant + ": " + v.message + "\n";
  return out;
}

}  // namespace scripted_tools_test

using namespace scripted_tools_test;

TEST_CASE("scripted tools: a call plays its behaviour in virtual time and is recorded with its model call") {
  rut::VirtualClock clock;
  mock::mcp::ToolCall slow;
  slow.duration_s = 5;
  slow.result = "deployed";
  const mock::mcp::ToolScript script = deploy_tool({slow, error_result()});
  ScriptedToolPort port(script, clock);
  CHECK(port.offers("deploy"));
  CHECK_FALSE(port.offers("search"));
  const rut::ToolReply first = port.call(tool_request());
  CHECK(first.end == rut::ToolEnd::kResult);
  CHECK(first.text == "deployed");
  CHECK_FALSE(first.is_error);
  CHECK(clock.now_s() == 5);
  const rut::ToolReply second = port.call(tool_request());
  CHECK(second.is_error);
  CHECK(second.text == "disk full");
  REQUIRE(port.records().size() == 2);
  const ToolCallRecord& r = port.records()[0];
  CHECK(r.tool == "deploy");
  CHECK(r.tool_call == 0);
  CHECK(r.request_seq == 3);
  CHECK(r.call_index == 1);
  CHECK(r.call_id == "c1");
  CHECK(r.behaviour == "result");
  CHECK(r.executed);
  CHECK(r.outcome == "result");
  CHECK(r.started_s == 0);
  CHECK(r.ended_s == 5);
  CHECK(port.records()[1].tool_call == 1);
  CHECK(port.records()[1].behaviour == "is_error");
}

TEST_CASE("scripted tools: executed has the MCP server's meaning per behaviour, and a timeout ends the wait") {
  rut::VirtualClock clock;
  mock::mcp::ToolCall rpc;
  rpc.jsonrpc_error = mock::mcp::JsonRpcError{-32603, "backend down"};
  mock::mcp::ToolCall expired;
  expired.session_expired = true;
  mock::mcp::ToolCall slow;
  slow.duration_s = 90;
  const mock::mcp::ToolScript script = deploy_tool({hang(), reply_lost(), rpc, expired, slow});
  ScriptedToolPort port(script, clock);
  CHECK(port.call(tool_request(60)).end == rut::ToolEnd::kTimedOut);
  CHECK(clock.now_s() == 60);
  CHECK(port.call(tool_request(60)).end == rut::ToolEnd::kReplyLost);
  const rut::ToolReply error = port.call(tool_request(60));
  CHECK(error.end == rut::ToolEnd::kJsonRpcError);
  CHECK(error.error_code == -32603);
  CHECK(port.call(tool_request(60)).end == rut::ToolEnd::kSessionExpired);
  CHECK(port.call(tool_request(60)).end == rut::ToolEnd::kTimedOut);  // 90 s of work, 60 s of patience
  CHECK(clock.now_s() == 60 + 2 + 60);
  const auto& rs = port.records();
  REQUIRE(rs.size() == 5);
  CHECK(rs[0].executed);   // a hung call ran: its effect is committed
  CHECK(rs[1].executed);   // reply_lost too
  CHECK(rs[2].executed);   // a JSON-RPC error counts as the server counts it (ToolCallEntry::executed)
  CHECK_FALSE(rs[3].executed);  // session_expired: refused before it runs
  CHECK(rs[4].executed);
  CHECK(rs[0].outcome == "timed_out");
  CHECK(rs[4].outcome == "timed_out");
}

TEST_CASE("scripted tools: the correct runtime passes every tool fault, with the oracle's prediction, on both transports") {
  for (const auto& calls : std::vector<std::vector<mock::mcp::ToolCall>>{{hang()}, {reply_lost()}, {error_result()}}) {
    for (const std::string provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
      Scenario s = deploy_scenario(calls, provider);
      s.expect = oracle_expect(s);
      const CaseResult memory = run(s);
      INFO(provider << " " << mock::mcp::behaviour_name(calls.front()) << "\n" << all(memory));
      CHECK(memory.passed());
      REQUIRE(memory.tool_calls.size() == 1);
      CHECK(memory.tool_calls[0].turn == 0);
      CHECK(memory.transcript.contains("tool_calls"));
      const CaseResult http = run(s, {}, TransportKind::kHttp);
      CHECK(http.passed());
      CHECK(http.digest == memory.digest);
    }
  }
}

TEST_CASE("scripted tools: the function response says outcome unknown, and the call went to the tool once") {
  const CaseResult r = run(deploy_scenario({hang()}));
  INFO(all(r));
  REQUIRE(r.passed());
  REQUIRE(r.journal.size() == 2);
  const nlohmann::json& answer = r.journal[1].contents[2]["parts"][0]["functionResponse"]["response"];
  CHECK(answer["error"].get<std::string>().rfind("outcome unknown: deploy did not answer within 60 s", 0) == 0);
  CHECK(r.tool_calls.size() == 1);
}

TEST_CASE("at-most-once: a call of unknown outcome sent to the tool again is a violation naming the tool and the call") {
  for (const auto& calls : std::vector<std::vector<mock::mcp::ToolCall>>{{hang()}, {reply_lost()}}) {
    const CaseResult good = run(deploy_scenario(calls));
    CHECK(of(good, "at-most-once").empty());
    const CaseResult bad = run(deploy_scenario(calls), {"replay-unknown-outcome"});
    const auto v = of(bad, "at-most-once");
    INFO(all(bad));
    REQUIRE(v.size() == 1);
    CHECK(v[0].message.find("tool \"deploy\" {\"target\":\"prod\"} ran 2 times at the tool for one model call: call 0 of request 0") == 0);
    CHECK(v[0].request == 0);
    // An idempotent tool may run again: no harm, no verdict.
    const CaseResult harmless = run(deploy_scenario(calls, "gemini", /*idempotent=*/true), {"replay-unknown-outcome"});
    CHECK(of(harmless, "at-most-once").empty());
  }
}

TEST_CASE("honest-outcome: a tool's error answered to the model as a success is a violation") {
  mock::mcp::ToolCall rpc;
  rpc.jsonrpc_error = mock::mcp::JsonRpcError{-32603, "backend down"};
  for (const auto& call : {error_result(), rpc}) {
    for (const std::string provider : {"gemini", "anthropic"}) {
      const CaseResult good = run(deploy_scenario({call}, provider));
      CHECK(of(good, "honest-outcome").empty());
      const CaseResult bad = run(deploy_scenario({call}, provider), {"tool-error-as-success"});
      const auto v = of(bad, "honest-outcome");
      INFO(all(bad));
      REQUIRE(v.size() == 1);
      CHECK(v[0].message.rfind("a failed tool call reported to the model as a success: tool \"deploy\"", 0) == 0);
      CHECK(v[0].request == 1);
    }
  }
}

TEST_CASE("liveness: a hung tool waited on without a timeout stops the run at its cap, naming the tool") {
  const CaseResult good = run(deploy_scenario({hang()}));
  CHECK(of(good, "liveness").empty());
  const CaseResult bad = run(deploy_scenario({hang()}), {"no-tool-timeout"});
  CHECK(bad.cap_reached);
  const auto v = of(bad, "liveness");
  INFO(all(bad));
  REQUIRE(v.size() == 1);
  CHECK(v[0].message ==
        "the run did not end within the cap of 3600 virtual seconds: tool \"deploy\" (call 0 of request 0) had not "
        "answered and the runtime (no tool timeout) was still waiting on it");
  CHECK(of(bad, "bounded-retries").empty());
  REQUIRE(bad.tool_calls.size() == 1);
  CHECK(bad.tool_calls[0].outcome == "waiting");
}

TEST_CASE("drop-failed-tool-result: a failed call without a function response is rejected by the provider") {
  for (const std::string provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    const CaseResult bad = run(deploy_scenario({error_result()}, provider), {"drop-failed-tool-result"});
    INFO(provider << "\n" << all(bad));
    CHECK_FALSE(bad.passed());
    CHECK_FALSE(of(bad, "pairing").empty());
  }
}

}  // namespace harness
