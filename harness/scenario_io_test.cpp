// Tests of the scenario loader and writer: each kind of problem names the right JSON pointer and
// message, several problems are collected at once, garbage never throws, and parse(write(s)) == s
// for every fault kind and finish reason.
#include "harness/scenario_io.h"
#include "harness/runner.h"
#include "mock_server/faults.h"
#include "runtime_under_test/codec.h"
#include "tests/test_temp.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

using harness::LoadProblem;
using harness::parse_json_text;
using harness::parse_scenario;

namespace {

const char* kMinimal = R"({
  "schema": 1, "name": "ok", "prompt": "hi",
  "turns": [ { "attempts": [ { "events": [ { "text": "hello" }, { "finish": "stop" } ] } ] } ]
})";

/// Parses `minimal` with `patch` merged in (JSON merge patch) and returns its problems.
std::vector<LoadProblem> problems_with(const std::string& patch) {
  auto j = nlohmann::json::parse(kMinimal);
  j.merge_patch(nlohmann::json::parse(patch));
  return parse_scenario(j.dump(), "x.json").problems;
}

/// True when some problem has `pointer` and a message containing `needle`.
bool has(const std::vector<LoadProblem>& ps, const std::string& pointer, const std::string& needle) {
  for (const auto& p : ps) {
    if (p.pointer == pointer && p.message.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string dump(const std::vector<LoadProblem>& ps) {
  std::string out;
  for (const auto& p : ps) out += harness::format_problem(p) + "\n";
  return out;
}

}  // namespace

TEST_CASE("a minimal scenario loads with defaults") {
  auto r = parse_scenario(kMinimal, "x.json");
  INFO(dump(r.problems));
  REQUIRE(r.problems.empty());
  REQUIRE(r.scenario);
  CHECK(r.scenario->name == "ok");
  CHECK(r.scenario->script.provider == "gemini");
  CHECK(r.scenario->source_path == "x.json");
  REQUIRE(r.scenario->script.turns.size() == 1);
  CHECK(r.scenario->script.turns[0].attempts[0].events.size() == 2);
}

TEST_CASE("comments are allowed") {
  auto r = parse_scenario(std::string("// a comment\n") + kMinimal, "x.json");
  CHECK(r.problems.empty());
}

TEST_CASE("a UTF-8 byte order mark before the JSON is ignored, and one elsewhere is an error") {
  auto r = parse_scenario(std::string("\xEF\xBB\xBF") + kMinimal, "x.json");
  CHECK(r.problems.empty());
  REQUIRE(r.scenario);
  CHECK(r.scenario->name == "ok");
  // Only at the very start: after a comment or white space it is a stray byte sequence.
  auto late = parse_scenario(std::string(" \xEF\xBB\xBF") + kMinimal, "x.json");
  REQUIRE(late.problems.size() == 1);
  CHECK_FALSE(late.scenario);
}

TEST_CASE("format_problem prints file, pointer and message") {
  CHECK(harness::format_problem({"s/x.json", "/turns/0", "expected an object, found null"}) ==
        "error: s/x.json: /turns/0: expected an object, found null");
  CHECK(harness::format_problem({"s/x.json", "", "cannot read file"}) ==
        "error: s/x.json: cannot read file");
}

TEST_CASE("json syntax errors report the position") {
  auto r = parse_scenario("{\n  \"schema\": 1,\n  oops }", "x.json");
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].pointer.empty());
  CHECK(r.problems[0].message.find("line 3") != std::string::npos);
  CHECK(r.problems[0].message.find("byte") != std::string::npos);
  CHECK_FALSE(r.scenario);
}

TEST_CASE("top-level problems") {
  CHECK(has(problems_with(R"({"schema": 2})"), "/schema", "expected schema 1, found integer 2"));
  CHECK(has(problems_with(R"({"name": "Bad_Name"})"), "/name", "[a-z0-9][a-z0-9-]*"));
  CHECK(has(problems_with(R"({"name": "-x"})"), "/name", "found \"-x\""));
  CHECK(has(problems_with(R"({"prompt": null})"), "", "missing required field \"prompt\" in the top-level object"));
  CHECK(has(problems_with(R"({"prompt": 3})"), "/prompt", "expected a string, found integer 3"));
  CHECK_FALSE(has(problems_with(R"({"provider": "anthropic"})"), "/provider", ""));
  CHECK(has(problems_with(R"({"runtime": {"stream": "no"}})"), "/runtime/stream", "expected a boolean, found string"));
  CHECK(has(problems_with(R"({"turns": [{"attempts": [{"events": [{"call": {"name": "x", "fragments": 0}}]}]}]})"),
            "/turns/0/attempts/0/events/0/call/fragments", "an integer in 1..10000"));
  CHECK(has(problems_with(R"({"provider": "foo"})"), "/provider", "unknown provider \"foo\""));
  CHECK(has(problems_with(R"({"turns": []})"), "/turns", "non-empty"));
  CHECK(has(problems_with(R"({"turns": {}})"), "/turns", "expected an array, found an object"));
  CHECK(has(problems_with(R"({"foo": 1})"), "/foo", "unknown field \"foo\""));
  CHECK(has(problems_with(R"({"a/b~c": 1})"), "/a~1b~0c", "unknown field \"a/b~c\""));
  CHECK(has(problems_with(R"({"tags": ["a", 2]})"), "/tags/1", "expected a string"));
  CHECK(has(problems_with(R"({"catches": ["keep-calls-on-retry", "nope"]})"), "/catches/1",
            "unknown defect \"nope\" (known: keep-calls-on-retry"));
  CHECK(has(parse_scenario("[1]", "x.json").problems, "", "expected a scenario object"));
  CHECK(has(parse_scenario(R"({"name":"x","prompt":"p","turns":[{"attempts":[{"events":[]}]}]})",
                           "x.json").problems,
            "", "missing required field \"schema\""));
}

TEST_CASE("attempt problems") {
  auto turns = [](const std::string& attempt) {
    return problems_with(R"({"turns": [ { "attempts": [ )" + attempt + R"( ] } ]})");
  };
  CHECK(has(turns(R"({"status": 503, "events": []})"), "/turns/0/attempts/0", "found both"));
  CHECK(has(turns(R"({})"), "/turns/0/attempts/0", "found neither"));
  CHECK(has(turns(R"({"status": 200})"), "/turns/0/attempts/0/status",
            "expected an integer in 400..599, found integer 200"));
  CHECK(has(turns(R"({"status": "503"})"), "/turns/0/attempts/0/status", "found string \"503\""));
  CHECK(has(turns(R"({"status": 429, "retry_after_s": -1})"), "/turns/0/attempts/0/retry_after_s",
            "expected a number of seconds in 0..1000000 (about 11.6 days), found integer -1"));
  CHECK(has(turns(R"({"status": 503, "fault": {"kind": "end"}})"), "/turns/0/attempts/0/fault",
            "needs a stream attempt"));
  CHECK(has(turns(R"({"events": [], "retry_after_s": 3})"), "/turns/0/attempts/0/retry_after_s",
            "needs a status attempt"));
  CHECK(has(turns(R"({"events": [], "slice_bytes": 0})"), "/turns/0/attempts/0/slice_bytes",
            "expected an integer >= 1, found integer 0"));
  CHECK(has(turns(R"({"events": [], "bogus": 0})"), "/turns/0/attempts/0/bogus", "unknown field"));
  CHECK(has(problems_with(R"({"turns": [ { "attempts": [] } ]})"), "/turns/0/attempts", "non-empty"));
  CHECK(has(problems_with(R"({"turns": [ {} ]})"), "/turns/0", "missing required field \"attempts\""));
  CHECK(has(problems_with(R"({"turns": [ { "attempts": [], "x": 1 } ]})"), "/turns/0/x",
            "unknown field"));
}

TEST_CASE("reasoning event problems, each at its pointer") {
  auto events = [](const std::string& list) {
    return problems_with(R"({"turns": [ { "attempts": [ { "events": )" + list + R"( } ] } ]})");
  };
  const std::string e0 = "/turns/0/attempts/0/events/0";
  CHECK(has(events(R"([{"reasoning": {"signature": "c2ln"}}, {"text": "a"}])"), e0 + "/reasoning",
            "missing required field \"text\""));
  CHECK(has(events(R"([{"reasoning": {"text": 3}}, {"text": "a"}])"), e0 + "/reasoning/text", "expected a string"));
  CHECK(has(events(R"([{"reasoning": {"text": "t", "signature": ""}}, {"text": "a"}])"), e0 + "/reasoning/signature",
            "non-empty"));
  CHECK(has(events(R"([{"reasoning": {"text": "t", "sig": "x"}}, {"text": "a"}])"), e0 + "/reasoning/sig",
            "unknown field \"sig\" (known: text, signature, redacted)"));
  CHECK(has(events(R"([{"reasoning": "plan"}, {"text": "a"}])"), e0 + "/reasoning", "expected an object"));
  CHECK(has(events(R"([{"reasoning": {"text": "t"}, "text": "a"}])"), e0, "exactly one of \"text\", \"call\", \"finish\", \"reasoning\""));
  // Reasoning leads to a text or call event, never ends an answer.
  CHECK(has(events(R"([{"reasoning": {"text": "t"}}, {"finish": "stop"}])"), e0,
            "expected a text or call event right after reasoning"));
  CHECK(has(events(R"([{"text": "a"}, {"reasoning": {"text": "t"}}])"), "/turns/0/attempts/0/events/1",
            "found no event"));
  CHECK(events(R"([{"reasoning": {"text": "t", "signature": "c2ln"}}, {"text": "a"}, {"finish": "stop"}])").empty());
  // Several reasoning events in a row (Anthropic thinking, then redacted_thinking, as the live API
  // sends them): the last of the run leads to the text or call.
  CHECK(events(R"([{"reasoning": {"text": "t"}}, {"reasoning": {"redacted": true, "signature": "c2ln"}}, {"text": "a"},
                   {"finish": "stop"}])").empty());
  const auto run_ends = events(R"([{"reasoning": {"text": "t"}}, {"reasoning": {"text": "u"}}, {"finish": "stop"}])");
  CHECK(has(run_ends, "/turns/0/attempts/0/events/1", "expected a text or call event right after reasoning"));
  CHECK_FALSE(has(run_ends, e0, "expected a text or call event right after reasoning"));
  // Redacted reasoning: no text, only its signature.
  CHECK(has(events(R"([{"reasoning": {"redacted": true, "text": "t"}}, {"text": "a"}])"), e0 + "/reasoning/text",
            "redacted reasoning has no text"));
  CHECK(has(events(R"([{"reasoning": {"redacted": "yes"}}, {"text": "a"}])"), e0 + "/reasoning/redacted",
            "expected a boolean"));
  CHECK(has(events(R"([{"reasoning": {"redacted": false}}, {"text": "a"}])"), e0 + "/reasoning",
            "missing required field \"text\""));
  CHECK(events(R"([{"reasoning": {"redacted": true}}, {"text": "a"}, {"finish": "stop"}])").empty());
}

TEST_CASE("an interrupt cannot point at a reasoning event") {
  const auto p = problems_with(R"({"interrupt": {"turn": 0, "attempt": 0, "after_event": 0},
      "turns": [ { "attempts": [ { "events": [ {"reasoning": {"text": "t"}}, {"text": "a"}, {"finish": "stop"} ] } ] } ]})");
  CHECK(has(p, "/interrupt/after_event", "expected the index of a text or call event"));
}

TEST_CASE("a reasoning event round-trips through the writer, its signature only when scripted") {
  const std::string text = R"({"schema": 1, "name": "r", "prompt": "p", "turns": [ { "attempts": [ { "events": [
      {"reasoning": {"text": "t"}}, {"text": "a"}, {"reasoning": {"text": "u", "signature": "c2ln"}}, {"text": "b"},
      {"finish": "stop"} ] } ] } ]})";
  const auto loaded = parse_scenario(text, "r.json");
  REQUIRE(loaded.problems.empty());
  const auto& events = loaded.scenario->script.turns[0].attempts[0].events;
  CHECK(std::get<mock::ReasoningEvent>(events[0]) == mock::ReasoningEvent{"t", ""});
  CHECK(std::get<mock::ReasoningEvent>(events[2]) == mock::ReasoningEvent{"u", "c2ln"});
  const std::string written = write_scenario(*loaded.scenario);
  CHECK(written.find("\"reasoning\"") != std::string::npos);
  CHECK(written.find("\"signature\"") == written.rfind("\"signature\""));  // only the scripted one
  CHECK(written.find("\"c2ln\"") != std::string::npos);
  const auto again = parse_scenario(written, "r.json");
  REQUIRE(again.problems.empty());
  CHECK(again.scenario->script == loaded.scenario->script);
  // Redacted reasoning is written as redacted, without a text, and reads back the same.
  const auto redacted = parse_scenario(R"({"schema": 1, "name": "r", "prompt": "p", "turns": [ { "attempts": [ { "events": [
      {"reasoning": {"redacted": true, "signature": "EmwK"}}, {"text": "a"}, {"finish": "stop"} ] } ] } ]})", "r.json");
  REQUIRE(redacted.problems.empty());
  CHECK(std::get<mock::ReasoningEvent>(redacted.scenario->script.turns[0].attempts[0].events[0]) ==
        mock::ReasoningEvent{"", "EmwK", true});
  const std::string redacted_text = write_scenario(*redacted.scenario);
  CHECK(redacted_text.find("\"redacted\": true") != std::string::npos);
  const auto redacted_again = parse_scenario(redacted_text, "r.json");
  REQUIRE(redacted_again.problems.empty());
  CHECK(redacted_again.scenario->script == redacted.scenario->script);
}

