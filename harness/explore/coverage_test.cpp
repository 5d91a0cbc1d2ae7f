// Tests of exploration coverage: each precondition on hand-built runs, counts of a fixed-seed
// exploration against an independent scan of its journals, and the warning for an invariant whose
// precondition never held.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/explore/coverage.h"
#include "harness/explore/explorer.h"
#include "harness/invariants.h"
#include "harness/report/merge.h"
#include "harness/report/report.h"
#include "harness/runner.h"
#include "tests/test_temp.h"

namespace hx = harness::explore;

namespace coverage_test {

harness::CaseResult run(harness::Scenario s) {
  s.name = "coverage";
  s.prompt = "Go.";
  harness::RunOptions o;
  o.transport = harness::TransportKind::kMemory;
  return harness::run_scenario(s, o);
}

mock::Attempt stream(std::vector<mock::Event> events, std::optional<mock::Fault> fault = std::nullopt) {
  mock::Attempt a;
  a.events = std::move(events);
  a.fault = std::move(fault);
  return a;
}

mock::Attempt status(int code, std::optional<double> retry_after_s = std::nullopt) {
  mock::Attempt a;
  a.status = code;
  a.retry_after_s = retry_after_s;
  return a;
}

const mock::CallEvent kCall{"shell", {{"command", "ls"}}, "", 0};
const mock::Event kStop = mock::FinishEvent{mock::FinishReason::kStop};

mock::Turn done() { return mock::Turn{{stream({mock::TextEvent{"Done."}, kStop})}}; }

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}


TEST_CASE("every invariant of the catalogue has one precondition", "[explore][coverage]") {
  const auto& pre = hx::invariant_preconditions();
  REQUIRE(pre.size() == harness::invariant_catalogue().size());
  for (std::size_t i = 0; i < pre.size(); ++i) {
    CHECK(pre[i].invariant == harness::invariant_catalogue()[i].name);
    CHECK(!pre[i].holds_when.empty());
  }
}

TEST_CASE("a reset after a streamed call exercises at-most-once, recorded-execution, pairing and history-integrity",
          "[explore][coverage]") {
  harness::Scenario s;
  s.script.turns = {mock::Turn{{stream({kCall}, mock::Fault(mock::ResetFault{1, 0, std::nullopt})),
                                stream({kCall, kStop})}},
                    done()};
  const hx::CaseCoverage c = hx::case_coverage(run(s));
  CHECK(c.faults == std::vector<std::string>{"reset"});
  CHECK(c.positions == std::vector<std::string>{"after a call"});
  CHECK(c.finishes == std::vector<std::string>{"stop"});
  CHECK(c.statuses.empty());
  CHECK(c.provider == "gemini");
  CHECK(sorted(c.invariants) == sorted({"at-most-once", "recorded-execution", "pairing", "history-integrity"}));
}

TEST_CASE("a content-filter finish after text exercises honest-outcome, clean-output and the retry check",
          "[explore][coverage]") {
  harness::Scenario s;
  s.script.turns = {mock::Turn{{stream({mock::TextEvent{"Partial"}, mock::FinishEvent{mock::FinishReason::kContentFilter}})}}};
  const hx::CaseCoverage c = hx::case_coverage(run(s));
  CHECK(c.faults.empty());
  CHECK(c.finishes == std::vector<std::string>{"content_filter"});
  // The run fails at once (no fallback): no request follows, so history-integrity is not exercised.
  CHECK(sorted(c.invariants) == sorted({"honest-outcome", "clean-output", "no-unchanged-content-filter-retry"}));
}

