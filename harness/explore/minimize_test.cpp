// Tests of counterexample minimization (label `minimal`): the edits enumerated from the scenario
// model, the 1-minimality check, and the kill matrix's rate of 1-minimal counterexamples over every
// defect of the catalogue and seeds 1-10, with the time each minimization took.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <filesystem>
#include <map>
#include <sstream>

#include <sys/wait.h>

#include "harness/explore/explorer.h"
#include "harness/explore/minimize.h"
#include "harness/oracle.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "runtime_under_test/defects.h"
#include "tests/test_scale.h"
#include "tests/test_temp.h"

namespace hx = harness::explore;

namespace {

harness::RunOptions memory_run(const std::vector<std::string>& defects) {
  harness::RunOptions o;
  o.transport = harness::TransportKind::kMemory;
  o.extra_defects = defects;
  return o;
}

/// The defects the kill matrix explores for one catalogue entry: no-pairing-guard is an equivalent
/// mutant alone, so it is explored with keep-calls-on-retry (as the README's table does).
std::vector<std::string> kill_matrix_defects(const rut::DefectInfo& info) {
  if (info.defect == rut::Defect::kNoPairingGuard) return {"keep-calls-on-retry", std::string(info.name)};
  return {std::string(info.name)};
}

mock::Attempt stream(std::vector<mock::Event> events, std::optional<mock::Fault> fault = std::nullopt) {
  mock::Attempt a;
  a.events = std::move(events);
  a.fault = std::move(fault);
  return a;
}

/// keep-calls-on-retry's classic case, padded: text around the calls, an extra harmless turn
/// before, slicing, a short stall after the finish and runtime settings that play no part.
harness::Scenario padded_duplicate_execution() {
  harness::Scenario s;
  s.name = "padded";
  s.prompt = "Deploy.";
  s.runtime.max_attempts = 5;
  s.runtime.backoff_s = std::vector<double>{2, 4};
  const mock::CallEvent deploy{"deploy", {{"target", "staging"}}, "", 0};
  const mock::CallEvent read{"read_file", {{"path", "a.txt"}}, "", 0};
  mock::Turn warmup{{stream({mock::TextEvent{"Reading."}, read, mock::FinishEvent{}})}};
  mock::Attempt failed = stream({mock::TextEvent{"On it. "}, deploy, mock::TextEvent{"Waiting."}},
                                mock::Fault(mock::ResetFault{2, 5, std::nullopt}));
  failed.slice_bytes = 16;
  mock::Turn work{{failed, stream({mock::TextEvent{"On it. "}, deploy, mock::FinishEvent{}},
                                  mock::Fault(mock::StallFault{3, 0.5, std::nullopt}))}};
  mock::Turn last{{stream({mock::TextEvent{"Deployed."}, mock::FinishEvent{}})}};
  s.script.turns = {warmup, work, last};
  return s;
}

}  // namespace

TEST_CASE("deletions name every turn, attempt, event, fault and slicing once", "[minimal]") {
  const harness::Scenario s = padded_duplicate_execution();
  std::map<std::string, int> kinds;
  for (const auto& d : hx::deletions(s)) ++kinds[std::string(hx::edit_kind_name(d.kind))];
  CHECK(kinds["turn"] == 3);
  CHECK(kinds["attempt"] == 4);
  CHECK(kinds["event"] == 3 + 3 + 3 + 2);
  CHECK(kinds["fault"] == 2);
  CHECK(kinds["slicing"] == 1);
  CHECK(kinds.size() == 5);
}

TEST_CASE("deleting an attempt moves an interrupt during a backoff back with it, and with none left before it the interrupt goes", "[minimal]") {
  harness::Scenario s = padded_duplicate_execution();
  s.interrupt = harness::Interrupt{1, std::nullopt, std::nullopt, std::nullopt, 1};  // the backoff before turn 1's attempt 1
  int checked = 0;
  for (const auto& d : hx::deletions(s)) {
    harness::Scenario x = s;
    d.apply(x);
    if (d.pointer == "/turns/1/attempts/0") {
      CHECK_FALSE(x.interrupt.has_value());  // no attempt is left before attempt 1's backoff
      ++checked;
    } else if (d.pointer == "/turns/1/attempts/1") {
      REQUIRE(x.interrupt.has_value());
      CHECK(x.interrupt->before_attempt == 1);  // a later attempt: the point stays
      ++checked;
    } else if (d.pointer == "/turns/0") {
      REQUIRE(x.interrupt.has_value());
      CHECK(x.interrupt->turn == 0);
      CHECK(x.interrupt->before_attempt == 1);
      ++checked;
    }
  }
  CHECK(checked == 3);
}