TEST_CASE("event problems") {
  auto events = [](const std::string& list) {
    return problems_with(R"({"turns": [ { "attempts": [ { "events": )" + list + R"( } ] } ]})");
  };
  const std::string e0 = "/turns/0/attempts/0/events/0";
  CHECK(has(events(R"([{"text": "a", "finish": "stop"}])"), e0, "exactly one of"));
  CHECK(has(events(R"([{}])"), e0, "exactly one of"));
  CHECK(has(events(R"([3])"), e0, "expected an object, found integer 3"));
  CHECK(has(events(R"([{"text": 1}])"), e0 + "/text", "expected a string"));
  CHECK(has(events(R"([{"finish": "done"}])"), e0 + "/finish", "unknown finish reason \"done\""));
  CHECK(has(events(R"([{"call": {"args": {}}}])"), e0 + "/call", "missing required field \"name\""));
  CHECK(has(events(R"([{"call": {"name": ""}}])"), e0 + "/call/name", "non-empty string"));
  CHECK(has(events(R"([{"call": {"name": "x", "args": []}}])"), e0 + "/call/args",
            "expected an object, found an array"));
  CHECK(has(events(R"([{"call": {"name": "x", "id": 4}}])"), e0 + "/call/id", "expected a string"));
  CHECK(has(events(R"([{"call": {"name": "x", "what": 4}}])"), e0 + "/call/what", "unknown field"));
  CHECK(has(events(R"([{"text": "a", "extra": 1}])"), e0 + "/extra", "unknown field"));
}

TEST_CASE("fault problems come from the fault decoder with their pointers") {
  auto fault = [](const std::string& f, const std::string& events = "[{\"text\":\"a\"}]") {
    return problems_with(R"({"turns": [ { "attempts": [ { "events": )" + events +
                         R"(, "fault": )" + f + R"( } ] } ]})");
  };
  const std::string fp = "/turns/0/attempts/0/fault";
  CHECK(has(fault(R"({"kind": "resett"})"), fp + "/kind", "unknown fault \"resett\" (known: "));
  CHECK(has(fault(R"({"kind": "reset", "after_event": 2})"), fp + "/after_event",
            "expected an integer in 0..1"));
  CHECK(has(fault(R"({"kind": "stall"})"), fp, "seconds"));
  CHECK(has(fault(R"({"kind": "reset", "zzz": 1})"), fp + "/zzz", "unknown field"));
  CHECK(fault(R"({"kind": "reset", "after_event": 1})").empty());
  CHECK(fault(R"({"kind": "reset", "after_event": 0})", "[]").empty());
}

TEST_CASE("runtime and expect problems") {
  CHECK(has(problems_with(R"({"runtime": {"max_attempts": 0}})"), "/runtime/max_attempts",
            "expected an integer in 1..100, found integer 0"));
  CHECK(has(problems_with(R"({"runtime": {"max_attempts": 101}})"), "/runtime/max_attempts", "101"));
  CHECK(has(problems_with(R"({"runtime": {"backoff_s": [1, -2]}})"), "/runtime/backoff_s/1",
            "expected a number >= 0"));
  CHECK(has(problems_with(R"({"runtime": {"idle_timeout_s": 0}})"), "/runtime/idle_timeout_s",
            "expected a number >= 0.001, found integer 0"));
  // Over HTTP 500 ms / idle_timeout_s overflowed below about 3e-306 s, and the run hung for ever.
  CHECK(has(problems_with(R"({"runtime": {"idle_timeout_s": 1e-307}})"), "/runtime/idle_timeout_s",
            "expected a number >= 0.001, found number 1e-307"));
  CHECK(problems_with(R"({"runtime": {"idle_timeout_s": 0.001}})").empty());
  CHECK(has(problems_with(R"({"runtime": {"model": 1}})"), "/runtime/model", "expected a string"));
  CHECK(has(problems_with(R"({"runtime": {"fallback_model": false}})"), "/runtime/fallback_model",
            "expected a string, found false"));
  CHECK(has(problems_with(R"({"runtime": {"defects": ["eager-execution", "x"]}})"),
            "/runtime/defects/1", "unknown defect \"x\""));
  CHECK(has(problems_with(R"({"runtime": {"consumer": "gui"}})"), "/runtime/consumer",
            "expected \"headless\" or \"subagent\", found \"gui\""));
  CHECK(has(problems_with(R"({"runtime": {"max_attempt": 3}})"), "/runtime/max_attempt",
            "unknown field \"max_attempt\""));
  CHECK(has(problems_with(R"({"expect": {"outcome": "ok"}})"), "/expect/outcome", "found \"ok\""));
  CHECK(has(problems_with(R"({"expect": {"error": "boom"}})"), "/expect/error", "unknown error"));
  CHECK(has(problems_with(R"({"expect": {"final_text": 1}})"), "/expect/final_text", "string"));
  CHECK(has(problems_with(R"({"expect": {"executions": [{"name": "x"}]}})"), "/expect/executions/0",
            "missing required field \"count\""));
  CHECK(has(problems_with(R"({"expect": {"executions": [{"name": "x", "count": -1}]}})"),
            "/expect/executions/0/count", "expected an integer >= 0"));
  CHECK(has(problems_with(R"({"expect": {"executions": [{"name": "x", "count": 1, "args": 3}]}})"),
            "/expect/executions/0/args", "expected an object"));
  CHECK(has(problems_with(R"({"expect": {"requests": -1}})"), "/expect/requests", ">= 0"));
  CHECK(has(problems_with(R"({"expect": {"waited_s": "10"}})"), "/expect/waited_s", "number"));
  CHECK(has(problems_with(R"({"expect": {"x": 1}})"), "/expect/x", "unknown field"));
}

TEST_CASE("several problems are collected at once") {
  auto ps = problems_with(
      R"({"schema": 3, "name": "BAD", "runtime": {"max_attempts": 0, "consumer": 1},
          "turns": [ { "attempts": [ { "status": 99 },
                                     { "events": [ {"finish": "nah"} ], "fault": {"kind": "resett"} } ] } ],
          "expect": {"outcome": "meh"}})");
  INFO(dump(ps));
  CHECK(ps.size() >= 7);
  CHECK(has(ps, "/schema", ""));
  CHECK(has(ps, "/name", ""));
  CHECK(has(ps, "/runtime/max_attempts", ""));
  CHECK(has(ps, "/runtime/consumer", ""));
  CHECK(has(ps, "/turns/0/attempts/0/status", ""));
  CHECK(has(ps, "/turns/0/attempts/1/events/0/finish", ""));
  CHECK(has(ps, "/turns/0/attempts/1/fault/kind", "unknown fault \"resett\""));
  CHECK(has(ps, "/expect/outcome", ""));
  for (const auto& p : ps) {
    CHECK(p.file == "x.json");
    CHECK_FALSE(p.message.empty());
    CHECK(p.message.back() != '.');
  }
}

TEST_CASE("garbage, truncation and wrong types never throw") {
  std::string full = R"({"schema": 1, "name": "a", "prompt": "p", "runtime": {"backoff_s": [1]},
    "turns": [{"attempts": [{"events": [{"call": {"name": "x", "args": {"a": 1}}},
    {"finish": "stop"}], "fault": {"kind": "cut", "bytes": 3}}]},
    {"attempts": [{"events": [{"finish": "stop"}]}]}],
    "expect": {"executions": [{"name": "x", "count": 1}]}})";
  for (std::size_t n = 0; n <= full.size(); ++n) {
    auto r = parse_scenario(full.substr(0, n), "t.json");
    if (n < full.size()) CHECK_FALSE(r.scenario);
  }
  CHECK(parse_scenario(full, "t.json").problems.empty());
  const char* values[] = {"null", "true", "1", "-1", "1.5", "\"s\"", "[]", "{}", "[null]",
                          "[{}]", "[[]]", "{\"kind\":1}", "1e400", "18446744073709551615"};
  const char* keys[] = {"schema", "name", "prompt", "provider", "tags", "catches", "runtime",
                        "turns", "expect", "description"};
  for (auto* k : keys) {
    for (auto* v : values) {
      auto j = std::string("{\"schema\":1,\"name\":\"a\",\"prompt\":\"p\",\"turns\":[{\"attempts\":"
                           "[{\"events\":[]}]}],\"") + k + "\":" + v + "}";
      CHECK_NOTHROW(parse_scenario(j, "t.json"));
    }
  }
  for (auto* v : values) {
    for (auto* where : {"events", "status", "fault", "slice_bytes", "retry_after_s"}) {
      auto j = std::string("{\"schema\":1,\"name\":\"a\",\"prompt\":\"p\",\"turns\":[{\"attempts\":[{\"") +
               where + "\":" + v + "}]}]}";
      CHECK_NOTHROW(parse_scenario(j, "t.json"));
    }
  }
  std::string bytes;
  for (int i = 0; i < 512; ++i) bytes += static_cast<char>((i * 7919) % 256);
  CHECK_NOTHROW(parse_scenario(bytes, "t.json"));
  CHECK_FALSE(parse_scenario(bytes, "t.json").problems.empty());
}

TEST_CASE("an unreadable file is one problem") {
  auto r = harness::load_scenario_file("/nonexistent/nope.json");
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].pointer.empty());
  CHECK(r.problems[0].file == "/nonexistent/nope.json");
  // In the words a folder scan uses (`hiccup run`, `lint` and `serve` read files through here).
  CHECK(r.problems[0].message == "no such file or folder");
  const harness::LoadResult folder = harness::load_scenario_file(std::filesystem::temp_directory_path().string());
  REQUIRE(folder.problems.size() == 1);
  CHECK(folder.problems[0].message == "a folder, not a scenario file");
  const harness::LoadResult empty = harness::load_scenario_file("");
  REQUIRE(empty.problems.size() == 1);
  CHECK(harness::format_problem(empty.problems[0]) == "error: \"\": an empty path names no file or folder");
}

TEST_CASE("round trip: parse(write(s)) == s for every fault kind and finish reason") {
  harness::Scenario s;
  s.name = "round-trip";
  s.description = "all the things";
  s.tags = {"a", "b"};
  s.catches = {"keep-calls-on-retry", "eager-execution"};
  s.prompt = "Go.";
  s.runtime.model = "m1";
  s.runtime.max_attempts = 5;
  s.runtime.backoff_s = std::vector<double>{1.5, 0, 20};
  s.runtime.fallback_model = "m2";
  s.runtime.idle_timeout_s = 2.5;
  s.runtime.defects = {"unbounded-retry"};
  s.runtime.consumer = "subagent";
  std::vector<mock::Fault> faults = {
      mock::DisconnectFault{1, 30},     mock::ResetFault{std::nullopt, 200}, mock::EndFault{0},
      mock::CutFault{2, 5},             mock::ErrorEventFault{1, 503},       mock::MalformedFault{},
      mock::StallFault{1, 0.5},         mock::StallFault{std::nullopt, 20}};
  mock::Turn turn;
  for (const auto& f : faults) {
    mock::Attempt a;
    a.events = {mock::TextEvent{"Hi ~/"}, mock::CallEvent{"shell", {{"command", "ls"}, {"n", 2}}, "c1"},
                mock::FinishEvent{mock::FinishReason::kMaxTokens}};
    a.fault = f;
    turn.attempts.push_back(a);
  }
  mock::Attempt status;
  status.status = 429;
  status.retry_after_s = 30;
  turn.attempts.push_back(status);
  mock::Attempt plain;
  plain.status = 503;
  turn.attempts.push_back(plain);
  for (auto r : {mock::FinishReason::kStop, mock::FinishReason::kContentFilter,
                 mock::FinishReason::kMalformedCall}) {
    mock::Attempt a;
    a.events = {mock::CallEvent{"t", nlohmann::json::object(), ""}, mock::FinishEvent{r}};
    a.slice_bytes = 7;
    turn.attempts.push_back(a);
  }
  mock::Attempt empty;
  turn.attempts.push_back(empty);
  mock::Turn answer;
  answer.attempts = {mock::Attempt{std::nullopt, std::nullopt, {mock::FinishEvent{}}, std::nullopt, std::nullopt}};
  // The second turn's calls reuse the first turn's id on purpose (reuse_id).
  mock::Turn again = turn;
  for (auto& a : again.attempts) {
    for (auto& e : a.events) {
      if (auto* c = std::get_if<mock::CallEvent>(&e); c && !c->id.empty()) c->reuse_id = true;
    }
  }
  s.script.turns = {turn, again, answer};
  s.expect.outcome = "failed";
  s.expect.error = "retries_exhausted";
  s.expect.final_text = "";
  s.expect.executions = std::vector<harness::ExpectedExecution>{
      {"shell", nlohmann::json{{"command", "ls"}}, 2}, {"t", std::nullopt, 0}};
  s.expect.requests = 8;
  s.expect.waited_s = 12.5;

  std::string text = harness::write_scenario(s);
  auto r = parse_scenario(text, "rt.json");
  INFO(text << dump(r.problems));
  REQUIRE(r.problems.empty());
  r.scenario->source_path.clear();
  CHECK(*r.scenario == s);
  CHECK(harness::write_scenario(*r.scenario) == text);
  // key order follows SCENARIO-FORMAT.md
  CHECK(text.find("\"schema\"") < text.find("\"name\""));
  CHECK(text.find("\"prompt\"") < text.find("\"runtime\""));
  CHECK(text.find("\"turns\"") < text.find("\"expect\""));
  CHECK(text.find("\"kind\": \"disconnect\"") != std::string::npos);
}

