// The black-box exploration's pure parts: failure signatures (what broke and where the fault fell),
// the confirmation rule, the generation limits for an agent (every case playable by it, lint clean,
// the same cases for the same seed), and delta debugging with a judge of any kind (minimize_by).
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "harness/agents/agent_explorer.h"
#include "harness/agents/cancel_hold.h"
#include "harness/explore/minimize.h"
#include "harness/scenario_io.h"
#include "harness/transcript.h"

namespace harness::agents {
namespace agent_explorer_test {  // its own names in a unity batch (CMakeLists.txt, HICCUP_UNITY_BUILD)
namespace {

constexpr const char* kResetAfterCall = R"({
  "schema": 1, "name": "sig-reset-after-call", "prompt": "Deploy.",
  "turns": [
    { "attempts": [
        { "status": 503 },
        { "events": [ { "text": "On it." }, { "call": { "name": "run_shell_command", "args": { "command": "{{ledger}}" } } } ],
          "fault": { "kind": "reset", "after_event": 2, "idle_ms": 5 } },
        { "events": [ { "call": { "name": "run_shell_command", "args": { "command": "{{ledger}}" } } },
                      { "finish": "stop" } ] } ] },
    { "attempts": [ { "events": [ { "text": "Deployed." }, { "finish": "content_filter" } ] },
                    { "events": [ { "text": "Deployed." }, { "finish": "stop" } ] } ] }
  ]
})";

/// A command recipe of `provider` whose tool is `tool` with a `command` argument, with an attempt
/// budget and a declared cancel (so sessions and interrupts are generated for it).
Recipe cancelling_recipe(const std::string& provider, const std::string& tool, int max_attempts) {
  Recipe recipe = command_recipe("true", provider);
  recipe.tool_name = tool;
  recipe.tool_command_arg = "command";
  recipe.max_attempts = max_attempts;
  recipe.cancel = RecipeCancel{};
  recipe.cancel->resume_argv = {"true"};
  recipe.cancel->why = "test";
  return recipe;
}

Scenario load(const char* text) {
  LoadResult r = parse_scenario(text, "test.json");
  for (const auto& p : r.problems) INFO(format_problem(p));
  REQUIRE(r.scenario);
  return *r.scenario;
}

/// A journal entry that played (turn, script attempt) and did or did not complete.
mock::JournalEntry entry(std::size_t index, int turn, int attempt, bool completed, const std::string& played = "stream") {
  mock::JournalEntry e;
  e.index = index;
  e.method = "POST";
  e.played = played;
  e.turn = turn;
  e.attempt = attempt;
  e.script_attempt = attempt;
  e.completed = completed;
  return e;
}

TEST_CASE("fault_description names the fault kind and where it fell, a status, or an abnormal finish") {
  const Scenario s = load(kResetAfterCall);
  CHECK(fault_description(s, entry(0, 0, 0, false, "status")) == "status 503");
  CHECK(fault_description(s, entry(1, 0, 1, false)) == "reset after a call");
  CHECK(fault_description(s, entry(2, 0, 2, true)) == "");  // completed: nothing went wrong there
  CHECK(fault_description(s, entry(3, 1, 0, false)) == "finish content_filter");
  CHECK(fault_description(s, entry(4, 7, 0, false)) == "");  // a turn the script does not have
  CHECK(fault_description(s, entry(5, 0, 0, false, "rejected")) == "");  // the client's own bad request

  Scenario cut = s;
  std::get<mock::ResetFault>(*cut.script.turns[0].attempts[1].fault).after_event = 1;
  CHECK(fault_description(cut, entry(1, 0, 1, false)) == "reset after text");
  std::get<mock::ResetFault>(*cut.script.turns[0].attempts[1].fault).after_event = 0;
  CHECK(fault_description(cut, entry(1, 0, 1, false)) == "reset before any event");
  cut.script.turns[0].attempts[1].fault = mock::CutFault{1, 3, 0};
  CHECK(fault_description(cut, entry(1, 0, 1, false)) == "cut inside a call's arguments");
  cut.script.turns[0].attempts[1].fault.reset();
  CHECK(fault_description(cut, entry(1, 0, 1, false)) == "no terminal event");
  cut.script.turns[0].attempts[0].retry_after_s = 2;
  CHECK(fault_description(cut, entry(0, 0, 0, false, "status")) == "status 503, with Retry-After");
  // A status that must not be retried is one failure with Retry-After or without (codex retries a
  // 401 either way: two signatures for one bug until stop 55).
  cut.script.turns[0].attempts[0].status = 401;
  CHECK(fault_description(cut, entry(0, 0, 0, false, "status")) == "status 401");
}

TEST_CASE("a signature is the sorted violated names and the fault at or before the first request a violation names") {
  const Scenario s = load(kResetAfterCall);
  const mock::Journal journal = {entry(0, 0, 0, false, "status"), entry(1, 0, 1, false), entry(2, 0, 2, true),
                                 entry(3, 1, 0, false), entry(4, 1, 1, true)};
  // The duplicate execution names the retry (request 2): the reset before it is the fault, not the
  // 503 before that nor the content filter after it.
  const std::vector<Violation> dup = {{"pairing", "the session is dead: …", 3, 1, 0},
                                      {"at-most-once", "tool … ran 2 times …", 2, 0, 2},
                                      {"expect.executions", "expected 1, ran 2"}};
  const FailureSignature sig = failure_signature(s, journal, dup);
  CHECK(sig.invariants == std::vector<std::string>{"at-most-once", "pairing"});  // expect.* only when alone
  CHECK(sig.fault == "reset after a call");
  CHECK(sig.text() == "at-most-once, pairing | reset after a call");
  // The same harms in another order are the same signature.
  const std::vector<Violation> reordered = {dup[1], dup[2], dup[0]};
  CHECK(failure_signature(s, journal, reordered) == sig);

  // The black-box verdicts that follow a harm (the agent stopped early) are not part of it.
  std::vector<Violation> with_consequences = dup;
  with_consequences.push_back({"scenario-coverage", "turn 2 was never requested, …"});
  with_consequences.push_back({"outcome-agreement", "a correct client completes this scenario; …"});
  CHECK(failure_signature(s, journal, with_consequences) == sig);
  // No violation names a request: the last attempt that did not complete.
  const FailureSignature outcome = failure_signature(s, journal, {{"outcome-agreement", "a correct client completes …"}});
  CHECK(outcome.invariants == std::vector<std::string>{"outcome-agreement"});
  CHECK(outcome.fault == "finish content_filter");
  // Only expect fields: they are the signature.
  CHECK(failure_signature(s, journal, {{"expect.executions", "…"}}).invariants == std::vector<std::string>{"expect.executions"});
  // A violation at the first request with nothing wrong before it: the first trouble after it.
  const mock::Journal clean_first = {entry(0, 0, 2, true), entry(1, 1, 0, false)};
  CHECK(failure_signature(s, clean_first, {{"history-integrity", "…", 0, 0, 0}}).fault == "finish content_filter");
  // Every attempt completed.
  CHECK(failure_signature(s, {entry(0, 0, 2, true)}, {{"liveness", "…"}}).fault == "no fault");
  // Every attempt completed, but a fault fired after a finish (gemini-cli retries on an error
  // event that follows its terminal frame): that fault.
  Scenario after_finish = s;
  after_finish.script.turns[0].attempts[2].fault = mock::ErrorEventFault{2, 503, std::nullopt};
  mock::JournalEntry fired = entry(2, 0, 2, true);
  fired.fault = "error_event";
  CHECK(failure_signature(after_finish, {fired, entry(3, 0, 3, true)}, {{"at-most-once", "…", 3, 0, 3}}).fault ==
        "error_event after the finish");
  // A harm of delivery skips an empty failed attempt between the cut and the retry: the call ran
  // twice because of the cut, not because of the 503 after it.
  mock::JournalEntry cut_call = entry(1, 0, 1, false);
  cut_call.delivered_calls.push_back({"run_shell_command", nlohmann::json::object(), "", 0});
  const mock::Journal cut_then_503 = {cut_call, entry(2, 0, 0, false, "status"), entry(3, 0, 2, true)};
  CHECK(failure_signature(s, cut_then_503, {{"at-most-once", "…", 3, 0, 2}}).fault == "reset after a call");
  CHECK(failure_signature(s, cut_then_503, {{"bounded-retries", "…", 3, 0, 2}}).fault == "status 503");
  // Another fault is another signature, though the harms are the same.
  Scenario other = s;
  other.script.turns[0].attempts[1].fault = mock::DisconnectFault{2, 0, std::nullopt};
  CHECK(failure_signature(other, journal, dup) != sig);
  CHECK(failure_signature(other, journal, dup).fault == "disconnect after a call");
}

TEST_CASE("a refusal continued past is signed by the refusal, whatever fault the request that went on met") {
  // Turn 0 is refused; the agent goes on to turn 1, whose first attempt meets an in-stream error.
  const Scenario s = load(R"({
    "schema": 1, "name": "sig-refusal-continued", "prompt": "Deploy.",
    "turns": [
      { "attempts": [ { "events": [ { "text": "Retrying later." }, { "finish": "content_filter" } ] } ] },
      { "attempts": [ { "events": [ { "text": "Done." } ], "fault": { "kind": "error_event", "after_event": 1, "status": 500 } },
                      { "events": [ { "text": "Done." }, { "finish": "stop" } ] } ] } ]
  })");
  mock::Journal journal = {entry(0, 0, 0, false), entry(1, 1, 0, false), entry(2, 1, 1, true)};
  journal[0].events_delivered = 2;
  journal[1].events_delivered = 1;
  journal[1].fault = "error_event";
  Violation continued{"honest-outcome", "a refusal treated as an answer: …", 1, 1, 0};
  CHECK(failure_signature(s, journal, {continued}).text() == "honest-outcome | error_event after text");
  continued.cause_request = 0;
  CHECK(failure_signature(s, journal, {continued}).text() == "honest-outcome | finish content_filter");
}

