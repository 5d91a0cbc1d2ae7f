// Each invariant on hand-built transcripts: a clean run passes, and each broken promise is named.
#include <catch2/catch.hpp>

#include <algorithm>

#include "harness/invariants.h"

namespace harness {
namespace {

using nlohmann::json;

json user_prompt() { return {{"role", "user"}, {"parts", json::array({{{"text", "go"}}})}}; }
/// qwen-code's continuation prompt after a kept cut turn.
json resume_prompt() { return {{"role", "user"}, {"parts", json::array({{{"text", "Resume directly."}}})}}; }
json model_text(const std::string& text) { return {{"role", "model"}, {"parts", json::array({{{"text", text}}})}}; }
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

TEST_CASE("at-most-once: a call that ran from a cut attempt and again from its retry ran twice") {
  Fixture f;
  f.run.ledger.insert(f.run.ledger.begin(), rut::LedgerEntry{"shell", {{"command", "ls"}}, 0, 0, ""});
  const auto vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"at-most-once"});
  CHECK(vs[0].message.rfind("tool \"shell\" {\"command\":\"ls\"} ran 2 times for one intended call", 0) == 0);
  CHECK(vs[0].message.find("delivered by requests 0, 1") != std::string::npos);
  CHECK(vs[0].request == 1);
}

TEST_CASE("at-most-once: after the user's cancel, a call the next prompt's answer sends again is a new intention, not a retry of the cancelled one") {
  // The user cancels while turn 0's call runs (it began: one execution), then asks "do it after
  // all". A client that dropped the cancelled turn asks with the same turn index, and turn 0's next
  // attempt sends the call again: the user asked for it, so its run is a second intention.
  Fixture f;
  f.scenario.session = {SessionPrompt{"do it after all"}};
  f.scenario.interrupt = Interrupt{0, std::nullopt, std::nullopt, 0};
  const json again = {{"role", "user"}, {"parts", json::array({{{"text", "do it after all"}}})}};
  f.journal[0].fault.clear();
  f.journal[0].completed = true;
  f.journal[0].events_delivered = 2;
  f.journal[1].contents = json::array({user_prompt(), again});
  f.journal[2].contents = json::array({user_prompt(), again, model_call(), responses(1)});
  f.run.ledger = {rut::LedgerEntry{"shell", {{"command", "ls"}}, 0, 0, ""},
                  rut::LedgerEntry{"shell", {{"command", "ls"}}, 1, 0, ""}};
  const auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "at-most-once") == 0);
  // Without the next prompt, request 1 is a retry of the same reply: the same call ran twice.
  f.journal[1].contents = json::array({user_prompt()});
  const auto retried = names(f.check());
  CHECK(std::count(retried.begin(), retried.end(), "at-most-once") == 1);
}

/// The continue design: the call runs as soon as request 0 delivers it whole; the stream is then
/// reset, and request 1 keeps the cut turn with the call's result and goes on to turn 1.
Fixture continue_fixture() {
  Fixture f;
  f.journal.erase(f.journal.begin() + 1);
  f.journal[1].index = 1;
  f.journal[1].attempt = 0;
  f.run.ledger = {rut::LedgerEntry{"shell", {{"command", "ls"}}, 0, 0, ""}};
  f.run.requests = 2;
  f.run.events = {{{"type", "request"}, {"seq", 0}}, {{"type", "request"}, {"seq", 1}}};
  return f;
}

TEST_CASE("a continue-design run (call run from the cut attempt, the cut turn kept) violates no invariant") {
  CHECK(continue_fixture().check().empty());
}

TEST_CASE("recorded-execution: a call the kept turn drops is a side effect the model never hears of") {
  Fixture f = continue_fixture();
  f.journal[1].contents = json::array({user_prompt(), {{"role", "model"}, {"parts", json::array({{{"text", ""}}})}}});
  f.run.final_history = json::array({user_prompt()});
  const auto vs = f.check();
  const auto n = names(vs);
  REQUIRE(std::count(n.begin(), n.end(), "recorded-execution") == 1);
  const auto it = std::find_if(vs.begin(), vs.end(), [](const Violation& v) { return v.invariant == "recorded-execution"; });
  CHECK(it->message.find("a side effect the model never hears of") != std::string::npos);
  CHECK(it->request == 1);
}

TEST_CASE("recorded-execution: a call run from a cut attempt whose retry delivered another call is never recorded") {
  Fixture f;
  f.journal[0].delivered_calls = {mock::DeliveredCall{"shell", {{"command", "rm -rf build"}}, "", 0}};
  f.run.ledger.insert(f.run.ledger.begin(), rut::LedgerEntry{"shell", {{"command", "rm -rf build"}}, 0, 0, ""});
  const auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "recorded-execution") == 1);
  CHECK(std::count(n.begin(), n.end(), "at-most-once") == 1);  // one intended call, two side effects
}