TEST_CASE("minimal scenarios are written without optional fields") {
  auto r = parse_scenario(kMinimal, "x.json");
  REQUIRE(r.scenario);
  auto j = harness::scenario_to_json(*r.scenario);
  CHECK_FALSE(j.contains("runtime"));
  CHECK_FALSE(j.contains("expect"));
  CHECK_FALSE(j.contains("tags"));
  CHECK(j["provider"] == "gemini");
}

TEST_CASE("collect_scenario_files expands folders sorted and reports missing paths") {
  namespace fs = std::filesystem;
  auto dir = hiccup_test::temp_path("hiccup_collect_test");
  fs::remove_all(dir);
  fs::create_directories(dir / "b");
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "empty");
  for (auto p : {"b/z.json", "a/y.json", "a/notes.md", "x.json"}) std::ofstream(dir / p) << R"({"turns": []})";
  std::vector<LoadProblem> problems;
  auto files = harness::collect_scenario_files(
      {(dir / "x.json").string(), dir.string(), (dir / "missing").string(), (dir / "empty").string()},
      problems);
  REQUIRE(files.size() == 3);  // x.json, named directly and through its folder, is read once
  CHECK(files[0] == (dir / "x.json").string());
  CHECK(files[1].find("a/y.json") != std::string::npos);
  CHECK(files[2].find("b/z.json") != std::string::npos);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].file == (dir / "missing").string());
  CHECK(problems[1].file == (dir / "empty").string());
  CHECK(problems[1].message == "no scenario files (*.json) in this folder");
  fs::remove_all(dir);
}

TEST_CASE("a folder scan skips report and build directories, hidden folders and JSON that is not a scenario") {
  namespace fs = std::filesystem;
  auto dir = hiccup_test::temp_path("hiccup_collect_skip_test");
  fs::remove_all(dir);
  for (auto d : {"suite", "reports/counterexamples", "old-run/counterexamples", ".cache", "node_modules/x", "build/t"}) {
    fs::create_directories(dir / d);
  }
  const std::string scenario = R"({"schema": 1, "turns": []})";
  std::ofstream(dir / "suite/a.json") << scenario;
  std::ofstream(dir / "suite/broken.json") << "{ not json";           // the loader reports it
  std::ofstream(dir / "suite/package.json") << R"({"name": "x"})";     // not a scenario
  std::ofstream(dir / "suite/list.json") << "[1, 2]";                  // not a scenario
  std::ofstream(dir / "suite/twice.json") << R"({"name": "x", "name": "y"})";  // not a scenario either
  std::ofstream(dir / "reports/counterexamples/c.json") << scenario;   // the run's own report dir
  std::ofstream(dir / "old-run/summary.json") << R"({"command": "explore", "cases": []})";
  std::ofstream(dir / "old-run/counterexamples/d.json") << scenario;  // another run's report dir
  std::ofstream(dir / ".cache/e.json") << scenario;
  std::ofstream(dir / "node_modules/x/f.json") << scenario;
  std::ofstream(dir / "build/CMakeCache.txt") << "# a build tree\n";
  std::ofstream(dir / "build/t/g.json") << scenario;                 // a test's copy in a build tree
  CHECK(harness::is_report_dir((dir / "old-run").string()));
  CHECK_FALSE(harness::is_report_dir((dir / "suite").string()));
  std::vector<LoadProblem> problems;
  std::vector<std::string> notes;
  auto files = harness::collect_scenario_files({dir.string()}, problems,
                                               harness::ScanOptions{{(dir / "reports").string()}}, &notes);
  INFO(dump(problems));
  CHECK(problems.empty());
  REQUIRE(files.size() == 2);
  CHECK(files[0].find("suite/a.json") != std::string::npos);
  CHECK(files[1].find("suite/broken.json") != std::string::npos);
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  INFO(all);
  CHECK(all.find("reports: skipped, the report directory of this run") != std::string::npos);
  CHECK(all.find("old-run: skipped, a report directory") != std::string::npos);
  CHECK(all.find("build: skipped, a build directory (it holds CMakeCache.txt)") != std::string::npos);
  CHECK(all.find("skipped 3 JSON file(s) that are not scenario files") != std::string::npos);
  CHECK(all.find(".cache") == std::string::npos);  // hidden folders are skipped without a note
  // Named directly, a file is read whatever it holds (lint then says what is wrong with it).
  files = harness::collect_scenario_files({(dir / "suite/package.json").string()}, problems);
  CHECK(files.size() == 1);
  fs::remove_all(dir);
}

TEST_CASE("a last turn that completes with function calls is a script mistake") {
  const auto ps = problems_with(R"({"turns": [ { "attempts": [
      { "events": [ { "call": { "name": "shell", "args": {} } } ], "fault": { "kind": "reset" } },
      { "events": [ { "call": { "name": "shell", "args": {} } }, { "finish": "stop" } ] } ] } ]})");
  INFO(dump(ps));
  REQUIRE(ps.size() == 1);
  CHECK(has(ps, "/turns/0/attempts/1", "the last turn completes with function calls"));
  // A call whose attempt never completes (the fault comes before the finish) is fine.
  CHECK(problems_with(R"({"turns": [ { "attempts": [
      { "events": [ { "call": { "name": "shell", "args": {} } }, { "finish": "stop" } ],
        "fault": { "kind": "disconnect", "after_event": 1 } } ] } ]})").empty());
}