TEST_CASE("deletions name the interrupt and each session prompt, and move the interrupt's point with what is deleted before it", "[minimal]") {
  harness::Scenario s = padded_duplicate_execution();
  s.session = {harness::SessionPrompt{"next"}};
  s.interrupt = harness::Interrupt{1, 1, 1, std::nullopt};  // after the call of turn 1, attempt 1
  std::map<std::string, int> kinds;
  int checked = 0;
  for (const auto& d : hx::deletions(s)) {
    ++kinds[std::string(hx::edit_kind_name(d.kind))];
    harness::Scenario x = s;
    d.apply(x);
    if (d.pointer == "/turns/0") {
      REQUIRE(x.interrupt.has_value());
      CHECK(x.interrupt->turn == 0);
      ++checked;
    } else if (d.pointer == "/turns/1/attempts/0") {
      REQUIRE(x.interrupt.has_value());
      CHECK(x.interrupt->attempt == 0);
      ++checked;
    } else if (d.pointer == "/turns/1/attempts/1/events/0") {
      REQUIRE(x.interrupt.has_value());
      CHECK(x.interrupt->after_event == 0);  // still right after the call
      ++checked;
    } else if (d.pointer == "/turns/1/attempts/1/events/1" || d.pointer == "/turns/1" || d.pointer == "/interrupt") {
      CHECK_FALSE(x.interrupt.has_value());
      ++checked;
    } else if (d.pointer == "/session/0" && d.description == "delete session prompt") {
      CHECK(x.session.empty());
      CHECK(x.script.turns.size() == s.script.turns.size());
      ++checked;
    } else if (d.pointer == "/prompt" && d.description == "delete the first prompt and turns 0..0") {
      // the next prompt becomes the first; the interrupt moves back with turn 1
      CHECK(x.prompt == "next");
      CHECK(x.session.empty());
      CHECK(x.script.turns.size() == s.script.turns.size() - 1);
      REQUIRE(x.interrupt.has_value());
      CHECK(x.interrupt->turn == 0);
      ++checked;
    } else if (d.pointer == "/session/0" && d.description == "delete the last session prompt and turns 1..") {
      CHECK(x.prompt == s.prompt);
      CHECK(x.session.empty());
      CHECK(x.script.turns.size() == 1u);
      CHECK_FALSE(x.interrupt.has_value());  // it pointed into a deleted turn
      ++checked;
    }
  }
  CHECK(checked == 9);
  CHECK(kinds["interrupt"] == 1);
  // the prompt alone, and with the turns around it: the first prompt with turns 0..t, the last with t..
  CHECK(kinds["session"] == 1 + 2 * static_cast<int>(s.script.turns.size() - 1));
}

TEST_CASE("deleting an event before a fault keeps the fault after the same events", "[minimal]") {
  const harness::Scenario s = padded_duplicate_execution();
  for (const auto& d : hx::deletions(s)) {
    if (d.pointer != "/turns/1/attempts/0/events/0") continue;
    harness::Scenario x = s;
    d.apply(x);
    const mock::Attempt& a = x.script.turns[1].attempts[0];
    REQUIRE(a.events.size() == 2);
    CHECK(std::get<mock::ResetFault>(*a.fault).after_event == 1);  // still right after the call
    CHECK(std::holds_alternative<mock::CallEvent>(a.events[0]));
    return;
  }
  FAIL("no deletion of /turns/1/attempts/0/events/0");
}

namespace {

/// Applies the single deletion of deletions(x) at `pointer` to x; false when there is none.
bool apply_single(harness::Scenario& x, const std::string& pointer) {
  for (const auto& d : hx::deletions(x)) {
    if (d.pointer != pointer) continue;
    d.apply(x);
    return true;
  }
  return false;
}

}  // namespace

