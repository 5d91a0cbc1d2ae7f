// Each seeded defect changes observable behaviour at its site; the catalogue is complete.
#include "runtime_under_test/defects.h"

#include <catch2/catch.hpp>

#include "runtime_under_test/fake_transport.h"
#include "runtime_under_test/runtime.h"

namespace rut::defects_test {

using namespace rut::test;

namespace {

FakeRun run(DefectSet defects, std::vector<std::vector<FakeResponse>> turns,
            ConsumerKind kind = ConsumerKind::kHeadless, int max_attempts = 4) {
  Config c;
  c.defects = std::move(defects);
  c.consumer = kind;
  c.max_attempts = max_attempts;
  return run_fake(c, std::move(turns), "p", 1, 20);
}

std::vector<std::vector<FakeResponse>> call_cut_then_retry() {
  return {{stream({text_frame("partial "), call_frame("deploy")}, TransportEnd::kConnectionLost),
           stream({text_frame("full"), call_frame("deploy"), finish_frame()})},
          {text_turn("ok")}};
}

}  // namespace

TEST_CASE("defect catalogue names round-trip and cover every defect") {
  CHECK(defect_catalogue().size() == 37);
  for (const DefectInfo& info : defect_catalogue()) {
    CHECK(defect_from_name(info.name) == info.defect);
    CHECK(defect_name(info.defect) == info.name);
    CHECK_FALSE(info.doc.empty());
  }
  CHECK_FALSE(defect_from_name("resett"));
}

TEST_CASE("keep-calls-on-retry executes the failed attempt's call too") {
  auto kind = GENERATE(ConsumerKind::kHeadless, ConsumerKind::kSubagent);
  auto good = run({}, call_cut_then_retry(), kind);
  auto bad = run({Defect::kKeepCallsOnRetry}, call_cut_then_retry(), kind);
  CHECK(good.result.ledger.size() == 1);
  REQUIRE(bad.result.ledger.size() == 2);
  CHECK(bad.result.ledger[0].request_seq == 0);
  CHECK(bad.result.completed);  // the pairing guard dropped the second response
  CHECK(bad.transport.contents(2)[2]["parts"].size() == 1);
  CHECK(std::count_if(bad.result.events.begin(), bad.result.events.end(),
                      [](const json& e) { return e["type"] == "guard"; }) == 1);
}

TEST_CASE("no-pairing-guard sends two responses for one call and the request is rejected") {
  auto bad = run({Defect::kKeepCallsOnRetry, Defect::kNoPairingGuard}, call_cut_then_retry());
  CHECK_FALSE(bad.result.completed);
  CHECK(bad.result.error == "invalid_request");
  CHECK(bad.transport.contents(2)[2]["parts"].size() == 2);
  CHECK(bad.result.final_history.size() == 2);  // rejected responses removed
}

TEST_CASE("keep-rejected-turn leaves the rejected content in history") {
  auto good = run({}, {{status(400, "INVALID_ARGUMENT")}});
  auto bad = run({Defect::kKeepRejectedTurn}, {{status(400, "INVALID_ARGUMENT")}});
  CHECK(good.result.final_history.empty());
  CHECK(bad.result.final_history.size() == 1);
  CHECK(bad.result.error == "invalid_request");
}

TEST_CASE("eager-execution runs the failed attempt's call before commit") {
  auto kind = GENERATE(ConsumerKind::kHeadless, ConsumerKind::kSubagent);
  auto bad = run({Defect::kEagerExecution}, call_cut_then_retry(), kind);
  REQUIRE(bad.result.ledger.size() == 2);
  CHECK(bad.result.ledger[0].request_seq == 0);
  CHECK(bad.result.ledger[1].request_seq == 1);
  CHECK(bad.result.completed);
  CHECK(bad.transport.contents(2)[2]["parts"].size() == 1);  // one response, not re-run
}

TEST_CASE("content-filter-as-success reports an empty success") {
  auto bad = run({Defect::kContentFilterAsSuccess}, {{stream({finish_frame("SAFETY")})}});
  CHECK(bad.result.completed);
  CHECK(bad.result.final_text.empty());
  CHECK(run({}, {{stream({finish_frame("SAFETY")})}}).result.error == "content_filter");
}

TEST_CASE("commit-incomplete-stream commits a stream without terminal frame") {
  auto turns = std::vector<std::vector<FakeResponse>>{{stream({text_frame("cut sho")}),
                                                       text_turn("whole")}};
  auto good = run({}, turns);
  auto bad = run({Defect::kCommitIncompleteStream}, turns);
  CHECK(good.result.final_text == "whole");
  CHECK(bad.result.final_text == "cut sho");
  CHECK(bad.result.requests == 1);
}

TEST_CASE("unbounded-retry goes past max_attempts until the cap throws") {
  CHECK(run({}, {{status(503, "UNAVAILABLE")}}).result.requests == 4);
  CHECK_THROWS(run({Defect::kUnboundedRetry}, {{status(503, "UNAVAILABLE")}}));
}

TEST_CASE("retry-non-retryable retries a 404") {
  auto turns = std::vector<std::vector<FakeResponse>>{{status(404, "NOT_FOUND"), text_turn("ok")}};
  CHECK(run({}, turns).result.error == "non_retryable");
  auto bad = run({Defect::kRetryNonRetryable}, turns);
  CHECK(bad.result.completed);
  CHECK(bad.result.requests == 2);
}

TEST_CASE("ignore-retry-after waits the schedule step only") {
  auto turns = std::vector<std::vector<FakeResponse>>{
      {status(429, "RESOURCE_EXHAUSTED", 30), text_turn("ok")}};
  CHECK(run({}, turns).result.waited_s == 30);
  CHECK(run({Defect::kIgnoreRetryAfter}, turns).result.waited_s == 10);
}

TEST_CASE("keep-partial-text shows the failed attempt's text") {
  auto kind = GENERATE(ConsumerKind::kHeadless, ConsumerKind::kSubagent);
  auto turns = std::vector<std::vector<FakeResponse>>{
      {stream({text_frame("partial ")}, TransportEnd::kConnectionLost), text_turn("full")}};
  CHECK(run({}, turns, kind).result.shown_output == "full");
  auto bad = run({Defect::kKeepPartialText}, turns, kind);
  CHECK(bad.result.shown_output == "partial full");
  CHECK(bad.result.final_history[1]["parts"] == json::array({{{"text", "full"}}}));
}

TEST_CASE("restart-run-on-failure re-runs completed tools from a fresh history") {
  auto turns = std::vector<std::vector<FakeResponse>>{
      {stream({call_frame("deploy"), finish_frame()})}, {status(503, "UNAVAILABLE")}};
  auto good = run({}, turns, ConsumerKind::kHeadless, 2);
  auto bad = run({Defect::kRestartRunOnFailure}, turns, ConsumerKind::kHeadless, 2);
  CHECK(good.result.ledger.size() == 1);
  CHECK(good.result.requests == 3);
  CHECK(bad.result.ledger.size() == 2);
  CHECK(bad.result.requests == 6);
  CHECK(bad.result.error == "retries_exhausted");
}

TEST_CASE("ignore-error-event commits an attempt that ended with an in-stream error") {
  const std::string error_frame =
      "data: " + json{{"error", {{"code", 503}, {"message", "overloaded"}, {"status", "UNAVAILABLE"}}}}.dump() +
      "\r\n\r\n";
  auto turns = std::vector<std::vector<FakeResponse>>{
      {stream({text_frame("half "), error_frame}), text_turn("whole")}};
  auto good = run({}, turns);
  CHECK(good.result.completed);
  CHECK(good.result.requests == 2);
  CHECK(good.result.final_text == "whole");
  auto bad = run({Defect::kIgnoreErrorEvent}, turns);
  CHECK(bad.result.completed);
  CHECK(bad.result.requests == 1);
  CHECK(bad.result.final_text == "half ");
}

TEST_CASE("malformed-call-as-stop commits a malformed-function-call finish as the answer") {
  auto turns = std::vector<std::vector<FakeResponse>>{
      {stream({text_frame("Let me "), finish_frame("MALFORMED_FUNCTION_CALL")}), text_turn("fixed")}};
  auto good = run({}, turns);
  CHECK(good.result.requests == 2);
  CHECK(good.result.final_text == "fixed");
  auto bad = run({Defect::kMalformedCallAsStop}, turns);
  CHECK(bad.result.completed);
  CHECK(bad.result.requests == 1);
  CHECK(bad.result.final_text == "Let me ");
}

TEST_CASE("no-idle-timeout sends requests without an idle limit") {
  auto turns = std::vector<std::vector<FakeResponse>>{{text_turn("ok")}};
  auto good = run({}, turns);
  REQUIRE(good.transport.requests.size() == 1);
  CHECK(good.transport.requests[0].idle_timeout_s == 60);
  auto bad = run({Defect::kNoIdleTimeout}, turns);
  REQUIRE(bad.transport.requests.size() == 1);
  CHECK(bad.transport.requests[0].idle_timeout_s == kNoIdleLimit);
}

TEST_CASE("collapse-calls-by-id: a second call under one id never runs and is answered with the first one's result") {
  // One answer, two different calls with the id c1; then an answer.
  auto turns = [] {
    return std::vector<std::vector<FakeResponse>>{
        {stream({call_frame("shell", {{"command", "make"}}, "c1"), call_frame("shell", {{"command", "make test"}}, "c1"),
                 finish_frame()})},
        {text_turn("done")}};
  };
  auto good = run({}, turns());
  auto bad = run({Defect::kCollapseCallsById}, turns());
  REQUIRE(good.result.ledger.size() == 2);
  CHECK(good.result.ledger[1].args == json{{"command", "make test"}});
  CHECK(good.result.ledger[1].call_id == "c1_dup1");
  // Both keep the two calls in history under ids of their own, each answered.
  for (const FakeRun* r : {&good, &bad}) {
    const json h = r->transport.contents(1);
    REQUIRE(h[1]["parts"].size() == 2);
    CHECK(h[1]["parts"][1]["functionCall"]["id"] == "c1_dup1");
    CHECK(h[2]["parts"][1]["functionResponse"]["id"] == "c1_dup1");
    CHECK(r->result.completed);
  }
  REQUIRE(bad.result.ledger.size() == 1);
  CHECK(bad.result.ledger[0].args == json{{"command", "make"}});
}

TEST_CASE("drop-reasoning-in-history records the turn without the thought signature on its call") {
  const std::vector<std::vector<FakeResponse>> turns = {
      {stream({frame(json::array({{{"text", "Use ls."}, {"thought", true}}})),
               frame(json::array({{{"functionCall", {{"name", "shell"}, {"args", json::object()}}}, {"thoughtSignature", "CiQB"}}})),
               finish_frame()})},
      {text_turn("ok")}};
  auto good = run({}, turns);
  auto bad = run({Defect::kDropReasoningInHistory}, turns);
  REQUIRE(good.result.completed);
  const json kept = good.transport.contents(1)[1]["parts"];
  CHECK(kept == json::array({{{"functionCall", {{"name", "shell"}, {"args", json::object()}}}, {"thoughtSignature", "CiQB"}}}));
  const json dropped = bad.transport.contents(1)[1]["parts"];
  CHECK(dropped == json::array({{{"functionCall", {{"name", "shell"}, {"args", json::object()}}}}}));
}

}  // namespace rut::defects_test