TEST_CASE("a harm after the user's cancel is signed by the cancel, not by an earlier fault") {
  // Turn 0's first attempt meets an in-stream error after a call; its retry is cancelled after its
  // text, and the next prompt's request misrecords that turn (claude-code writes "No response
  // requested." there). The cancel is the trouble the harm followed.
  const Scenario s = load(R"({
    "schema": 1, "name": "sig-cancel", "prompt": "Deploy.",
    "session": [ { "prompt": "Continue where you stopped." } ],
    "interrupt": { "turn": 0, "attempt": 1, "after_event": 0 },
    "turns": [
      { "attempts": [ { "events": [ { "call": { "name": "run_shell_command", "args": { "command": "ls" } } } ],
                        "fault": { "kind": "error_event", "after_event": 1, "status": 500 } },
                      { "events": [ { "text": "Step ok." }, { "finish": "stop" } ] } ] },
      { "attempts": [ { "events": [ { "text": "Continued." }, { "finish": "stop" } ] } ] } ]
  })");
  mock::Journal journal = {entry(0, 0, 0, false), entry(1, 0, 1, false), entry(2, 1, 0, true)};
  journal[0].fault = "error_event";
  journal[0].delivered_calls.push_back({"run_shell_command", nlohmann::json::object(), "", 0});
  journal[1].events_delivered = 1;
  journal[1].delivered_text = "Step ok.";
  const Violation misrecorded{"history-integrity", "request 2 records turn 0 as …", 2, 1, 0};
  CHECK(failure_signature(s, journal, {misrecorded}).text() == "history-integrity | cancel after text");
  // Inside a call's arguments, after a call.
  Scenario inside = s;
  inside.script.turns[0].attempts[1].events = {mock::CallEvent{"run_shell_command", {{"command", "ls"}}, "", 3},
                                              mock::FinishEvent{mock::FinishReason::kStop}};
  inside.interrupt->after_fragment = 1;
  CHECK(failure_signature(inside, journal, {misrecorded}).fault == "cancel inside a call's arguments");
  inside.interrupt->after_fragment.reset();
  CHECK(failure_signature(inside, journal, {misrecorded}).fault == "cancel after a call");
  // A harm before the cancel keeps its own fault; so does one of the cancelled request itself
  // (it was sent before the cancel: claude-code retrying a 400, stop 61).
  const Violation twice{"at-most-once", "…", 0, 0, 0};
  CHECK(failure_signature(s, journal, {twice}).fault == "error_event after a call");
  const Violation resent{"bounded-retries", "…", 1, 0, 1};
  CHECK(failure_signature(s, journal, {resent}).fault == "error_event after a call");
  // Without the interrupt, the harm at request 2 walks back to the earlier fault, as before.
  Scenario uncancelled = s;
  uncancelled.interrupt.reset();
  CHECK(failure_signature(uncancelled, journal, {misrecorded}).fault == "error_event after a call");
  // No fault anywhere: a harm of the cancelled request itself (gemini-cli exits 0 after Ctrl-C,
  // success reported for the answer the user stopped) is signed by the cancel, not "no fault".
  Scenario clean = s;
  clean.script.turns[0].attempts.erase(clean.script.turns[0].attempts.begin());
  clean.interrupt->attempt = 0;
  clean.session.clear();
  mock::Journal cut = {entry(0, 0, 0, false)};
  cut[0].events_delivered = 1;
  cut[0].delivered_text = "Step ok.";
  const Violation success{"honest-outcome", "success reported for an answer that never completed: …", 0, 0, 0};
  CHECK(failure_signature(clean, cut, {success}).text() == "honest-outcome | cancel after text");
}