TEST_CASE("recorded-execution: the last turn's call is judged against the final history") {
  Fixture f;
  f.journal.pop_back();  // no request after the call turn
  f.run.final_history = json::array({user_prompt(), model_call()});  // the result never recorded
  f.run.completed = false;
  f.run.error = "retries_exhausted";
  f.run.final_text = "";
  f.run.shown_output = "";
  f.run.events.pop_back();
  auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "recorded-execution") == 1);
  f.run.final_history.push_back(responses(1));
  n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "recorded-execution") == 0);
}

TEST_CASE("at-most-once: a call the server never sent whole ran") {
  Fixture f = continue_fixture();
  f.journal[0].delivered_calls.clear();  // the call's arguments were cut
  const auto vs = f.check();
  const auto n = names(vs);
  CHECK(std::count(n.begin(), n.end(), "at-most-once") == 1);
  CHECK(std::count(n.begin(), n.end(), "history-integrity") == 1);  // and kept in the history
  for (const Violation& v : vs) {
    if (v.invariant == "at-most-once") CHECK(v.message.find("a command the model did not send ran") != std::string::npos);
    if (v.invariant == "history-integrity") CHECK(v.message.find("never sent whole") != std::string::npos);
  }
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

TEST_CASE("history-integrity: a model turn no attempt of its turn played is a phantom turn") {
  Fixture f;
  f.journal[0].turn = f.journal[1].turn = 5;  // turn 0 was never played, yet request 2 carries it
  const auto vs = f.check();
  const auto it = std::find_if(vs.begin(), vs.end(), [](const Violation& v) { return v.invariant == "history-integrity"; });
  REQUIRE(it != vs.end());
  CHECK(it->message.find("a phantom turn") != std::string::npos);
}

TEST_CASE("history-integrity: a kept cut turn may hold whole units only") {
  Fixture f = continue_fixture();
  f.journal[0].delivered_text = "Deploying";
  json kept = model_call();
  kept["parts"].insert(kept["parts"].begin(), json{{"text", "Deploy"}});  // a prefix of the delivered text
  f.journal[1].contents = json::array({user_prompt(), kept, responses(1)});
  f.run.final_history[1] = kept;
  f.run.shown_output = "Deploydone";  // the kept cut turn's text is shown, once
  CHECK(f.check().empty());
  kept["parts"][0]["text"] = "Deploying now";  // more than the server delivered
  f.journal[1].contents = json::array({user_prompt(), kept, responses(1)});
  const auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "history-integrity") == 1);
}

TEST_CASE("history-integrity: a kept cut turn grown by its failed continuation's text keeps what the model said") {
  // qwen-code 0.24.4: a cut "Hel" kept as model turn 0, "Resume directly"; the continuation is cut
  // after "lo" too, and the kept turn becomes "Hello" before the same prompt is sent again.
  Fixture f;
  f.journal.clear();
  f.journal.push_back(entry(0, 0, 0, json::array({user_prompt()}), false));
  f.journal[0].delivered_text = "Hel";
  f.journal.push_back(entry(1, 1, 0, json::array({user_prompt(), model_text("Hel"), resume_prompt()}), false));
  f.journal[1].delivered_text = "lo";
  f.journal.push_back(entry(2, 1, 1, json::array({user_prompt(), model_text("Hello"), resume_prompt()}), true));
  f.journal[2].delivered_text = "!";
  CHECK(kept_cut_text(f.journal, 0, nullptr) == "Hel");
  CHECK(kept_cut_text(f.journal, 1, nullptr) == "lo");  // merged into turn 0, not a turn of its own
  auto integrity = [&] {
    const auto n = names(f.check());
    return std::count(n.begin(), n.end(), "history-integrity");
  };
  CHECK(integrity() == 0);
  // In a session the black-box judge drops the "Resume directly" content as the agent's own note
  // (strip_preamble): the continuation's history then ends with the kept turn.
  const json with_prompt = f.journal[1].contents;
  f.journal[1].contents = json::array({user_prompt(), model_text("Hel")});
  CHECK(kept_cut_text(f.journal, 1, nullptr) == "lo");
  f.journal[1].contents = with_prompt;
  f.journal[1].delivered_text = "la";  // the continuation said "la": "Hello" was never said
  CHECK_FALSE(kept_cut_text(f.journal, 1, nullptr).has_value());
  CHECK(integrity() == 1);
  f.journal[1].delivered_text = "lo";
  f.journal[2].contents[1] = model_text("Hellolo");  // the continuation's text merged twice
  CHECK(integrity() == 1);
  // The continuation repeats the kept end ("lo there" again): the turn leaves the repeat out, and
  // the user was shown it.
  f.journal[0].delivered_text = "Hello there";
  f.journal[1].contents[1] = model_text("Hello there");
  f.journal[1].delivered_text = "lo there, friend";
  f.journal[2].contents[1] = model_text("Hello there, friend");
  CHECK(kept_cut_text(f.journal, 1, nullptr) == "lo there, friend");
  CHECK(integrity() == 0);
  // A repeat too short for qwen-code to drop (under 4 characters and 6 bytes) is no repeat: "I have
  // 10" then "0 items" is "I have 100 items", not the "I have 10 items" the history says (a
  // newcomer's case).
  f.journal[0].delivered_text = "I have 10";
  f.journal[1].contents[1] = model_text("I have 10");
  f.journal[1].delivered_text = "0 items";
  f.journal[2].contents[1] = model_text("I have 10 items");
  CHECK_FALSE(kept_cut_text(f.journal, 1, nullptr).has_value());
  CHECK(integrity() == 1);
}

