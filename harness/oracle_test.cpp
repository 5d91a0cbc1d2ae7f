// Tests of the oracle: hand-checked cases for each rule of docs/POLICY.md, and a cross-check of
// every scenario under scenarios/: the oracle's prediction must equal each file's hand-derived
// expect on every field the file states.
#include "harness/oracle.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "harness/scenario_io.h"
#include "runtime_under_test/defects.h"

#ifndef HICCUP_SOURCE_DIR
#define HICCUP_SOURCE_DIR "."
#endif

using harness::oracle_expect;
using harness::predict;
using harness::Scenario;

namespace {

mock::Attempt status(int s, std::optional<double> retry_after = std::nullopt) {
  mock::Attempt a;
  a.status = s;
  a.retry_after_s = retry_after;
  return a;
}

mock::Attempt stream(std::vector<mock::Event> events, std::optional<mock::Fault> fault = {}) {
  mock::Attempt a;
  a.events = std::move(events);
  a.fault = fault;
  return a;
}

mock::Event text(std::string t) { return mock::TextEvent{std::move(t)}; }
mock::Event call(std::string name, nlohmann::json args = nlohmann::json::object()) {
  return mock::CallEvent{std::move(name), std::move(args), ""};
}
mock::Event finish(mock::FinishReason r = mock::FinishReason::kStop) { return mock::FinishEvent{r}; }

Scenario scenario(std::vector<std::vector<mock::Attempt>> turns) {
  Scenario s;
  s.name = "t";
  s.prompt = "p";
  for (auto& t : turns) s.script.turns.push_back(mock::Turn{std::move(t)});
  return s;
}

}  // namespace

TEST_CASE("oracle: a plain answer completes in one request") {
  auto r = predict(scenario({{stream({text("Hel"), text("lo"), finish()})}}));
  CHECK(r.completed);
  CHECK(r.error.empty());
  CHECK(r.final_text == "Hello");
  CHECK(r.requests == 1);
  CHECK(r.waited_s == 0);
  CHECK(r.executions.empty());
}

TEST_CASE("oracle: a session goes on with the next prompt after an answer without calls, and ends at a failed prompt") {
  auto s = scenario({{stream({call("shell"), finish()})},
                     {stream({text("First."), finish()})},
                     {status(503), stream({text("Second."), finish()})}});
  s.session = {harness::SessionPrompt{"next"}};
  auto r = predict(s);
  CHECK(r.completed);
  CHECK(r.final_text == "Second.");
  CHECK(r.requests == 4);
  CHECK(r.waited_s == 10);
  s.session = {};  // one prompt: the answer of turn 1 ends the run
  CHECK(predict(s).requests == 2);
  s.session = {harness::SessionPrompt{"next"}, harness::SessionPrompt{"and next"}};  // turn 3 is unscripted: 500s
  auto failed = predict(s);
  CHECK_FALSE(failed.completed);
  CHECK(failed.error == "retries_exhausted");
}

TEST_CASE("oracle: retry discards calls of the failed attempt") {
  auto s = scenario({{stream({call("shell", {{"c", 1}})}, mock::ResetFault{1, 200}),
                      stream({call("shell", {{"c", 1}}), finish()})},
                     {stream({text("Deployed."), finish()})}});
  auto r = predict(s);
  CHECK(r.completed);
  CHECK(r.final_text == "Deployed.");
  CHECK(r.requests == 3);
  CHECK(r.waited_s == 10);
  REQUIRE(r.executions.size() == 1);
  CHECK(r.executions[0].count == 1);
  CHECK(r.executions[0].args == nlohmann::json{{"c", 1}});
}

TEST_CASE("oracle: status classes") {
  CHECK(predict(scenario({{status(400)}})).error == "invalid_request");
  for (int st : {401, 403, 404, 501}) CHECK(predict(scenario({{status(st)}})).error == "non_retryable");
  for (int st : {429, 500, 502, 503, 504, 529}) {
    auto r = predict(scenario({{status(st)}}));
    CHECK(r.error == "retries_exhausted");
    CHECK(r.requests == 4);
    CHECK(r.waited_s == 90);
  }
  auto r = predict(scenario({{status(400)}}));
  CHECK(r.requests == 1);
  CHECK(r.waited_s == 0);
}

