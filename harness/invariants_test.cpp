// Each invariant on hand-built transcripts: a clean run passes, and each broken promise is named.
#include <catch2/catch.hpp>

#include "harness/invariants.h"

namespace harness {
namespace {

using nlohmann::json;

json user_prompt() { return {{"role", "user"}, {"parts", json::array({{{"text", "go"}}})}}; }
json model_call() {
  return {{"role", "model"},
          {"parts", json::array({{{"functionCall", {{"name", "shell"}, {"args", {{"command", "ls"}}}}}}})}};
}
json responses(int n) {
  json parts = json::array();
  for (int i = 0; i < n; ++i) {
    parts.push_back({{"functionResponse", {{"name", "shell"}, {"response", {{"output", "shell: ok"}}}}}});
  }
  return {{"role", "user"}, {"parts", parts}};
}

mock::JournalEntry entry(std::size_t index, int turn, int attempt, json contents, bool completed) {
  mock::JournalEntry e;
  e.index = index;
  e.turn = turn;
  e.attempt = attempt;
  e.script_attempt = attempt;
  e.contents = std::move(contents);
  e.response_status = 200;
  e.played = "stream";
  e.completed = completed;
  e.settled = true;
  return e;
}

/// Turn 0: a call (attempt 0 reset after the call, attempt 1 complete); turn 1: "done".
struct Fixture {
  Scenario scenario;
  rut::RunResult run;
  mock::Journal journal;
  Fixture() {
    scenario.name = "fixture";
    scenario.prompt = "go";
    mock::Attempt call_attempt;
    call_attempt.events = {mock::CallEvent{"shell", {{"command", "ls"}}, ""}, mock::FinishEvent{}};
    mock::Attempt done;
    done.events = {mock::TextEvent{"done"}, mock::FinishEvent{}};
    scenario.script.turns = {mock::Turn{{call_attempt, call_attempt}}, mock::Turn{{done}}};
    journal.push_back(entry(0, 0, 0, json::array({user_prompt()}), false));
    journal[0].fault = "reset";
    journal[0].events_delivered = 1;
    journal[0].delivered_calls = {mock::DeliveredCall{"shell", {{"command", "ls"}}, "", 0}};
    journal.push_back(entry(1, 0, 1, json::array({user_prompt()}), true));
    journal[1].events_delivered = 2;
    journal[1].delivered_calls = {mock::DeliveredCall{"shell", {{"command", "ls"}}, "", 0}};
    journal.push_back(entry(2, 1, 0, json::array({user_prompt(), model_call(), responses(1)}), true));
    journal[2].events_delivered = 2;
    journal[2].delivered_text = "done";
    run.completed = true;
    run.final_text = "done";
    run.shown_output = "done";
    run.requests = 3;
    run.ledger = {rut::LedgerEntry{"shell", {{"command", "ls"}}, 1, 0, ""}};
    run.events = {{{"type", "request"}, {"seq", 0}}, {{"type", "retry"}, {"wait_s", 10}},
                  {{"type", "request"}, {"seq", 1}}, {{"type", "request"}, {"seq", 2}}};
    run.final_history = json::array({user_prompt(), model_call(), responses(1),
                                     {{"role", "model"}, {"parts", json::array({{{"text", "done"}}})}}});
  }
  std::vector<Violation> check(int max_attempts = 4, std::string cap = "") const {
    return check_invariants(Evidence{scenario, run, journal, max_attempts, std::move(cap)});
  }
};

std::vector<std::string> names(const std::vector<Violation>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(v.invariant);
  return out;
}

TEST_CASE("a correct run violates no invariant") {
  Fixture f;
  CHECK(f.check().empty());
}

TEST_CASE("at-most-once: a call that ran twice is named with its turn and requests") {
  Fixture f;
  f.run.ledger.push_back(rut::LedgerEntry{"shell", {{"command", "ls"}}, 0, 0, ""});
  const auto vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"at-most-once", "at-most-once"});
  CHECK(vs[0].message.find("did not complete") != std::string::npos);
  CHECK(vs[0].request == 0);
  CHECK(vs[1].message.find("ran 2 times") != std::string::npos);
}

TEST_CASE("pairing: a rejected request and a response for an undelivered call are violations") {
  Fixture f;
  f.journal[2].validated = false;
  f.journal[2].response_status = 400;
  f.journal[2].rejection = "Please ensure that ...";
  f.journal[1].issues.push_back("response-for-undelivered-call: shell");
  const auto vs = f.check();
  const auto n = names(vs);
  CHECK(std::count(n.begin(), n.end(), "pairing") == 2);
  CHECK(std::count(n.begin(), n.end(), "no-rejected-request") == 1);
}