TEST_CASE("a completed continuation that only repeated the kept text's end merged nothing, yet was the answer") {
  // qwen-code 0.24.4 (explore case c1): "All set!" cut and kept; the continuation answers "All
  // set!" again, which qwen drops whole as the overlap, so the kept turn does not grow; the user
  // was shown it, and the next request asks for the same turn again.
  Fixture f;
  const json again = {{"role", "user"}, {"parts", json::array({{{"text", "Continue where you stopped."}}})}};
  f.journal.clear();
  f.journal.push_back(entry(0, 0, 0, json::array({user_prompt()}), false));
  f.journal[0].delivered_text = "All set!";
  f.journal.push_back(entry(1, 1, 0, json::array({user_prompt(), model_text("All set!"), resume_prompt()}), true));
  f.journal[1].delivered_text = "All set!";
  f.journal.push_back(entry(2, 1, 1, json::array({user_prompt(), model_text("All set!"), again}), true));
  f.journal[2].delivered_text = "Continued.";
  CHECK(continuation_merged(f.journal, 1));
  CHECK_FALSE(answer_discarded(f.journal, 1));
  // The same requests after a turn 0 that completed: a session prompt's answer asked for again
  // (opencode retries an answer cut after its finish), not a continuation.
  f.journal[0].completed = true;
  CHECK_FALSE(continuation_merged(f.journal, 1));
  CHECK(answer_discarded(f.journal, 1));
  f.journal[0].completed = false;
  // A repeat too short to be one (qwen keeps "ok!" twice): nothing merged, the answer discarded.
  f.journal[0].delivered_text = "ok!";
  f.journal[1].contents[1] = model_text("ok!");
  f.journal[1].delivered_text = "ok!";
  f.journal[2].contents[1] = model_text("ok!");
  CHECK_FALSE(continuation_merged(f.journal, 1));
  CHECK(answer_discarded(f.journal, 1));
}

TEST_CASE("honest-outcome: a refused continuation merged into the kept turn is a refusal treated as an answer") {
  // A newcomer's case: the agent keeps a cut "Hel", its continuation ends with a content-filter
  // finish after "lo", and it appends "lo" to the kept turn and asks again (the same turn number):
  // the refusal is kept as if the model had answered.
  Fixture f;
  mock::Attempt cut;
  cut.events = {mock::TextEvent{"Hel"}, mock::FinishEvent{}};
  mock::Attempt refused;
  refused.events = {mock::TextEvent{"lo"}, mock::FinishEvent{mock::FinishReason::kContentFilter}};
  mock::Attempt done;
  done.events = {mock::TextEvent{"!"}, mock::FinishEvent{}};
  f.scenario.script.turns = {mock::Turn{{cut}}, mock::Turn{{refused, done}}};
  f.journal.clear();
  f.journal.push_back(entry(0, 0, 0, json::array({user_prompt()}), false));
  f.journal[0].delivered_text = "Hel";
  f.journal[0].events_delivered = 1;
  f.journal[0].fault = "reset";
  f.journal.push_back(entry(1, 1, 0, json::array({user_prompt(), model_text("Hel"), resume_prompt()}), false));
  f.journal[1].delivered_text = "lo";
  f.journal[1].events_delivered = 2;
  f.journal.push_back(entry(2, 1, 1, json::array({user_prompt(), model_text("Hello"), resume_prompt()}), true));
  f.journal[2].delivered_text = "!";
  f.journal[2].events_delivered = 2;
  f.run.ledger.clear();
  f.run.final_history = nullptr;
  auto refusal_kept = [&] {
    for (const Violation& v : f.check()) {
      if (v.invariant == "honest-outcome" && v.message.find("a refusal treated as an answer") != std::string::npos) return true;
    }
    return false;
  };
  CHECK(refusal_kept());
  // Not merged (the next request's kept turn did not grow): asked again, not kept.
  f.journal[2].contents[1] = model_text("Hel");
  CHECK_FALSE(refusal_kept());
}