TEST_CASE("oracle: each wait is max(schedule step, retry-after), and the last step repeats") {
  auto s = scenario({{status(429, 30), status(503, 5), status(503), status(503), stream({finish()})}});
  s.runtime.max_attempts = 5;
  s.runtime.backoff_s = std::vector<double>{10, 20};
  auto r = predict(s);
  CHECK(r.completed);
  CHECK(r.requests == 5);
  CHECK(r.waited_s == 30 + 20 + 20 + 20);
  s.runtime.backoff_s = std::vector<double>{};
  CHECK(predict(s).waited_s == 30 + 5);
}

TEST_CASE("oracle: faults before the finish fail the attempt, after it change nothing") {
  std::vector<mock::Fault> failing = {mock::DisconnectFault{1, 0}, mock::ResetFault{1, 200},
                                      mock::EndFault{1}, mock::CutFault{1, 3},
                                      mock::ErrorEventFault{1, 529}, mock::MalformedFault{1},
                                      mock::StallFault{1, 60}};
  for (const auto& f : failing) {
    auto r = predict(scenario({{stream({text("a"), finish()}, f), stream({text("b"), finish()})}}));
    INFO(mock::fault_name(f));
    CHECK(r.completed);
    CHECK(r.final_text == "b");
    CHECK(r.requests == 2);
    CHECK(r.waited_s == 10);
    auto after = f;
    std::visit([](auto& x) { x.after_event = 2; }, after);
    auto r2 = predict(scenario({{stream({text("a"), finish()}, after), stream({text("b"), finish()})}}));
    CHECK(r2.final_text == "a");
    CHECK(r2.requests == 1);
  }
  auto r = predict(scenario({{stream({text("a"), finish()}, mock::StallFault{1, 59.5})}}));
  CHECK(r.final_text == "a");
  CHECK(r.requests == 1);
  auto s = scenario({{stream({text("a"), finish()}, mock::StallFault{1, 5}), stream({finish()})}});
  s.runtime.idle_timeout_s = 5;
  CHECK(predict(s).requests == 2);
}

TEST_CASE("oracle: finish reasons") {
  using R = mock::FinishReason;
  CHECK(predict(scenario({{stream({text("x"), finish(R::kMaxTokens)})}})).final_text == "x");
  auto mc = predict(scenario({{stream({finish(R::kMalformedCall)}), stream({text("y"), finish()})}}));
  CHECK(mc.requests == 2);
  CHECK(mc.waited_s == 10);
  auto inc = predict(scenario({{stream({text("x")}), stream({text("y"), finish()})}}));
  CHECK(inc.final_text == "y");
  CHECK(inc.requests == 2);
  auto first = predict(scenario({{stream({text("x"), finish(), text("z"), call("t")})}}));
  CHECK(first.completed);
  CHECK(first.final_text == "x");
  CHECK(first.executions.empty());
}

TEST_CASE("oracle: content filter and fallback") {
  using R = mock::FinishReason;
  auto s = scenario({{stream({finish(R::kContentFilter)}), stream({text("ok"), finish()})}});
  auto none = predict(s);
  CHECK(none.error == "content_filter");
  CHECK(none.requests == 1);
  s.runtime.fallback_model = "m2";
  auto fb = predict(s);
  CHECK(fb.completed);
  CHECK(fb.requests == 2);
  CHECK(fb.waited_s == 0);
  auto twice = scenario({{stream({finish(R::kContentFilter)})}});
  twice.runtime.fallback_model = "m2";
  CHECK(predict(twice).error == "content_filter");
  CHECK(predict(twice).requests == 2);
  twice.runtime.max_attempts = 1;
  CHECK(predict(twice).error == "content_filter");
  CHECK(predict(twice).requests == 1);
}