TEST_CASE("a scenario nested absurdly deep is one problem, not a crash") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string text = std::string(R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[{"events":[{"call":{"name":"f","args":{"x":)") +
                           deep + "}}}]}]}]}";
  const harness::LoadResult r = parse_scenario(text, "deep.json");
  REQUIRE(r.problems.size() == 1u);
  CHECK(r.problems[0].message.find("deeper than 512") != std::string::npos);
  CHECK_FALSE(r.scenario.has_value());
}

namespace {
/// A minimal scenario whose one call's args are {"x": VALUE}, after an optional leading comment.
std::string scenario_with_args_value(const std::string& value, const std::string& comment = "") {
  return comment + R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[{"events":[{"call":{"name":"f","args":{"x":)" +
         value + R"(}}},{"finish":"stop"}]}]},{"attempts":[{"events":[{"text":"t"},{"finish":"stop"}]}]}]})";
}
std::string nested(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }
}  // namespace

TEST_CASE("a quote inside a comment does not hide the nesting of the brackets after it") {
  // The depth used to be counted by a text scan that took the comment's quote for a string's
  // start and saw none of the brackets after it: the parse went ahead and the validator overflowed
  // the stack (hiccup lint: segmentation fault).
  for (const char* comment : {"// \"\n", "/* \" */ ", "/* \"\\\" */"}) {
    const harness::LoadResult r = parse_scenario(scenario_with_args_value(nested(100000), comment), "c.json");
    REQUIRE(r.problems.size() == 1u);
    CHECK(r.problems[0].file == "c.json");
    CHECK(r.problems[0].pointer.empty());
    CHECK(r.problems[0].message == "arrays and objects nest deeper than 512 levels");
  }
}

TEST_CASE("a million levels of nesting is one problem and 512 levels in all is accepted") {
  const harness::LoadResult million = parse_scenario(scenario_with_args_value(nested(1000000)), "m.json");
  REQUIRE(million.problems.size() == 1u);
  CHECK(million.problems[0].message.find("deeper than 512") != std::string::npos);
  // The document, turns, the turn, attempts, the attempt, events, the event, call, args: 9 levels
  // above the value of "x"; 503 more make 512 (accepted), 504 make 513 (refused).
  const harness::LoadResult at_limit = parse_scenario(scenario_with_args_value(nested(503)), "l.json");
  CHECK(at_limit.problems.empty());
  const harness::LoadResult over = parse_scenario(scenario_with_args_value(nested(504)), "o.json");
  REQUIRE(over.problems.size() == 1u);
  CHECK(over.problems[0].message.find("deeper than 512") != std::string::npos);
}

TEST_CASE("a scenario with many events loads in time linear in their number") {
  // The depth limit was a parser callback, and nlohmann's callback parser scans the enclosing array
  // after every object: 50,000 events took 0.5 s of CPU, 200,000 took 7 s (a 3 MB file; 16 MiB is
  // allowed), and `hiccup serve` parsed a session's scenario on its event loop meanwhile.
  auto cpu_seconds_to_load = [](int events) {
    std::string text = R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[{"events":[)";
    for (int i = 0; i < events; ++i) text += R"({"text":"x"},)";
    text += R"({"finish":"stop"}]}]}]})";
    const std::clock_t started = std::clock();
    const harness::LoadResult r = parse_scenario(text, "many.json");
    const double seconds = static_cast<double>(std::clock() - started) / CLOCKS_PER_SEC;
    INFO(events << " events: " << seconds << " s");
    CHECK(r.problems.empty());
    return seconds;
  };
  const double small = cpu_seconds_to_load(50000);
  const double large = cpu_seconds_to_load(200000);
  INFO("50,000 events: " << small << " s of CPU, 200,000: " << large << " s");
  CHECK(large < 8 * std::max(small, 0.02));  // 4 times the events: about 4 times the time, not 16
}

TEST_CASE("a key named twice in one object is one problem at the second one's pointer") {
  // nlohmann keeps the last of two equal keys: without the check, the first "events" list of this
  // attempt would be dropped without a word and the scenario would play the second.
  const std::string twice = R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[)"
                            R"({"events":[{"text":"a"},{"finish":"stop"}]},)"
                            R"({"events":[{"text":"b"}],"events":[{"text":"c"},{"finish":"stop"}]}]}]})";
  const harness::LoadResult r = parse_scenario(twice, "twice.json");
  REQUIRE(r.problems.size() == 1u);
  CHECK(r.problems[0].file == "twice.json");
  CHECK(r.problems[0].pointer == "/turns/0/attempts/1/events");
  CHECK(r.problems[0].message.find("appears twice") != std::string::npos);
  CHECK_FALSE(r.scenario.has_value());

  // Inside a call's args, with a key that needs RFC 6901 escaping, after arrays of scalars.
  const harness::LoadResult args =
      parse_scenario(scenario_with_args_value(R"([1, "two", null, [3]], "a/b~c": 1, "a/b~c": 2)"), "a.json");
  REQUIRE(args.problems.size() == 1u);
  CHECK(args.problems[0].pointer == "/turns/0/attempts/0/events/0/call/args/a~1b~0c");

  // The top level too, and a comment does not hide it.
  const harness::LoadResult top = parse_scenario(std::string("// c\n") + R"({"name":"y",)" + (kMinimal + 1), "t.json");
  REQUIRE(top.problems.size() == 1u);
  CHECK(top.problems[0].pointer == "/name");

  // The same key in sibling objects, or nested under itself, is fine.
  CHECK(parse_scenario(scenario_with_args_value(R"({"x": {"x": 1}}, "y": [{"x": 1}, {"x": 2}])"), "ok.json")
            .problems.empty());
}

TEST_CASE("invalid UTF-8 in a scenario is a syntax problem with its byte offset") {
  std::string text = scenario_with_args_value(R"("ab)" + std::string("\xff\xfe") + R"(")");
  const harness::LoadResult r = parse_scenario(text, "u.json");
  REQUIRE(r.problems.size() == 1u);
  CHECK(r.problems[0].message.rfind("invalid json at byte ", 0) == 0);
  CHECK(r.problems[0].message.find("UTF-8") != std::string::npos);
}

TEST_CASE("a truncated scenario says where the text ends, not a byte past it") {
  const std::string whole = scenario_with_args_value(R"({"x": 1})");
  const std::string cut = whole.substr(0, whole.size() - 5);
  const harness::LoadResult r = parse_scenario(cut, "cut.json");
  REQUIRE(r.problems.size() == 1u);
  INFO(r.problems[0].message);
  CHECK(r.problems[0].message.rfind("invalid json: the text ends after byte " + std::to_string(cut.size()) + ": ", 0) == 0);
}

TEST_CASE("a scenario file larger than 16 MiB is refused before it is read") {
  const auto path = hiccup_test::temp_path("hiccup-huge-scenario.json");
  {
    std::ofstream out(path, std::ios::binary);
    out << "{\"turns\": \"";
  }
  std::filesystem::resize_file(path, 100u << 20);  // 100 MB, sparse: cheap to create
  const harness::LoadResult r = harness::load_scenario_file(path.string());
  std::filesystem::remove(path);
  REQUIRE(r.problems.size() == 1u);
  CHECK(r.problems[0].message == "the file is 104857600 bytes; scenario files are limited to 16777216 bytes");
  // The same limit holds for text handed to parse_scenario directly.
  const std::string big(harness::kMaxScenarioBytes + 1, ' ');
  CHECK(parse_scenario(big, "b.json").problems.at(0).message.find("limited to 16777216 bytes") != std::string::npos);
}

TEST_CASE("a scenario read from a device or a pipe with no end stops at 16 MiB") {
  // /dev/zero has no size to check before reading; the loader read it until memory ran out.
  const harness::LoadResult r = harness::load_scenario_file("/dev/zero");
  REQUIRE(r.problems.size() == 1u);
  CHECK(r.problems[0].file == "/dev/zero");
  CHECK(r.problems[0].message ==
        "more than 16777216 bytes read and the file goes on; scenario files are limited to 16777216 bytes");
}

TEST_CASE("after_fragment must cut a call inside its fragments, and calls of one attempt have distinct ids") {
  auto problems_of = [](const std::string& attempt) {
    const std::string text = R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[)" + attempt +
                             R"(,{"events":[{"text":"t"},{"finish":"stop"}]}]}]})";
    return parse_scenario(text, "x.json").problems;
  };
  const std::string call3 = R"({"call":{"name":"f","args":{"a":"bcdef"},"fragments":3}})";
  CHECK(problems_of(R"({"events":[)" + call3 + R"(,{"finish":"stop"}],"fault":{"kind":"reset","after_event":0,"after_fragment":2}})").empty());
  CHECK(has(problems_of(R"({"events":[{"text":"t"},)" + call3 + R"(],"fault":{"kind":"reset","after_event":0,"after_fragment":1}})"),
            "/turns/0/attempts/0/fault/after_fragment", "expected event 0 (after_event) to be a call, found a text event"));
  CHECK(has(problems_of(R"({"events":[)" + call3 + R"(],"fault":{"kind":"reset","after_event":1,"after_fragment":0}})"),
            "/turns/0/attempts/0/fault/after_fragment", "found no event"));
  CHECK(has(problems_of(R"({"events":[)" + call3 + R"(],"fault":{"kind":"cut","after_event":0,"after_fragment":3,"bytes":4}})"),
            "/turns/0/attempts/0/fault/after_fragment", "expected fewer than the call's 3 fragment(s)"));
  CHECK(has(problems_of(R"({"events":[{"call":{"name":"f","id":"c1"}},{"call":{"name":"g","id":"c1"}},{"finish":"stop"}]})"),
            "/turns/0/attempts/0/events/1/call/id", "found \"c1\" again"));
}

TEST_CASE("lint: a repeated call id is a provider fault only when marked reuse_id, and reuse_id must repeat one") {
  // turns: [turn 0 with `first`, turn 1 with `second`, an answer]
  auto problems_of = [](const std::string& first, const std::string& second) {
    const std::string text = R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[{"events":[)" + first +
                             R"(,{"finish":"stop"}]}]},{"attempts":[{"events":[)" + second +
                             R"(,{"finish":"stop"}]}]},{"attempts":[{"events":[{"text":"t"},{"finish":"stop"}]}]}]})";
    return parse_scenario(text, "x.json").problems;
  };
  const std::string a = R"({"call":{"name":"f","id":"c1"}})";
  const std::string b = R"({"call":{"name":"g","id":"c2"}})";
  const std::string reuse = R"({"call":{"name":"g","id":"c1","reuse_id":true}})";
  // Within one attempt: unmarked is a mistake, marked is the fault.
  CHECK(has(problems_of(a + "," + R"({"call":{"name":"g","id":"c1"}})", b), "/turns/0/attempts/0/events/1/call/id",
            "found \"c1\" again (a provider that repeats an id on purpose: mark the call \"reuse_id\": true)"));
  CHECK(problems_of(a + "," + reuse, b).empty());
  // From an earlier turn: likewise.
  CHECK(has(problems_of(a, R"({"call":{"name":"g","id":"c1"}})"), "/turns/1/attempts/0/events/0/call/id",
            "expected an id no call of an earlier turn has, found \"c1\" again"));
  CHECK(problems_of(a, reuse).empty());
  // reuse_id must repeat an id, and needs one.
  CHECK(has(problems_of(b, reuse), "/turns/1/attempts/0/events/0/call/reuse_id", "no earlier call has the id \"c1\""));
  CHECK(has(problems_of(a, R"({"call":{"name":"g","reuse_id":true}})"), "/turns/1/attempts/0/events/0/call/reuse_id",
            "needs the \"id\" it repeats"));
  CHECK(has(problems_of(a, R"({"call":{"name":"g","id":"c1","reuse_id":1}})"), "/turns/1/attempts/0/events/0/call/reuse_id",
            "expected a boolean, found integer 1"));
  // A later turn's id is not an earlier one's, and attempts of one turn may share ids (the same answer again).
  CHECK(has(problems_of(b, R"({"call":{"name":"g","id":"c1","reuse_id":true}},{"call":{"name":"f","id":"c1"}})"),
            "/turns/1/attempts/0/events/1/call/id", "found \"c1\" again"));
  const std::string retried = R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[)"
                              R"({"events":[{"call":{"name":"f","id":"c1"}}],"fault":{"kind":"reset"}},)"
                              R"({"events":[{"call":{"name":"f","id":"c1"}},{"finish":"stop"}]}]},)"
                              R"({"attempts":[{"events":[{"text":"t"},{"finish":"stop"}]}]}]})";
  CHECK(parse_scenario(retried, "x.json").problems.empty());
  // reuse_id round-trips and is written only when set.
  auto r = parse_scenario(R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[{"events":[)" + a + "," + reuse +
                              R"(,{"finish":"stop"}]}]},{"attempts":[{"events":[{"text":"t"},{"finish":"stop"}]}]}]})",
                          "x.json");
  REQUIRE(r.problems.empty());
  const std::string text = harness::write_scenario(*r.scenario);
  CHECK(text.find("\"reuse_id\": true") != std::string::npos);
  CHECK(text.find("reuse_id") == text.rfind("reuse_id"));
}

TEST_CASE("lint: slicing, argument fragments and cuts between fragments are errors on a non-streaming scenario") {
  auto problems_of = [](const std::string& stream, const std::string& attempt) {
    const std::string text = R"({"schema":1,"name":"x","prompt":"p","provider":"anthropic","runtime":{"stream":)" + stream +
                             R"(},"turns":[{"attempts":[)" + attempt + R"(,{"events":[{"text":"t"},{"finish":"stop"}]}]}]})";
    return parse_scenario(text, "x.json").problems;
  };
  const std::string attempt = R"({"slice_bytes":5,"events":[{"call":{"name":"f","args":{"a":"bcdef"},"fragments":3}}],)"
                              R"("fault":{"kind":"reset","after_event":0,"after_fragment":1}})";
  CHECK(problems_of("true", attempt).empty());
  const auto ps = problems_of("false", attempt);
  CHECK(ps.size() == 3);
  CHECK(has(ps, "/turns/0/attempts/0/slice_bytes", "has no meaning for non-streaming requests"));
  CHECK(has(ps, "/turns/0/attempts/0/fault/after_fragment", "runtime.stream is false: the answer is one body"));
  CHECK(has(ps, "/turns/0/attempts/0/events/0/call/fragments", "has no meaning for non-streaming requests"));
  // A fault past the finish (explicitly, or by the default after_event) would change nothing.
  const std::string late = R"({"events":[{"text":"t"},{"finish":"stop"}],"fault":{"kind":"error_event","status":503}})";
  CHECK(problems_of("true", late).empty());
  CHECK(has(problems_of("false", late), "/turns/0/attempts/0/fault",
            "plays after event 2 (after_event; the default is after every event), past the finish (event 1)"));
  CHECK(problems_of("false", R"({"events":[{"text":"t"},{"finish":"stop"}],"fault":{"kind":"error_event","status":503,"after_event":1}})").empty());
}

TEST_CASE("lint: a status the scenario's provider never sends is an error naming its own alternative") {
  const std::string base = R"({"schema":1,"name":"x","prompt":"p","provider":"PROVIDER","turns":[{"attempts":[
      {"status":529},
      {"events":[{"text":"a"},{"finish":"stop"}],"fault":{"kind":"error_event","after_event":1,"status":529}},
      {"events":[{"finish":"stop"}]}]}]})";
  auto with = [&](const std::string& provider) {
    std::string text = base;
    text.replace(text.find("PROVIDER"), 8, provider);
    return parse_scenario(text, "s.json");
  };
  const auto gemini = with("gemini");
  REQUIRE(gemini.problems.size() == 2);
  CHECK(gemini.problems[0].pointer == "/turns/0/attempts/0/status");
  CHECK(gemini.problems[0].message ==
        "gemini does not send 529 (Anthropic's overloaded_error); its overload is 503 UNAVAILABLE");
  CHECK(gemini.problems[1].pointer == "/turns/0/attempts/1/fault/status");
  CHECK(with("openai-chat").problems.size() == 2);
  CHECK(with("anthropic").problems.empty());
  // Played in another format (hiccup run --provider), the same check gives warnings.
  const auto anthropic = with("anthropic");
  REQUIRE(anthropic.scenario);
  CHECK(harness::status_problems(*anthropic.scenario, "gemini", "s.json").size() == 2);
  CHECK(harness::status_problems(*anthropic.scenario, "anthropic", "s.json").empty());
  // An unknown provider is its own error, not a status one.
  CHECK(with("nope").problems.size() == 1);
}

TEST_CASE("a $schema key and max_virtual_s load and survive a rewrite") {
  auto j = nlohmann::json::parse(kMinimal);
  j["$schema"] = "../schema/scenario.schema.json";
  j["max_virtual_s"] = 90;
  const auto r = parse_scenario(j.dump(), "x.json");
  REQUIRE(r.problems.empty());
  CHECK(r.scenario->json_schema == "../schema/scenario.schema.json");
  CHECK(r.scenario->max_virtual_s == 90);
  const auto again = parse_scenario(harness::write_scenario(*r.scenario), "y.json");
  REQUIRE(again.problems.empty());
  CHECK(again.scenario->json_schema == r.scenario->json_schema);
  CHECK(again.scenario->max_virtual_s == r.scenario->max_virtual_s);
}

TEST_CASE("$schema must be a string and max_virtual_s a positive number") {
  CHECK(has(problems_with(R"({"$schema": 3})"), "/$schema", "expected a string"));
  CHECK(has(problems_with(R"({"max_virtual_s": 0})"), "/max_virtual_s", "a number > 0"));
  CHECK(has(problems_with(R"({"max_virtual_s": "1h"})"), "/max_virtual_s", "a number > 0"));
}

TEST_CASE("a session of further prompts loads, round-trips and reports bad entries by pointer") {
  auto j = nlohmann::json::parse(kMinimal);
  j["session"] = nlohmann::json::array({{{"prompt", "second"}}, {{"prompt", "third"}}});
  const auto r = parse_scenario(j.dump(), "x.json");
  REQUIRE(r.problems.empty());
  REQUIRE(r.scenario->session.size() == 2);
  CHECK(r.scenario->session[1].prompt == "third");
  const auto again = parse_scenario(harness::write_scenario(*r.scenario), "y.json");
  REQUIRE(again.problems.empty());
  CHECK(again.scenario->session == r.scenario->session);
  CHECK(has(problems_with(R"({"session": {"prompt": "x"}})"), "/session", "expected an array"));
  CHECK(has(problems_with(R"({"session": [{"prompt": "a"}, {"text": "b"}]})"), "/session/1", "missing required field \"prompt\""));
  CHECK(has(problems_with(R"({"session": [{"prompt": "a"}, {"text": "b"}]})"), "/session/1/text", "unknown field"));
  CHECK(has(problems_with(R"({"session": [{"prompt": 3}]})"), "/session/0/prompt", "expected a string"));
  CHECK(has(problems_with(R"({"session": [{"prompt": "a"}, {"prompt": ""}]})"), "/session/1/prompt",
            "expected a non-empty string"));
  CHECK(has(problems_with(R"({"prompt": ""})"), "/prompt", "expected a non-empty string"));
}

TEST_CASE("an interrupt during a backoff loads, round-trips and must follow a failed attempt within the budget") {
  const char* failing = R"({"turns": [ { "attempts": [ { "status": 503 }, { "events": [ { "text": "ok" }, { "finish": "stop" } ] } ] } ]})";
  auto with = [&](const std::string& interrupt, const char* runtime = nullptr) {
    auto k = nlohmann::json::parse(kMinimal);
    k.merge_patch(nlohmann::json::parse(failing));
    k["interrupt"] = nlohmann::json::parse(interrupt);
    if (runtime != nullptr) k["runtime"] = nlohmann::json::parse(runtime);
    return parse_scenario(k.dump(), "x.json");
  };
  const auto r = with(R"({"turn": 0, "before_attempt": 1})");
  REQUIRE(r.problems.empty());
  CHECK(r.scenario->interrupt->before_attempt == 1);
  CHECK_FALSE(r.scenario->interrupt->after_event.has_value());
  CHECK_FALSE(r.scenario->interrupt->after_calls.has_value());
  const auto again = parse_scenario(harness::write_scenario(*r.scenario), "y.json");
  REQUIRE(again.problems.empty());
  CHECK(again.scenario->interrupt == r.scenario->interrupt);
  CHECK(nlohmann::json::parse(harness::write_scenario(*r.scenario))["interrupt"] ==
        nlohmann::json::parse(R"({"turn": 0, "before_attempt": 1})"));
  // Attempt 1 answers: no retry, so no backoff before attempt 2.
  CHECK(has(with(R"({"turn": 0, "before_attempt": 2})").problems, "/interrupt/before_attempt",
            "/turns/0/attempts/1 (attempt 1) has no status and no fault, so no retry waits before attempt 2"));
  CHECK(has(with(R"({"turn": 0, "before_attempt": 0})").problems, "/interrupt/before_attempt", "expected an integer >= 1"));
  // A status a correct runtime does not retry has no backoff after it.
  for (const char* never_retried : {R"({"status": 400})", R"({"status": 429, "quota": "per_day"})", R"({"status": 501})"}) {
    auto k = nlohmann::json::parse(kMinimal);
    k.merge_patch(nlohmann::json::parse(failing));
    k["turns"][0]["attempts"][0] = nlohmann::json::parse(never_retried);
    k["interrupt"] = {{"turn", 0}, {"before_attempt", 1}};
    INFO(never_retried);
    CHECK(has(parse_scenario(k.dump(), "x.json").problems, "/interrupt/before_attempt",
              "which a correct runtime does not retry, so no backoff precedes attempt 1"));
  }
  CHECK(has(with(R"({"turn": 0, "before_attempt": 1})", R"({"max_attempts": 1})").problems, "/interrupt/before_attempt",
            "beyond the retry budget (runtime.max_attempts 1)"));
  CHECK(has(with(R"({"turn": 1, "before_attempt": 1})").problems, "/interrupt/turn", "not scripted"));
  CHECK(has(with(R"({"turn": 0, "after_calls": 0, "before_attempt": 1})").problems, "/interrupt", "choose one"));
  CHECK(has(with(R"({"turn": 0, "attempt": 0, "before_attempt": 1})").problems, "/interrupt/attempt",
            "no meaning with \"before_attempt\""));
}

TEST_CASE("an interrupt loads, round-trips and must point at a scripted text or call event or at calls left to run") {
  const char* two_calls = R"({"turns": [ { "attempts": [ { "events": [ { "call": { "name": "a" } }, { "call": { "name": "b" } }, { "finish": "stop" } ] } ] },
                                          { "attempts": [ { "events": [ { "text": "ok" }, { "finish": "stop" } ] } ] } ]})";
  auto j = nlohmann::json::parse(kMinimal);
  j.merge_patch(nlohmann::json::parse(two_calls));
  j["interrupt"] = {{"turn", 0}, {"after_calls", 1}};
  const auto r = parse_scenario(j.dump(), "x.json");
  REQUIRE(r.problems.empty());
  REQUIRE(r.scenario->interrupt.has_value());
  CHECK(r.scenario->interrupt->after_calls == 1);
  CHECK_FALSE(r.scenario->interrupt->after_event.has_value());
  const auto again = parse_scenario(harness::write_scenario(*r.scenario), "y.json");
  REQUIRE(again.problems.empty());
  CHECK(again.scenario->interrupt == r.scenario->interrupt);

  auto with = [&](const std::string& interrupt) {
    auto k = nlohmann::json::parse(kMinimal);
    k.merge_patch(nlohmann::json::parse(two_calls));
    k["interrupt"] = nlohmann::json::parse(interrupt);
    return parse_scenario(k.dump(), "x.json").problems;
  };
  CHECK(with(R"({"turn": 0, "attempt": 0, "after_event": 1})").empty());
  CHECK(has(with(R"({"turn": 2, "after_calls": 0})"), "/interrupt/turn", "not scripted"));
  CHECK(has(with(R"({"turn": 0, "attempt": 1, "after_event": 0})"), "/interrupt/attempt", "not scripted"));
  CHECK(has(with(R"({"turn": 0, "attempt": 0, "after_event": 2})"), "/interrupt/after_event", "text or call event"));
  CHECK(has(with(R"({"turn": 0, "after_calls": 2})"), "/interrupt/after_calls",
            "expected an integer in 0..1 (turn 0's attempts have at most 2 call(s)), found 2"));
  CHECK(has(with(R"({"turn": 1, "after_calls": 0})"), "/interrupt/after_calls",
            "turn 1 has no call in any attempt, so there is nothing to cancel while tools run"));
  // Past the loader's upper bound the message names the bound, not only ">= 0".
  CHECK(has(with(R"({"turn": 4294967296, "after_calls": 0})"), "/interrupt/turn",
            "expected an integer in 0..1073741824, found integer 4294967296"));
  CHECK(has(with(R"({"turn": 0, "attempt": 0, "after_event": 0, "after_calls": 1})"), "/interrupt", "choose one"));
  CHECK(has(with(R"({"turn": 0, "after_event": 0})"), "/interrupt", "missing required field \"attempt\""));
  CHECK(has(with(R"({"turn": 0, "attempt": 0, "after_calls": 1})"), "/interrupt/attempt", "no meaning"));
  auto k = nlohmann::json::parse(kMinimal);
  k.merge_patch(nlohmann::json::parse(two_calls));
  k["runtime"] = {{"stream", false}};
  k["interrupt"] = {{"turn", 0}, {"attempt", 0}, {"after_event", 0}};
  CHECK(has(parse_scenario(k.dump(), "x.json").problems, "/interrupt/after_event", "non-streaming"));
  auto status = nlohmann::json::parse(kMinimal);
  status.merge_patch(nlohmann::json::parse(two_calls));
  status["turns"][0]["attempts"].insert(status["turns"][0]["attempts"].begin(),
                                       nlohmann::json::object({{"status", 503}}));
  status["interrupt"] = {{"turn", 0}, {"attempt", 0}, {"after_event", 0}};
  CHECK(has(parse_scenario(status.dump(), "x.json").problems, "/interrupt/attempt",
            "/turns/0/attempts/0 answers with HTTP status 503: no event streams"));
}

TEST_CASE("an interrupt inside a call's arguments loads, round-trips and must name a call of a format that streams them, below its fragments") {
  const char* calls = R"({"provider": "openai-chat",
      "turns": [ { "attempts": [ { "events": [ { "text": "go" }, { "call": { "name": "a", "args": {"x": "yyyyyy"}, "fragments": 3 } }, { "finish": "stop" } ] } ] },
                 { "attempts": [ { "events": [ { "text": "ok" }, { "finish": "stop" } ] } ] } ]})";
  auto with = [&](const std::string& interrupt, const char* provider = nullptr) {
    auto k = nlohmann::json::parse(kMinimal);
    k.merge_patch(nlohmann::json::parse(calls));
    if (provider != nullptr) k["provider"] = provider;
    k["interrupt"] = nlohmann::json::parse(interrupt);
    return parse_scenario(k.dump(), "x.json");
  };
  const auto r = with(R"({"turn": 0, "attempt": 0, "after_event": 1, "after_fragment": 2})");
  REQUIRE(r.problems.empty());
  CHECK(r.scenario->interrupt->after_fragment == 2);
  CHECK(nlohmann::json::parse(harness::write_scenario(*r.scenario))["interrupt"] ==
        nlohmann::json::parse(R"({"turn": 0, "attempt": 0, "after_event": 1, "after_fragment": 2})"));
  const auto again = parse_scenario(harness::write_scenario(*r.scenario), "y.json");
  REQUIRE(again.problems.empty());
  CHECK(again.scenario->interrupt == r.scenario->interrupt);
  CHECK(with(R"({"turn": 0, "attempt": 0, "after_event": 1, "after_fragment": 0})").problems.empty());
  CHECK(has(with(R"({"turn": 0, "attempt": 0, "after_event": 1, "after_fragment": 3})").problems, "/interrupt/after_fragment",
            "expected an integer in 0..2 (the call at /turns/0/attempts/0/events/1 sends 3 argument fragment(s)"));
  CHECK(has(with(R"({"turn": 0, "attempt": 0, "after_event": 0, "after_fragment": 0})").problems, "/interrupt/after_fragment",
            "expected after_event to index a call (the cancel lands inside its arguments), found a text event at "
            "/turns/0/attempts/0/events/0"));
  CHECK(has(with(R"({"turn": 0, "after_calls": 0, "after_fragment": 0})").problems, "/interrupt/after_fragment",
            "has meaning only with \"after_event\""));
  CHECK(has(with(R"({"turn": 0, "attempt": 0, "after_event": 1, "after_fragment": -1})").problems,
            "/interrupt/after_fragment", "expected an integer"));
  // One error for a malformed interrupt, not a second one about the last turn it exempted.
  auto only_one = nlohmann::json::parse(kMinimal);
  only_one.merge_patch(nlohmann::json::parse(calls));
  only_one["turns"].erase(1);  // the last turn completes with a call: fine only under the cancel
  only_one["interrupt"] = {{"turn", 0}, {"attempt", 0}, {"after_event", 1}};
  REQUIRE(parse_scenario(only_one.dump(), "x.json").problems.empty());
  only_one["interrupt"]["after_fragment"] = "1";
  const auto malformed = parse_scenario(only_one.dump(), "x.json").problems;
  REQUIRE(malformed.size() == 1);
  CHECK(malformed[0].pointer == "/interrupt/after_fragment");
  CHECK(has(with(R"({"turn": 0, "attempt": 0, "after_event": 1, "after_fragment": 1})", "gemini").problems,
            "/interrupt/after_fragment", "Gemini sends a call whole"));
  // A point the call can never send: at most one fragment per character of its arguments ("{}").
  auto k = nlohmann::json::parse(kMinimal);
  k.merge_patch(nlohmann::json::parse(calls));
  k["turns"][0]["attempts"][0]["events"][1]["call"]["args"] = nlohmann::json::object();
  k["interrupt"] = {{"turn", 0}, {"attempt", 0}, {"after_event", 1}, {"after_fragment", 2}};
  CHECK(has(parse_scenario(k.dump(), "x.json").problems, "/interrupt/after_fragment",
            "expected an integer in 0..1 (the call at /turns/0/attempts/0/events/1 sends 2 argument fragment(s) of the 3 "
            "asked: at most one per character of its arguments"));
  // A point the attempt's own fault or finish passes by never fires.
  auto cut = nlohmann::json::parse(kMinimal);
  cut.merge_patch(nlohmann::json::parse(calls));
  cut["turns"][0]["attempts"][0]["fault"] = {{"kind", "disconnect"}, {"after_event", 1}, {"after_fragment", 1}};
  cut["interrupt"] = {{"turn", 0}, {"attempt", 0}, {"after_event", 1}, {"after_fragment", 2}};
  CHECK(has(parse_scenario(cut.dump(), "x.json").problems, "/interrupt",
            "points at nothing the stream reaches: the fault of /turns/0/attempts/0 (disconnect) ends the stream before"));
  cut["interrupt"]["after_fragment"] = 1;  // the cut comes right after it: reached
  CHECK(parse_scenario(cut.dump(), "x.json").problems.empty());
  cut["turns"][0]["attempts"][0]["fault"] = {{"kind", "reset"}, {"after_event", 0}};
  CHECK(has(parse_scenario(cut.dump(), "x.json").problems, "/interrupt", "the fault of /turns/0/attempts/0 (reset)"));
  cut["turns"][0]["attempts"][0].erase("fault");
  cut["turns"][0]["attempts"][0]["events"][2] = {{"finish", "max_tokens"}, {"after_fragment", 1}};
  cut["interrupt"]["after_fragment"] = 2;
  CHECK(has(parse_scenario(cut.dump(), "x.json").problems, "/interrupt",
            "the max_tokens finish of /turns/0/attempts/0 cuts event 1 after 1 argument fragment(s)"));
  // An event before the point delayed to the idle timeout (default 60 s): the runtime gives up first.
  cut["turns"][0]["attempts"][0]["events"][2] = {{"finish", "stop"}};
  cut["turns"][0]["attempts"][0]["events"][0]["delay_s"] = 200;
  CHECK(has(parse_scenario(cut.dump(), "x.json").problems, "/interrupt",
            "event 0's delay_s of /turns/0/attempts/0 (200.0 s) reaches the idle timeout before the interrupt point"));
  cut["timing"] = {{"scale", 0.1}};  // 20 s as played: reached
  CHECK(parse_scenario(cut.dump(), "x.json").problems.empty());
  // Played in Gemini (hiccup run --provider gemini) it is skipped with the reason.
  REQUIRE(r.scenario.has_value());
  CHECK(harness::unplayable_in(*r.scenario, "gemini") ==
        "/interrupt/after_fragment: Gemini sends a call whole, so no point lies inside its arguments");
  CHECK_FALSE(harness::unplayable_in(*r.scenario, "anthropic"));
}

TEST_CASE("a stall between half and twice the idle timeout is a timing warning with its pointer") {
  harness::Scenario s;
  s.source_path = "race.json";
  s.runtime.idle_timeout_s = 10;
  s.script.turns.resize(1);
  s.script.turns[0].attempts.resize(3);
  const double seconds[] = {5, 10, 20};  // at most half, racing, at least twice
  for (int a = 0; a < 3; ++a) {
    s.script.turns[0].attempts[a].fault = mock::Fault(mock::StallFault{0, seconds[a], std::nullopt});
  }
  const auto warnings = harness::timing_warnings(s);
  REQUIRE(warnings.size() == 1u);
  CHECK(warnings[0].file == "race.json");
  CHECK(warnings[0].pointer == "/turns/0/attempts/1/fault/seconds");
  CHECK(warnings[0].message.find("a stall of 10 s races the idle timeout of 10 s") == 0);
  // Without runtime.idle_timeout_s the runtime's default (60 s) is the one raced.
  s.runtime.idle_timeout_s.reset();
  s.script.turns[0].attempts[1].fault = mock::Fault(mock::StallFault{0, 45, std::nullopt});
  REQUIRE(harness::timing_warnings(s).size() == 1u);
  CHECK(harness::timing_warnings(s)[0].message.find("idle timeout of 60 s") != std::string::npos);
}

namespace {

/// A scenario `file` with an idle timeout of 10 s and one attempt: a text event "x" per delay
/// (its delay_s), then a stop finish.
harness::Scenario with_delays(const std::string& file, std::initializer_list<double> delays_s) {
  harness::Scenario s;
  s.source_path = file;
  s.runtime.idle_timeout_s = 10;
  s.script.turns.resize(1);
  s.script.turns[0].attempts.resize(1);
  auto& events = s.script.turns[0].attempts[0].events;
  for (double d : delays_s) {
    mock::TextEvent t;
    t.text = "x";
    t.delay_s = d;
    events.push_back(t);
  }
  events.push_back(mock::FinishEvent{});
  return s;
}

}  // namespace

TEST_CASE("an event's delay_s, scaled by the scenario's timing, that races the idle timeout is a timing warning") {
  // Recorded delays (`hiccup record --timing`): at most half, racing, at least twice the timeout.
  harness::Scenario s = with_delays("timed.json", {4.0, 8.0, 25.0});
  auto warnings = harness::timing_warnings(s);
  REQUIRE(warnings.size() == 1u);
  CHECK(warnings[0].file == "timed.json");
  CHECK(warnings[0].pointer == "/turns/0/attempts/0/events/1/delay_s");
  CHECK(warnings[0].message.find("a delay of 8 s (delay_s 8, timing scale 1) races the idle timeout of 10 s") == 0);
  // The delay as played: scaled (4 s × 2 = 8 s races, 8 s × 2 = 16 s too), then capped (25 s × 2
  // capped at 12 s races).
  s.script.timing.scale = 2;
  s.script.timing.max_delay_s = 12;
  warnings = harness::timing_warnings(s);
  REQUIRE(warnings.size() == 3u);
  CHECK(warnings[0].pointer == "/turns/0/attempts/0/events/0/delay_s");
  CHECK(warnings[0].message.find("a delay of 8 s (delay_s 4, timing scale 2, max_delay_s 12) races") == 0);
  CHECK(warnings[2].message.find("a delay of 12 s (delay_s 25, timing scale 2, max_delay_s 12) races") == 0);
  // Scaled far down (as a replay meant to run fast is), none races.
  s.script.timing.scale = 0.01;
  CHECK(harness::timing_warnings(s).empty());
}

TEST_CASE("a non-streaming answer's delays are summed against the idle timeout, each below half of it") {
  // Three delays of 3 s: none races on its own (at most 5 s), their sum of 9 s does.
  harness::Scenario s = with_delays("unary.json", {3, 3, 3});
  auto& events = s.script.turns[0].attempts[0].events;
  CHECK(harness::timing_warnings(s).empty());  // streaming: each delay is a silence of its own
  s.runtime.stream = false;
  auto warnings = harness::timing_warnings(s);
  REQUIRE(warnings.size() == 1u);
  CHECK(warnings[0].file == "unary.json");
  CHECK(warnings[0].pointer == "/turns/0/attempts/0/events/2/delay_s");
  CHECK(warnings[0].message.find("the delays of this answer's 3 delayed event(s) add up to 9 s (timing scale 1)") == 0);
  CHECK(warnings[0].message.find("races the idle timeout of 10 s") != std::string::npos);
  // A delay after the finish is not part of the answer; scaled down, the sum no longer races.
  mock::TextEvent after;
  after.text = "late";
  after.delay_s = 100;
  events.push_back(after);
  REQUIRE(harness::timing_warnings(s).size() == 1u);
  s.script.timing.scale = 0.5;
  CHECK(harness::timing_warnings(s).empty());  // 4.5 s: at most half
  // At least twice the timeout the answer surely times out: no race either.
  s.script.timing.scale = 3;
  CHECK(harness::timing_warnings(s).empty());  // 27 s
}

TEST_CASE("a fallback model equal to the model in use is a warning with its pointer") {
  harness::Scenario s;
  s.source_path = "fallback.json";
  s.script.provider = "gemini";
  s.runtime.fallback_model = "gemini-2.5-pro";
  CHECK(harness::fallback_warnings(s).empty());  // another model than the provider's default
  s.runtime.model = "gemini-2.5-pro";
  auto warnings = harness::scenario_warnings(s);
  REQUIRE(warnings.size() == 1u);
  CHECK(warnings[0].pointer == "/runtime/fallback_model");
  CHECK(warnings[0].message.find("is the model the requests already use (runtime.model)") != std::string::npos);
  s.runtime.model.reset();  // the provider's default model, named as the fallback
  s.runtime.fallback_model = rut::codec_for("gemini")->default_model();
  warnings = harness::fallback_warnings(s);
  REQUIRE(warnings.size() == 1u);
  CHECK(warnings[0].message.find("(the gemini default)") != std::string::npos);
}

TEST_CASE("a continuation prompt under a pinned hold design is a warning: it is never sent") {
  harness::Scenario s;
  s.source_path = "hold.json";
  s.runtime.continuation_prompt = "Continue.";
  CHECK(harness::scenario_warnings(s).empty());  // unpinned: `run --recovery continue` sends it
  s.runtime.recovery = "continue";
  CHECK(harness::scenario_warnings(s).empty());
  s.runtime.recovery = "hold";
  const auto warnings = harness::scenario_warnings(s);
  REQUIRE(warnings.size() == 1u);
  CHECK(warnings[0].pointer == "/runtime/continuation_prompt");
  CHECK(warnings[0].message.find("never sent") != std::string::npos);
}

TEST_CASE("attempts after one that answers the turn whole are a warning: never requested") {
  const auto parsed = harness::parse_scenario(R"({"schema": 1, "name": "dead", "provider": "gemini", "prompt": "Hi.",
    "turns": [{"attempts": [
      {"status": 503},
      {"events": [{"text": "Done."}, {"finish": "stop"}, {"text": " sent, to be ignored"}]},
      {"events": [{"text": "never asked for"}, {"finish": "stop"}]},
      {"events": [{"text": "nor this"}, {"finish": "stop"}]}]}]})", "dead.json");
  REQUIRE(parsed.problems.empty());
  // Text after a finish is sent (a client must ignore it): no warning for it.
  const auto warnings = harness::unplayed_warnings(*parsed.scenario);
  REQUIRE(warnings.size() == 1u);
  CHECK(warnings[0].pointer == "/turns/0/attempts/2");
  CHECK(warnings[0].message.rfind("never requested: attempt 1 answers the turn whole (a stop finish", 0) == 0);
  CHECK(warnings[0].message.find("(nor for the 1 attempt(s) after it)") != std::string::npos);
  CHECK(harness::scenario_warnings(*parsed.scenario).size() == 1u);  // lint and run print it
  // What a runtime asks for again, or may: after a fault, a status, a content filter, an answer
  // with nothing in it (gemini-cli retries an empty one), a call the token limit cut (a client may
  // retry it), or an interrupt.
  for (const char* first : {R"({"events": [{"text": "a"}, {"finish": "stop"}], "fault": {"kind": "disconnect", "after_event": 0}})",
                            R"({"status": 429})",
                            R"({"events": [{"text": "a"}, {"finish": "content_filter"}]})",
                            R"({"events": [{"text": ""}, {"finish": "stop"}]})",
                            R"({"events": [{"call": {"name": "f", "fragments": 4, "args": {"command": "make deploy"}}},
                                           {"finish": "max_tokens", "after_fragment": 1}]})"}) {
    INFO(first);
    const auto retried = harness::parse_scenario(std::string(R"({"schema": 1, "name": "r", "provider": "anthropic", "prompt": "Hi.",
      "turns": [{"attempts": [)") + first + R"(, {"events": [{"text": "b"}, {"finish": "stop"}]}]}]})", "r.json");
    REQUIRE(retried.problems.empty());
    CHECK(harness::unplayed_warnings(*retried.scenario).empty());
  }
  auto interrupted = *parsed.scenario;
  interrupted.interrupt = harness::Interrupt{0, 1, 0, std::nullopt};
  CHECK(harness::unplayed_warnings(interrupted).empty());
}

TEST_CASE("a number beyond a double's range in a report or scenario names its pointer") {
  // nlohmann throws out_of_range.406 with no place; report and report merge let it escape (exit 5).
  std::string error;
  CHECK_FALSE(parse_json_text(R"({"cases": [{"wall_ms": 1}, {"wall_ms": 1e999}]})", {}, error).has_value());
  CHECK(error.rfind("/cases/1/wall_ms: number 1e999 at byte ", 0) == 0);
  CHECK_FALSE(parse_json_text(R"([0, -1e400])", {}, error).has_value());
  CHECK(error.rfind("/1: number -1e400 at byte ", 0) == 0);
  const harness::LoadResult r = parse_scenario(R"({"schema": 1, "name": "x", "prompt": "p", "runtime": {"idle_timeout_s": 1e400}, "turns": []})", "x.json");
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].pointer == "/runtime/idle_timeout_s");
  CHECK(r.problems[0].message.find("is out of range") != std::string::npos);
}

TEST_CASE("a number beyond a double's range is one problem naming its pointer, not an exception") {
  const auto r = parse_scenario(R"({"schema": 1, "turns": [{"attempts": [{"delay_ms": 1, "events": [2, 1e400]}]}]})", "x.json");
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].pointer == "/turns/0/attempts/0/events/1");
  CHECK(r.problems[0].message.rfind("number 1e400 at byte ", 0) == 0);
  harness::LoadProblem p;
  CHECK_FALSE(harness::parse_json_text(R"({"a": {"b": -1E+999}})", {}, p));
  CHECK(p.pointer == "/a/b");
  CHECK_FALSE(harness::parse_json_text("1e400", {}, p));
  CHECK(p.pointer == "");
  CHECK(p.message.find("out of range") != std::string::npos);
}