TEST_CASE("a kept cut turn the runtime later dropped is no longer kept text") {
  // qwen-code 0.24.4 (explore case c99): "Checking." cut and kept as model turn 0, "Resume
  // directly"; the continuation delivers nothing, and qwen gives the kept turn up and asks for turn
  // 0 afresh, whose answer "On it. " is the conversation's turn 0. The user is owed "On it. " only.
  Fixture f;
  f.journal.clear();
  f.journal.push_back(entry(0, 0, 0, json::array({user_prompt()}), false));
  f.journal[0].delivered_text = "Checking.";
  f.journal.push_back(entry(1, 1, 0, json::array({user_prompt(), model_text("Checking."), resume_prompt()}), true));
  CHECK(kept_cut_text(f.journal, 0, nullptr) == "Checking.");  // kept while no later request says otherwise
  f.journal.push_back(entry(2, 0, 1, json::array({user_prompt()}), true));
  f.journal[2].delivered_text = "On it. ";
  CHECK_FALSE(kept_cut_text(f.journal, 0, nullptr).has_value());  // asked for turn 0 afresh: dropped
  // A later history whose turn 0 is another answer drops it too; one that grew it keeps it.
  f.journal[2] = entry(2, 1, 1, json::array({user_prompt(), model_text("On it. "), resume_prompt()}), true);
  CHECK_FALSE(kept_cut_text(f.journal, 0, nullptr).has_value());
  f.journal[2].contents[1] = model_text("Checking. Done.");
  CHECK(kept_cut_text(f.journal, 0, nullptr) == "Checking.");
  // A continuation's text merged into the kept turn, then the whole turn given up (explore case
  // c6): neither the kept text nor the merged text is kept.
  f.journal.resize(1);
  f.journal[0].delivered_text = "Hel";
  f.journal.push_back(entry(1, 1, 0, json::array({user_prompt(), model_text("Hel"), resume_prompt()}), false));
  f.journal[1].delivered_text = "lo";
  f.journal.push_back(entry(2, 1, 1, json::array({user_prompt(), model_text("Hello"), resume_prompt()}), true));
  CHECK(kept_cut_text(f.journal, 0, nullptr) == "Hel");
  CHECK(kept_cut_text(f.journal, 1, nullptr) == "lo");
  f.journal.push_back(entry(3, 0, 1, json::array({user_prompt()}), true));
  CHECK_FALSE(kept_cut_text(f.journal, 0, nullptr).has_value());
  CHECK_FALSE(kept_cut_text(f.journal, 1, nullptr).has_value());
}

TEST_CASE("history-integrity: text glued onto a completed turn after its function responses is no merged continuation") {
  // A newcomer's case: turn 1's failed text appended to turn 0 (a call and its result), with no
  // continuation prompt between: not what a continue runtime keeps.
  Fixture f;
  f.journal[2].completed = false;
  f.journal[2].delivered_text = "do";
  json glued = model_call();
  glued["parts"].push_back(json{{"text", "do"}});
  f.journal.push_back(entry(3, 1, 1, json::array({user_prompt(), glued, responses(1)}), true));
  f.journal[3].delivered_text = "done";
  const auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "history-integrity") == 1);
}