TEST_CASE("pairing: a call left without a result in the final history of a cancelled run is named") {
  Fixture f;
  f.run.completed = false;
  f.run.error = "cancelled";
  f.run.final_history = json::array({user_prompt(), model_call()});  // the cancelled turn's call kept no result
  std::vector<std::string> pairing;
  for (const Violation& v : f.check()) {
    if (v.invariant == "pairing") pairing.push_back(v.message);
  }
  REQUIRE(pairing.size() == 1u);
  CHECK(pairing[0].find("call 0 (\"shell\") has no function response after the user cancelled") != std::string::npos);

  f.run.final_history.push_back(responses(1));  // answered: nothing to name
  for (const Violation& v : f.check()) CHECK(v.invariant != "pairing");

  f.run.error = "invalid_request";  // a 400 drops the rejected responses: not judged
  f.run.final_history = json::array({user_prompt(), model_call()});
  for (const Violation& v : f.check()) CHECK(v.invariant != "pairing");
}

TEST_CASE("history-integrity: a model turn from an incomplete attempt is a phantom turn") {
  Fixture f;
  f.journal[1].completed = false;  // the call turn never completed, yet request 2 carries it
  const auto n = names(f.check());
  CHECK(std::find(n.begin(), n.end(), "history-integrity") != n.end());
}

TEST_CASE("history-integrity: a duplicated call in a committed turn differs from the delivery") {
  Fixture f;
  json doubled = model_call();
  doubled["parts"].push_back(doubled["parts"][0]);
  f.journal[2].contents = json::array({user_prompt(), doubled, responses(2)});
  const auto vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"history-integrity"});
  CHECK(vs[0].message.find("differs from what request 1 delivered") != std::string::npos);
}

TEST_CASE("history-integrity: the final history may not keep a request answered 400") {
  Fixture f;
  f.journal[2].response_status = 400;
  f.journal[2].played = "status";
  f.journal[2].completed = false;
  f.run.completed = false;
  f.run.error = "invalid_request";
  f.run.final_text = "";
  f.run.shown_output = "";
  f.run.final_history = f.journal[2].contents;
  const auto n = names(f.check());
  CHECK(n == std::vector<std::string>{"history-integrity"});
}

TEST_CASE("no-rejected-request: repeating a request answered 400 is a violation") {
  Fixture f;
  f.journal[0].response_status = 400;  // request 1 repeats request 0 after its 400
  f.journal[0].played = "status";
  f.journal[0].delivered_calls.clear();
  const auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "no-rejected-request") == 1);
  CHECK(std::count(n.begin(), n.end(), "bounded-retries") == 1);  // 400 retried
}

TEST_CASE("no-rejected-request: the same history in a changed body after a 400 is not a repeat") {
  Fixture f;
  f.journal[0].response_status = 400;
  f.journal[0].played = "status";
  f.journal[0].delivered_calls.clear();
  f.journal[0].body_digest = "00000000000000aa";
  f.journal[1].body_digest = "00000000000000bb";  // e.g. a beta feature dropped
  const auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "no-rejected-request") == 0);
  CHECK(std::count(n.begin(), n.end(), "bounded-retries") == 1);  // a 400 is still not retryable
}

TEST_CASE("bounded-retries: budget, cap and Retry-After") {
  Fixture f;
  SECTION("more attempts than the budget") {
    CHECK(names(f.check(1)) == std::vector<std::string>{"bounded-retries"});
  }
  SECTION("the harness cap") {
    const auto vs = f.check(4, "the run reached the cap of 64 requests");
    CHECK(names(vs) == std::vector<std::string>{"bounded-retries"});
  }
  SECTION("a wait shorter than RetryInfo") {
    f.scenario.script.turns[0].attempts[0] = mock::Attempt{429, 30.0, {}, std::nullopt, std::nullopt};
    f.journal[0].played = "status";
    f.journal[0].response_status = 429;
    f.journal[0].delivered_calls.clear();
    const auto vs = f.check();
    REQUIRE(names(vs) == std::vector<std::string>{"bounded-retries"});
    CHECK(vs[0].message.find("waited 10 s, but the server asked for 30 s") != std::string::npos);
  }
}

TEST_CASE("honest-outcome: success after a content-filter finish is named") {
  Fixture f;
  f.scenario.script.turns[1].attempts[0].events = {mock::FinishEvent{mock::FinishReason::kContentFilter}};
  f.journal[2].completed = false;
  f.journal[2].delivered_text = "";
  f.run.final_text = "";
  f.run.shown_output = "";
  const auto vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"honest-outcome"});
  CHECK(vs[0].message.find("content-filter") != std::string::npos);
}

TEST_CASE("honest-outcome: a failed run needs a clear error") {
  Fixture f;
  f.run.completed = false;
  f.run.error = "";
  const auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "honest-outcome") == 1);
}

TEST_CASE("clean-output: text of a failed attempt in the output is a violation") {
  Fixture f;
  f.run.shown_output = "partialdone";
  f.run.final_text = "partialdone";
  const auto n = names(f.check());
  CHECK(n == std::vector<std::string>{"clean-output", "clean-output"});
}