TEST_CASE("a failure is confirmed when K-1 of K re-runs fail the same way, at least one") {
  CHECK(confirmations_needed(3) == 2);
  CHECK(confirmations_needed(5) == 4);
  CHECK(confirmations_needed(2) == 1);
  CHECK(confirmations_needed(1) == 1);
  CHECK(confirmations_needed(0) == 0);  // --confirm 0: not re-run, the first run stands
  CHECK(is_confirmed(2, 3));
  CHECK(is_confirmed(3, 3));
  CHECK_FALSE(is_confirmed(1, 3));  // flaky: failed in 2 of 4 runs counting the first
  CHECK_FALSE(is_confirmed(0, 1));
  CHECK(is_confirmed(0, 0));
}

/// What a scripted re-run shows: the group's signature ('F'), another failure ('O') or a pass ('P').
AgentCaseResult scripted_rerun(char outcome) {
  AgentCaseResult r;
  if (outcome == 'F') r.violations = {{"liveness", "killed", -1, -1, -1}};
  if (outcome == 'O') r.violations = {{"clean-output", "garbage", -1, -1, -1}};
  return r;
}

/// Runs confirm_failures over `groups` (each case fails with "liveness | no fault" first time),
/// case i's re-runs showing scripts[i] in order; counts the re-runs of each case.
struct ConfirmRun {
  std::vector<DistinctFailure> failures;
  std::map<int, int> reruns;
  std::vector<int> decided;  // case indices in the order their verdicts landed
  bool overrun = false;      // a case was re-run more often than its script says
};
ConfirmRun run_confirm(const std::vector<std::vector<int>>& groups, const std::map<int, std::string>& scripts, int confirm,
                       int max_representatives, int jobs) {
  const FailureSignature sig = failure_signature(Scenario{}, {}, {{"liveness", "killed", -1, -1, -1}});
  std::vector<ConfirmGroup> to_confirm;
  for (const auto& cases : groups) to_confirm.push_back({sig, cases});
  ConfirmRun out;
  std::mutex mu;
  out.failures = confirm_failures(
      to_confirm, confirm, max_representatives, jobs,
      [&](int index) {
        std::lock_guard lock(mu);
        const auto k = static_cast<std::size_t>(out.reruns[index]++);
        const std::string& script = scripts.at(index);
        if (k >= script.size()) {  // more re-runs than scripted (checked on the test's thread)
          out.overrun = true;
          return scripted_rerun('P');
        }
        return scripted_rerun(script[k]);
      },
      [&](const DistinctFailure& f, std::size_t) { out.decided.push_back(f.case_index); });
  CHECK_FALSE(out.overrun);
  return out;
}

TEST_CASE("the report's note says whether failures were re-run") {
  CHECK(black_box_note(3).find("may vary") != std::string::npos);
  CHECK(black_box_note(3).find("re-run (--confirm 3)") != std::string::npos);
  CHECK(black_box_note(0).find("were not re-run (--confirm 0)") != std::string::npos);
  CHECK(black_box_note(0).find("each failure was re-run") == std::string::npos);
}