TEST_CASE("a continuation's completed answer merged into the kept turn: its calls are recorded there, and the next request for that turn asks for a new reply") {
  // qwen-code: turn 0 cut after "Hel" and kept; the continuation (asked for as turn 1) completes
  // with a call, which is appended to the kept turn, run, and answered; the next request has one
  // model turn again, so the engine serves turn 1 once more: a new reply, whose call is a new one.
  Fixture f;
  json merged = model_call();
  merged["parts"].insert(merged["parts"].begin(), json{{"text", "Hello"}});
  f.journal.clear();
  f.journal.push_back(entry(0, 0, 0, json::array({user_prompt()}), false));
  f.journal[0].delivered_text = "Hel";
  f.journal.push_back(entry(1, 1, 0,
                            json::array({user_prompt(), model_text("Hel"), resume_prompt()}),
                            true));
  f.journal[1].delivered_text = "lo";
  f.journal[1].delivered_calls = {mock::DeliveredCall{"shell", {{"command", "ls"}}, "", 0}};
  f.journal.push_back(entry(2, 1, 1, json::array({user_prompt(), merged, responses(1)}), true));
  f.journal[2].delivered_calls = {mock::DeliveredCall{"shell", {{"command", "ls"}}, "", 0}};
  f.journal.push_back(entry(3, 2, 0, json::array({user_prompt(), merged, responses(1), model_call(), responses(1)}), true));
  f.journal[3].delivered_text = "done";
  f.run.ledger = {rut::LedgerEntry{"shell", {{"command", "ls"}}, 1, 0, ""}, rut::LedgerEntry{"shell", {{"command", "ls"}}, 2, 0, ""}};
  f.run.final_history = nullptr;
  CHECK_FALSE(answer_discarded(f.journal, 1));  // merged into turn 0: kept
  const auto n = names(f.check());
  for (const char* invariant : {"at-most-once", "recorded-execution", "history-integrity", "pairing"}) {
    INFO(invariant);
    CHECK(std::count(n.begin(), n.end(), invariant) == 0);
  }
  // Without the merge (the next request's kept turn did not grow), request 2 asks for turn 1's
  // reply again: the call ran twice for one intention.
  f.journal[2].contents = json::array({user_prompt(), model_text("Hel"), resume_prompt()});
  const auto again = names(f.check());
  CHECK(std::count(again.begin(), again.end(), "at-most-once") == 1);
}

TEST_CASE("history-integrity: whitespace around a turn's text is no content, anything else is") {
  // gemini-cli 0.61.0 sends a resumed session's completed turn "On it. " back as "On it." (stop 63).
  Fixture f;
  f.journal[1].delivered_text = "On it. ";
  auto with_text = [&](const std::string& text) {
    json turn = model_call();
    turn["parts"].insert(turn["parts"].begin(), json{{"text", text}});
    f.journal[2].contents = json::array({user_prompt(), turn, responses(1)});
    f.run.final_history[1] = turn;
    f.run.shown_output = "On it. done";
    const auto n = names(f.check());
    return std::count(n.begin(), n.end(), "history-integrity");
  };
  CHECK(with_text("On it. ") == 0);
  CHECK(with_text("On it.") == 0);
  CHECK(with_text("\nOn it.\n") == 0);
  CHECK(with_text("On it!") == 1);
  CHECK(with_text("On it. On it. ") == 1);
  CHECK(with_text("On  it.") == 1);  // inside the text, a space is content
}

TEST_CASE("history-integrity: a duplicated call in a committed turn differs from the delivery") {
  Fixture f;
  json doubled = model_call();
  doubled["parts"].push_back(doubled["parts"][0]);
  f.journal[2].contents = json::array({user_prompt(), doubled, responses(2)});
  const auto vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"history-integrity"});
  CHECK(vs[0].message.find("which no attempt of that turn delivered (request 1 completed it as") != std::string::npos);
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

TEST_CASE("bounded-retries: giving up on a failure the provider marks retryable with budget left") {
  Fixture f;
  f.scenario.script.turns[0].attempts[0] = mock::Attempt{503, std::nullopt, {}, std::nullopt, std::nullopt};
  f.journal.resize(1);
  f.journal[0].played = "status";
  f.journal[0].response_status = 503;
  f.journal[0].fault.clear();
  f.journal[0].delivered_calls.clear();
  f.journal[0].events_delivered = 0;
  f.run.completed = false;
  f.run.error = "retries_exhausted";
  f.run.final_text = f.run.shown_output = "";
  f.run.ledger.clear();
  f.run.requests = 1;
  f.run.events = {{{"type", "request"}, {"seq", 0}}};
  f.run.final_history = json::array({user_prompt()});
  auto vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"bounded-retries"});
  CHECK(vs[0].message.find("gave up on turn 0 after request 0 (turn 0, attempt 0) answered HTTP 503") != std::string::npos);
  CHECK(vs[0].message.find("3 of 4 attempts left") != std::string::npos);
  CHECK(f.check(1).empty());  // the budget was spent: giving up is right

  f.journal[0].response_status = 400;  // not retryable: the run must stop
  f.scenario.script.turns[0].attempts[0].status = 400;
  f.run.error = "invalid_request";
  f.run.final_history = json::array();  // the rejected prompt leaves history
  std::string seen;
  for (const Violation& v : f.check()) seen += v.invariant + ": " + v.message + "\n";
  CHECK(seen == "");

  // An in-stream error event carrying a retryable status (Anthropic's overloaded_error).
  f.scenario.script.turns[0].attempts[0] = mock::Attempt{std::nullopt, std::nullopt, {mock::TextEvent{"Hel"}},
                                                         mock::Fault{mock::ErrorEventFault{0, 529}}, std::nullopt};
  f.journal[0].played = "stream";
  f.journal[0].response_status = 200;
  f.journal[0].fault = "error_event";
  f.run.error = "retries_exhausted";
  vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"bounded-retries"});
  CHECK(vs[0].message.find("in-stream error event (status 529)") != std::string::npos);

  // A content-filter finish before the error event ends the attempt first: no give-up.
  f.scenario.script.turns[0].attempts[0].events = {mock::FinishEvent{mock::FinishReason::kContentFilter}};
  f.scenario.script.turns[0].attempts[0].fault = mock::Fault{mock::ErrorEventFault{1, 503}};
  f.journal[0].events_delivered = 1;
  f.run.error = "content_filter";
  CHECK(f.check().empty());
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
  f.run.final_history.erase(f.run.final_history.end() - 1);  // the filtered answer was never kept
  const auto vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"honest-outcome"});
  CHECK(vs[0].message.find("content-filter") != std::string::npos);
}

