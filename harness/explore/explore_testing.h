// Test helpers shared by the explorer's tests (explorer_test.cpp, in harness_tests) and the
// per-format kill matrix (kill_matrix_test.cpp, its own binary: ctest label `kill-matrix`, run by
// the plain tree only; harness/CMakeLists.txt says why).
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "harness/explore/explorer.h"
#include "harness/runner.h"
#include "runtime_under_test/defects.h"
#include "tests/test_scale.h"

namespace hiccup_test {

/// The real idle timeout of explorations over HTTP in these tests (ExploreOptions::http_idle_floor_ms;
/// `explore` defaults to 500 ms). Over HTTP a case's verdict rests on real-time margins: a short
/// stall ends at most half an idle timeout before the runtime would give up. CI runs this suite two
/// tests at a time on 2 cores, and again under ASan (several times slower), while an exploration
/// runs 64 cases at once: with 500 ms, 20 of 1,000 cases were judged on late bytes under that load
/// (their re-runs alone matched); with 2,000 ms, none.
constexpr double kTestIdleFloorMs = 2000;

/// `cases` cases from `seed`, in memory, no counterexample file, the tests' idle floor over HTTP.
inline harness::explore::ExploreOptions quiet_options(std::uint64_t seed, int cases) {
  harness::explore::ExploreOptions o;
  o.seed = seed;
  o.cases = cases;
  o.write_counterexample = false;
  o.http_idle_floor_ms = kTestIdleFloorMs;
  return o;
}

/// The attempts a scenario scripts, over all its turns.
inline int total_attempts(const harness::Scenario& s) {
  int n = 0;
  for (const auto& t : s.script.turns) n += static_cast<int>(t.attempts.size());
  return n;
}

/// Whether a counterexample (its runtime.defects set by the explorer) passes on the runtime without
/// them: the seeded defect, not the case, is what fails.
inline bool passes_without_defects(harness::Scenario s) {
  s.runtime.defects.clear();
  harness::RunOptions o;
  o.transport = harness::TransportKind::kMemory;
  const harness::CaseResult r = harness::run_scenario(s, o);
  for (const auto& v : r.violations) UNSCOPED_INFO("without the defects: " << v.invariant << ": " << v.message);
  return r.passed();
}

/// Explores with `defects` on (every case in `provider`'s format, or drawn per case when "") and
/// requires a failure whose shrunk counterexample is small.
inline void require_found(const std::vector<std::string>& defects, std::uint64_t seed, const std::string& provider = "") {
  auto o = quiet_options(seed, 200);
  o.defects = defects;
  o.provider = provider;
  std::ostringstream log;
  const auto out = harness::explore::explore(o, log);
  INFO("defects " << defects.front() << (defects.size() > 1 ? " + " + defects.back() : "") << ", seed " << seed
                  << ", provider " << (provider.empty() ? "drawn" : provider) << "\n" << log.str());
  REQUIRE(out.failure.has_value());
  CHECK(out.exit_code() == 1);
  CHECK(out.failure->shrunk.script.turns.size() <= 3u);
  CHECK(total_attempts(out.failure->shrunk) <= 6);
  CHECK(passes_without_defects(out.failure->shrunk));
}

/// Whether `defect` has no site a stream in `provider` reaches, as the defect catalogue says
/// (rut::DefectInfo::unreachable_in, e.g. malformed-call-as-stop in Anthropic).
/// A defect whose site is one transport (rut::DefectInfo::transport: replay-lost-context in the
/// WebSocket transport) has none in memory, where these explorations run: it is explored over its
/// transport (explorer_test.cpp).
inline bool invisible_in(const std::string& provider, rut::Defect defect) {
  for (const auto& info : rut::defect_catalogue()) {
    if (info.defect == defect) {
      return (!info.unreachable_in.empty() && info.unreachable_in == provider) || !info.transport.empty();
    }
  }
  return false;
}

/// require_found for every seeded defect alone (but no-pairing-guard, an equivalent mutant alone)
/// that `provider` ("" draws it per case) can show: seeds 1-3, seed 1 under the sanitizers
/// (HICCUP_TEST_SCALE=0.1).
inline void require_every_defect_found(const std::string& provider) {
  for (const auto& info : rut::defect_catalogue()) {
    if (info.defect == rut::Defect::kNoPairingGuard) continue;  // equivalent mutant alone; explorer_test.cpp
    if (invisible_in(provider, info.defect)) continue;
    const auto seeds = static_cast<std::uint64_t>(scaled(3));
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) require_found({std::string(info.name)}, seed, provider);
  }
}

}  // namespace hiccup_test