TEST_CASE("expect fields are each checked") {
  Fixture f;
  f.scenario.expect.outcome = "failed";
  f.scenario.expect.error = "content_filter";
  f.scenario.expect.final_text = "other";
  f.scenario.expect.executions = std::vector<ExpectedExecution>{{"shell", json{{"command", "ls"}}, 2}};
  f.scenario.expect.requests = 2;
  f.scenario.expect.waited_s = 20;
  const auto vs = check_expect(Evidence{f.scenario, f.run, f.journal, 4, ""});
  CHECK(names(vs) == std::vector<std::string>{"expect.outcome", "expect.error", "expect.final_text",
                                              "expect.executions", "expect.requests", "expect.waited_s"});
  f.scenario.expect = Expect{"completed", std::nullopt, "done",
                             std::vector<ExpectedExecution>{{"shell", std::nullopt, 1}}, 3, 0};
  CHECK(check_expect(Evidence{f.scenario, f.run, f.journal, 4, ""}).empty());
}

TEST_CASE("expect.executions: an unlisted tool that ran is a violation") {
  Fixture f;
  f.scenario.expect.executions = std::vector<ExpectedExecution>{};
  const auto vs = check_expect(Evidence{f.scenario, f.run, f.journal, 4, ""});
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].message.find("expected 0 (not listed)") != std::string::npos);
}

TEST_CASE("the catalogue lists DESIGN.md's seven invariants, then no-unchanged-content-filter-retry, liveness and no-execution-after-cancel") {
  std::vector<std::string> n;
  for (const auto& i : invariant_catalogue()) n.emplace_back(i.name);
  CHECK(n == std::vector<std::string>{"at-most-once", "pairing", "history-integrity", "no-rejected-request",
                                      "bounded-retries", "honest-outcome", "clean-output",
                                      "no-unchanged-content-filter-retry", "liveness", "no-execution-after-cancel"});
}

/// Turn 0 attempt 0 ends with a content-filter finish after text; attempt 1 is `retry_model`'s
/// request with the same history.
struct FilterFixture {
  Scenario scenario;
  rut::RunResult run;
  mock::Journal journal;
  explicit FilterFixture(const std::string& retry_model) {
    scenario.name = "filter";
    scenario.prompt = "go";
    mock::Attempt filtered;
    filtered.events = {mock::TextEvent{"Here is"}, mock::FinishEvent{mock::FinishReason::kContentFilter}};
    mock::Attempt done;
    done.events = {mock::TextEvent{"done"}, mock::FinishEvent{}};
    scenario.script.turns = {mock::Turn{{filtered, done}}};
    journal.push_back(entry(0, 0, 0, json::array({user_prompt()}), false));
    journal[0].model = "m";
    journal[0].events_delivered = 2;
    journal.push_back(entry(1, 0, 1, json::array({user_prompt()}), true));
    journal[1].model = retry_model;
    journal[1].events_delivered = 2;
    journal[1].delivered_text = "done";
    run.completed = true;
    run.final_text = run.shown_output = "done";
    run.final_history = json::array({user_prompt(), {{"role", "model"}, {"parts", json::array({{{"text", "done"}}})}}});
  }
  std::vector<Violation> check() const { return check_invariants(Evidence{scenario, run, journal, 4, ""}); }
};

TEST_CASE("no-unchanged-content-filter-retry: the same model and history after a content-filter finish is named") {
  const auto vs = FilterFixture("m").check();
  REQUIRE(names(vs) == std::vector<std::string>{"no-unchanged-content-filter-retry"});
  CHECK(vs[0].request == 1);
  CHECK(vs[0].message.find("repeats request 0 (turn 0, attempt 0) unchanged (model \"m\"") != std::string::npos);
}

TEST_CASE("no-unchanged-content-filter-retry: a retry on another model (the fallback) passes") {
  CHECK(FilterFixture("fallback").check().empty());
}

TEST_CASE("bounded-retries in real time: a retry sooner than Retry-After is named with the measured gap") {
  Fixture f;
  mock::Attempt busy;
  busy.status = 429;
  busy.retry_after_s = 2;
  f.scenario.script.turns[0].attempts[0] = busy;
  f.journal[0].played = "status";
  f.journal[0].response_status = 429;
  f.journal[0].delivered_calls.clear();
  f.run.ledger = {rut::LedgerEntry{"shell", {{"command", "ls"}}, 1, 0, ""}};
  f.journal[0].answered_ms = 100;
  f.journal[1].arrived_ms = 1300;  // 1.2 s later: too soon for 2 s
  f.journal[2].arrived_ms = 1500;
  Evidence ev{f.scenario, f.run, f.journal, 10, "", true};
  auto vs = check_invariants(ev);
  std::vector<Violation> retries;
  for (const auto& v : vs) if (v.invariant == "bounded-retries") retries.push_back(v);
  REQUIRE(retries.size() == 1);
  CHECK(retries[0].request == 1);
  CHECK(retries[0].message == "request 1 (turn 0, attempt 1) retried 1200 ms after request 0 (turn 0, attempt 0) ended, but the server asked for 2000 ms (Retry-After / RetryInfo)");
  f.journal[1].arrived_ms = 2100;  // 2.0 s later: honoured
  Evidence late{f.scenario, f.run, f.journal, 10, "", true};
  for (const auto& v : check_invariants(late)) CHECK(v.invariant != "bounded-retries");
}

}  // namespace
}  // namespace harness