TEST_CASE("honest-outcome: a refusal continued past is named on the request that went on, caused by the refused one") {
  Fixture f;
  // Request 1 (turn 0, attempt 1) delivers a content-filter finish; request 2 goes on to turn 1.
  f.scenario.script.turns[0].attempts[1].events = {mock::TextEvent{"I can"}, mock::FinishEvent{mock::FinishReason::kContentFilter}};
  f.journal[1].completed = false;
  f.journal[1].delivered_calls.clear();
  f.journal[1].delivered_text = "I can";
  const auto vs = f.check();
  const auto v = std::find_if(vs.begin(), vs.end(), [](const Violation& x) {
    return x.message.find("a refusal treated as an answer") != std::string::npos;
  });
  REQUIRE(v != vs.end());
  CHECK(v->invariant == "honest-outcome");
  CHECK(v->request == 2);
  CHECK(v->cause_request == 1);
  // Other violations follow their own request.
  for (const Violation& x : vs) {
    if (&x != &*v) CHECK(x.cause_request == -1);
  }
}

TEST_CASE("honest-outcome: a max_tokens final answer is reported as truncated, and only then") {
  Fixture f;
  f.scenario.script.turns[1].attempts[0].events = {mock::TextEvent{"done"}, mock::FinishEvent{mock::FinishReason::kMaxTokens}};
  auto vs = f.check();
  REQUIRE(names(vs) == std::vector<std::string>{"honest-outcome"});
  CHECK(vs[0].message.rfind("a truncated answer reported as whole", 0) == 0);
  f.run.truncated = true;
  CHECK(f.check().empty());
  // A black box has no truncation flag to read.
  f.run.truncated = false;
  CHECK(check_invariants(Evidence{f.scenario, f.run, f.journal, 4, "", false, false, /*reports_truncation=*/false}).empty());
  Fixture whole;
  whole.run.truncated = true;
  vs = whole.check();
  REQUIRE(names(vs) == std::vector<std::string>{"honest-outcome"});
  CHECK(vs[0].message.rfind("a whole answer reported as truncated", 0) == 0);
}

TEST_CASE("expect.truncated is judged when the run failed too") {
  Fixture f;
  f.scenario.expect.truncated = true;
  f.run.completed = false;
  f.run.error = "non_retryable";
  const auto vs = check_expect(Evidence{f.scenario, f.run, f.journal, 4, ""});
  REQUIRE(vs.size() == 1u);
  CHECK(vs[0].invariant == "expect.truncated");
  CHECK(vs[0].message == "expected a truncated answer, the run failed (non_retryable)");
}

