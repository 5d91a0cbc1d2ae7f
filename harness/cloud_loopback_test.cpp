// Loopback over the cloud paths: the reference runtime (rut::CloudTransport) against the mock's
// cloud module (mock::cloud) over real HTTP. A scenario gets the same verdict over Bedrock's event
// stream, Vertex and Foundry as over Anthropic's own SSE path, fault by fault.
#include <catch2/catch.hpp>

#include "harness/runner.h"
#include "harness/scenario_io.h"

namespace cloud_loopback_test {

using harness::CaseResult;
using harness::RunOptions;
using harness::Scenario;

Scenario load(const std::string& relative) {
  harness::LoadResult r = harness::load_scenario_file(std::string(HICCUP_SOURCE_DIR) + "/scenarios/" + relative);
  INFO(relative);
  REQUIRE(r.problems.empty());
  Scenario s = *r.scenario;
  REQUIRE_FALSE(harness::unplayable_in(s, "anthropic"));
  s.script.provider = "anthropic";
  return s;
}

CaseResult run(const Scenario& s, const std::string& cloud) {
  RunOptions o;
  o.transport = harness::TransportKind::kHttp;
  o.http_slower_reruns = 0;
  o.cloud = cloud;
  return harness::run_scenario(s, o);
}

/// The runtime's error code per failed attempt ("stream_error", "http_429", "connection_lost", …),
/// from its retry and error events: what it made of each fault.
std::vector<std::string> attempt_errors(const CaseResult& r) {
  std::vector<std::string> out;
  for (const nlohmann::json& e : r.run.events) {
    const std::string type = e.value("type", "");
    const char* key = type == "retry" ? "error" : type == "error" ? "attempt_error" : nullptr;
    if (key && e.contains(key) && e[key].is_string()) out.push_back(e[key].get<std::string>());
  }
  return out;
}

std::string describe(const CaseResult& r) {
  std::string out = r.scenario.name + " (" + r.run.error + "):";
  for (const auto& v : r.violations) out += "\n  " + v.invariant + ": " + v.message;
  return out;
}

/// Plays `relative` over SSE and over `cloud`; both pass with the same violations, requests and
/// outcome, and the fault named `fault` (or the status) was played. Returns the cloud run.
CaseResult same_verdict(const std::string& relative, const std::string& cloud, const std::string& fault = "") {
  const Scenario s = load(relative);
  const CaseResult sse = run(s, "");
  const CaseResult over = run(s, cloud);
  INFO(cloud << ": " << describe(over));
  INFO("sse: " << describe(sse));
  CHECK(sse.passed());
  CHECK(over.passed());
  CHECK(over.violations == sse.violations);
  CHECK(over.run.requests == sse.run.requests);
  CHECK(over.run.error == sse.run.error);
  CHECK(attempt_errors(over) == attempt_errors(sse));  // each fault read as the same failure
  CHECK(over.journal.size() == sse.journal.size());
  if (!fault.empty()) {
    bool played = false;
    for (const auto& e : over.journal) played = played || e.fault == fault;
    CHECK(played);
  }
  return over;
}

TEST_CASE("cloud loopback: an in-stream error plays as an exception event, same verdict (bedrock)") {
  same_verdict("mid-stream/midstream-error-event-529.json", "bedrock", "error_event");
  same_verdict("mid-stream/midstream-error-event-after-call.json", "bedrock", "error_event");
}

TEST_CASE("cloud loopback: a cut inside a frame plays as a cut inside a message, same verdict (bedrock)") {
  same_verdict("mid-stream/midstream-cut-mid-frame.json", "bedrock", "cut");
}

TEST_CASE("cloud loopback: FIN and RST mid-stream, same verdict (bedrock)") {
  same_verdict("mid-stream/midstream-disconnect-with-delay.json", "bedrock", "disconnect");
  same_verdict("mid-stream/midstream-reset-after-call.json", "bedrock", "reset");
}

TEST_CASE("cloud loopback: a malformed frame plays as an undecodable chunk, same verdict (bedrock)") {
  same_verdict("mid-stream/midstream-malformed-after-partial-text.json", "bedrock", "malformed");
}

TEST_CASE("cloud loopback: stalls, same verdict (bedrock)") {
  same_verdict("mid-stream/midstream-stall-above-idle-timeout.json", "bedrock", "stall");
  same_verdict("mid-stream/midstream-stall-below-idle-timeout.json", "bedrock", "stall");
}

TEST_CASE("cloud loopback: HTTP statuses play as Bedrock's typed errors, same verdict (bedrock)") {
  for (const char* file : {"http-status/http-429-retry-after-wins.json", "http-status/http-529-retried.json",
                           "http-status/http-504-retried.json", "http-status/http-500-retried.json",
                           "http-status/http-401-non-retryable.json", "http-status/http-501-non-retryable.json",
                           "http-status/http-400-invalid-request.json"}) {
    same_verdict(file, "bedrock");
  }
}

TEST_CASE("cloud loopback: the fault folders get the same verdict over vertex and foundry") {
  for (const char* cloud : {"vertex", "foundry"}) {
    for (const char* file : {"mid-stream/midstream-error-event-529.json", "mid-stream/midstream-cut-mid-frame.json",
                             "http-status/http-429-retry-after-wins.json"}) {
      const CaseResult r = same_verdict(file, cloud);
      // Vertex and Foundry stream Anthropic's bytes unchanged: the same transcript.
      CHECK(r.digest == run(load(file), "").digest);
    }
  }
}

TEST_CASE("cloud loopback: a Bedrock-worded error and an idle timeout are not re-run against memory (bedrock)") {
  // A 529 (sent as Bedrock's 503) then a stall past the idle timeout: the run met a silence, and its
  // transcript differs from the in-memory run's by design (the retry says 503, not 529), so it is
  // judged as it came, neither re-run slower nor listed as differing from memory.
  const harness::LoadResult parsed = harness::parse_scenario(R"({
    "schema": 1, "name": "bedrock-529-then-stall", "provider": "anthropic", "prompt": "Count.",
    "runtime": {"idle_timeout_s": 5},
    "turns": [{"attempts": [
      {"status": 529},
      {"events": [{"text": "One, "}, {"text": "two."}, {"finish": "stop"}],
       "fault": {"kind": "stall", "after_event": 1, "seconds": 20}},
      {"events": [{"text": "One, two."}, {"finish": "stop"}]}]}],
    "expect": {"outcome": "completed", "final_text": "One, two.", "requests": 3}})",
                                                            "bedrock-529-then-stall.json");
  REQUIRE(parsed.problems.empty());
  RunOptions o;
  o.transport = harness::TransportKind::kHttp;
  o.cloud = "bedrock";
  const CaseResult over = harness::run_scenario(*parsed.scenario, o);
  INFO(describe(over));
  CHECK(over.passed());
  CHECK(attempt_errors(over) == std::vector<std::string>{"http_5xx", "idle_timeout"});
  CHECK(over.slower_reruns == 0);
  CHECK_FALSE(over.differs_from_memory);
  RunOptions memory = o;
  memory.transport = harness::TransportKind::kMemory;
  CHECK(harness::run_scenario(*parsed.scenario, memory).digest != over.digest);  // the premise
}

}  // namespace cloud_loopback_test
