// The runner: plays one scenario against the reference runtime, over real HTTP on 127.0.0.1 (a
// mock server per run on an ephemeral port) or in-process (memory transport, no sockets), then
// judges it: every invariant, every `expect` field, a transcript and its digest. Runs never hang:
// requests and virtual time are capped, and reaching a cap is a `bounded-retries` violation.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/invariants.h"
#include "harness/scenario.h"
#include "harness/scripted_tools.h"
#include "mock_server/journal.h"
#include "runtime_under_test/runtime.h"

namespace harness {

/// How the reference runtime reaches the mock: HTTP with SSE, in process, or the Responses API's
/// WebSocket mode (a real server as for kHttp; runtime_under_test/ws_transport.h).
enum class TransportKind { kHttp, kMemory, kWebSocket };
/// Whether runs of `kind` go through a real MockHttpServer (real time: kHttp and kWebSocket).
inline bool over_network(TransportKind kind) { return kind != TransportKind::kMemory; }

/// "http" / "memory"; transport_from_name returns false for anything else.
std::string_view transport_name(TransportKind kind);
bool transport_from_name(std::string_view name, TransportKind& out);

struct RunOptions {
  TransportKind transport = TransportKind::kHttp;
  /// HTTP only: the cloud path the runtime and the mock speak instead of Anthropic's own
  /// (`hiccup run --transport bedrock|vertex|foundry`; rut::CloudTransport, mock::cloud): ""
  /// for the provider's own path (SSE). Anthropic scenarios only.
  std::string cloud;
  std::vector<std::string> extra_defects;  ///< added to the scenario's runtime.defects
  int max_requests = 64;                   ///< cap on model requests per run
  double max_virtual_s = kDefaultMaxVirtualS;  ///< cap on virtual time per run (seconds)
  double stall_ms_per_s = 20;              ///< HTTP only: real ms per virtual second (stalls, idle timeout)
  double min_idle_timeout_ms = 500;        ///< HTTP only: the scale grows so the idle timeout lasts this long
  int max_delay_ms = 25;                   ///< HTTP only: cap on delay_ms / idle_ms for the reference runtime
  std::uint64_t seed = 1;                  ///< the runtime's random source seed
  /// Fill CaseResult::transcript; off, only its digest is computed (the same digest, without
  /// building the JSON: the explorer reads no transcript of a passing case).
  bool keep_transcript = true;
  /// Set by another thread when the run's result is no longer wanted (an exploration that stopped
  /// at its first failure): the run then ends at its next request, as if capped. Null: never.
  const std::atomic<bool>* abandoned = nullptr;
  /// HTTP only: when the run met a silence (an attempt failed with an idle timeout, or the run
  /// reached a cap: the only ways real time shapes a run) and its digest differs from the same
  /// case's in-memory run, it is run again over HTTP at kSlowerRerunFactor times the real time per
  /// virtual second (stall_ms_per_s and min_idle_timeout_ms), then that again, at most this many
  /// times, until it agrees (0: never).
  /// On a loaded machine a few hundred ms of scheduling delay can trip an idle timeout the script
  /// did not ask for (4 explorations of 64 jobs at once on 2 cores: 3–19 of 1,000 cases each);
  /// the slower run gives the verdict the scenario means. See CaseResult::slower_reruns.
  int http_slower_reruns = 2;
};

/// How much slower each of RunOptions::http_slower_reruns is than the run before it.
inline constexpr double kSlowerRerunFactor = 4;

/// How much slower than the first run the `k`-th slower re-run is: kSlowerRerunFactor^k.
inline double rerun_slowdown(int k) {
  double f = 1;
  for (int i = 0; i < k; ++i) f *= kSlowerRerunFactor;
  return f;
}

/// Everything one run produced and its verdict.
struct CaseResult {
  Scenario scenario;
  rut::RunResult run;
  mock::Journal journal;
  std::vector<Violation> violations;   ///< invariants and expect.<field> failures
  /// Virtual seconds since the run started at which request n (send order) was sent.
  std::vector<double> sent_at_s;
  /// The scenario's tools' record of each tools/call the runtime sent (scripted_tools.h), in
  /// arrival order, `turn` filled from the journal; empty for a scenario without tools.
  std::vector<ToolCallRecord> tool_calls;
  nlohmann::json transcript;           ///< the deterministic record (transport-independent); null
                                       ///< when RunOptions::keep_transcript is off
  std::string digest;                  ///< 16 hex digits: transcript_digest (harness/transcript.h)
  bool cap_reached = false;
  double wall_ms = 0;                  ///< wall time of the run (reporting only; reruns included)
  /// HTTP: how many slower reruns this result took (RunOptions::http_slower_reruns; 0: the first
  /// run agreed with the in-memory run). The result is the last run's.
  int slower_reruns = 0;
  /// HTTP: even the slowest rerun differs from the in-memory run: a difference of the HTTP path
  /// (or a machine too loaded even for that), not of the scenario. The result is the slowest run's.
  bool differs_from_memory = false;
  std::string memory_digest;           ///< HTTP, when the run met a silence: the in-memory run's
                                       ///< digest ("" when it was not compared)
  bool passed() const { return violations.empty(); }
};

/// The watchdog's idle limit for a request whose runtime would wait past the virtual-time cap, in
/// virtual seconds: the longest stall in `script` that ends before `max_virtual_s` (in any
/// attempt, played or not), plus a margin of the runtime's idle timeout (`idle_timeout_s`) capped
/// at 60 s (60 s when it is not a positive finite number). With RunOptions' defaults the margin
/// lasts at least min_idle_timeout_ms of real time over HTTP, as every idle timeout does. A
/// stream silent that long is in a stall that outlasts the cap.
double watch_bound_s(const mock::Script& script, double max_virtual_s, double idle_timeout_s);

/// Runs `scenario` with `options`. Throws std::runtime_error only when the harness itself fails
/// (e.g. the mock server cannot bind); unknown defect names are the loader's job.
CaseResult run_scenario(const Scenario& scenario, const RunOptions& options);

/// The runtime settings a scenario asks for, plus `extra_defects`.
rut::Config runtime_config(const Scenario& scenario, const std::vector<std::string>& extra_defects);

}  // namespace harness