TEST_CASE("oracle: budget is per turn, and a request past the script gets 500") {
  auto s = scenario({{stream({call("t", {{"n", 1}}), finish()})}});
  auto r = predict(s);
  CHECK(r.error == "retries_exhausted");
  CHECK(r.requests == 5);
  CHECK(r.waited_s == 90);
  REQUIRE(r.executions.size() == 1);
  s.runtime.max_attempts = 1;
  CHECK(predict(s).requests == 2);
}

TEST_CASE("oracle: executions aggregate by name and args in first-execution order") {
  auto s = scenario({{stream({call("b", {{"x", 1}}), call("a"), finish()})},
                     {stream({call("a"), call("b", {{"x", 2}}), finish()})},
                     {stream({text("done"), finish()})}});
  auto e = oracle_expect(s);
  REQUIRE(e.executions);
  REQUIRE(e.executions->size() == 3);
  CHECK((*e.executions)[0].name == "b");
  CHECK((*e.executions)[0].count == 1);
  CHECK((*e.executions)[1].name == "a");
  CHECK((*e.executions)[1].count == 2);
  CHECK((*e.executions)[2].args == nlohmann::json{{"x", 2}});
  CHECK(e.outcome == "completed");
  CHECK_FALSE(e.error);
  CHECK(e.final_text == "done");
}

TEST_CASE("oracle: a replayed call (same id, name and arguments) is answered and not run again, a new call under a used id runs") {
  auto with_id = [](std::string name, nlohmann::json args, std::string id, bool reuse = false) {
    return mock::Event(mock::CallEvent{std::move(name), std::move(args), std::move(id), 0, reuse});
  };
  const nlohmann::json staging = {{"target", "staging"}};
  const nlohmann::json prod = {{"target", "prod"}};
  // In one answer: a replay, then a collision.
  auto one = predict(scenario({{stream({with_id("deploy", staging, "c1"), with_id("deploy", staging, "c1", true),
                                        with_id("deploy", prod, "c1", true), finish()})},
                               {stream({text("ok"), finish()})}}));
  CHECK(one.completed);
  CHECK(one.requests == 2);
  CHECK(one.executions == std::vector<harness::ExpectedExecution>{{"deploy", staging, 1}, {"deploy", prod, 1}});
  // From an earlier turn: the replay is answered (the run goes on), not run.
  auto later = predict(scenario({{stream({with_id("deploy", staging, "c1"), finish()})},
                                 {stream({with_id("deploy", staging, "c1", true), finish()})},
                                 {stream({text("ok"), finish()})}}));
  CHECK(later.requests == 3);
  CHECK(later.executions == std::vector<harness::ExpectedExecution>{{"deploy", staging, 1}});
  // The same call without ids (or with the server's own ids) in two turns is two calls.
  auto twice = predict(scenario({{stream({call("deploy", staging), finish()})}, {stream({call("deploy", staging), finish()})},
                                 {stream({text("ok"), finish()})}}));
  CHECK(twice.executions == std::vector<harness::ExpectedExecution>{{"deploy", staging, 2}});
  // A call of a failed attempt never entered the conversation: the retry's call is not its replay.
  auto retried = predict(scenario({{stream({with_id("deploy", staging, "c1")}, mock::ResetFault{1, 200}),
                                    stream({with_id("deploy", staging, "c1"), finish()})},
                                   {stream({text("ok"), finish()})}}));
  CHECK(retried.executions == std::vector<harness::ExpectedExecution>{{"deploy", staging, 1}});
}

TEST_CASE("oracle: oracle_expect omits error when completed and final_text when failed") {
  auto e = oracle_expect(scenario({{status(503)}}));
  CHECK(e.outcome == "failed");
  CHECK(e.error == "retries_exhausted");
  CHECK_FALSE(e.final_text);
  CHECK(e.requests == 4);
  CHECK(e.waited_s == 90);
}

