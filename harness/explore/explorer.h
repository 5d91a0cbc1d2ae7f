// The property-based explorer: generates scenarios (generators.h) case by case from a seed, derives
// their expectations from the oracle (an independent model of docs/POLICY.md), runs each against the
// reference runtime and checks every invariant and expect field. The first failing case is shrunk
// greedily through RapidCheck's shrink tree, then minimized by delta debugging (minimize.h) to a
// 1-minimal case, and written as a v1 scenario file that `hiccup run` replays. Same seed and case count ⇒ same cases, same verdicts; shards split one seed's cases.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <ostream>
#include <string>
#include <vector>

#include "harness/explore/coverage.h"
#include "harness/explore/generators.h"
#include "harness/invariants.h"
#include "harness/runner.h"
#include "harness/scenario.h"

namespace harness {
class ReportListener;
}

namespace harness::explore {

/// ExploreOptions::http_idle_floor_ms by default: the real idle timeout of HTTP explorations, ms.
inline constexpr double kDefaultHttpIdleFloorMs = 300;

struct ExploreOptions {
  std::uint64_t seed = 1;
  int cases = 100;                          ///< case indices 0 … cases-1 (before sharding)
  std::vector<std::string> defects;         ///< switched on for every case (RunOptions::extra_defects)
  std::string provider;                     ///< every case in this wire format; "" = drawn per case
  /// Every case under this recovery design ("hold" or "continue"); "" = drawn per case, unless
  /// every defect switched on has a site in one design only (rut::DefectInfo::design): then that
  /// one (effective_recovery).
  std::string recovery;
  /// How each case reaches the reference runtime: in memory, or over a real server in real time
  /// (kHttp, kWebSocket; over_network). kWebSocket plays openai-responses cases only, `cloud`
  /// anthropic cases only: the CLI fixes `provider` for them (explore_command.cpp).
  TransportKind transport = TransportKind::kMemory;
  /// With kHttp: a cloud path of the anthropic format ("bedrock", "vertex" or "foundry";
  /// RunOptions::cloud), "" for the provider's own path.
  std::string cloud;
  /// `--transport any`: each case's transport is drawn (case_transport) among those its wire
  /// format plays; `transport` is then kHttp and `cloud` "".
  bool draw_transport = false;
  std::string report_dir = "reports";       ///< counterexamples go to REPORT_DIR/counterexamples/
  bool write_counterexample = true;
  /// Share of cases re-run and compared, % (0 off, 100 all). By default 1: every 100th case
  /// (index 0, 100, ...), so that explore/determinism never passes on no re-run at all.
  int determinism_pct = 1;
  int shard_index = 1;                      ///< K of --shard K/N, 1-based
  int shard_count = 1;                      ///< N of --shard K/N
  int max_shrink_tries = 2000;              ///< candidate runs spent shrinking (RapidCheck's shrink tree) at
                                            ///< most; 0: neither shrunk nor minimized, the counterexample
                                            ///< is the failing case as generated
  int max_minimize_tries = 3000;            ///< candidate runs spent minimizing (minimize.h) at most
  bool stop_at_first_failure = true;
  bool progress = false;                    ///< live progress line on stderr (for a TTY)
  /// Without the live line: a progress line on stderr every this many seconds of real time (for
  /// CI logs: a run killed midway shows how far it got); 0: none. Reporting only.
  double progress_every_s = 0;
  int jobs = 0;                             ///< cases run at once; 0 = 64 over HTTP (runs wait on real-time
                                            ///< stalls and idle timeouts), in memory the hardware
                                            ///< threads (at most 8: runs are CPU-bound)
  /// HTTP: RunOptions::min_idle_timeout_ms, in real ms (0 = RunOptions' default, 500). Shorter
  /// than the 500 ms of `hiccup run`: a case whose short stall the machine's load turned into an
  /// idle timeout is run again slower (http_slower_reruns), so the margin need not cover the
  /// worst load. 1,000 cases, one exploration alone: 2.54 s at 300 ms, 3.36 s at 500; four at once
  /// with --check-determinism all: 19.3-22.4 s at 300 (16-42 re-runs each), 19.0-23.5 s at 500
  /// (1-7), every one exit 0.
  double http_idle_floor_ms = kDefaultHttpIdleFloorMs;
  int http_slower_reruns = 2;               ///< HTTP: RunOptions::http_slower_reruns (0: judge every
                                            ///< HTTP run as it came, whatever the machine's load)
  std::string hiccup_path = "build/hiccup"; ///< used in printed replay command lines
  /// Keep every case's review transcript (CaseRecord::transcript; `--transcripts`); the failure's
  /// are kept either way.
  bool transcripts = false;
  /// `--from FILE`: every case is this scenario (a recording or any scenario file) with failures
  /// drawn before its turns' answers (gen_from_base) instead of a generated one; its provider,
  /// runtime settings, turns, texts and calls are kept, and minimization never replaces a text or
  /// a call's arguments (FailureJudge::keep_content). `provider` and `recovery` do not apply.
  std::optional<Scenario> base;
  std::string base_path;  ///< FILE, for the printed command lines
  /// What generated cases may hold (generate_case's `limits`; the default: the whole space). Not
  /// used with `base`.
  GenerateLimits limits;
};

/// How big a scenario is, for shrinking reports.
struct ScenarioSize {
  int turns = 0;
  int attempts = 0;  ///< scripted attempts over all turns
  int events = 0;    ///< scripted events over all attempts
};

/// The size of `scenario`'s script.
ScenarioSize size_of(const Scenario& scenario);

/// The first failing case, before and after shrinking.
struct ExploreFailure {
  int case_index = -1;
  Scenario original;                      ///< as generated, expect from the oracle
  std::vector<Violation> original_violations;
  Scenario shrunk;                        ///< smallest failing scenario found; runtime.defects and
                                          ///< catches hold the defects when some were on
  std::vector<Violation> violations;      ///< the shrunk case's violations
  ScenarioSize original_size;
  ScenarioSize shrunk_size;
  nlohmann::json original_transcript;     ///< review transcript (transcript.h) of the original run
  nlohmann::json transcript;              ///< review transcript of the shrunk counterexample's run
  int shrink_steps = 0;                   ///< accepted shrinks (RapidCheck's shrink tree)
  int shrink_tries = 0;                   ///< candidate runs (RapidCheck's shrink tree)
  int minimize_steps = 0;                 ///< edits kept by the delta-debugging pass
  int minimize_tries = 0;                 ///< candidate runs of the delta-debugging pass
  bool one_minimal = false;               ///< minimization ended with a pass that kept nothing
  /// The invariants every shrink and minimization step kept breaking (minimize.h failure_target
  /// of the original violations).
  std::set<std::string> target;
  double shrink_ms = 0;                   ///< wall time of shrinking and minimizing (reporting only)
  std::string path;                       ///< counterexample file ("" when not written)
  std::string replay_command;             ///< `hiccup run PATH`
  std::string explore_command;            ///< `hiccup explore --seed … --cases …`
};

/// One case's verdict (kept for reproducibility checks).
struct CaseRecord {
  int index = 0;
  bool passed = true;
  std::string digest;
  std::vector<std::string> invariants;  ///< names broken, in order
  std::vector<Violation> violations;    ///< the violations of a failing case (empty when it passed)
  std::string provider;                 ///< the wire format the case was played in
  nlohmann::json transcript;            ///< review transcript; null unless ExploreOptions::transcripts
};

struct ExploreOutcome {
  int cases_run = 0;
  /// Cases run per transport label (one entry unless `--transport any`).
  std::map<std::string, int> cases_per_transport;
  int passed = 0;
  int failed = 0;
  std::optional<ExploreFailure> failure;     ///< the first failure (shrunk)
  int determinism_checked = 0;
  /// Case indices whose re-run digest differed: the --check-determinism share, plus every failing
  /// case (a failure is re-run once before shrinking; one that does not reproduce is not shrunk).
  std::vector<int> determinism_mismatches;
  /// HTTP: indices of the cases whose first run differed from their in-memory run and whose verdict
  /// is that of a slower re-run that agreed with it (RunOptions::http_slower_reruns): timing
  /// artifacts absorbed.
  std::vector<int> rerun_cases;
  /// HTTP: case indices whose every rerun still differed from the in-memory run (CaseResult::
  /// differs_from_memory): a difference of the HTTP path itself, judged on the slowest run.
  std::vector<int> differs_from_memory;
  std::vector<CaseRecord> records;           ///< every case run, in order
  /// What the cases run exercised (coverage.h); printed at the end, kept in summary.json.
  Coverage coverage;
  /// FNV-1a 64 (16 hex digits) over every case run's "index digest" line in index order: one
  /// string that two machines compare for a whole run (same seed, cases, shard and defects ⇒ same).
  std::string digest;
  double wall_ms = 0;
  /// Exit code per commands.h: 0, 1 (a failure) or 4 (a determinism mismatch; wins over 1).
  int exit_code() const;
};

/// splitmix64 step: the fully specified mixer behind every per-case seed.
std::uint64_t splitmix64(std::uint64_t& state);

/// The 256-bit rc::Random key of case `index` under `seed` (four splitmix64 outputs of a state
/// mixed from both); independent of sharding.
rc::Random case_random(std::uint64_t seed, int index);

/// What `--transport` names for `options`: "any" when drawn per case, its cloud path when it has
/// one, else transport_name(options.transport).
std::string transport_label(const ExploreOptions& options);

/// One case's transport under `--transport any`: `kind` and `cloud` as ExploreOptions has them,
/// `label` as `--transport` names it.
struct CaseTransport {
  TransportKind kind = TransportKind::kHttp;
  std::string cloud;
  std::string label = "http";
};

/// The transport of case `index` of `seed` in wire format `provider`, drawn from (seed, index)
/// alone among those the format plays: openai-responses http or websocket (one case in two),
/// anthropic http, bedrock, vertex or foundry (one in four each), gemini and openai-chat http.
CaseTransport case_transport(std::uint64_t seed, int index, std::string_view provider);

/// `explore-s{seed}-c{index}`.
std::string case_name(std::uint64_t seed, int index);

/// The generated scenario of a case (shrink tree root), expect not yet filled; `provider` fixes the
/// wire format ("" = drawn from the case's seed); `limits` narrows what may be drawn (the default:
/// the whole space, as for the reference runtime).
rc::Shrinkable<Scenario> generate_case(std::uint64_t seed, int index, const std::string& provider = "",
                                       const std::string& recovery = "", const GenerateLimits& limits = {});

/// Case `index` of `hiccup explore --from`: `base` with failures drawn from (seed, index)
/// (gen_from_base), expect not yet filled.
rc::Shrinkable<Scenario> generate_case_from(std::uint64_t seed, int index, const Scenario& base);

/// The design every case of `options` is drawn under: options.recovery when set, else the one
/// design every defect of options.defects has its site in, else "" (drawn per case).
std::string effective_recovery(const ExploreOptions& options);

/// `scenario` with expect from the oracle.
Scenario with_oracle_expect(Scenario scenario);

/// Whether case `index` belongs to shard K of N (1-based K): index % N == K-1.
bool in_shard(int index, int shard_index, int shard_count);

/// Whether case `index` is re-run by a determinism check of `pct` percent: (index·pct) mod 100 < pct,
/// which spreads exactly ⌈pct⌉ of every 100 consecutive cases evenly, case 0 included.
bool determinism_selected(int index, int pct);

/// Runs the exploration, writing human-readable lines to `log` and report events to `listener`
/// (when not null): one report case per property (each invariant, `expect` and, when checked,
/// `determinism`). Throws only when the harness itself fails.
ExploreOutcome explore(const ExploreOptions& options, std::ostream& log, ReportListener* listener = nullptr);

}  // namespace harness::explore