TEST_CASE("honest-outcome: a call whose arguments a max_tokens finish cut never runs") {
  Fixture f;
  // Turn 1 delivers the text, then the limit cuts a second shell call inside its arguments.
  mock::FinishEvent cut{mock::FinishReason::kMaxTokens};
  cut.after_fragment = 1;
  f.scenario.script.turns[1].attempts[0].events = {mock::TextEvent{"done"},
                                                   mock::CallEvent{"shell", {{"command", "rm -rf /tmp/x"}}, "", 3}, cut};
  f.journal[2].events_delivered = 3;
  f.run.truncated = true;
  CHECK(f.check().empty());
  f.run.ledger.push_back(rut::LedgerEntry{"shell", {{"command", "rm -rf /t"}}, 2, 0, ""});
  const auto vs = f.check();
  const auto n = names(vs);
  REQUIRE(std::count(n.begin(), n.end(), "honest-outcome") == 1);
  const auto it = std::find_if(vs.begin(), vs.end(), [](const Violation& v) { return v.invariant == "honest-outcome"; });
  CHECK(it->message.rfind("a command the token limit cut ran: tool \"shell\"", 0) == 0);
  // It is not reported again as at-most-once's "never sent whole".
  CHECK(std::none_of(vs.begin(), vs.end(), [](const Violation& v) { return v.invariant == "at-most-once"; }));
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

TEST_CASE("clean-output: an answer the runtime asked for again is not kept, its text is not wanted twice") {
  // Turn 1's first answer completed (its finish delivered), then its stream failed after the
  // finish and the runtime asked for turn 1 again: only the repeat is the kept answer.
  Fixture f;
  mock::JournalEntry again = f.journal[2];
  again.index = 3;
  again.attempt = 1;
  f.journal.push_back(again);
  CHECK_FALSE(answer_discarded(f.journal, 0));  // did not complete
  CHECK_FALSE(answer_discarded(f.journal, 1));  // the next request asks for turn 1
  CHECK(answer_discarded(f.journal, 2));
  CHECK_FALSE(answer_discarded(f.journal, 3));  // no request follows
  f.run.requests = 4;
  const auto n = names(f.check());
  CHECK(std::count(n.begin(), n.end(), "clean-output") == 0);
  f.run.shown_output = "donedone";  // shown twice: the discarded answer glued to its repeat
  const auto twice = names(f.check());
  CHECK(std::count(twice.begin(), twice.end(), "clean-output") == 1);
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

TEST_CASE("the catalogue lists DESIGN.md's eight invariants, then no-unchanged-content-filter-retry, liveness, no-execution-after-cancel and no-request-after-cancel") {
  std::vector<std::string> n;
  for (const auto& i : invariant_catalogue()) n.emplace_back(i.name);
  CHECK(n == std::vector<std::string>{"at-most-once", "recorded-execution", "pairing", "history-integrity", "no-rejected-request",
                                      "bounded-retries", "honest-outcome", "clean-output",
                                      "no-unchanged-content-filter-retry", "liveness", "no-execution-after-cancel",
                                      "no-request-after-cancel"});
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
  CHECK(retries[0].cause_request == 0);  // the status whose wait was cut short, whatever request 1 met
  CHECK(retries[0].message == "the provider's Retry-After was ignored: request 1 (turn 0, attempt 1) retried 1200 ms after request 0 (turn 0, attempt 0) ended, but the server asked for 2000 ms (Retry-After / RetryInfo)");
  f.journal[1].arrived_ms = 2100;  // 2.0 s later: honoured
  Evidence late{f.scenario, f.run, f.journal, 10, "", true};
  for (const auto& v : check_invariants(late)) CHECK(v.invariant != "bounded-retries");
}

/// The provider sends call `first` and then `second` with `first`'s id "c1" (reuse_id): in one
/// answer (`same_turn`), or `second` in the next turn. The runtime answers and, per `ledger`, runs
/// them; `kept` is what the history holds of the answer with `second` (ids as the runtime gives
/// them). A last turn says "done".
struct IdFixture {
  Scenario scenario;
  rut::RunResult run;
  mock::Journal journal;
  IdFixture(const json& first_args, const json& second_args, bool same_turn) {
    scenario.name = "ids";
    scenario.prompt = "go";
    const mock::CallEvent first{"shell", first_args, "c1"};
    const mock::CallEvent second{"shell", second_args, "c1", 0, true};
    mock::Attempt done;
    done.events = {mock::TextEvent{"done"}, mock::FinishEvent{}};
    const mock::DeliveredCall d1{"shell", first_args, "c1", 0};
    json call1 = {{"functionCall", {{"name", "shell"}, {"args", first_args}, {"id", "c1"}}}};
    json call2 = {{"functionCall", {{"name", "shell"}, {"args", second_args}, {"id", "c1_dup1"}}}};
    json answer1 = {{"functionResponse", {{"name", "shell"}, {"id", "c1"}, {"response", {{"output", "shell: ok"}}}}}};
    json answer2 = {{"functionResponse", {{"name", "shell"}, {"id", "c1_dup1"}, {"response", {{"output", "shell: ok"}}}}}};
    json h = json::array({user_prompt()});
    if (same_turn) {
      mock::Attempt a;
      a.events = {first, second, mock::FinishEvent{}};
      scenario.script.turns = {mock::Turn{{a}}, mock::Turn{{done}}};
      journal.push_back(entry(0, 0, 0, h, true));
      journal[0].events_delivered = 3;
      journal[0].delivered_calls = {d1, mock::DeliveredCall{"shell", second_args, "c1", 1, true}};
      h.push_back({{"role", "model"}, {"parts", json::array({call1, call2})}});
      h.push_back({{"role", "user"}, {"parts", json::array({answer1, answer2})}});
    } else {
      mock::Attempt a, b;
      a.events = {first, mock::FinishEvent{}};
      b.events = {second, mock::FinishEvent{}};
      scenario.script.turns = {mock::Turn{{a}}, mock::Turn{{b}}, mock::Turn{{done}}};
      journal.push_back(entry(0, 0, 0, h, true));
      journal[0].events_delivered = 2;
      journal[0].delivered_calls = {d1};
      h.push_back({{"role", "model"}, {"parts", json::array({call1})}});
      h.push_back({{"role", "user"}, {"parts", json::array({answer1})}});
      journal.push_back(entry(1, 1, 0, h, true));
      journal[1].events_delivered = 2;
      journal[1].delivered_calls = {mock::DeliveredCall{"shell", second_args, "c1", 0, true}};
      h.push_back({{"role", "model"}, {"parts", json::array({call2})}});
      h.push_back({{"role", "user"}, {"parts", json::array({answer2})}});
    }
    journal.push_back(entry(journal.size(), same_turn ? 1 : 2, 0, h, true));
    journal.back().events_delivered = 2;
    journal.back().delivered_text = "done";
    run.completed = true;
    run.final_text = "done";
    run.shown_output = "done";
    run.requests = static_cast<int>(journal.size());
    run.ledger = {rut::LedgerEntry{"shell", first_args, 0, 0, "c1"},
                  rut::LedgerEntry{"shell", second_args, same_turn ? 0 : 1, same_turn ? 1 : 0, "c1_dup1"}};
    h.push_back({{"role", "model"}, {"parts", json::array({{{"text", "done"}}})}});
    run.final_history = h;
  }
  std::vector<Violation> check() const { return check_invariants(Evidence{scenario, run, journal}); }
};

const json kLs = {{"command", "ls"}};
const json kCat = {{"command", "cat README.md"}};

TEST_CASE("at-most-once: a replayed call (same id, name and arguments) that runs again ran twice, in one answer or from an earlier turn") {
  for (const bool same_turn : {true, false}) {
    IdFixture f(kLs, kLs, same_turn);
    const auto vs = f.check();
    INFO((same_turn ? "in one answer" : "from an earlier turn"));
    REQUIRE(names(vs) == std::vector<std::string>{"at-most-once"});
    CHECK(vs[0].message == std::string("tool \"shell\" {\"command\":\"ls\"} ran 2 times for one intended call: call 0 of turn 0, "
                                       "delivered by ") +
                               (same_turn ? "request 0: call 1 of request 0" : "requests 0, 1: call 0 of request 1") +
                               " replayed it (the same id \"c1\", name and arguments), and a replay is answered, not run again");
    // Answered without running again: no violation.
    f.run.ledger.pop_back();
    CHECK(f.check().empty());
  }
}

TEST_CASE("two different calls with one id are two calls: both run, and a history that drops one is named") {
  for (const bool same_turn : {true, false}) {
    IdFixture f(kLs, kCat, same_turn);
    INFO((same_turn ? "in one answer" : "from an earlier turn"));
    CHECK(f.check().empty());
    if (!same_turn) continue;
    // Keyed by id: the history keeps one call of the two (and one answer).
    for (auto& e : f.journal) {
      if (e.turn != 1) continue;
      e.contents[1]["parts"].erase(1);
      e.contents[2]["parts"].erase(1);
    }
    f.run.ledger.pop_back();
    const auto vs = f.check();
    REQUIRE(names(vs) == std::vector<std::string>{"history-integrity"});
    CHECK(vs[0].message.find("duplicated, dropped or invented content") != std::string::npos);
  }
}

TEST_CASE("history-integrity: a history that records a replayed call once keeps the conversation the model had") {
  IdFixture f(kLs, kLs, true);
  f.run.ledger.pop_back();
  for (auto& e : f.journal) {
    if (e.turn != 1) continue;
    e.contents[1]["parts"].erase(1);
    e.contents[2]["parts"].erase(1);
  }
  CHECK(f.check().empty());
}

}  // namespace
}  // namespace harness