TEST_CASE("confirmation re-runs a case only while its verdict can still change") {
  SECTION("K = 3: two re-runs that agree decide it, a third only when they disagree") {
    const ConfirmRun r = run_confirm({{0}, {1}, {2}}, {{0, "FF"}, {1, "FPF"}, {2, "PFP"}}, 3, 1, 1);
    REQUIRE(r.failures.size() == 3);
    CHECK(r.reruns.at(0) == 2);
    CHECK(r.failures[0].confirmed);
    CHECK(r.failures[0].runs == 3);
    CHECK(r.failures[0].failed_runs == 3);
    CHECK(r.reruns.at(1) == 3);
    CHECK(r.failures[1].confirmed);
    CHECK(r.failures[1].runs == 4);
    CHECK(r.failures[1].failed_runs == 3);
    CHECK(r.failures[1].other_signatures == std::vector<std::string>{"passed"});
    CHECK(r.reruns.at(2) == 3);
    CHECK_FALSE(r.failures[2].confirmed);
    CHECK(r.failures[2].failed_runs == 2);
  }
  SECTION("two re-runs that both miss leave it flaky at once, and the next case of the group is tried") {
    const ConfirmRun r = run_confirm({{4, 7, 9}}, {{4, "PO"}, {7, "FF"}, {9, "FF"}}, 3, 2, 2);
    REQUIRE(r.failures.size() == 1);
    CHECK(r.reruns.at(4) == 2);
    CHECK(r.reruns.at(7) == 2);
    CHECK(r.reruns.count(9) == 0);  // max_representatives 2
    CHECK(r.failures[0].confirmed);
    CHECK(r.failures[0].case_index == 7);
    CHECK(r.decided == std::vector<int>{4, 7});
  }
  SECTION("a group whose cases all stay flaky reports the last one tried") {
    const ConfirmRun r = run_confirm({{1, 2}}, {{1, "PP"}, {2, "OP"}}, 3, 2, 2);
    REQUIRE(r.failures.size() == 1);
    CHECK_FALSE(r.failures[0].confirmed);
    CHECK(r.failures[0].case_index == 2);
    CHECK(r.failures[0].runs == 3);
    CHECK(r.failures[0].failed_runs == 1);
    CHECK(r.failures[0].other_signatures == std::vector<std::string>{"clean-output | no fault", "passed"});
  }
  SECTION("K = 0 re-runs nothing; K = 1 once; K = 5 stops as soon as four agree or two miss") {
    const ConfirmRun none = run_confirm({{0}}, {{0, ""}}, 0, 2, 2);
    REQUIRE(none.failures.size() == 1);
    CHECK(none.failures[0].confirmed);
    CHECK(none.reruns.empty());
    const ConfirmRun once = run_confirm({{0}}, {{0, "P"}}, 1, 1, 2);
    CHECK_FALSE(once.failures[0].confirmed);
    CHECK(once.reruns.at(0) == 1);
    const ConfirmRun five = run_confirm({{0}, {1}}, {{0, "FFFF"}, {1, "FPFP"}}, 5, 1, 2);
    CHECK(five.failures[0].confirmed);
    CHECK(five.reruns.at(0) == 4);
    CHECK_FALSE(five.failures[1].confirmed);
    CHECK(five.reruns.at(1) == 4);  // after P, F, P two misses: four of five can no longer agree
  }
}

TEST_CASE("each group's smallest case is confirmed first (it is the one shrunk), its cases reported in index order") {
  // Sizes by case index: turns, attempts, events.
  const std::map<int, explore::ScenarioSize> sizes = {
      {3, {4, 11, 44}}, {5, {1, 1, 2}}, {8, {2, 3, 8}}, {9, {1, 1, 2}}, {12, {1, 2, 3}}};
  std::vector<ConfirmGroup> groups = {{FailureSignature{}, {3, 8, 9, 5}}, {FailureSignature{}, {12}}};
  smallest_first(groups, [&](int i) { return sizes.at(i); });
  CHECK(groups[0].cases == std::vector<int>{5, 9, 8, 3});  // 4 units (index breaks the tie), 13, 59
  CHECK(groups[1].cases == std::vector<int>{12});
  // The first case tried is the one confirmed when its re-runs agree; all cases stay in the report.
  const ConfirmRun r = run_confirm({groups[0].cases, groups[1].cases}, {{5, "FF"}, {9, "FF"}, {8, "FF"}, {3, "FF"}, {12, "FF"}}, 3, 2, 2);
  REQUIRE(r.failures.size() == 2);
  CHECK(r.failures[0].case_index == 5);
  CHECK(r.failures[0].cases == std::vector<int>{3, 5, 8, 9});
  CHECK(r.reruns.count(3) == 0);
}

TEST_CASE("confirmation runs every group's re-runs in one pool, `jobs` at a time") {
  // Case 0's first re-run ends at once; its second waits (at most 5 s) for case 1's first to
  // start. In one pool of 2 the slot case 0's first re-run freed takes case 1's (case 0 needs no
  // third while its second is under way); one group at a time would start case 1 only after.
  const FailureSignature sig = failure_signature(Scenario{}, {}, {{"liveness", "killed", -1, -1, -1}});
  std::mutex mu;
  std::condition_variable cv;
  std::map<int, int> started;
  int running = 0;
  int most = 0;
  bool overlapped = false;
  const auto rerun = [&](int index) {
    std::unique_lock lock(mu);
    const int k = started[index]++;
    most = std::max(most, ++running);
    cv.notify_all();
    if (index == 0 && k == 1) overlapped = cv.wait_for(lock, std::chrono::seconds(5), [&] { return started[1] > 0; });
    --running;
    return scripted_rerun('F');
  };
  const auto failures = confirm_failures({{sig, {0}}, {sig, {1}}, {sig, {2}}}, 3, 1, 2, rerun, {});
  REQUIRE(failures.size() == 3);
  for (const auto& f : failures) CHECK(f.confirmed);
  CHECK(overlapped);
  CHECK(most <= 2);
  CHECK(started == std::map<int, int>{{0, 2}, {1, 2}, {2, 2}});
}