TEST_CASE("a json syntax error at a non-ASCII character quotes no half UTF-8 character") {
  for (const std::string& text : {std::string("{\"name\": \xC3\xA9}"), std::string("{\xE2\x80\x9Cschema\xE2\x80\x9D: 1}")}) {
    const auto r = parse_scenario(text, "x.json");
    REQUIRE(r.problems.size() == 1);
    INFO(r.problems[0].message);
    CHECK(r.problems[0].message.rfind("invalid json at byte ", 0) == 0);
    CHECK_NOTHROW(nlohmann::json(r.problems[0].message).dump());
  }
}

TEST_CASE("lint messages quoting the file escape terminal control characters") {
  const auto r = parse_scenario(
      R"({"schema": 1, "name": "x", "prompt": "p", "turns": [{"attempts": [{"events": [{"finish": "stop"}],
          "fault": {"kind": "\u001b]0;pwned\u0007\u001b[31m"}}]}]})",
      "x.json");
  REQUIRE(!r.problems.empty());
  const std::string line = harness::format_problem(r.problems[0]);
  INFO(line);
  CHECK(line.find('\x1B') == std::string::npos);
  CHECK(line.find('\x07') == std::string::npos);
  CHECK(line.find("unknown fault \"\\x1B]0;pwned\\x07\\x1B[31m\"") != std::string::npos);
  // A key in the pointer is the file's too.
  CHECK(harness::format_problem({"f\x1B.json", "/a\x1B", "m\xC2\x9B"}) == "error: f\\x1B.json: /a\\x1B: m\\u009B");
}