TEST_CASE("coarse deletions are runs of single deletions: turns from either end, a turn's failed attempts, an attempt's events", "[minimal]") {
  harness::Scenario s = padded_duplicate_execution();
  // Four turns, three failed attempts in turn 1 (its last one completes), five events in one.
  mock::Turn& work = s.script.turns[1];
  work.attempts.insert(work.attempts.begin(), 2, work.attempts[0]);
  work.attempts[0].events.push_back(mock::TextEvent{"More."});
  work.attempts[0].events.push_back(mock::TextEvent{"Still more."});  // 5 events, a reset after event 2
  s.script.turns.push_back(s.script.turns.back());
  s.interrupt = harness::Interrupt{3, 0, 0, std::nullopt};  // after the text of the last turn
  std::map<std::string, harness::Scenario> got;
  for (const auto& d : hx::coarse_deletions(s)) {
    harness::Scenario x = s;
    d.apply(x);
    CHECK(got.emplace(d.description + " @" + d.pointer, x).second);  // each named once
  }
  // Turns: keep the first k or the last k, k = 1..3.
  const auto& first1 = got.at("delete turns 1.. @/turns/1");
  CHECK(first1.script.turns.size() == 1u);
  CHECK_FALSE(first1.interrupt.has_value());  // its turn went
  const auto& last1 = got.at("delete turns 0..2 @/turns/0");
  REQUIRE(last1.script.turns.size() == 1u);
  CHECK(last1.script.turns[0] == s.script.turns[3]);
  REQUIRE(last1.interrupt.has_value());
  CHECK(last1.interrupt->turn == 0);  // moved back with the turns before it
  CHECK(got.count("delete turns 3.. @/turns/3") == 1);
  CHECK(got.count("delete turns 0..0 @/turns/0") == 1);
  // Attempts: turn 1's three failed ones, then each half; its last attempt stays.
  const auto& no_failed = got.at("delete attempts 0..2 @/turns/1/attempts/0");
  REQUIRE(no_failed.script.turns[1].attempts.size() == 1u);
  CHECK(no_failed.script.turns[1].attempts[0] == s.script.turns[1].attempts[3]);
  CHECK(got.count("delete attempts 0..0 @/turns/1/attempts/0") == 1);
  CHECK(got.count("delete attempts 1..2 @/turns/1/attempts/1") == 1);
  // Events: the ones after the reset (never delivered), then each half of the five.
  const auto& tail = got.at("delete events 2..4 @/turns/1/attempts/0/events/2");
  CHECK(tail.script.turns[1].attempts[0].events.size() == 2u);
  CHECK(got.count("delete events 0..1 @/turns/1/attempts/0/events/0") == 1);
  // Each run is the same as its single deletions applied from the highest index down.
  const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
      {"delete turns 0..2 @/turns/0", {"/turns/2", "/turns/1", "/turns/0"}},
      {"delete turns 2.. @/turns/2", {"/turns/3", "/turns/2"}},
      {"delete attempts 1..2 @/turns/1/attempts/1", {"/turns/1/attempts/2", "/turns/1/attempts/1"}},
      {"delete events 2..4 @/turns/1/attempts/0/events/2",
       {"/turns/1/attempts/0/events/4", "/turns/1/attempts/0/events/3", "/turns/1/attempts/0/events/2"}},
      {"delete events 0..1 @/turns/1/attempts/0/events/0", {"/turns/1/attempts/0/events/1", "/turns/1/attempts/0/events/0"}},
  };
  for (const auto& [name, singles] : runs) {
    INFO(name);
    harness::Scenario x = s;
    for (const std::string& p : singles) REQUIRE(apply_single(x, p));
    CHECK(got.at(name) == x);
  }
  const harness::Scenario& head = got.at("delete events 0..1 @/turns/1/attempts/0/events/0");
  CHECK(std::get<mock::ResetFault>(*head.script.turns[1].attempts[0].fault).after_event == 0);  // the reset follows its events
  // The tail after the fault is also the second half: named once.
  CHECK(std::count_if(got.begin(), got.end(), [](const auto& g) { return g.first.rfind("delete events 2..4", 0) == 0; }) == 1);
  // The events no attempt delivers, at once: after each of turn 1's three resets (the stall of its
  // last attempt goes on, so its events stay).
  const auto& undelivered = got.at("delete the events after every fault that ends its stream (3 attempts) @/turns/1/attempts/0/events/2");
  for (std::size_t a = 0; a < 3; ++a) CHECK(undelivered.script.turns[1].attempts[a].events.size() == 2u);
  CHECK(undelivered.script.turns[1].attempts[3] == s.script.turns[1].attempts[3]);
  CHECK(undelivered.script.turns[1].attempts[0].fault == s.script.turns[1].attempts[0].fault);  // still after 2 events
  // A cut sends the first bytes of the next frame (a call's whole JSON can be in them): its events stay.
  harness::Scenario with_cut = s;
  with_cut.script.turns[1].attempts[1].fault = mock::Fault(mock::CutFault{2, 60, std::nullopt});
  bool found = false;
  for (const auto& d : hx::coarse_deletions(with_cut)) {
    if (d.description.rfind("delete the events after every fault that ends its stream", 0) != 0) continue;
    found = true;
    CHECK(d.description == "delete the events after every fault that ends its stream (2 attempts)");
    harness::Scenario x = with_cut;
    d.apply(x);
    CHECK(x.script.turns[1].attempts[1] == with_cut.script.turns[1].attempts[1]);
    CHECK(x.script.turns[1].attempts[0].events.size() == 2u);
  }
  CHECK(found);
  // Each turn between the first and the last alone, before any attempt or event.
  for (const char* t : {"/turns/1", "/turns/2"}) {
    INFO(t);
    const auto& one = got.at(std::string("delete turn @") + t);
    CHECK(one.script.turns.size() == s.script.turns.size() - 1);
  }
  CHECK(got.count("delete turn @/turns/0") == 0);  // a run above already: "delete turns 0..0"
  CHECK(got.count("delete turn @/turns/3") == 0);  // and "delete turns 3.."
  std::vector<std::string> order;
  for (const auto& d : hx::coarse_deletions(s)) order.push_back(d.description + " @" + d.pointer);
  const auto at = [&](const std::string& name) { return std::find(order.begin(), order.end(), name) - order.begin(); };
  CHECK(at("delete turn @/turns/2") < at("delete attempts 0..2 @/turns/1/attempts/0"));
  CHECK(at("delete turns 1.. @/turns/1") < at("delete turn @/turns/1"));
  // One failed attempt a turn and at most three events an attempt: turns only (two runs each of
  // k = 1, 2, and the middle turn alone).
  for (const auto& d : hx::coarse_deletions(padded_duplicate_execution())) CHECK(d.kind == hx::Edit::Kind::kTurn);
  CHECK(hx::coarse_deletions(padded_duplicate_execution()).size() == 5u);
  // Two turns: no runs, each turn alone.
  harness::Scenario two = padded_duplicate_execution();
  two.script.turns.pop_back();
  CHECK(hx::coarse_deletions(two).size() == 2u);
}