TEST_CASE("black-box generation stays in the agent's space: its format, its tool, its budget, one prompt, short waits") {
  Recipe recipe = command_recipe("true", "openai-chat");
  recipe.tool_name = "exec_command";
  recipe.tool_command_arg = "cmd";
  recipe.max_attempts = 3;
  const explore::GenerateLimits limits = black_box_limits(recipe);
  CHECK(limits.max_failing_attempts == 2);
  std::set<std::string> faults;
  for (int i = 0; i < 300; ++i) {
    Scenario s = explore::with_oracle_expect(explore::generate_case(7, i, recipe.provider, "", limits).value());
    INFO("case " << i << "\n" << write_scenario(s));
    CHECK(check_agent_scenario(s, recipe).empty());
    const LoadResult back = parse_scenario(write_scenario(s), "case.json");
    for (const auto& p : back.problems) INFO(format_problem(p));
    CHECK(back.problems.empty());
    CHECK(s.script.provider == "openai-chat");
    CHECK(s.session.empty());
    CHECK_FALSE(s.interrupt);
    CHECK(s.runtime == *limits.runtime);
    CHECK(s.script.turns.size() <= 4);
    for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
      const auto& attempts = s.script.turns[t].attempts;
      CHECK(attempts.size() <= 3);  // at most 2 failing, then one that completes
      const mock::Attempt& last = attempts.back();
      CHECK_FALSE(last.status);
      for (const mock::Attempt& a : attempts) {
        if (a.retry_after_s) CHECK(*a.retry_after_s <= 1);
        if (a.fault) {
          faults.insert(std::string(mock::fault_name(*a.fault)));
          if (const auto* stall = std::get_if<mock::StallFault>(&*a.fault)) CHECK(stall->seconds <= 1);
        }
        for (const mock::Event& e : a.events) {
          if (const auto* c = std::get_if<mock::CallEvent>(&e)) {
            CHECK(c->name == "exec_command");
            CHECK((c->args.contains("cmd") && has_placeholder(c->args.at("cmd"))));
            CHECK_FALSE(c->reuse_id);
          }
        }
      }
    }
  }
  CHECK(faults.size() >= 6);  // every kind but none in particular is still drawn
  // Same seed, same cases; the limits change nothing of the reference runtime's exploration.
  CHECK(write_scenario(explore::generate_case(7, 11, recipe.provider, "", limits).value()) ==
        write_scenario(explore::generate_case(7, 11, recipe.provider, "", limits).value()));
  CHECK(write_scenario(explore::generate_case(7, 11).value()) ==
        write_scenario(explore::generate_case(7, 11, "", "", explore::GenerateLimits{}).value()));
}

TEST_CASE("an agent whose recipe declares a cancel gets sessions and cancels while the answer streams, each one the hold can play") {
  Recipe recipe = command_recipe("true", "anthropic");
  recipe.tool_name = "Bash";
  recipe.tool_command_arg = "command";
  recipe.max_attempts = 4;
  const explore::GenerateLimits without = black_box_limits(recipe);
  CHECK_FALSE(without.interrupts);
  CHECK_FALSE(without.sessions);
  recipe.cancel = RecipeCancel{};
  recipe.cancel->resume_argv = {"true"};
  recipe.cancel->why = "test";
  const explore::GenerateLimits limits = black_box_limits(recipe);
  int interrupts = 0, inside = 0, sessions = 0, resumed = 0;
  for (int i = 0; i < 400; ++i) {
    const Scenario s = black_box_case(7, i, recipe, limits);
    INFO("case " << i << "\n" << write_scenario(s));
    CHECK(check_agent_scenario(s, recipe).empty());
    CHECK(parse_scenario(write_scenario(s), "case.json").problems.empty());
    sessions += s.session.empty() ? 0 : 1;
    if (!s.interrupt) continue;
    ++interrupts;
    resumed += s.session.empty() ? 0 : 1;
    CHECK(s.interrupt->after_event.has_value());  // not while a tool runs, not during a backoff
    CHECK_FALSE(cancel_hold_problem(s));
    inside += s.interrupt->after_fragment ? 1 : 0;
  }
  INFO(interrupts << " interrupts (" << inside << " inside a call's arguments, " << resumed << " with a prompt after), "
                  << sessions << " sessions in 400 cases");
  // Every draw is placed mid-stream (interrupts_while_streaming): 115 of 400 with seed 7, 49 of
  // them with a prompt after. Dropping the draws for a tool, a backoff or a faulted attempt, as
  // until stop 61, kept 15 (5 with a prompt after): too few for a cancel row's bug to be met
  // unaided (stop 60's claude-code exploration met none).
  CHECK(interrupts >= 80);
  CHECK(inside >= 1);
  CHECK(resumed >= 30);  // the bugs of a cancel show on the next prompt's requests
  CHECK(sessions > resumed);
  CHECK(write_scenario(black_box_case(7, 11, recipe, limits)) == write_scenario(black_box_case(7, 11, recipe, limits)));
}

