// The tool scheduler with a tool port (docs/POLICY.md "Tools"): calls the port offers go through it
// once, with the per-call timeout, in virtual time; errors and unknown outcomes go back to the
// model as errors; the tool defects bend exactly that. A fake port plays scripted replies.
#include "runtime_under_test/tool_scheduler.h"

#include <cmath>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "runtime_under_test/fake_transport.h"

namespace rut {

namespace tool_scheduler_test {

/// A port offering "deploy": each call takes `takes_s` (infinity: never answers) of `clock`, at
/// most the request's timeout, then ends with `reply`; every request is kept.
class FakeToolPort final : public IToolPort {
 public:
  FakeToolPort(IClock& clock, ToolReply reply, double takes_s = 0) : clock_(clock), reply_(std::move(reply)), takes_s_(takes_s) {}
  bool offers(std::string_view name) const override { return name == "deploy"; }
  ToolReply call(const ToolRequest& request) override {
    requests.push_back(request);
    if (takes_s_ >= request.timeout_s) {
      if (!std::isfinite(request.timeout_s)) throw std::runtime_error("waited on the tool for ever");
      clock_.sleep_s(request.timeout_s);
      return ToolReply{ToolEnd::kTimedOut};
    }
    clock_.sleep_s(takes_s_);
    return reply_;
  }
  std::vector<ToolRequest> requests;