TEST_CASE("focus deletions keep one failed attempt of the whole scenario, each turn's last attempt with it", "[minimal]") {
  harness::Scenario s = padded_duplicate_execution();
  // Failed attempts: turn 1's three (its fourth completes) and turn 0's, when it has two or more attempts.
  mock::Turn& work = s.script.turns[1];
  work.attempts.insert(work.attempts.begin(), 2, work.attempts[0]);
  std::size_t failed = 0;
  for (const auto& t : s.script.turns) failed += t.attempts.size() - 1;
  REQUIRE(failed >= 3);
  s.interrupt = harness::Interrupt{1, 3, 0, std::nullopt};  // after the first event of turn 1's last attempt
  const std::vector<hx::Edit> edits = hx::focus_deletions(s);
  REQUIRE(edits.size() == failed);
  std::set<std::string> pointers;
  for (const auto& d : edits) {
    INFO(d.pointer);
    CHECK(d.kind == hx::Edit::Kind::kAttempt);
    CHECK(pointers.insert(d.pointer).second);
    harness::Scenario x = s;
    d.apply(x);
    REQUIRE(x.script.turns.size() == s.script.turns.size());
    std::size_t left = 0;
    for (std::size_t t = 0; t < x.script.turns.size(); ++t) {
      REQUIRE_FALSE(x.script.turns[t].attempts.empty());
      CHECK(x.script.turns[t].attempts.back() == s.script.turns[t].attempts.back());  // each last attempt stays
      left += x.script.turns[t].attempts.size() - 1;
    }
    CHECK(left == 1);  // the one named by the pointer
    // The interrupt moves back with the attempts deleted before it in its turn.
    REQUIRE(x.interrupt.has_value());
    CHECK(x.interrupt->turn == 1);
    CHECK(*x.interrupt->attempt == static_cast<int>(x.script.turns[1].attempts.size()) - 1);
  }
  // One failed attempt in all (or none): nothing to focus on.
  harness::Scenario one = padded_duplicate_execution();
  std::size_t one_failed = 0;
  for (auto& t : one.script.turns) {
    while (t.attempts.size() > 1) t.attempts.erase(t.attempts.begin());
  }
  one.script.turns[0].attempts.insert(one.script.turns[0].attempts.begin(), one.script.turns[0].attempts[0]);
  for (const auto& t : one.script.turns) one_failed += t.attempts.size() - 1;
  REQUIRE(one_failed == 1);
  CHECK(hx::focus_deletions(one).empty());
}