TEST_CASE("oracle agrees with every scenario file's expect") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(HICCUP_SOURCE_DIR) / "scenarios";
  if (!fs::exists(dir)) dir = "scenarios";
  REQUIRE(fs::exists(dir));
  std::vector<harness::LoadProblem> problems;
  auto files = harness::collect_scenario_files({dir.string()}, problems);
  CHECK(problems.empty());
  CHECK(files.size() >= 30);
  for (const auto& file : files) {
    auto r = harness::load_scenario_file(file);
    INFO(file);
    std::string listed;
    for (const auto& p : r.problems) listed += harness::format_problem(p) + "\n";
    INFO(listed);
    REQUIRE(r.problems.empty());
    const auto& s = *r.scenario;
    CHECK(fs::path(file).stem().string() == s.name);
    auto o = oracle_expect(s);
    const auto& e = s.expect;
    CHECK(e.outcome);  // every suite file states its outcome
    if (e.outcome) CHECK(*e.outcome == *o.outcome);
    if (e.error || o.error) CHECK(e.error == o.error);
    if (e.final_text) CHECK(*e.final_text == *o.final_text);
    if (e.executions) CHECK(*e.executions == *o.executions);
    if (e.requests) CHECK(*e.requests == *o.requests);
    if (e.waited_s) CHECK(*e.waited_s == *o.waited_s);
  }
}

TEST_CASE("suite: every fault kind, finish reason and defect appears") {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(HICCUP_SOURCE_DIR) / "scenarios";
  if (!fs::exists(dir)) dir = "scenarios";
  std::vector<harness::LoadProblem> problems;
  std::set<std::string> faults, finishes, catches, names;
  for (const auto& file : harness::collect_scenario_files({dir.string()}, problems)) {
    auto r = harness::load_scenario_file(file);
    REQUIRE(r.scenario);
    CHECK(names.insert(r.scenario->name).second);
    for (const auto& c : r.scenario->catches) catches.insert(c);
    for (const auto& t : r.scenario->script.turns) {
      for (const auto& a : t.attempts) {
        if (a.fault) faults.insert(std::string(mock::fault_name(*a.fault)));
        for (const auto& ev : a.events) {
          if (const auto* f = std::get_if<mock::FinishEvent>(&ev))
            finishes.insert(std::string(mock::finish_name(f->reason)));
        }
      }
    }
  }
  for (const auto& k : mock::fault_catalogue()) CHECK(faults.count(std::string(k.name)));
  CHECK(finishes.size() == 4);
  for (const auto& d : rut::defect_catalogue()) {
    if (d.name == "no-pairing-guard") continue;  // invisible alone; tested with another defect
    INFO(d.name);
    CHECK(catches.count(std::string(d.name)));
  }
}

TEST_CASE("oracle: non-streaming, an error_event is the provider's HTTP error with its status") {
  auto s = scenario({{stream({text("a"), finish()}, mock::ErrorEventFault{1, 503}), stream({text("b"), finish()})}});
  s.runtime.stream = false;
  auto r = predict(s);
  CHECK(r.completed);
  CHECK(r.requests == 2);
  CHECK(r.waited_s == 10);
  s.script.turns[0].attempts[0].fault = mock::ErrorEventFault{1, 400};
  r = predict(s);
  CHECK_FALSE(r.completed);
  CHECK(r.error == "invalid_request");
  CHECK(r.requests == 1);
  s.script.turns[0].attempts[0].fault = mock::ErrorEventFault{1, 403};
  CHECK(predict(s).error == "non_retryable");
  s.runtime.stream = true;  // streamed, the same fault is a retryable in-stream error
  CHECK(predict(s).completed);
}

TEST_CASE("oracle: non-streaming, stall, malformed, end, disconnect, reset and cut fail the attempt as in a stream") {
  std::vector<mock::Fault> failing = {mock::DisconnectFault{1, 0}, mock::ResetFault{1, 200}, mock::EndFault{1},
                                      mock::CutFault{1, 3},        mock::MalformedFault{1},  mock::StallFault{1, 60}};
  for (const auto& f : failing) {
    INFO(mock::fault_name(f));
    auto s = scenario({{stream({text("a"), finish()}, f), stream({text("b"), finish()})}});
    s.runtime.stream = false;
    auto r = predict(s);
    CHECK(r.final_text == "b");
    CHECK(r.requests == 2);
  }
  auto s = scenario({{stream({text("a"), finish()}, mock::StallFault{1, 30}), stream({text("b"), finish()})}});
  s.runtime.stream = false;
  CHECK(predict(s).final_text == "a");  // a stall below the idle timeout only delays the answer
}

