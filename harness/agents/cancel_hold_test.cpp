// CancelHold: the interrupted attempt is held right after its interrupt event (a stall the
// scenario does not script), reached() turns true once the server settles the write before the
// hold, and every other attempt plays as scripted. No socket, no clock.
#include <catch2/catch.hpp>

#include <variant>

#include "harness/agents/cancel_hold.h"
#include "harness/scenario_io.h"

namespace harness::agents {
namespace cancel_hold_test {

constexpr const char* kScenario = R"({
  "schema": 1, "name": "hold", "prompt": "Tell a story.",
  "session": [ { "prompt": "Just say bye." } ],
  "interrupt": { "turn": 0, "attempt": 0, "after_event": 1 },
  "turns": [ { "attempts": [
      { "events": [ { "text": "Once" }, { "text": " upon" }, { "text": " a time" }, { "finish": "stop" } ] },
      { "events": [ { "text": "Bye." }, { "finish": "stop" } ] } ] } ]
})";

Scenario load() {
  LoadResult r = parse_scenario(kScenario, "hold.json");
  for (const auto& p : r.problems) INFO(format_problem(p));
  REQUIRE(r.scenario);
  return *r.scenario;
}

mock::Request ask(const std::string& contents) {
  return {"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "{\"contents\": " + contents + "}"};
}

int stalls(const mock::Plan& plan, double seconds) {
  int n = 0;
  for (const auto& a : plan.actions) {
    const auto* s = std::get_if<mock::StallAction>(&a);
    n += s != nullptr && s->seconds == seconds ? 1 : 0;
  }
  return n;
}

TEST_CASE("the interrupted attempt is held after its event and reports the hold once the write before it goes out") {
  const Scenario s = load();
  REQUIRE_FALSE(cancel_hold_problem(s));
  CancelHold hold(*s.interrupt, 120);
  mock::ScriptEngine engine(s.script, [&](int t, int a, mock::Attempt& played) { hold.rewrite(t, a, played); });
  hold.serve(engine);

  const mock::Plan first = hold.respond(ask(R"([{"role": "user", "parts": [{"text": "Tell a story."}]}])"));
  REQUIRE(first.streaming);
  REQUIRE(stalls(first, 120) == 1);
  std::size_t at = 0;
  while (!std::holds_alternative<mock::StallAction>(first.actions[at])) ++at;
  // The writes before the hold carry events 0 and 1 whole, and nothing of event 2.
  int events_before = 0;
  for (std::size_t i = 0; i < at; ++i) {
    if (const auto* w = std::get_if<mock::WriteAction>(&first.actions[i])) events_before = std::max(events_before, w->events_done);
  }
  CHECK(events_before == 2);
  CHECK_FALSE(hold.reached());
  hold.settle(first.journal_index, mock::Delivery{static_cast<int>(at) - 1, false});
  CHECK_FALSE(hold.reached());  // a write before the one that ends event 1
  hold.settle(first.journal_index, mock::Delivery{static_cast<int>(at), false});
  CHECK(hold.reached());
  CHECK(hold.held_request() == first.journal_index);
  hold.settle(first.journal_index, mock::Delivery{static_cast<int>(at), true});  // the agent hung up

  // The next prompt's request: turn 0's attempt 1, as scripted (no hold).
  const mock::Plan second = hold.respond(
      ask(R"([{"role": "user", "parts": [{"text": "Tell a story."}]}, {"role": "user", "parts": [{"text": "Just say bye."}]}])"));
  CHECK(stalls(second, 120) == 0);
  const mock::Journal j = engine.journal();
  REQUIRE(j.size() == 2);
  CHECK(j[0].delivered_text == "Once upon");
  CHECK(j[1].attempt == 1);
}

TEST_CASE("inside a call's arguments the hold comes after the call's start and after_fragment of its fragments") {
  constexpr const char* kInside = R"({
    "schema": 1, "name": "inside", "prompt": "Deploy.", "provider": "anthropic",
    "session": [ { "prompt": "Just say bye." } ],
    "interrupt": { "turn": 0, "attempt": 0, "after_event": 1, "after_fragment": 1 },
    "turns": [ { "attempts": [
        { "events": [ { "text": "Deploying." },
                      { "call": { "name": "Bash", "args": { "command": "deploy --env staging" }, "fragments": 3 } },
                      { "finish": "stop" } ] },
        { "events": [ { "text": "Bye." }, { "finish": "stop" } ] } ] } ]
  })";
  LoadResult r = parse_scenario(kInside, "inside.json");
  for (const auto& p : r.problems) INFO(format_problem(p));
  REQUIRE(r.scenario);
  const Scenario s = *r.scenario;
  REQUIRE_FALSE(cancel_hold_problem(s));
  CancelHold hold(*s.interrupt, 120);
  mock::ScriptEngine engine(s.script, [&](int t, int a, mock::Attempt& played) { hold.rewrite(t, a, played); });
  hold.serve(engine);
  const mock::Plan first = hold.respond(
      {"POST", "/v1/messages", R"({"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": true, "messages": [{"role": "user", "content": "Deploy."}]})"});
  REQUIRE(first.streaming);
  REQUIRE(stalls(first, 120) == 1);
  std::string before;
  std::string after;
  bool held = false;
  for (const auto& a : first.actions) {
    if (std::holds_alternative<mock::StallAction>(a)) held = true;
    if (const auto* w = std::get_if<mock::WriteAction>(&a)) (held ? after : before) += w->bytes;
  }
  auto count = [](const std::string& text, const std::string& what) {
    int n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count(before, "\"tool_use\"") == 1);         // the call's start
  CHECK(count(before, "input_json_delta") == 1);       // and one of its three fragments
  CHECK(count(before, "event: content_block_stop") == 1);  // only the text block is closed
  CHECK(count(after, "input_json_delta") == 2);  // the rest only after the hold's 120 s (or never: SIGINT)
}