TEST_CASE("lint: a max_tokens finish may cut the call before it inside its arguments, and nothing else") {
  auto problems_of = [](const std::string& events, const std::string& extra = "", const std::string& stream = "true") {
    const std::string text = R"({"schema":1,"name":"x","prompt":"p","runtime":{"stream":)" + stream +
                             R"(},"turns":[{"attempts":[{"events":)" + events + "" + extra + R"(}]}]})";
    return parse_scenario(text, "x.json").problems;
  };
  const std::string call3 = R"({"call":{"name":"f","args":{"a":"bcdef"},"fragments":3}})";
  const auto ok = problems_of("[" + call3 + R"(,{"finish":"max_tokens","after_fragment":2}])");
  CHECK(ok.empty());
  // Round trip: the field is written back.
  const auto parsed = parse_scenario(R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[{"events":[)" + call3 +
                                         R"(,{"finish":"max_tokens","after_fragment":2}]}]}]})",
                                     "x.json");
  REQUIRE(parsed.problems.empty());
  CHECK(scenario_to_json(*parsed.scenario).dump().find(R"({"finish":"max_tokens","after_fragment":2})") != std::string::npos);

  CHECK(has(problems_of("[" + call3 + R"(,{"finish":"stop","after_fragment":1}])"), "/turns/0/attempts/0/events/1/after_fragment",
            "expected finish \"max_tokens\", found \"stop\""));
  CHECK(has(problems_of(R"([{"text":"t"},{"finish":"max_tokens","after_fragment":1}])"),
            "/turns/0/attempts/0/events/1/after_fragment", "expected the event before this finish to be the call it cuts, found a text event"));
  CHECK(has(problems_of("[" + call3 + R"(,{"finish":"max_tokens","after_fragment":3}])"),
            "/turns/0/attempts/0/events/1/after_fragment", "expected fewer than the 3 argument fragment(s)"));
  // A short argument text sends fewer fragments than asked: "{}" goes out in 2.
  CHECK(has(problems_of(R"([{"call":{"name":"f","fragments":4}},{"finish":"max_tokens","after_fragment":2}])"),
            "/turns/0/attempts/0/events/1/after_fragment", "expected fewer than the 2 argument fragment(s)"));
  CHECK(has(problems_of("[" + call3 + R"(,{"finish":"max_tokens","after_fragment":0}])"),
            "/turns/0/attempts/0/events/1/after_fragment", ""));
  CHECK(has(problems_of(R"([{"text":"t","after_fragment":1},{"finish":"stop"}])"), "/turns/0/attempts/0/events/0/after_fragment",
            "belongs to a finish event"));
  CHECK(has(problems_of("[" + call3 + R"(,{"finish":"max_tokens","after_fragment":1}])", R"(,"fault":{"kind":"reset","after_event":0,"after_fragment":1})"),
            "/turns/0/attempts/0/fault/after_fragment", "cuts events/0"));
  CHECK(has(problems_of(R"([{"call":{"name":"f","args":{"a":"bcdef"}}},{"finish":"max_tokens","after_fragment":1}])", "", "false"),
            "/turns/0/attempts/0/events/1/after_fragment", "has no meaning for non-streaming requests"));
  CHECK(has(problems_of("[" + call3 + R"(,{"finish":"max_tokens","after_fragment":1}])", R"(,"fault":{"kind":"disconnect","after_event":1})"),
            "/turns/0/attempts/0/fault/after_event", "would come after that call whole"));
  CHECK(has(problems_of(R"([{"call":{"name":"f","fragments":4}},{"finish":"max_tokens","after_fragment":2}])"),
            "/turns/0/attempts/0/events/1/after_fragment", "its arguments' JSON text has only 2 bytes"));
  // A cut call needs no answer: the last turn may end with it.
  CHECK(problems_of("[" + call3 + R"(,{"finish":"max_tokens","after_fragment":1}])").empty());
  CHECK(has(problems_of("[" + call3 + R"(,{"finish":"max_tokens"}])"), "/turns/0/attempts/0", "the last turn completes with function calls"));
}

TEST_CASE("expect.truncated is a boolean that needs a completed outcome") {
  auto problems_of = [](const std::string& expect) {
    return parse_scenario(R"({"schema":1,"name":"x","prompt":"p","turns":[{"attempts":[{"events":[{"finish":"max_tokens"}]}]}],"expect":)" +
                              expect + "}",
                          "x.json")
        .problems;
  };
  CHECK(problems_of(R"({"outcome":"completed","truncated":true})").empty());
  CHECK(has(problems_of(R"({"truncated":"yes"})"), "/expect/truncated", "expected a boolean, found string"));
  CHECK(has(problems_of(R"({"outcome":"failed","error":"content_filter","truncated":true})"), "/expect/truncated", "needs outcome \"completed\""));
}

namespace scenario_io_quota_test {

TEST_CASE("quota: a 429's per_minute or per_day loads, survives a rewrite, and is refused elsewhere with its pointer") {
  auto load = [](const std::string& provider, const std::string& attempt) {
    const std::string text = R"({"schema":1,"name":"x","prompt":"p","provider":")" + provider + R"(","turns":[{"attempts":[)" +
                             attempt + R"(,{"events":[{"text":"t"},{"finish":"stop"}]}]}]})";
    return harness::parse_scenario(text, "x.json");
  };
  const auto day = load("gemini", R"({"status":429,"quota":"per_day","retry_after_s":38})");
  REQUIRE(day.problems.empty());
  REQUIRE(day.scenario);
  CHECK(day.scenario->script.turns[0].attempts[0].quota == mock::Quota::kPerDay);
  const auto again = harness::parse_scenario(harness::write_scenario(*day.scenario), "y.json");
  REQUIRE(again.scenario);
  CHECK(again.scenario->script == day.scenario->script);
  CHECK(load("openai-chat", R"({"status":429,"quota":"per_minute"})").scenario->script.turns[0].attempts[0].quota ==
        mock::Quota::kPerMinute);

  auto only = [&](const std::string& provider, const std::string& attempt) {
    const auto r = load(provider, attempt);
    REQUIRE(r.problems.size() == 1);
    return r.problems[0];
  };
  const auto not_429 = only("gemini", R"({"status":503,"quota":"per_day"})");
  CHECK(not_429.pointer == "/turns/0/attempts/0/quota");
  CHECK(not_429.message == "field \"quota\" names the quota a 429 says ran out, found status 503");
  const auto bad = only("gemini", R"({"status":429,"quota":"daily"})");
  CHECK(bad.pointer == "/turns/0/attempts/0/quota");
  CHECK(bad.message == "expected \"per_minute\" or \"per_day\" (the request quota a 429 says ran out), found string \"daily\"");
  const auto stream = only("gemini", R"({"events":[{"finish":"stop"}],"quota":"per_day"})");
  CHECK(stream.message == "field \"quota\" needs a status attempt (\"status\"), found \"events\"");
  const auto anthropic = only("anthropic", R"({"status":429,"quota":"per_day"})");
  CHECK(anthropic.pointer == "/turns/0/attempts/0/quota");
  CHECK(anthropic.message.rfind("anthropic never says a per-day quota ran out", 0) == 0);
  CHECK(load("anthropic", R"({"status":429,"quota":"per_minute"})").problems.empty());
  // Played as Anthropic (hiccup run --provider): not playable there, and says where.
  CHECK(harness::unplayable_in(*day.scenario, "anthropic") ==
        "/turns/0/attempts/0/quota: anthropic never says a per-day quota ran out (its request limits are per minute: "
        "docs.claude.com \"Rate limits\"); use \"per_minute\" or another provider");
  CHECK_FALSE(harness::unplayable_in(*day.scenario, "openai-responses"));
  CHECK(harness::status_problems(*day.scenario, "anthropic", "x.json").empty());
}

}  // namespace scenario_io_quota_test

// ---- tools (SCENARIO-FORMAT.md "Tools") -----------------------------------------------------------

TEST_CASE("a tools section loads every field and survives a write") {
  const std::string patch = R"({"tools": [
    {"name": "write_file", "description": "Writes a file.", "idempotent": false,
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
     "annotations": {"title": "Write", "idempotentHint": false, "destructiveHint": true},
     "calls": [ {"duration_s": 30, "reply_lost": true, "progress": 3},
                {"result": "written"},
                {"is_error": true, "result": "disk full"},
                {"jsonrpc_error": {"code": -32603, "message": "backend down"}},
                {"hang": true, "progress": 1},
                {"session_expired": true} ]},
    {"name": "read.file-2", "idempotent": true}
  ]})";
  auto j = nlohmann::json::parse(kMinimal);
  j.merge_patch(nlohmann::json::parse(patch));
  auto r = parse_scenario(j.dump(), "x.json");
  INFO(dump(r.problems));
  REQUIRE(r.scenario);
  const auto& tools = r.scenario->tools.tools;
  REQUIRE(tools.size() == 2);
  CHECK(tools[0].name == "write_file");
  CHECK(tools[0].description == "Writes a file.");
  CHECK(tools[0].input_schema["required"] == nlohmann::json::array({"path"}));
  CHECK((*tools[0].annotations)["destructiveHint"] == true);
  REQUIRE(tools[0].calls.size() == 6);
  CHECK(tools[0].calls[5].session_expired);
  CHECK(tools[0].calls[0].duration_s == 30);
  CHECK(tools[0].calls[0].reply_lost);
  CHECK(tools[0].calls[0].progress == 3);
  CHECK(*tools[0].calls[1].result == "written");
  CHECK(tools[0].calls[2].is_error);
  CHECK(tools[0].calls[3].jsonrpc_error->code == -32603);
  CHECK(tools[0].calls[3].jsonrpc_error->message == "backend down");
  CHECK(tools[0].calls[4].hang);
  CHECK(tools[1].idempotent);
  CHECK(tools[1].input_schema == nlohmann::json{{"type", "object"}});
  CHECK(tools[1].calls.empty());

  const std::string written = harness::write_scenario(*r.scenario);
  auto again = parse_scenario(written, "x.json");
  INFO(written);
  REQUIRE(again.scenario);
  again.scenario->source_path = r.scenario->source_path;
  CHECK(*again.scenario == *r.scenario);
  CHECK(nlohmann::json::parse(written)["tools"][1] == nlohmann::json{{"name", "read.file-2"}, {"idempotent", true}});
}