TEST_CASE("an agent that resumes a truncated answer gets a max_tokens finish without a call on the last turn only") {
  // claude-code asks for more of such an answer; in a session's earlier prompt, that request would
  // take the next turn's answer.
  Recipe recipe = cancelling_recipe("anthropic", "Bash", 4);
  auto truncated_answers = [](const Scenario& s, bool last) {
    int n = 0;
    for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
      if ((t + 1 == s.script.turns.size()) != last) continue;
      for (const mock::Attempt& a : s.script.turns[t].attempts) {
        bool call = false, max_tokens = false;
        for (const mock::Event& e : a.events) {
          call |= std::holds_alternative<mock::CallEvent>(e);
          if (const auto* f = std::get_if<mock::FinishEvent>(&e)) max_tokens |= f->reason == mock::FinishReason::kMaxTokens;
        }
        n += max_tokens && !call ? 1 : 0;
      }
    }
    return n;
  };
  int before_last = 0, on_last = 0, kept_last = 0;
  const explore::GenerateLimits drawn = black_box_limits(recipe);
  CHECK_FALSE(drawn.truncated_answer_last_only);
  recipe.resumes_truncated_answer = true;
  const explore::GenerateLimits limited = black_box_limits(recipe);
  CHECK(limited.truncated_answer_last_only);
  for (int i = 0; i < 300; ++i) {
    const Scenario a = black_box_case(7, i, recipe, drawn);
    const Scenario b = black_box_case(7, i, recipe, limited);
    INFO("case " << i << "\n" << write_scenario(b));
    before_last += truncated_answers(a, false);
    on_last += truncated_answers(a, true);
    CHECK(truncated_answers(b, false) == 0);
    kept_last += truncated_answers(b, true);
    CHECK(check_agent_scenario(b, recipe).empty());
  }
  INFO(before_last << " before the last turn, " << on_last << " on it, " << kept_last << " kept on it");
  CHECK(before_last > 0);  // what the limit removes is drawn without it
  CHECK(kept_last == on_last);
}

TEST_CASE("minimize_by deletes what a judge of any kind does not need") {
  const Scenario start = load(kResetAfterCall);
  // A stand-in for a black box: the case "fails" while some attempt still has a reset fault.
  int judged = 0;
  const explore::StillFails fails = [&](const Scenario& c) -> std::optional<Scenario> {
    ++judged;
    for (const auto& t : c.script.turns) {
      for (const auto& a : t.attempts) {
        if (a.fault && std::holds_alternative<mock::ResetFault>(*a.fault)) return c;
      }
    }
    return std::nullopt;
  };
  const explore::MinimizeByResult r = explore::minimize_by(start, fails, 1000);
  CHECK(r.one_minimal);
  CHECK(r.tries == judged);
  CHECK(explore::size_of(r.scenario).turns == 1);
  CHECK(explore::size_of(r.scenario).attempts == 1);
  CHECK(r.scenario.script.turns[0].attempts[0].events.empty());
  // A stop that holds at once judges nothing and claims nothing.
  const explore::MinimizeByResult stopped = explore::minimize_by(start, fails, 1000, [] { return true; });
  CHECK(stopped.tries == 0);
  CHECK_FALSE(stopped.one_minimal);
  CHECK(stopped.scenario == start);
}

TEST_CASE("a candidate that no longer scripts its failure's fault cannot show it (no agent run is spent on it)") {
  const Scenario s = load(kResetAfterCall);
  CHECK(can_show_fault(s, "status 503"));
  CHECK(can_show_fault(s, "reset after a call"));
  CHECK(can_show_fault(s, "finish content_filter"));
  CHECK(can_show_fault(s, "no fault"));  // nothing to lose
  CHECK_FALSE(can_show_fault(s, "reset after text"));
  CHECK_FALSE(can_show_fault(s, "status 503, with Retry-After"));
  CHECK_FALSE(can_show_fault(s, "no terminal event"));
  CHECK_FALSE(can_show_fault(s, "cancel after text"));
  // Whatever fault_description says of a request some attempt answers, that attempt can show.
  int described = 0;
  for (std::size_t t = 0; t < s.script.turns.size(); ++t) {
    for (std::size_t a = 0; a < s.script.turns[t].attempts.size(); ++a) {
      for (const char* played : {"stream", "status"}) {
        const std::string d = fault_description(s, entry(0, static_cast<int>(t), static_cast<int>(a), false, played));
        if (d.empty()) continue;
        ++described;
        CHECK(can_show_fault(s, d));
      }
    }
  }
  CHECK(described >= 4);
  // The fault deleted, moved or its status changed: no run of the candidate can be signed by it.
  Scenario x = s;
  x.script.turns[0].attempts[1].fault.reset();
  CHECK_FALSE(can_show_fault(x, "reset after a call"));
  CHECK(can_show_fault(x, "no terminal event"));  // what that attempt became
  x = s;
  x.script.turns[0].attempts[1].events.pop_back();  // the reset now falls after the text
  CHECK_FALSE(can_show_fault(x, "reset after a call"));
  x = s;
  x.script.turns[0].attempts[0].status = 429;
  CHECK_FALSE(can_show_fault(x, "status 503"));
  // The user's cancel signs a failure when the candidate keeps it.
  x = s;
  x.interrupt = Interrupt{1, 1, 0, std::nullopt};
  CHECK(can_show_fault(x, "cancel after text"));
  x.interrupt.reset();
  CHECK_FALSE(can_show_fault(x, "cancel after text"));
}