TEST_CASE("minimize removes the padding of a duplicate execution and the result is 1-minimal", "[minimal]") {
  const harness::Scenario s = hx::with_oracle_expect(padded_duplicate_execution());
  const auto run = memory_run({"keep-calls-on-retry"});
  const harness::CaseResult start = harness::run_scenario(s, run);
  const auto target = hx::failure_target(start.violations);
  REQUIRE(target.count("at-most-once") == 1);
  hx::FailureJudge judge(run, target);
  // The padded case is not 1-minimal: the first turn, the texts, the slicing and the stall can go.
  const auto before = hx::failing_deletions(s, judge);
  CHECK(before.size() >= 4);

  const hx::MinimizeResult m = hx::minimize(s, start, judge);
  INFO(harness::write_scenario(m.scenario));
  CHECK(m.one_minimal);
  CHECK(hx::breaks_all(m.result.violations, target));
  CHECK(hx::failing_deletions(m.scenario, judge).empty());
  // What is left: the failed attempt's call, and a retry that delivers it again and finishes (a
  // call run once from an attempt that did not complete is no longer a violation by itself: the
  // duplicate needs the retry's copy), then the next turn, whose empty attempt keeps the run from
  // asking for a turn the script does not have. Settings that play no part are reset.
  CHECK(hx::size_of(m.scenario).turns == 2);
  CHECK(hx::size_of(m.scenario).attempts == 3);
  CHECK(hx::size_of(m.scenario).events == 3);
  CHECK(m.scenario.runtime == harness::RuntimeSettings{});
  const mock::Attempt& failed = m.scenario.script.turns[0].attempts[0];
  REQUIRE(failed.events.size() == 1);
  CHECK(std::get<mock::CallEvent>(failed.events[0]).args == nlohmann::json::object());
  CHECK_FALSE(failed.slice_bytes.has_value());
}

TEST_CASE("a case that fails no invariant of the target is not a counterexample", "[minimal]") {
  const harness::Scenario s = hx::with_oracle_expect(padded_duplicate_execution());
  hx::FailureJudge judge(memory_run({}), {"at-most-once"});
  CHECK_FALSE(judge.fails(s).has_value());  // correct runtime: no duplicate execution
  hx::FailureJudge empty(memory_run({"keep-calls-on-retry"}), {});
  CHECK_FALSE(empty.fails(s).has_value());  // an empty target is never "still failing"
}