TEST_CASE("a scenario without tools offers none and writes no tools key") {
  auto r = parse_scenario(kMinimal, "x.json");
  REQUIRE(r.scenario);
  CHECK(r.scenario->tools.tools.empty());
  CHECK_FALSE(nlohmann::json::parse(harness::write_scenario(*r.scenario)).contains("tools"));
}

TEST_CASE("a call's contradicting endings are problems at the call") {
  auto ps = problems_with(R"({"tools": [{"name": "t", "calls": [
      {"hang": true, "result": "done"},
      {"reply_lost": true, "jsonrpc_error": {"code": 1, "message": "m"}},
      {"is_error": true, "jsonrpc_error": {"code": 1, "message": "m"}},
      {"hang": true, "duration_s": 5},
      {"hang": false, "reply_lost": false, "result": "fine", "is_error": true, "duration_s": 2, "progress": 2},
      {"session_expired": true, "reply_lost": true},
      {"session_expired": true, "progress": 1},
      {"session_expired": true, "duration_s": 3}]}]})");
  INFO(dump(ps));
  CHECK(has(ps, "/tools/0/calls/0", "a call ends one way, found result and hang"));
  CHECK(has(ps, "/tools/0/calls/1", "found jsonrpc_error and reply_lost"));
  CHECK(has(ps, "/tools/0/calls/2", "found is_error and jsonrpc_error"));
  CHECK(has(ps, "/tools/0/calls/3/duration_s", "a hung call never ends, so it has no duration"));
  CHECK(has(ps, "/tools/0/calls/5", "found reply_lost and session_expired"));
  CHECK(has(ps, "/tools/0/calls/6/progress", "sends no progress"));
  CHECK(ps.size() == 6);
}

TEST_CASE("tool shapes are checked field by field with their pointers") {
  auto ps = problems_with(R"({"tools": [
      {"name": "write file"},
      {"name": "t", "input_schema": {"type": "string"}, "idempotent": "yes"},
      {"name": "u", "annotations": {"idempotentHnt": true, "title": 3}},
      {"name": "v", "calls": [{"sleep_s": 1}, {"duration_s": -1}, {"progress": 1001},
                              {"jsonrpc_error": {"code": "x"}}, {"jsonrpc_error": {"code": 5, "message": ""}}]},
      {"description": "nameless"},
      {"name": "t"}]})");
  INFO(dump(ps));
  CHECK(has(ps, "/tools/0/name", "expected an MCP tool name"));
  CHECK(has(ps, "/tools/1/input_schema", "with \"type\": \"object\""));
  CHECK(has(ps, "/tools/1/idempotent", "expected a boolean"));
  CHECK(has(ps, "/tools/2/annotations/idempotentHnt", "unknown field"));
  CHECK(has(ps, "/tools/2/annotations/title", "expected a string"));
  CHECK(has(ps, "/tools/3/calls/0/sleep_s", "unknown field"));
  CHECK(has(ps, "/tools/3/calls/1/duration_s", "expected a number >= 0"));
  CHECK(has(ps, "/tools/3/calls/2/progress", "0..1000"));
  CHECK(has(ps, "/tools/3/calls/3/jsonrpc_error/code", "expected an integer"));
  CHECK(has(ps, "/tools/3/calls/3/jsonrpc_error", "missing required field \"message\""));
  CHECK(has(ps, "/tools/3/calls/4/jsonrpc_error/message", "non-empty"));
  CHECK(has(ps, "/tools/4", "missing required field \"name\""));
  CHECK(has(ps, "/tools/5/name", "tool \"t\" is offered twice"));
  CHECK(problems_with(R"({"tools": {"name": "t"}})").at(0).pointer == "/tools");
}

TEST_CASE("idempotent and the idempotentHint a client sees must agree") {
  auto ps = problems_with(R"({"tools": [{"name": "t", "idempotent": true, "annotations": {"idempotentHint": false}},
                                         {"name": "u", "idempotent": false, "annotations": {"idempotentHint": false}},
                                         {"name": "w", "annotations": {"idempotentHint": true}}]})");
  INFO(dump(ps));
  REQUIRE(ps.size() == 1);
  CHECK(has(ps, "/tools/0/annotations/idempotentHint", "contradicts \"idempotent\": true"));
}