TEST_CASE("a candidate without any function call cannot break at-most-once or recorded-execution (no agent run is spent on it)") {
  const Scenario s = load(kResetAfterCall);
  for (const char* name : {"at-most-once", "recorded-execution", "pairing", "honest-outcome"}) {
    CHECK(can_break_invariants(s, {name}));
  }
  CHECK(can_break_invariants(s, {}));
  // Every call event deleted: no tool can run, so no execution can be duplicated or unrecorded.
  Scenario x = s;
  for (auto& t : x.script.turns) {
    for (auto& a : t.attempts) {
      std::erase_if(a.events, [](const mock::Event& e) { return std::holds_alternative<mock::CallEvent>(e); });
    }
  }
  CHECK_FALSE(can_break_invariants(x, {"at-most-once"}));
  CHECK_FALSE(can_break_invariants(x, {"clean-output", "recorded-execution"}));
  CHECK_FALSE(can_break_invariants(x, {"at-most-once", "clean-output", "pairing", "recorded-execution"}));
  // The others are left to the runs: a request can be rejected, or an outcome misreported, without calls.
  CHECK(can_break_invariants(x, {"pairing"}));
  CHECK(can_break_invariants(x, {"honest-outcome", "no-rejected-request"}));
  // One call anywhere is enough, in a failed attempt too.
  x.script.turns[0].attempts[1].events.push_back(mock::CallEvent{"run_shell_command", nlohmann::json::object(), ""});
  CHECK(can_break_invariants(x, {"at-most-once", "recorded-execution"}));
}

TEST_CASE("focus deletions first: a black box's first kept edit drops every failed attempt but the one with its fault") {
  Scenario start = load(kResetAfterCall);
  // Two more 503s before the reset and a turn with another failed attempt: 5 failed attempts in
  // all, one of them the reset the failure is signed by. Each 503 would cost gemini-cli 5 s a run.
  auto& attempts = start.script.turns[0].attempts;
  attempts.insert(attempts.begin(), 2, attempts[0]);
  start.script.turns.push_back(start.script.turns.back());
  // A stand-in for the explorer: the candidates it would run (the fault still scripted) fail.
  std::vector<Scenario> kept;
  const explore::StillFails fails = [&](const Scenario& c) -> std::optional<Scenario> {
    if (!can_show_fault(c, "reset after a call")) return std::nullopt;  // ruled out without a run
    kept.push_back(c);
    return c;
  };
  const explore::MinimizeByResult r = explore::minimize_by(start, fails, 5000, {}, true);
  REQUIRE(r.one_minimal);
  REQUIRE_FALSE(kept.empty());
  // The first run candidate is the focus edit: the reset attempt alone, each turn's last attempt kept.
  const Scenario& first = kept.front();
  REQUIRE(first.script.turns.size() == start.script.turns.size());
  CHECK(first.script.turns[0].attempts.size() == 2u);
  CHECK(first.script.turns[0].attempts[0] == start.script.turns[0].attempts[3]);
  CHECK(first.script.turns[0].attempts[1] == start.script.turns[0].attempts[4]);
  for (std::size_t t = 1; t < first.script.turns.size(); ++t) {
    REQUIRE(first.script.turns[t].attempts.size() == 1u);
    CHECK(first.script.turns[t].attempts[0] == start.script.turns[t].attempts.back());
  }
  CHECK(explore::size_of(r.scenario).turns == 1);
  CHECK(explore::size_of(r.scenario).attempts == 1);
}

TEST_CASE("a black box's shrinking deletes two middle turns one after the other, before any attempt or event") {
  Scenario start = load(kResetAfterCall);
  // Two turns of padding between the reset's turn and the last one, which the failure needs.
  mock::Turn padding;
  padding.attempts.push_back(start.script.turns[1].attempts.back());
  std::get<mock::TextEvent>(padding.attempts[0].events[0]).text = "Padding.";
  start.script.turns.insert(start.script.turns.begin() + 1, 2, padding);
  REQUIRE(start.script.turns.size() == 4u);
  const mock::Attempt last_answer = start.script.turns.back().attempts.back();
  int tries = 0;
  const explore::StillFails fails = [&](const Scenario& c) -> std::optional<Scenario> {
    ++tries;
    const bool keeps = can_show_fault(c, "reset after a call") && c.script.turns.size() >= 2 &&
                       !c.script.turns.back().attempts.empty() && c.script.turns.back().attempts.back() == last_answer;
    return keeps ? std::optional<Scenario>(c) : std::nullopt;
  };
  std::vector<std::pair<std::string, int>> kept;  // (edit, candidates judged when it was kept)
  const auto on_kept = [&](const explore::Edit& e, const Scenario& now) {
    kept.emplace_back(e.description + " " + e.pointer + " → " + std::to_string(now.script.turns.size()) + " turns", tries);
  };
  const explore::MinimizeByResult r = explore::minimize_by(start, fails, 5000, {}, true, on_kept);
  REQUIRE(r.one_minimal);
  REQUIRE(kept.size() >= 3u);
  CHECK(static_cast<int>(kept.size()) == r.accepted);
  // Focus first (the reset alone of the failed attempts), then the two middle turns, the second
  // tried right after the first: the walk goes on at the turn that moved into the deleted one's place.
  CHECK(kept[0].first.rfind("delete every failed attempt but this one /turns/0/attempts/1", 0) == 0);
  CHECK(kept[1].first == "delete turn /turns/1 → 3 turns");
  CHECK(kept[2].first == "delete turn /turns/1 → 2 turns");
  CHECK(kept[2].second == kept[1].second + 1);
  CHECK(explore::size_of(r.scenario).turns == 2);
}

