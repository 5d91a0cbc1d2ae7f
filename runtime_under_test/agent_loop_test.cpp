// End-to-end tests of run_agent against FakeTransport: turns, retries in virtual time, budget,
// fallback, history commits, the tool ledger, both consumers, determinism.
#include "runtime_under_test/runtime.h"

#include <catch2/catch.hpp>

#include "runtime_under_test/fake_transport.h"

namespace rut {

using namespace rut::test;

namespace {

FakeRun run(const Config& config, std::vector<std::vector<FakeResponse>> turns) {
  return run_fake(config, std::move(turns), "do it", 7);
}

Config with_consumer(ConsumerKind kind) {
  Config c;
  c.consumer = kind;
  return c;
}

FakeResponse call_turn(const std::string& name, TransportEnd end = TransportEnd::kComplete,
                       bool finish = true) {
  std::vector<std::string> chunks = {call_frame(name, {{"target", "prod"}})};
  if (finish) chunks.push_back(finish_frame());
  return stream(chunks, end);
}

FakeResponse lost_after_call(const std::string& name) {
  return stream({text_frame("partial "), call_frame(name, {{"target", "prod"}})},
                TransportEnd::kConnectionLost);
}

}  // namespace

TEST_CASE("a turn without calls completes the run with its text") {
  auto kind = GENERATE(ConsumerKind::kHeadless, ConsumerKind::kSubagent);
  auto r = run(with_consumer(kind), {{text_turn("done")}});
  CHECK(r.result.completed);
  CHECK(r.result.error.empty());
  CHECK(r.result.final_text == "done");
  CHECK(r.result.shown_output == "done");
  CHECK(r.result.requests == 1);
  CHECK(r.result.final_history.size() == 2);
  auto headers = r.transport.requests[0].headers;
  CHECK(std::find(headers.begin(), headers.end(),
                  std::pair<std::string, std::string>{"x-goog-api-key", "hiccup"}) !=
        headers.end());
}

TEST_CASE("committed calls execute once and their responses go into the next request") {
  auto kind = GENERATE(ConsumerKind::kHeadless, ConsumerKind::kSubagent);
  auto r = run(with_consumer(kind), {{call_turn("deploy")}, {text_turn("deployed")}});
  CHECK(r.result.completed);
  REQUIRE(r.result.ledger.size() == 1);
  CHECK(r.result.ledger[0] == LedgerEntry{"deploy", {{"target", "prod"}}, 0, 0, "call-0-0"});
  json c = r.transport.contents(1);
  REQUIRE(c.size() == 3);
  CHECK(c[2]["parts"][0]["functionResponse"]["name"] == "deploy");
  CHECK(c[2]["parts"][0]["functionResponse"]["response"]["output"] == "deploy: ok");
  CHECK(r.result.final_text == "deployed");
  REQUIRE(r.result.final_history.size() == 4);
  CHECK(r.result.final_history[2] == c[2]);
}

TEST_CASE("retry discards calls and text of the failed attempt") {
  auto kind = GENERATE(ConsumerKind::kHeadless, ConsumerKind::kSubagent);
  auto r = run(with_consumer(kind),
               {{lost_after_call("deploy"), call_turn("deploy")}, {text_turn("ok")}});
  CHECK(r.result.completed);
  REQUIRE(r.result.ledger.size() == 1);
  CHECK(r.result.ledger[0].request_seq == 1);
  CHECK(r.result.requests == 3);
  CHECK(r.result.waited_s == 10);
  CHECK(r.result.shown_output == "ok");
  // the committed model turn holds only the completed attempt's parts
  json model = r.result.final_history[1];
  CHECK(model["parts"].size() == 1);
  CHECK(model["parts"][0]["functionCall"]["name"] == "deploy");
}

TEST_CASE("history commits only complete turns") {
  auto r = run(Config{}, {{stream({text_frame("half")}, TransportEnd::kConnectionLost),
                           text_turn("whole")}});
  CHECK(r.result.completed);
  CHECK(r.result.final_history[1]["parts"] == json::array({{{"text", "whole"}}}));
  CHECK(r.transport.contents(1).size() == 1);  // the retry resent only the prompt
  CHECK(r.result.shown_output == "whole");
}

TEST_CASE("backoff waits 10, 20, 60 virtual seconds between attempts") {
  auto r = run(Config{}, {{status(503, "UNAVAILABLE"), status(503, "UNAVAILABLE"),
                           status(503, "UNAVAILABLE"), text_turn("ok")}});
  CHECK(r.result.completed);
  CHECK(r.result.requests == 4);
  CHECK(r.result.waited_s == 90);
  CHECK(r.clock_s == 90);
}

TEST_CASE("a wait honours RetryInfo when it exceeds the backoff step") {
  auto r = run(Config{}, {{status(429, "RESOURCE_EXHAUSTED", 30), text_turn("ok")}});
  CHECK(r.result.completed);
  CHECK(r.result.waited_s == 30);
}

TEST_CASE("retries stop at max_attempts with retries_exhausted") {
  Config c;
  c.max_attempts = 4;
  auto r = run(c, {{status(503, "UNAVAILABLE")}});
  CHECK_FALSE(r.result.completed);
  CHECK(r.result.error == "retries_exhausted");
  CHECK(r.result.requests == 4);
  CHECK(r.result.waited_s == 90);  // no wait after the last attempt
}

TEST_CASE("an idle timeout costs idle_timeout_s but is not a wait") {
  auto r = run(Config{}, {{stream({text_frame("a")}, TransportEnd::kIdleTimeout), text_turn("b")}});
  CHECK(r.result.completed);
  CHECK(r.result.waited_s == 10);
  CHECK(r.clock_s == 70);
}

TEST_CASE("a 400 fails the run and removes the rejected content from history") {
  auto r = run(Config{}, {{status(400, "INVALID_ARGUMENT")}});
  CHECK(r.result.error == "invalid_request");
  CHECK(r.result.requests == 1);
  CHECK(r.result.final_history.empty());
}

TEST_CASE("401, 403 and 404 fail the run as non_retryable without retry") {
  auto code = GENERATE(401, 403, 404);
  auto r = run(Config{}, {{status(code, "X"), text_turn("never")}});
  CHECK(r.result.error == "non_retryable");
  CHECK(r.result.requests == 1);
  CHECK(r.result.waited_s == 0);
}

TEST_CASE("content filter retries once on the fallback model without waiting") {
  Config c;
  c.fallback_model = "fallback-model";
  auto r = run(c, {{call_turn("deploy")}, {stream({finish_frame("SAFETY")}), text_turn("ok")}});
  CHECK(r.result.completed);
  CHECK(r.result.waited_s == 0);
  REQUIRE(r.result.requests == 3);
  CHECK(r.transport.requests[0].target.find("gemini-2.5-flash") != std::string::npos);
  CHECK(r.transport.requests[2].target ==
        "/v1beta/models/fallback-model:streamGenerateContent?alt=sse");
}

TEST_CASE("the next turn starts on the configured model after a fallback") {
  Config c;
  c.fallback_model = "fb";
  auto r = run(c, {{stream({finish_frame("SAFETY")}), call_turn("deploy")}, {text_turn("ok")}});
  CHECK(r.result.completed);
  CHECK(r.transport.requests[1].target.find("/fb:") != std::string::npos);
  CHECK(r.transport.requests[2].target.find("gemini-2.5-flash") != std::string::npos);
}

TEST_CASE("a second content filter in a turn fails the run with content_filter") {
  Config c;
  c.fallback_model = "fb";
  auto r = run(c, {{stream({finish_frame("SAFETY")})}});
  CHECK(r.result.error == "content_filter");
  CHECK(r.result.requests == 2);
}

TEST_CASE("content filter without fallback fails the run, never success") {
  auto r = run(Config{}, {{stream({text_frame("x"), finish_frame("SAFETY")})}});
  CHECK_FALSE(r.result.completed);
  CHECK(r.result.error == "content_filter");
  CHECK(r.result.requests == 1);
  CHECK(r.result.shown_output.empty());
}

TEST_CASE("content filter fallback without budget fails with content_filter") {
  Config c;
  c.fallback_model = "fb";
  c.max_attempts = 1;
  auto r = run(c, {{stream({finish_frame("SAFETY")}), text_turn("ok")}});
  CHECK(r.result.error == "content_filter");
  CHECK(r.result.requests == 1);
}

TEST_CASE("max_turns caps a run whose turns always call tools") {
  Config c;
  c.max_turns = 3;
  auto r = run(c, {{call_turn("a")}, {call_turn("a")}, {call_turn("a")}, {call_turn("a")}});
  CHECK(r.result.error == "max_turns");
  CHECK(r.result.requests == 3);
}

TEST_CASE("events record requests with turn and attempt, and the run is deterministic") {
  Config c;
  auto turns = std::vector<std::vector<FakeResponse>>{
      {lost_after_call("deploy"), status(429, "RESOURCE_EXHAUSTED", 30), call_turn("deploy")},
      {text_turn("ok")}};
  auto a = run(c, turns);
  auto b = run(c, turns);
  CHECK(a.result.events == b.result.events);
  CHECK(a.result.ledger == b.result.ledger);
  std::vector<json> requests;
  for (const json& e : a.result.events) {
    if (e["type"] == "request") requests.push_back(e);
  }
  REQUIRE(requests.size() == 4);
  CHECK(requests[2] == json{{"type", "request"}, {"seq", 2}, {"turn", 0}, {"attempt", 2},
                            {"model", "gemini-2.5-flash"}});
  CHECK(requests[3]["turn"] == 1);
  CHECK(a.result.events.back() == json{{"type", "outcome"}, {"completed", true}, {"error", ""}});
  CHECK(a.result.waited_s == 40);
}

TEST_CASE("a replayed call is answered with the earlier result and not run again, in either consumer and design") {
  auto kind = GENERATE(ConsumerKind::kHeadless, ConsumerKind::kSubagent);
  auto recovery = GENERATE(Recovery::kHold, Recovery::kContinue);
  Config c = with_consumer(kind);
  c.recovery = recovery;
  const json staging = {{"target", "staging"}};
  // Turn 0: deploy (id d1), replayed in the same answer; turn 1: replayed again; then an answer.
  auto r = run(c, {{stream({call_frame("deploy", staging, "d1"), call_frame("deploy", staging, "d1"), finish_frame()})},
                   {stream({text_frame("Checking. "), call_frame("deploy", staging, "d1"), finish_frame()})},
                   {text_turn("Deployed once.")}});
  CHECK(r.result.completed);
  REQUIRE(r.result.ledger.size() == 1);
  CHECK(r.result.ledger[0].call_id == "d1");
  const json h = r.transport.contents(2);
  REQUIRE(h.size() == 5);
  CHECK(h[1]["parts"][0]["functionCall"]["id"] == "d1");
  CHECK(h[1]["parts"][1]["functionCall"]["id"] == "d1_dup1");
  CHECK(h[3]["parts"][1]["functionCall"]["id"] == "d1_dup2");
  // Every call answered once, the replays with the result the deploy gave.
  CHECK(h[2]["parts"][1]["functionResponse"]["id"] == "d1_dup1");
  CHECK(h[2]["parts"][1]["functionResponse"]["response"] == json{{"output", "deploy: ok"}});
  CHECK(h[4]["parts"][0]["functionResponse"]["id"] == "d1_dup2");
  int replays = 0;
  for (const json& e : r.result.events) replays += e.value("type", "") == "tool_call" && e.contains("replay_of");
  CHECK(replays == 2);
}

TEST_CASE("a replay of a call the user cancelled is answered as cancelled, not run") {
  Config c;
  c.interrupt = UserInterrupt{0, 0, std::nullopt, 0};
  const json staging = {{"target", "staging"}};
  FakeTransport transport({{stream({call_frame("deploy", staging, "d1"), finish_frame()})},
                           {stream({call_frame("deploy", staging, "d1"), finish_frame()})},
                           {text_turn("ok")}});
  VirtualClock clock;
  SplitMix64 random(7);
  const RunResult result = run_session(c, {"deploy", "go on"}, clock, random, transport);
  CHECK(result.completed);
  CHECK(result.ledger.empty());
  const json h = transport.contents(2);
  REQUIRE(h.size() == 6);  // prompt, call, its cancelled result, next prompt, the replay, its answer
  CHECK(h[5]["parts"][0]["functionResponse"]["response"] == json{{"error", "cancelled by the user"}});
}

TEST_CASE("a cancel during a backoff drops the pending retry: nothing goes out until the next prompt") {
  Config c;
  c.interrupt = UserInterrupt{0, 0, std::nullopt, std::nullopt, 1};
  auto play = [&](const DefectSet& defects) {
    c.defects = defects;
    FakeTransport transport({{status(503, "UNAVAILABLE"), text_turn("plan")}, {text_turn("late")}});
    VirtualClock clock;
    SplitMix64 random(7);
    RunResult result = run_session(c, {"deploy", "only the plan"}, clock, random, transport);
    return std::tuple(result, transport, clock.now_s());
  };
  const auto [good, sent, now] = play({});
  CHECK(good.completed);
  CHECK(good.final_text == "plan");
  REQUIRE(sent.requests.size() == 2);
  CHECK(sent.contents(1).size() == 2);  // the two prompts, nothing of the cancelled turn
  CHECK(sent.contents(1)[1]["parts"][0]["text"] == "only the plan");
  CHECK(good.waited_s == 5);  // cancelled halfway through the 10 s backoff
  CHECK(now == 5);
  const auto cancel = std::find_if(good.events.begin(), good.events.end(), [](const json& e) { return e["type"] == "cancel"; });
  REQUIRE(cancel != good.events.end());
  CHECK((*cancel)["before_attempt"] == 1);
  // Without the next prompt the run ends as cancelled after the one request.
  FakeTransport alone({{status(503, "UNAVAILABLE"), text_turn("plan")}});
  VirtualClock clock;
  SplitMix64 random(7);
  const RunResult last = run_session(c, {"deploy"}, clock, random, alone);
  CHECK(last.error == "cancelled");
  CHECK(alone.requests.size() == 1);
  // retry-after-cancel: the retry fires at the end of the wait, with the first prompt's history.
  const auto [bad, bad_sent, bad_now] = play({Defect::kRetryAfterCancel});
  REQUIRE(bad_sent.requests.size() >= 2);
  CHECK(bad_sent.contents(1).size() == 1);
  CHECK(bad.waited_s >= 10);
}

TEST_CASE("a cancel while tools run ends the prompt's run, and continue-loop-after-cancel sends the results to the model first") {
  Config c;
  c.interrupt = UserInterrupt{0, 0, std::nullopt, 1};
  auto play = [&](const DefectSet& defects) {
    c.defects = defects;
    FakeTransport transport({{stream({call_frame("a"), call_frame("b"), finish_frame()})}, {text_turn("left: b")},
                             {text_turn("again")}});
    VirtualClock clock;
    SplitMix64 random(7);
    RunResult result = run_session(c, {"clean", "what is left?"}, clock, random, transport);
    return std::pair(result, transport);
  };
  const auto [good, sent] = play({});
  CHECK(good.completed);
  REQUIRE(sent.requests.size() == 2);
  const json h = sent.contents(1);
  REQUIRE(h.size() == 4);  // prompt, calls, both results, next prompt
  CHECK(h[3]["parts"][0]["text"] == "what is left?");
  CHECK(good.ledger.size() == 1);
  const auto [bad, bad_sent] = play({Defect::kContinueLoopAfterCancel});
  REQUIRE(bad_sent.requests.size() >= 2);
  CHECK(bad_sent.contents(1).size() == 3);  // the results went to the model without the next prompt
  CHECK(bad.ledger.size() == 1);            // the cancelled call still did not run
}

}  // namespace rut