namespace scenario_io_websocket_test {

TEST_CASE("websocket fields load, write back, and are linted against what they act on") {
  const char* text = R"({
    "schema": 1, "name": "ws", "prompt": "hi", "provider": "openai-responses",
    "websocket": {"upgrade_status": 426},
    "turns": [ { "attempts": [
      { "status": 503, "websocket": {"string_error": true} },
      { "events": [ { "text": "a" }, { "finish": "stop" } ], "fault": {"kind": "disconnect", "after_event": 1},
        "websocket": {"close_code": 1011} },
      { "events": [ { "text": "a" }, { "finish": "stop" } ], "fault": {"kind": "malformed", "after_event": 1},
        "websocket": {"malformed_frame": true, "forget_response": true} } ] } ]
  })";
  auto r = parse_scenario(text, "x.json");
  INFO(dump(r.problems));
  REQUIRE(r.problems.empty());
  const auto& s = *r.scenario;
  CHECK(s.script.websocket_upgrade_status == 426);
  const auto& at = s.script.turns[0].attempts;
  CHECK(at[0].websocket->string_error);
  CHECK(at[1].websocket->close_code == 1011);
  CHECK(at[2].websocket->malformed_frame);
  CHECK(at[2].websocket->forget_response);
  auto again = parse_scenario(harness::write_scenario(s), "y.json");
  REQUIRE(again.scenario);
  CHECK(again.scenario->script == s.script);

  CHECK(has(problems_with(R"({"websocket": {"upgrade_status": 500}})"), "/websocket/upgrade_status", "expected 403, 404, 405 or 426"));
  CHECK(has(problems_with(R"({"websocket": {"upgrade": 426}})"), "/websocket/upgrade", "unknown field"));
  const std::string attempt = R"({"turns": [ { "attempts": [ { "events": [ { "text": "a" }, { "finish": "stop" } ], "websocket": )";
  CHECK(has(problems_with(attempt + R"({"close_code": 1001} } ] } ]})"), "/turns/0/attempts/0/websocket/close_code", "expected 1000, 1006"));
  CHECK(has(problems_with(attempt + R"({"close_code": 1000} } ] } ]})"), "/turns/0/attempts/0/websocket/close_code", "needs a fault"));
  CHECK(has(problems_with(attempt + R"({"string_error": true} } ] } ]})"), "/turns/0/attempts/0/websocket/string_error", "needs a status attempt"));
  CHECK(has(problems_with(attempt + R"({"malformed_frame": true} } ] } ]})"), "/turns/0/attempts/0/websocket/malformed_frame", "malformed"));
  CHECK(has(problems_with(attempt + R"({"forget_response": 1} } ] } ]})"), "/turns/0/attempts/0/websocket/forget_response", "expected a boolean"));
}

TEST_CASE("two reasoning events in a row warn in no provider and play as anthropic and as openai-responses") {
  const char* text = R"({
    "schema": 1, "name": "r2", "prompt": "hi", "provider": "PROVIDER",
    "turns": [ { "attempts": [ { "events": [
      { "reasoning": { "text": "plan", "signature": "c2ln" } }, { "reasoning": { "redacted": true, "signature": "c2lnMg" } },
      { "call": { "name": "shell", "args": {} } }, { "finish": "stop" } ] } ] },
      { "attempts": [ { "events": [ { "text": "done" }, { "finish": "stop" } ] } ] } ],
    "expect": { "outcome": "completed", "requests": 2, "final_text": "done" }
  })";
  for (const std::string provider : {"openai-responses", "anthropic"}) {
    std::string doc = text;
    doc.replace(doc.find("PROVIDER"), 8, provider);
    auto r = parse_scenario(doc, "r2.json");
    INFO(provider << ": " << dump(r.problems));
    REQUIRE(r.scenario);
    CHECK(harness::scenario_warnings(*r.scenario).empty());
    // As `hiccup run --provider openai-responses` plays the anthropic one: the next request sends
    // both reasoning items back as delivered, and the server takes them (it rejected the first as
    // "provided without its required following item" before).
    harness::Scenario as_responses = *r.scenario;
    as_responses.script.provider = "openai-responses";
    harness::RunOptions memory;
    memory.transport = harness::TransportKind::kMemory;
    const harness::CaseResult result = harness::run_scenario(as_responses, memory);
    for (const harness::Violation& v : result.violations) UNSCOPED_INFO(v.invariant << ": " << v.message);
    CHECK(result.passed());
    CHECK(result.journal.size() == 2u);
  }
}

TEST_CASE("websocket fields in a scenario of another provider are warnings naming --provider openai-responses") {
  const char* text = R"({
    "schema": 1, "name": "ws", "prompt": "hi", "provider": "PROVIDER",
    "websocket": {"upgrade_status": 426},
    "turns": [ { "attempts": [
      { "status": 503 },
      { "status": 503, "websocket": {"string_error": true} },
      { "events": [ { "text": "a" }, { "finish": "stop" } ] } ] } ]
  })";
  std::string gemini = text;
  gemini.replace(gemini.find("PROVIDER"), 8, "gemini");
  auto r = parse_scenario(gemini, "g.json");
  INFO(dump(r.problems));
  REQUIRE(r.problems.empty());  // valid: --provider openai-responses plays them
  const auto warnings = harness::fallback_warnings(*r.scenario);
  REQUIRE(warnings.size() == 2u);
  CHECK(warnings[0].pointer == "/websocket");
  CHECK(warnings[1].pointer == "/turns/0/attempts/1/websocket");
  CHECK(warnings[1].message.find("provider is gemini (play it with --provider openai-responses --transport websocket)") !=
        std::string::npos);
  std::string responses = text;
  responses.replace(responses.find("PROVIDER"), 8, "openai-responses");
  auto ok = parse_scenario(responses, "r.json");
  REQUIRE(ok.scenario);
  CHECK(harness::fallback_warnings(*ok.scenario).empty());
}

}  // namespace scenario_io_websocket_test

namespace scenario_io_timing_bounds_test {

TEST_CASE("an event delay_s past 1000000 s and a timing scale past 1000000 are refused with their pointers") {
  // Scaled and summed, such delays overflowed to infinity: the proxy journaled "delay_s": null.
  const auto load = [](const std::string& timing, const std::string& delay) {
    return harness::parse_scenario(R"({"schema": 1, "name": "x", "prompt": "p", "timing": )" + timing +
                                       R"(, "turns": [{"attempts": [{"events": [{"text": "a", "delay_s": )" + delay +
                                       R"(}, {"finish": "stop"}]}]}]})",
                                   "x.json");
  };
  const harness::LoadResult at_bounds = load(R"({"scale": 1000000})", "1000000");
  INFO(harness::format_problem(at_bounds.problems.empty() ? harness::LoadProblem{} : at_bounds.problems[0]));
  CHECK(at_bounds.scenario);
  const harness::LoadResult delay = load(R"({"scale": 2})", "1e308");
  REQUIRE(delay.problems.size() == 1);
  CHECK(delay.problems[0].pointer == "/turns/0/attempts/0/events/0/delay_s");
  CHECK(delay.problems[0].message.find("expected a number of seconds in 0..1000000") != std::string::npos);
  CHECK(delay.problems[0].message.find("stall") != std::string::npos);
  const harness::LoadResult scale = load(R"({"scale": 1e300})", "1");
  REQUIRE(scale.problems.size() == 1);
  CHECK(scale.problems[0].pointer == "/timing/scale");
  CHECK(scale.problems[0].message.find("expected a number in 0..1000000") != std::string::npos);
}

TEST_CASE("a retry_after_s past 1000000 s is refused with its pointer") {
  // It went out as broken headers: OpenAI's retry-after-ms wrapped to a negative int64, Gemini's
  // retryDelay read "1e+300s".
  const auto load = [](const std::string& retry_after) {
    return harness::parse_scenario(R"({"schema": 1, "name": "x", "prompt": "p", "turns": [{"attempts": [{"status": 429, "retry_after_s": )" +
                                       retry_after + R"(}, {"events": [{"text": "a"}, {"finish": "stop"}]}]}]})",
                                   "x.json");
  };
  const harness::LoadResult at_bound = load("1000000");
  INFO(harness::format_problem(at_bound.problems.empty() ? harness::LoadProblem{} : at_bound.problems[0]));
  CHECK(at_bound.scenario);
  for (const char* big : {"1000001", "1e300"}) {
    const harness::LoadResult r = load(big);
    CHECK_FALSE(r.scenario);
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].pointer == "/turns/0/attempts/0/retry_after_s");
    CHECK(r.problems[0].message.find("expected a number of seconds in 0..1000000") != std::string::npos);
  }
}

TEST_CASE("a delay_s, timing scale or retry_after_s of the wrong type or sign is told the whole range") {
  const auto load = [](const std::string& scale, const std::string& delay, const std::string& retry_after) {
    return harness::parse_scenario(R"({"schema": 1, "name": "x", "prompt": "p", "timing": {"scale": )" + scale +
                                       R"(}, "turns": [{"attempts": [{"status": 429, "retry_after_s": )" + retry_after +
                                       R"(}, {"events": [{"text": "a", "delay_s": )" + delay + R"(}, {"finish": "stop"}]}]}]})",
                                   "x.json");
  };
  for (const char* bad : {R"("x")", "-1", "null", "true"}) {
    const harness::LoadResult r = load(bad, bad, bad);
    INFO(bad);
    REQUIRE(r.problems.size() == 3);
    std::map<std::string, std::string> by_pointer;
    for (const auto& p : r.problems) by_pointer[p.pointer] = p.message;
    const std::string found = mock::found_text(nlohmann::json::parse(bad));
    CHECK(by_pointer["/timing/scale"] ==
          "expected a number in 0..1000000 (as --timing-scale takes), found " + found);
    CHECK(by_pointer["/turns/0/attempts/1/events/0/delay_s"] ==
          "expected a number of seconds in 0..1000000 (about 11.6 days; an endless wait is a `stall` fault), found " + found);
    CHECK(by_pointer["/turns/0/attempts/0/retry_after_s"] ==
          "expected a number of seconds in 0..1000000 (about 11.6 days), found " + found);
  }
}

}  // namespace scenario_io_timing_bounds_test

namespace scenario_io_cap_warnings_test {

harness::Scenario load(const nlohmann::json& j) {
  auto r = harness::parse_scenario(j.dump(), "cap.json");
  INFO(harness::format_problem(r.problems.empty() ? harness::LoadProblem{} : r.problems[0]));
  REQUIRE(r.scenario);
  return *r.scenario;
}

nlohmann::json with_attempts(const nlohmann::json& failing) {
  nlohmann::json attempts = failing;
  attempts.push_back({{"events", nlohmann::json::array({{{"text", "done"}}, {{"finish", "stop"}}})}});
  return {{"schema", 1}, {"name", "cap"}, {"prompt", "p"}, {"turns", nlohmann::json::array({{{"attempts", attempts}}})}};
}

TEST_CASE("lint warns when a retry_after_s or the waits it forces pass the run's virtual-time cap") {
  using nlohmann::json;
  // A Retry-After longer than the default cap of 3600 s: the run always ends at the cap.
  auto w = harness::cap_warnings(load(with_attempts(json::array({{{"status", 429}, {"retry_after_s", 4000}}}))));
  REQUIRE(w.size() == 1);
  CHECK(w[0].pointer == "/turns/0/attempts/0/retry_after_s");
  CHECK(w[0].message.find("a Retry-After of 4000 s is longer than the run's max_virtual_s (default 3600 s)") == 0);
  // It is a warning: lint and run print it from fallback_warnings, the file stays valid.
  CHECK(harness::fallback_warnings(load(with_attempts(json::array({{{"status", 503}, {"retry_after_s", 4000}}})))).size() == 1);
  // The scenario's own cap.
  json own = with_attempts(json::array({{{"status", 503}, {"retry_after_s", 120}}}));
  own["max_virtual_s"] = 100;
  w = harness::cap_warnings(load(own));
  REQUIRE(w.size() == 1);
  CHECK(w[0].message.find("max_virtual_s of 100 s") != std::string::npos);
  // Summed: three 503s of 1500 s each, under the cap one by one, 4500 s together.
  json three = with_attempts(json::array({{{"status", 503}, {"retry_after_s", 1500}},
                                          {{"status", 503}, {"retry_after_s", 1500}},
                                          {{"status", 503}, {"retry_after_s", 1500}}}));
  three["runtime"] = {{"max_attempts", 4}};
  w = harness::cap_warnings(load(three));
  REQUIRE(w.size() == 1);
  CHECK(w[0].pointer == "/turns/0/attempts/2/retry_after_s");
  CHECK(w[0].message.find("add up to 4500 s") != std::string::npos);
  // The backoff schedule counts too: a cut stream retried after a 4000 s step.
  json backoff = with_attempts(json::array({{{"events", json::array({{{"text", "a"}}})}, {"fault", {{"kind", "disconnect"}}}}}));
  backoff["runtime"] = {{"backoff_s", json::array({4000})}};
  w = harness::cap_warnings(load(backoff));
  REQUIRE(w.size() == 1);
  CHECK(w[0].pointer == "/turns/0/attempts/0");
  // No warning where no wait happens or it fits: under the cap, a per-day quota (not retried),
  // a 400 (not retried), the last attempt the runtime makes, the ignore-retry-after defect.
  CHECK(harness::cap_warnings(load(with_attempts(json::array({{{"status", 429}, {"retry_after_s", 3599}}})))).empty());
  CHECK(harness::cap_warnings(load(with_attempts(json::array({{{"status", 429}, {"quota", "per_day"}, {"retry_after_s", 86400}}})))).empty());
  CHECK(harness::cap_warnings(load(with_attempts(json::array({{{"status", 400}, {"retry_after_s", 86400}}})))).empty());
  json last = with_attempts(json::array({{{"status", 503}, {"retry_after_s", 86400}}}));
  last["runtime"] = {{"max_attempts", 1}};
  CHECK(harness::cap_warnings(load(last)).empty());
  json ignored = with_attempts(json::array({{{"status", 503}, {"retry_after_s", 86400}}}));
  ignored["runtime"] = {{"defects", json::array({"ignore-retry-after"})}};
  CHECK(harness::cap_warnings(load(ignored)).empty());
}

}  // namespace scenario_io_cap_warnings_test