TEST_CASE("statuses exercise bounded-retries and no-rejected-request", "[explore][coverage]") {
  SECTION("a 429 with Retry-After") {
    harness::Scenario s;
    s.script.turns = {mock::Turn{{status(429, 5), stream({kStop})}}};
    const hx::CaseCoverage c = hx::case_coverage(run(s));
    CHECK(c.statuses == std::vector<std::string>{"429"});
    CHECK(c.invariants == std::vector<std::string>{"bounded-retries"});
  }
  SECTION("a 503 without Retry-After, budget left: nothing") {
    harness::Scenario s;
    s.script.turns = {mock::Turn{{status(503), stream({kStop})}}};
    CHECK(hx::case_coverage(run(s)).invariants.empty());
  }
  SECTION("a budget of two spent on 503s") {
    harness::Scenario s;
    s.runtime.max_attempts = 2;
    s.script.turns = {mock::Turn{{status(503)}}};
    const hx::CaseCoverage c = hx::case_coverage(run(s));
    CHECK(c.statuses == std::vector<std::string>{"503"});
    CHECK(c.invariants == std::vector<std::string>{"bounded-retries"});
  }
  SECTION("a 400") {
    harness::Scenario s;
    s.script.turns = {mock::Turn{{status(400)}}};
    const hx::CaseCoverage c = hx::case_coverage(run(s));
    CHECK(c.statuses == std::vector<std::string>{"400"});
    CHECK(c.invariants == std::vector<std::string>{"no-rejected-request"});
  }
}

TEST_CASE("an end fault before any event in the last turn is counted at both positions", "[explore][coverage]") {
  harness::Scenario s;
  s.script.turns = {mock::Turn{{stream({mock::TextEvent{"x"}, kStop}, mock::Fault(mock::EndFault{0, std::nullopt})),
                                stream({kStop})}}};
  const hx::CaseCoverage c = hx::case_coverage(run(s));
  CHECK(c.faults == std::vector<std::string>{"end"});
  CHECK(c.positions == std::vector<std::string>{"before any event", "in the last turn"});
  CHECK(c.invariants == std::vector<std::string>{"honest-outcome"});
}

TEST_CASE("coverage counts of a fixed-seed exploration match a scan of every case's journal",
          "[explore][coverage]") {
  hx::ExploreOptions o;
  o.seed = 4;
  o.cases = 60;
  o.write_counterexample = false;
  std::ostringstream log;
  const auto out = hx::explore(o, log);
  REQUIRE(out.cases_run == 60);
  REQUIRE(out.coverage.cases() == 60);
  // The scan below is written apart from coverage.cpp: plain loops over the journal.
  int call_then_failed = 0, responses = 0, gemini = 0;
  std::map<std::string, int> faults;
  harness::RunOptions ro;
  ro.transport = harness::TransportKind::kMemory;
  for (int i = 0; i < 60; ++i) {
    const auto r = harness::run_scenario(hx::with_oracle_expect(hx::generate_case(4, i).value()), ro);
    bool a = false, p = false;
    std::set<std::string> kinds;
    for (const auto& e : r.journal) {
      a |= !e.delivered_calls.empty() && !e.completed;
      p |= e.contents.dump().find("\"functionResponse\"") != std::string::npos;
      if (!e.fault.empty()) kinds.insert(e.fault);
    }
    for (const auto& c : r.tool_calls) a |= c.outcome == "timed_out" || c.outcome == "reply_lost" || c.outcome == "waiting";
    call_then_failed += a;
    responses += p;
    gemini += r.scenario.script.provider == "gemini";
    for (const auto& k : kinds) ++faults[k];
  }
  CHECK(out.coverage.count("invariant", "at-most-once") == call_then_failed);
  CHECK(out.coverage.count("invariant", "pairing") == responses);
  CHECK(out.coverage.count("provider", "gemini") == gemini);
  for (const auto& k : mock::fault_catalogue()) {
    INFO(k.name);
    CHECK(out.coverage.count("fault", std::string(k.name)) == faults[std::string(k.name)]);
  }
  // The run is big enough that these are not vacuous.
  CHECK(call_then_failed > 0);
  CHECK(responses > 0);
  CHECK(log.str().find("coverage (cases of 60):") != std::string::npos);
}

