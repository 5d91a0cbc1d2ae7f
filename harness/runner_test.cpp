// The runner end to end over the bundled suite: it passes without defects on both transports with
// identical verdicts and digests, every defect is caught by the scenarios that say they catch it,
// and no-pairing-guard is pinned in the combination that makes it visible.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "runtime_under_test/defects.h"

namespace harness {
namespace {

std::vector<Scenario> load_suite() {
  std::vector<LoadProblem> problems;
  const auto files = collect_scenario_files({std::string(HICCUP_SOURCE_DIR) + "/scenarios"}, problems);
  REQUIRE(problems.empty());
  std::vector<Scenario> out;
  for (const auto& f : files) {
    LoadResult r = load_scenario_file(f);
    INFO(f);
    REQUIRE(r.problems.empty());
    out.push_back(*r.scenario);
  }
  REQUIRE(out.size() >= 25);
  return out;
}

RunOptions memory() {
  RunOptions o;
  o.transport = TransportKind::kMemory;
  return o;
}

std::string describe(const CaseResult& r) {
  std::string s = r.scenario.name + ":";
  for (const auto& v : r.violations) s += "\n  " + v.invariant + ": " + v.message;
  return s;
}

/// The suite with every scenario played in `provider`'s wire format (as `hiccup run --provider`).
std::vector<Scenario> load_suite_as(const std::string& provider) {
  std::vector<Scenario> suite = load_suite();
  for (Scenario& s : suite) s.script.provider = provider;
  return suite;
}

void check_suite_passes(const std::string& provider) {
  for (const Scenario& s : load_suite_as(provider)) {
    const CaseResult http = run_scenario(s, RunOptions{});
    const CaseResult mem = run_scenario(s, memory());
    INFO(provider << " " << describe(http));
    INFO(describe(mem));
    CHECK(http.passed());
    CHECK(mem.passed());
    CHECK(http.digest == mem.digest);
    // Evidence that the format was really spoken: every scripted request was answered by it.
    for (const auto& e : http.journal) CHECK(e.provider == provider);
  }
}

TEST_CASE("the suite passes without defects over HTTP and in memory, with identical digests: gemini") {
  check_suite_passes("gemini");
}
TEST_CASE("the suite passes without defects over HTTP and in memory, with identical digests: openai-chat") {
  check_suite_passes("openai-chat");
}
TEST_CASE("the suite passes without defects over HTTP and in memory, with identical digests: openai-responses") {
  check_suite_passes("openai-responses");
}
TEST_CASE("the suite passes without defects over HTTP and in memory, with identical digests: anthropic") {
  check_suite_passes("anthropic");
}

TEST_CASE("the same scenario run twice gives the same digest") {
  const auto suite = load_suite();
  for (std::size_t i = 0; i < suite.size(); i += 5) {
    CHECK(run_scenario(suite[i], memory()).digest == run_scenario(suite[i], memory()).digest);
  }
}

void check_kill_matrix(const std::string& provider) {
  std::set<std::string> caught;
  for (const Scenario& s : load_suite_as(provider)) {
    for (const std::string& defect : s.catches) {
      RunOptions o = memory();
      o.extra_defects = {defect};
      const CaseResult r = run_scenario(s, o);
      INFO(s.name << " under " << defect << " in " << provider);
      CHECK_FALSE(r.passed());
      if (!r.passed()) caught.insert(defect);
    }
  }
  for (const rut::DefectInfo& d : rut::defect_catalogue()) {
    if (d.name == "no-pairing-guard") continue;  // invisible alone; pinned below
    INFO("defect " << d.name << " is caught by no scenario of the suite in " << provider);
    CHECK(caught.contains(std::string(d.name)));
  }
}

TEST_CASE("kill matrix: every scenario fails under each defect it catches, and every defect is caught: gemini") {
  check_kill_matrix("gemini");
}
TEST_CASE("kill matrix: every scenario fails under each defect it catches, and every defect is caught: openai-chat") {
  check_kill_matrix("openai-chat");
}
TEST_CASE("kill matrix: every scenario fails under each defect it catches, and every defect is caught: openai-responses") {
  check_kill_matrix("openai-responses");
}
TEST_CASE("kill matrix: every scenario fails under each defect it catches, and every defect is caught: anthropic") {
  check_kill_matrix("anthropic");
}

TEST_CASE("no-pairing-guard is visible only together with keep-calls-on-retry") {
  Scenario s;
  for (const Scenario& candidate : load_suite()) {
    if (candidate.name == "midstream-reset-after-call") s = candidate;
  }
  REQUIRE(s.name == "midstream-reset-after-call");
  auto invariants_of = [&](std::vector<std::string> defects, TransportKind t) {
    RunOptions o;
    o.transport = t;
    o.extra_defects = std::move(defects);
    std::set<std::string> names;
    for (const auto& v : run_scenario(s, o).violations) names.insert(v.invariant);
    return names;
  };
  for (TransportKind t : {TransportKind::kMemory, TransportKind::kHttp}) {
    CHECK(invariants_of({"no-pairing-guard"}, t).empty());
    // The guard drops the orphan response: only the duplicate execution shows.
    const auto alone = invariants_of({"keep-calls-on-retry"}, t);
    CHECK(alone.contains("at-most-once"));
    CHECK_FALSE(alone.contains("pairing"));
    // Without the guard the server answers 400: pairing breaks too.
    const auto both = invariants_of({"keep-calls-on-retry", "no-pairing-guard"}, t);
    CHECK(both.contains("at-most-once"));
    CHECK(both.contains("pairing"));
    CHECK(both.contains("no-rejected-request"));
  }
}

TEST_CASE("a run never hangs: unbounded retries reach the request cap as bounded-retries") {
  Scenario s;
  s.name = "always-503";
  s.prompt = "go";
  s.script.turns = {mock::Turn{{mock::Attempt{503, std::nullopt, {}, std::nullopt, std::nullopt}}}};
  s.runtime.backoff_s = std::vector<double>{1};
  RunOptions o = memory();
  o.extra_defects = {"unbounded-retry"};
  const CaseResult r = run_scenario(s, o);
  CHECK(r.cap_reached);
  CHECK(r.run.requests == 64);
  REQUIRE_FALSE(r.violations.empty());
  CHECK(r.violations.front().invariant == "bounded-retries");
}

}  // namespace
}  // namespace harness