TEST_CASE("the hold fires once: a later play of the same attempt streams whole") {
  Scenario s = load();
  s.interrupt->attempt = 1;  // the last attempt, which repeats
  CancelHold hold(*s.interrupt, 60);
  mock::ScriptEngine engine(s.script, [&](int t, int a, mock::Attempt& played) { hold.rewrite(t, a, played); });
  hold.serve(engine);
  const std::string contents = R"([{"role": "user", "parts": [{"text": "Tell a story."}]}])";
  CHECK(stalls(hold.respond(ask(contents)), 60) == 0);  // attempt 0
  CHECK(stalls(hold.respond(ask(contents)), 60) == 1);  // attempt 1: held
  CHECK(stalls(hold.respond(ask(contents)), 60) == 0);  // attempt 2 plays attempt 1 again, whole
}

TEST_CASE("an interrupted attempt that times an event after its interrupt point is refused with that event's pointer") {
  std::string text = kScenario;
  const std::string later = R"({ "text": " a time" })";
  REQUIRE(text.find(later) != std::string::npos);
  text.replace(text.find(later), later.size(), R"({ "text": " a time", "delay_s": 1 })");
  LoadResult r = parse_scenario(text, "hold.json");
  REQUIRE(r.scenario);
  const auto problem = cancel_hold_problem(*r.scenario);
  REQUIRE(problem);
  CHECK(problem->rfind("/turns/0/attempts/0/events/2/delay_s: ", 0) == 0);
  // A delay on an event up to the interrupt point plays before the hold: allowed.
  text = kScenario;
  const std::string first = R"({ "text": "Once" })";
  text.replace(text.find(first), first.size(), R"({ "text": "Once", "delay_s": 1 })");
  r = parse_scenario(text, "hold.json");
  REQUIRE(r.scenario);
  CHECK_FALSE(cancel_hold_problem(*r.scenario));
}

TEST_CASE("before_attempt: the failed attempt is watched, not changed, and the point is reached when its answer has ended") {
  LoadResult r = parse_scenario(R"({
    "schema": 1, "name": "backoff", "prompt": "Tell a story.",
    "session": [ { "prompt": "Just say bye." } ],
    "interrupt": { "turn": 0, "before_attempt": 1 },
    "turns": [ { "attempts": [ { "status": 503, "retry_after_s": 8 },
                               { "events": [ { "text": "Bye." }, { "finish": "stop" } ] } ] } ]
  })", "backoff.json");
  for (const auto& p : r.problems) INFO(format_problem(p));
  REQUIRE(r.scenario);
  const Scenario& s = *r.scenario;
  REQUIRE_FALSE(cancel_hold_problem(s));
  CancelHold hold(*s.interrupt, 120);
  mock::ScriptEngine engine(s.script, [&](int t, int a, mock::Attempt& played) { hold.rewrite(t, a, played); });
  hold.serve(engine);
  const std::string contents = R"([{"role": "user", "parts": [{"text": "Tell a story."}]}])";
  const mock::Plan failed = hold.respond(ask(contents));
  CHECK(failed.status == 503);
  CHECK(stalls(failed, 120) == 0);  // nothing added: the 503 goes out as scripted
  hold.settle(failed.journal_index, mock::Delivery{0, false, -1});
  CHECK_FALSE(hold.reached());  // not ended yet
  hold.settle(failed.journal_index, mock::Delivery{0, false, 12.5});
  CHECK(hold.reached());
  CHECK(hold.held_request() == failed.journal_index);
  // The next request (the next prompt's) plays attempt 1 as scripted.
  const mock::Plan next = hold.respond(ask(contents));
  CHECK(next.status == 200);
  CHECK(stalls(next, 120) == 0);
}

TEST_CASE("after_calls against an external agent needs the turn's calls to run the ledger command") {
  const char* with_calls = R"({
    "schema": 1, "name": "tool", "prompt": "Record it.",
    "session": [ { "prompt": "Just say bye." } ],
    "interrupt": { "turn": 0, "after_calls": 0 },
    "turns": [ { "attempts": [ { "events": [ { "call": { "name": "run_shell_command", "args": { "command": "CMD" } } },
                                             { "finish": "stop" } ] },
                               { "events": [ { "text": "Bye." }, { "finish": "stop" } ] } ] },
               { "attempts": [ { "events": [ { "text": "Bye." }, { "finish": "stop" } ] } ] } ]
  })";
  auto with = [&](const std::string& cmd) {
    std::string text = with_calls;
    text.replace(text.find("CMD"), 3, cmd);
    LoadResult r = parse_scenario(text, "tool.json");
    std::string problems;
    for (const auto& p : r.problems) problems += format_problem(p) + "\n";
    INFO(problems);
    REQUIRE(r.scenario);
    return cancel_hold_problem(*r.scenario);
  };
  CHECK_FALSE(with("{{ledger}}"));
  const auto unseen = with("true");
  REQUIRE(unseen);
  CHECK(unseen->rfind("/interrupt/after_calls: ", 0) == 0);
  CHECK(unseen->find("ledger placeholder") != std::string::npos);
}

}  // namespace cancel_hold_test
}  // namespace harness::agents