TEST_CASE("an invariant whose precondition never held is named in a warning, on the console and in the summary",
          "[explore][coverage]") {
  // A one-case run whose case delivers no call from an attempt that then failed.
  harness::RunOptions ro;
  ro.transport = harness::TransportKind::kMemory;
  std::uint64_t seed = 0;
  for (std::uint64_t s = 1; s <= 200 && seed == 0; ++s) {
    const auto r = harness::run_scenario(hx::with_oracle_expect(hx::generate_case(s, 0).value()), ro);
    if (std::none_of(r.journal.begin(), r.journal.end(),
                     [](const mock::JournalEntry& e) { return !e.delivered_calls.empty() && !e.completed; })) {
      seed = s;
    }
  }
  REQUIRE(seed != 0);
  hx::ExploreOptions o;
  o.seed = seed;
  o.cases = 1;
  o.write_counterexample = false;
  const auto path = hiccup_test::temp_path("hiccup-coverage-warning.json");
  std::filesystem::remove(path);
  auto listener = harness::make_summary_listener(path.string());
  std::ostringstream log;
  const auto out = hx::explore(o, log, listener.get());
  listener.reset();
  INFO(log.str());
  const auto unexercised = out.coverage.unexercised();
  CHECK(std::find(unexercised.begin(), unexercised.end(), "at-most-once") != unexercised.end());
  const std::string warning =
      "invariant at-most-once was never exercised: in no case a call was delivered by an attempt that then failed, or a "
      "tool call's outcome was unknown (timed out, reply lost)";
  CHECK(log.str().find("warning: " + warning + "\n") != std::string::npos);
  std::ifstream in(path);
  REQUIRE(in);
  const auto summary = nlohmann::json::parse(in);
  const auto warnings = summary["warnings"].get<std::vector<std::string>>();
  CHECK(std::find(warnings.begin(), warnings.end(), warning) != warnings.end());
  CHECK(warnings.size() == unexercised.size());
  CHECK(summary["coverage"]["invariants"]["at-most-once"]["cases"] == 0);
  CHECK(summary["coverage"]["cases"] == 1);
  in.close();
  std::filesystem::remove(path);
  // A run where it held names no such warning.
  hx::ExploreOptions big = o;
  big.cases = 60;
  std::ostringstream log2;
  const auto wide = hx::explore(big, log2);
  CHECK(wide.coverage.count("invariant", "at-most-once") > 0);
  CHECK(log2.str().find("warning: invariant at-most-once") == std::string::npos);
}

TEST_CASE("merged shard reports carry the coverage and warnings of the unsharded run", "[explore][coverage]") {
  auto summary_of = [](hx::ExploreOptions o) {
    nlohmann::json out;
    auto listener = harness::make_summary_json_listener([&out](const nlohmann::json& j) { out = j; });
    std::ostringstream log;
    hx::explore(o, log, listener.get());
    listener.reset();
    return out;
  };
  hx::ExploreOptions o;
  o.seed = 4;
  o.cases = 45;
  o.write_counterexample = false;
  const nlohmann::json whole = summary_of(o);
  std::vector<harness::ShardReport> shards;
  for (int k = 1; k <= 3; ++k) {
    hx::ExploreOptions s = o;
    s.shard_index = k;
    s.shard_count = 3;
    shards.push_back({"shard" + std::to_string(k), summary_of(s)});
    CHECK(shards.back().summary["coverage"]["cases"] == 15);
  }
  const auto merged = harness::merge_shard_reports(shards, "out");
  CHECK(merged.summary["coverage"] == whole["coverage"]);
  CHECK(merged.summary["warnings"] == whole["warnings"]);
  for (std::size_t i = 0; i < whole["cases"].size(); ++i) {
    INFO(whole["cases"][i]["property"]);
    CHECK(merged.summary["cases"][i].value("exercised", -1) == whole["cases"][i].value("exercised", -1));
  }
}

}  // namespace coverage_test