TEST_CASE("coarse deletions first: a black box's shrinking reaches a 1-minimal case of the same size in fewer candidates") {
  Scenario start = load(kResetAfterCall);
  // Padding a black box never needs: three more turns, two more 503s and more text before the reset.
  for (int i = 0; i < 3; ++i) start.script.turns.push_back(start.script.turns.back());
  auto& attempts = start.script.turns[0].attempts;
  attempts.insert(attempts.begin(), 2, attempts[0]);
  auto& cut = attempts[3].events;
  cut.insert(cut.begin(), 3, cut[0]);
  std::get<mock::ResetFault>(*attempts[3].fault).after_event = 5;
  const explore::StillFails fails = [](const Scenario& c) -> std::optional<Scenario> {
    return can_show_fault(c, "reset after a call") ? std::optional<Scenario>(c) : std::nullopt;
  };
  const explore::MinimizeByResult plain = explore::minimize_by(start, fails, 5000);
  const explore::MinimizeByResult coarse = explore::minimize_by(start, fails, 5000, {}, true);
  REQUIRE(plain.one_minimal);
  REQUIRE(coarse.one_minimal);
  CHECK(explore::size_of(coarse.scenario).turns == explore::size_of(plain.scenario).turns);
  CHECK(explore::size_of(coarse.scenario).attempts == explore::size_of(plain.scenario).attempts);
  CHECK(explore::size_of(coarse.scenario).events == explore::size_of(plain.scenario).events);
  CHECK(explore::size_of(coarse.scenario).turns == 1);
  CHECK(coarse.tries < plain.tries);
  // This judge fails every candidate that keeps the fault, so the explorer would rule out every
  // candidate it rejects without a run: the candidates it would run are the ones kept.
  INFO("candidates: " << plain.tries << " (" << plain.accepted << " run) single deletions only, " << coarse.tries
                      << " (" << coarse.accepted << " run) with runs first");
  CHECK(coarse.accepted * 3 <= plain.accepted * 2);  // a third fewer candidates run on this padding (14 to 9)
}

TEST_CASE("a black box's shrinking runs no candidate it rejected before: the same result with fewer judgements") {
  Scenario start = load(kResetAfterCall);
  for (int i = 0; i < 2; ++i) start.script.turns.push_back(start.script.turns.back());
  auto& attempts = start.script.turns[0].attempts;
  attempts.insert(attempts.begin(), 2, attempts[0]);
  // A stand-in for the agent runs: keeps a candidate while some attempt still has a reset fault,
  // and counts how often it judged each scenario file.
  std::map<std::string, int> judged;
  const explore::StillFails runs = [&](const Scenario& c) -> std::optional<Scenario> {
    ++judged[write_scenario(c)];
    return can_show_fault(c, "reset after a call") ? std::optional<Scenario>(c) : std::nullopt;
  };
  const explore::MinimizeByResult plain = explore::minimize_by(start, runs, 5000, {}, true);
  REQUIRE(plain.one_minimal);
  int plain_judged = 0;
  int judged_again = 0;
  for (const auto& [file, n] : judged) {
    plain_judged += n;
    judged_again += n - 1;
  }
  CHECK(plain_judged == plain.tries);
  REQUIRE(judged_again > 0);  // without the memory, some candidates are judged twice

  judged.clear();
  int repeats = 0;
  const explore::MinimizeByResult remembered =
      explore::minimize_by(start, explore::remember_rejections(runs, repeats), 5000, {}, true);
  REQUIRE(remembered.one_minimal);
  CHECK(remembered.scenario == plain.scenario);  // the same walk: each repeat would have been rejected
  CHECK(remembered.tries == plain.tries);
  CHECK(repeats == judged_again);
  int remembered_judged = 0;
  for (const auto& [file, n] : judged) {
    CHECK(n == 1);
    remembered_judged += n;
  }
  CHECK(remembered_judged == plain.tries - repeats);
}

TEST_CASE("a shrink candidate the reference runtime fails is no candidate: the scenario, not the agent, would fail") {
  // gemini-cli's explore case c30 shrank to this at stop 60: two turns, both spent by the first
  // prompt, so the session's second prompt has no turn to answer it and the reference runtime
  // fails the file too. The shrinker now rejects such a candidate before running the agent.
  const Recipe recipe = cancelling_recipe("gemini", "run_shell_command", 10);
  const explore::GenerateLimits limits = black_box_limits(recipe);
  Scenario short_of_turns = load(R"({
    "schema": 1, "name": "c30", "provider": "gemini", "prompt": "Run the generated task.",
    "session": [ { "prompt": "Continue where you stopped." } ],
    "runtime": { "max_attempts": 10, "idle_timeout_s": 2 },
    "turns": [
      { "attempts": [ { "events": [ { "call": { "name": "run_shell_command", "args": { "command": "{{ledger}} && echo t0c0" } } },
                                    { "text": "On it. " }, { "finish": "stop" } ] } ] },
      { "attempts": [ { "events": [ { "text": "Continued." }, { "finish": "stop" } ] } ] }
    ]
  })");
  CHECK_FALSE(shrink_candidate(short_of_turns, recipe, limits).has_value());
  Scenario answered = short_of_turns;  // a turn for the second prompt: a candidate
  answered.script.turns.push_back(answered.script.turns.back());
  const std::optional<Scenario> kept = shrink_candidate(answered, recipe, limits);
  REQUIRE(kept.has_value());
  CHECK(kept->expect.outcome == "completed");  // the oracle's expect, filled in
  // Outside the agent's limits (another attempt budget): no candidate either.
  answered.runtime.max_attempts = 3;
  CHECK_FALSE(shrink_candidate(answered, recipe, limits).has_value());
}

}  // namespace
}  // namespace agent_explorer_test
}  // namespace harness::agents