TEST_CASE("kill matrix counterexamples are 1-minimal (every defect, seeds 1-10)", "[minimal]") {
  int total = 0, minimal = 0;
  double worst_ms = 0;
  std::ostringstream table;
  // Seeds 1-10; under the sanitizers (HICCUP_TEST_SCALE=0.25) seeds 1-3.
  const int seeds = hiccup_test::scaled(10);
  int in_memory = 0;  // defects with a site in memory: a transport's own (replay-lost-context) is
                     // measured over its transport (explorer_test "exploration over websocket …")
  for (const auto& info : rut::defect_catalogue()) {
    if (!info.transport.empty()) continue;
    ++in_memory;
    const auto defects = kill_matrix_defects(info);
    int found = 0, ok = 0;
    double sum_ms = 0, max_ms = 0;
    std::string witnesses;
    for (std::uint64_t seed = 1; seed <= static_cast<std::uint64_t>(seeds); ++seed) {
      hx::ExploreOptions o;
      o.seed = seed;
      o.cases = 200;
      o.defects = defects;
      o.write_counterexample = false;
      std::ostringstream log;
      const auto out = hx::explore(o, log);
      INFO(info.name << " seed " << seed << "\n" << log.str());
      REQUIRE(out.failure.has_value());
      ++found;
      const hx::ExploreFailure& f = *out.failure;
      sum_ms += f.shrink_ms;
      max_ms = std::max(max_ms, f.shrink_ms);
      hx::FailureJudge judge(memory_run(defects), hx::failure_target(f.original_violations));
      const auto left = hx::failing_deletions(f.shrunk, judge);
      if (left.empty()) {
        ++ok;
      } else if (witnesses.empty()) {
        witnesses = " (seed " + std::to_string(seed) + ": " + left.front().pointer + " can go)";
      }
    }
    total += found;
    minimal += ok;
    worst_ms = std::max(worst_ms, max_ms);
    char line[256];
    std::snprintf(line, sizeof line, "%-30s 1-minimal %2d/%2d  shrink ms mean %7.1f max %7.1f%s\n",
                  std::string(info.name).c_str(), ok, found, sum_ms / std::max(found, 1), max_ms, witnesses.c_str());
    table << line;
  }
  const double rate = total ? 100.0 * minimal / total : 0;
  std::printf("%s1-minimal: %d of %d (%.1f %%), slowest shrink %.1f ms\n", table.str().c_str(), minimal, total, rate,
              worst_ms);
  INFO(table.str());
  CHECK(total == seeds * in_memory);
  CHECK(rate >= 95.0);
  // The 2 s shrink target (issue 10) is a measurement, printed above and reported, not asserted:
  // a timed check fails on a loaded machine or under a sanitizer (ASan+UBSan took 2.8 s) without
  // any defect in the minimizer.
}

namespace {

/// Runs `command` through the shell; returns its exit code.
int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST_CASE("every defect's minimized counterexample lints clean and replays with hiccup run", "[minimal]") {
  const std::string hiccup = std::string(HICCUP_BINARY_DIR) + "/hiccup";
  const auto root = hiccup_test::temp_path("hiccup-minimal-replay");
  std::filesystem::remove_all(root);
  for (const auto& info : rut::defect_catalogue()) {
    if (!info.transport.empty()) continue;  // no site in memory (replay-lost-context: websocket only)
    const auto defects = kill_matrix_defects(info);
    hx::ExploreOptions o;
    o.seed = 1;
    o.cases = 200;
    o.defects = defects;
    o.report_dir = (root / std::string(info.name)).string();
    std::ostringstream log;
    const auto out = hx::explore(o, log);
    INFO(info.name << "\n" << log.str());
    REQUIRE(out.failure.has_value());
    REQUIRE(!out.failure->path.empty());
    const std::string file = out.failure->path;
    CHECK(shell(hiccup + " lint " + quoted(file) + " > /dev/null") == 0);
    // Over HTTP (the default transport) and in memory, with the defects given on the command line.
    for (const std::string transport : {"http", "memory"}) {
      const std::string dir = o.report_dir + "/replay-" + transport;
      std::string cmd = hiccup + " run " + quoted(file) + " --transport " + transport + " --report-dir " + quoted(dir);
      for (const auto& d : defects) cmd += " --defect " + d;
      INFO(cmd);
      CHECK(shell(cmd + " > /dev/null") == 1);
      std::ifstream summary(dir + "/summary.json");
      REQUIRE(summary);
      const auto j = nlohmann::json::parse(summary);
      REQUIRE(j["cases"].size() == 1);
      std::set<std::string> broken;
      for (const auto& v : j["cases"][0]["violations"]) broken.insert(v["invariant"].get<std::string>());
      for (const auto& name : out.failure->target) {
        INFO("invariant " << name);
        CHECK(broken.count(name) == 1);
      }
    }
  }
  std::filesystem::remove_all(root);  // kept when a REQUIRE above stops the test
}