 private:
  IClock& clock_;
  ToolReply reply_;
  double takes_s_;
};

PendingCall pending(const std::string& name, int seq = 1, int index = 0) {
  PendingCall c;
  c.call.name = name;
  c.call.args = {{"target", "prod"}};
  c.call.id = "id-" + name;
  c.request_seq = seq;
  c.call_index = index;
  return c;
}

/// Runs one committed turn of `calls` through a scheduler with `defects` and `port`.
std::vector<nlohmann::json> run_turn(std::vector<PendingCall> calls, IToolPort& port, RunLog& log,
                                     DefectSet defects = {}, double timeout_s = 60) {
  ToolScheduler scheduler(defects, log, Recovery::kHold, &port, timeout_s);
  return scheduler.run_committed(calls);
}

const nlohmann::json& response_of(const nlohmann::json& part) { return part["functionResponse"]["response"]; }

}  // namespace tool_scheduler_test

using namespace tool_scheduler_test;

TEST_CASE("tool port: a call the port offers goes through it once with its model call and the timeout") {
  VirtualClock clock;
  FakeToolPort port(clock, ToolReply{ToolEnd::kResult, "deployed v2"}, 3);
  RunLog log;
  const auto responses = run_turn({pending("deploy", 2, 1), pending("search", 2, 2)}, port, log);
  REQUIRE(port.requests.size() == 1);
  const ToolRequest& sent = port.requests[0];
  CHECK(sent.name == "deploy");
  CHECK(sent.arguments == nlohmann::json{{"target", "prod"}});
  CHECK(sent.request_seq == 2);
  CHECK(sent.call_index == 1);
  CHECK(sent.call_id == "id-deploy");
  CHECK(sent.timeout_s == 60);
  CHECK(clock.now_s() == 3);
  REQUIRE(responses.size() == 2);
  CHECK(response_of(responses[0]) == nlohmann::json{{"output", "deployed v2"}});
  CHECK(response_of(responses[1]) == nlohmann::json{{"output", "search: ok"}});  // not offered: simulated
  CHECK(log.ledger.size() == 2);
}

TEST_CASE("tool port: a hung tool ends at the tool timeout as outcome unknown and is not sent again") {
  VirtualClock clock;
  FakeToolPort port(clock, ToolReply{}, kNoToolTimeout);
  RunLog log;
  const auto responses = run_turn({pending("deploy")}, port, log, {}, 45);
  CHECK(port.requests.size() == 1);
  CHECK(clock.now_s() == 45);
  REQUIRE(responses.size() == 1);
  const std::string error = response_of(responses[0]).value("error", "");
  CHECK(error.rfind("outcome unknown: deploy did not answer within 45 s", 0) == 0);
  CHECK(error.find("not sent again") != std::string::npos);
  CHECK(log.events.back()["type"] == "tool_result");
  CHECK(log.events.back()["end"] == "timed_out");
  CHECK(log.events.back()["sent"] == 1);
}

TEST_CASE("tool port: a lost reply is outcome unknown, an error result and a JSON-RPC error are errors") {
  VirtualClock clock;
  RunLog log;
  FakeToolPort lost(clock, ToolReply{ToolEnd::kReplyLost});
  CHECK(response_of(run_turn({pending("deploy")}, lost, log)[0])["error"].get<std::string>().rfind("outcome unknown: the connection to deploy dropped", 0) == 0);
  CHECK(lost.requests.size() == 1);
  FakeToolPort failed(clock, ToolReply{ToolEnd::kResult, "disk full", true});
  CHECK(response_of(run_turn({pending("deploy")}, failed, log)[0]) == nlohmann::json{{"error", "disk full"}});
  FakeToolPort rpc(clock, ToolReply{ToolEnd::kJsonRpcError, "Internal error", false, -32603});
  CHECK(response_of(run_turn({pending("deploy")}, rpc, log)[0]) ==
        nlohmann::json{{"error", "deploy failed: JSON-RPC error -32603: Internal error"}});
  FakeToolPort expired(clock, ToolReply{ToolEnd::kSessionExpired});
  CHECK(response_of(run_turn({pending("deploy")}, expired, log)[0])["error"].get<std::string>().rfind("deploy did not run", 0) == 0);
}

TEST_CASE("tool port: replay-unknown-outcome sends a timed-out call again, a failed one only once") {
  VirtualClock clock;
  RunLog log;
  FakeToolPort hung(clock, ToolReply{}, kNoToolTimeout);
  (void)run_turn({pending("deploy")}, hung, log, {Defect::kReplayUnknownOutcome});
  CHECK(hung.requests.size() == 2);
  CHECK(log.events.back()["sent"] == 2);
  FakeToolPort failed(clock, ToolReply{ToolEnd::kResult, "disk full", true});
  (void)run_turn({pending("deploy")}, failed, log, {Defect::kReplayUnknownOutcome});
  CHECK(failed.requests.size() == 1);
}

TEST_CASE("tool port: no-tool-timeout waits on a hung tool for ever") {
  VirtualClock clock;
  RunLog log;
  FakeToolPort hung(clock, ToolReply{}, kNoToolTimeout);
  CHECK_THROWS_WITH(run_turn({pending("deploy")}, hung, log, {Defect::kNoToolTimeout}), "waited on the tool for ever");
  REQUIRE(hung.requests.size() == 1);
  CHECK(hung.requests[0].timeout_s == kNoToolTimeout);
}

TEST_CASE("tool port: tool-error-as-success answers an error as output, drop-failed-tool-result answers nothing") {
  VirtualClock clock;
  RunLog log;
  FakeToolPort failed(clock, ToolReply{ToolEnd::kResult, "disk full", true});
  CHECK(response_of(run_turn({pending("deploy")}, failed, log, {Defect::kToolErrorAsSuccess})[0]) ==
        nlohmann::json{{"output", "disk full"}});
  FakeToolPort rpc(clock, ToolReply{ToolEnd::kJsonRpcError, "Internal error", false, -32603});
  CHECK(response_of(run_turn({pending("deploy")}, rpc, log, {Defect::kToolErrorAsSuccess})[0]) ==
        nlohmann::json{{"output", "Internal error"}});
  const auto dropped = run_turn({pending("deploy", 1, 0), pending("search", 1, 1)}, failed, log, {Defect::kDropFailedToolResult});
  REQUIRE(dropped.size() == 1);
  CHECK(dropped[0]["functionResponse"]["name"] == "search");
}

}  // namespace rut