TEST_CASE("oracle: an interrupt while tools run keeps the calls that ran and the session goes on with the next turn") {
  auto s = scenario({{stream({call("a"), call("b"), call("c"), finish()})}, {stream({text("Done."), finish()})}});
  s.interrupt = harness::Interrupt{0, std::nullopt, std::nullopt, 1};
  s.session = {harness::SessionPrompt{"next"}};
  auto r = predict(s);
  CHECK(r.completed);
  CHECK(r.final_text == "Done.");
  CHECK(r.requests == 2);
  REQUIRE(r.executions.size() == 1);
  CHECK(r.executions[0].name == "a");
  s.session = {};  // no next prompt: the run ends cancelled
  auto alone = predict(s);
  CHECK_FALSE(alone.completed);
  CHECK(alone.error == "cancelled");
  CHECK(alone.requests == 1);
}

TEST_CASE("oracle: an interrupt while the answer streams drops the turn and the next prompt replays its turn index") {
  auto s = scenario({{stream({text("Deleting"), call("rm"), finish()}), stream({text("Listed."), finish()})}});
  s.interrupt = harness::Interrupt{0, 0, 1, std::nullopt};
  s.session = {harness::SessionPrompt{"only list"}};
  auto r = predict(s);
  CHECK(r.completed);
  CHECK(r.final_text == "Listed.");
  CHECK(r.requests == 2);
  CHECK(r.executions.empty());
  // a fault before the cancelled event: the attempt fails first, the interrupt never fires
  s.script.turns[0].attempts[0].fault = mock::ResetFault{1, 200};
  s.script.turns[0].attempts.push_back(stream({text("Second."), finish()}));
  auto missed = predict(s);
  CHECK_FALSE(missed.completed);  // attempt 1 answers prompt 1, the session's prompt 2 finds turn 1 unscripted
  CHECK(missed.error == "retries_exhausted");
}

TEST_CASE("oracle: under continue a cut turn with a whole call is kept, its call runs once, and the next turn follows after a retry's wait") {
  const mock::Fault cut = mock::DisconnectFault{1, 0, std::nullopt};
  auto s = scenario({{stream({call("deploy"), finish()}, cut), stream({call("deploy"), finish()})},
                     {stream({text("Done."), finish()})}});
  const auto hold = predict(s);
  CHECK(hold.requests == 3);
  s.runtime.recovery = "continue";
  const auto r = predict(s);
  CHECK(r.completed);
  CHECK(r.final_text == "Done.");
  CHECK(r.requests == 2);
  CHECK(r.waited_s == 10);
  REQUIRE(r.executions.size() == 1);
  CHECK(r.executions[0].count == 1);
  s.runtime.stream = false;  // a failed body delivers nothing: continue plays as hold
  CHECK(predict(s).requests == 3);
}

TEST_CASE("oracle: under continue text alone is kept only with a continuation prompt, and a refusal is never continued past") {
  const mock::Fault cut = mock::DisconnectFault{1, 0, std::nullopt};
  auto s = scenario({{stream({text("Par"), finish()}, cut), stream({text("Full."), finish()})},
                     {stream({text("Rest."), finish()})}});
  s.runtime.recovery = "continue";
  CHECK(predict(s).final_text == "Full.");  // retried as under hold
  CHECK(predict(s).requests == 2);
  s.runtime.continuation_prompt = "Continue.";
  CHECK(predict(s).final_text == "Rest.");  // kept, then the next turn
  CHECK(predict(s).requests == 2);
  auto filtered = scenario({{stream({call("deploy"), finish(mock::FinishReason::kContentFilter)})},
                            {stream({text("Rest."), finish()})}});
  filtered.runtime.recovery = "continue";
  filtered.runtime.fallback_model = "other";
  const auto f = predict(filtered);
  CHECK_FALSE(f.completed);
  CHECK(f.error == "content_filter");  // the call ran: no fallback retry, no next turn
  CHECK(f.requests == 1);
  REQUIRE(f.executions.size() == 1);
}
