// The explorer: generate, predict, run, judge, shrink, write; see explorer.h.
#include "harness/explore/explorer.h"
#include "harness/strings.h"
#include "harness/stopwatch.h"

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <semaphore>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "harness/explore/minimize.h"
#include "harness/oracle.h"
#include "harness/report/report.h"
#include "harness/scenario_io.h"
#include "harness/transcript.h"

namespace harness::explore {
namespace {


std::set<std::string> broken_names(const std::vector<Violation>& violations) {
  std::set<std::string> names;
  for (const auto& v : violations) names.insert(v.invariant);
  return names;
}

/// The report property a violation belongs to: its invariant, or "expect" for expect.<field>.
std::string property_of(const Violation& v) {
  return v.invariant.rfind("expect.", 0) == 0 ? "expect" : v.invariant;
}

std::string format_violation(const Violation& v) {
  return v.invariant + violation_location(v) + ": " + v.message;
}

/// Invariant names in first-seen order, each once, with a count when it broke more than once.
std::string summarize_invariants(const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& n : names) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == n; });
    if (it == counts.end()) counts.emplace_back(n, 1);
    else ++it->second;
  }
  std::string out;
  for (const auto& [n, c] : counts) {
    out += (out.empty() ? "" : ", ") + n + (c > 1 ? " ×" + std::to_string(c) : "");
  }
  return out;
}

int attempt_count(const Scenario& s) {
  int n = 0;
  for (const auto& t : s.script.turns) n += static_cast<int>(t.attempts.size());
  return n;
}

int event_count(const Scenario& s) {
  int n = 0;
  for (const auto& t : s.script.turns)
    for (const auto& a : t.attempts) n += static_cast<int>(a.events.size());
  return n;
}

nlohmann::json size_json(const ScenarioSize& z) {
  return {{"turns", z.turns}, {"attempts", z.attempts}, {"events", z.events}};
}

nlohmann::json review_transcript(const CaseResult& r) {
  return make_review_transcript(r.scenario, r.run, r.journal, r.violations, r.sent_at_s);
}

/// The exploration command line that reproduces this run.
std::string explore_command_line(const ExploreOptions& o) {
  std::string cmd = o.hiccup_path + " explore --seed " + std::to_string(o.seed) + " --cases " +
                    std::to_string(o.cases);
  if (o.base) cmd += " --from " + shell_quote(o.base_path);
  for (const auto& d : o.defects) cmd += " --defect " + d;
  if (!o.provider.empty()) cmd += " --provider " + o.provider;
  if (!o.recovery.empty()) cmd += " --recovery " + o.recovery;
  cmd += " --transport " + transport_label(o);
  if (o.shard_count > 1) cmd += " --shard " + std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count);
  if (!o.stop_at_first_failure) cmd += " --keep-going";
  if (over_network(o.transport) && o.http_idle_floor_ms != kDefaultHttpIdleFloorMs && o.http_idle_floor_ms > 0) {
    cmd += " --http-idle-floor-ms " + std::to_string(static_cast<long long>(o.http_idle_floor_ms));
  }
  if (o.max_shrink_tries != ExploreOptions{}.max_shrink_tries) cmd += " --max-shrinks " + std::to_string(o.max_shrink_tries);
  if (over_network(o.transport) && o.http_slower_reruns != ExploreOptions{}.http_slower_reruns) {
    cmd += " --http-reruns " + std::to_string(o.http_slower_reruns);
  }
  if (o.report_dir != "reports") cmd += " --report-dir " + shell_quote(o.report_dir);
  return cmd;
}

class Progress {
 public:
  /// `live`: one line rewritten in place; else, when `every_s` > 0, a line every `every_s` s.
  Progress(bool live, double every_s, int total) : live_(live), every_ms_(every_s * 1000), total_(total) {}
  void update(int done, int failed, bool force = false) {
    if (!live_) {
      if (every_ms_ <= 0 || done >= total_) return;
      const double now_ms = clock_.elapsed_ms();
      if (now_ms - last_line_ms_ < every_ms_) return;
      last_line_ms_ = now_ms;
      std::fprintf(stderr, "explore: %d of %d cases, %d failed, %.0f cases/s\n", done, total_, failed,
                   now_ms > 0 ? done / (now_ms / 1000.0) : 0.0);
      std::fflush(stderr);
      return;
    }
    const double now_ms = clock_.elapsed_ms();
    if (!force && now_ms - last_ms_ < 200) return;
    last_ms_ = now_ms;
    const double s = now_ms / 1000.0;
    std::fprintf(stderr, "\r  cases %d/%d  failures %d  %.0f cases/s   ", done, total_, failed,
                 s > 0 ? done / s : 0.0);
    std::fflush(stderr);
    shown_ = true;
  }
  void finish() {
    if (shown_) std::fprintf(stderr, "\r%*s\r", 60, "");
  }

 private:
  bool live_;
  double every_ms_;
  int total_;
  Stopwatch clock_;
  double last_ms_ = -1e9;
  double last_line_ms_ = 0;
  bool shown_ = false;
};

}  // namespace

int ExploreOutcome::exit_code() const {
  if (!determinism_mismatches.empty()) return 4;
  return failed > 0 ? 1 : 0;
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

rc::Random case_random(std::uint64_t seed, int index) {
  std::uint64_t s = seed;
  std::uint64_t state = splitmix64(s) ^ (static_cast<std::uint64_t>(index) * 0xD1B54A32D192ED03ULL);
  rc::Random::Key key{};
  for (auto& word : key) word = splitmix64(state);
  return rc::Random(key);
}

std::string transport_label(const ExploreOptions& options) {
  if (options.draw_transport) return "any";
  return options.cloud.empty() ? std::string(transport_name(options.transport)) : options.cloud;
}

CaseTransport case_transport(std::uint64_t seed, int index, std::string_view provider) {
  // splitmix64 of (seed, index): the draw depends on nothing else (not on the case's own draws,
  // so the case generated is the one `--transport http` generates, but for the WebSocket mode's
  // own faults).
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(index) + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  CaseTransport t;
  if (provider == "openai-responses" && z % 2 == 1) {
    t.kind = TransportKind::kWebSocket;
    t.label = "websocket";
  } else if (provider == "anthropic" && z % 4 != 0) {
    static constexpr const char* kClouds[] = {"bedrock", "vertex", "foundry"};
    t.cloud = kClouds[z % 4 - 1];
    t.label = t.cloud;
  }
  return t;
}

std::string case_name(std::uint64_t seed, int index) {
  return "explore-s" + std::to_string(seed) + "-c" + std::to_string(index);
}

rc::Shrinkable<Scenario> generate_case(std::uint64_t seed, int index, const std::string& provider,
                                       const std::string& recovery, const GenerateLimits& limits) {
  return gen_scenario(case_name(seed, index), provider, recovery, limits)(case_random(seed, index), kGenSize);
}

rc::Shrinkable<Scenario> generate_case_from(std::uint64_t seed, int index, const Scenario& base) {
  return gen_from_base(case_name(seed, index), base)(case_random(seed, index), kGenSize);
}

std::string effective_recovery(const ExploreOptions& options) {
  if (!options.recovery.empty() || options.defects.empty()) return options.recovery;
  std::string design;
  for (const std::string& name : options.defects) {
    const auto defect = rut::defect_from_name(name);
    if (!defect) return "";
    std::string_view d;
    for (const auto& info : rut::defect_catalogue()) {
      if (info.defect == *defect) d = info.design;
    }
    if (d.empty()) continue;  // a site in both designs: no constraint
    if (!design.empty() && design != d) return "";
    design = std::string(d);
  }
  return design;
}

Scenario with_oracle_expect(Scenario scenario) {
  scenario.expect = oracle_expect(scenario);
  return scenario;
}

bool in_shard(int index, int shard_index, int shard_count) {
  return shard_count <= 1 || index % shard_count == shard_index - 1;
}

bool determinism_selected(int index, int pct) {
  if (pct <= 0) return false;
  if (pct >= 100) return true;
  return (static_cast<long long>(index) * pct) % 100 < pct;
}

/// One generated case, predicted and run, and what judging it needs, all made on one worker.
/// A passing case keeps only `result`'s verdict fields (digest, re-run counts): its shrink tree,
/// scenario and the rest of its run are freed on the worker that made them, while they are still
/// in that core's cache. Judged on the caller's thread and freed on the worker long after, they
/// cost 1.4x the CPU of the same cases run on one thread (20,000 cases: 7.6 s of CPU on one
/// thread, 9.9 s on two workers and the judge, 10.9-13 s on one worker and the judge).
struct CaseSlot {
  std::optional<rc::Shrinkable<Scenario>> root;  ///< its RapidCheck shrink tree (failing cases)
  Scenario scenario;                             ///< root's value with the oracle's expect (failing cases)
  CaseResult result;                             ///< its run, judged (a passing case: verdict fields only)
  std::string provider;                          ///< scenario.script.provider
  CaseCoverage coverage;                         ///< case_coverage(result)
  nlohmann::json transcript;                     ///< review_transcript(result), with --transcripts
  std::optional<std::string> rerun_digest;       ///< the determinism re-run's digest, when selected
  CaseTransport transport;                       ///< how it ran (`--transport any`: drawn per case)
};

/// `result` without what judging a passing case does not read: its scenario, run, journal and
/// transcript.
CaseResult verdict_only(CaseResult&& result) {
  CaseResult slim;
  slim.violations = std::move(result.violations);
  slim.digest = std::move(result.digest);
  slim.cap_reached = result.cap_reached;
  slim.wall_ms = result.wall_ms;
  slim.slower_reruns = result.slower_reruns;
  slim.differs_from_memory = result.differs_from_memory;
  slim.memory_digest = std::move(result.memory_digest);
  return slim;
}

/// Produces cases 0 .. count-1 on `jobs` worker threads while the caller takes them in order.
/// Workers run at most `window` cases ahead of the last one released, so memory stays bounded
/// and no barrier stops them: a slow case holds up only the cases `window` after it. Each case
/// is produced wholly on one worker (its generators, shrink tree, engine, server and runtime are
/// its own), so the cases do not depend on `jobs` or on timing. Generation on several threads
/// relies on generators.h using none of RapidCheck's implicit parameters (plain statics, read by
/// gen::exec and *gen): keep it so. A case is freed by the worker that made it, once released:
/// with glibc's per-thread arenas, frees on another thread (or long after) measured 1.4-1.7x
/// the CPU of the same cases run on one thread.
class CasePipeline {
 public:
  using Produce = std::function<void(std::size_t k, CaseSlot& slot)>;
  /// `batch` (1 .. window): the caller, when case k is not ready, sleeps until case k + batch - 1
  /// is (or the last), so that it wakes once a batch instead of once a case.
  CasePipeline(std::size_t count, int jobs, std::size_t window, std::size_t batch, Produce produce)
      : count_(count), window_(std::max<std::size_t>(window, 1)),
        batch_(std::clamp<std::size_t>(batch, 1, window_)), produce_(std::move(produce)),
        ring_(window_), owner_(window_, 0), ready_(window_, kNone), errors_(window_) {
    // One job: cases are produced on the caller's thread, in take(), each freed before the next.
    if (jobs > 1) {
      const int n = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(jobs), count));
      garbage_.resize(static_cast<std::size_t>(n));
      for (int t = 0; t < n; ++t) workers_.emplace_back([this, t] { work(static_cast<std::size_t>(t)); });
    }
  }
  CasePipeline(const CasePipeline&) = delete;
  CasePipeline& operator=(const CasePipeline&) = delete;
  ~CasePipeline() {
    stop_starting();
    for (auto& w : workers_) w.join();
  }

  /// Case k, once produced (k = 0, 1, 2, ...: each after the one before has been released).
  /// Rethrows what producing it threw. Valid until release(k).
  CaseSlot& take(std::size_t k) {
    const std::size_t at = k % window_;
    if (workers_.empty()) {
      ring_[0].reset();
      ring_[0] = std::make_unique<CaseSlot>();
      produce_(k, *ring_[0]);
      return *ring_[0];
    }
    std::unique_lock lock(mu_);
    if (ready_[at] != k) {
      // Case k - 1 is released, so cases up to k + window - 1 may start: `far` will come.
      const std::size_t far = std::min(k + batch_, count_) - 1;
      waiting_for_ = far;
      ready_cv_.wait(lock, [&] { return ready_[far % window_] == far; });
      waiting_for_ = k;
      ready_cv_.wait(lock, [&] { return ready_[at] == k; });
      waiting_for_ = kNone;
    }
    if (errors_[at]) std::rethrow_exception(errors_[at]);
    return *ring_[at];
  }
  /// Case k is judged: its producer frees it, and case k + window may start.
  void release(std::size_t k) {
    if (workers_.empty()) return;
    {
      std::lock_guard lock(mu_);
      released_ = k + 1;
      const std::size_t at = k % window_;
      if (ring_[at]) garbage_[owner_[at]].push_back(std::move(ring_[at]));
    }
    room_cv_.notify_all();
  }
  /// No further case starts (those running end on their own; the destructor waits for them).
  /// take() must not be called after it. Idempotent.
  void stop_starting() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    room_cv_.notify_all();
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  void work(std::size_t self) {
    std::vector<std::unique_ptr<CaseSlot>> mine;
    for (;;) {
      std::size_t k = 0;
      {
        std::unique_lock lock(mu_);
        room_cv_.wait(lock, [&] { return stopping_ || next_ >= count_ || next_ < released_ + window_; });
        mine.swap(garbage_[self]);
        if (stopping_ || next_ >= count_) return;
        k = next_++;
      }
      mine.clear();  // the cases of this worker's that were released, freed on this thread
      auto slot = std::make_unique<CaseSlot>();
      std::exception_ptr error;
      try {
        produce_(k, *slot);
      } catch (...) {
        error = std::current_exception();
      }
      bool wake = false;
      {
        std::lock_guard lock(mu_);
        const std::size_t at = k % window_;
        ring_[at] = std::move(slot);
        owner_[at] = self;
        errors_[at] = error;
        ready_[at] = k;
        wake = waiting_for_ == k;
      }
      if (wake) ready_cv_.notify_one();
    }
  }

  const std::size_t count_, window_, batch_;
  const Produce produce_;
  std::vector<std::unique_ptr<CaseSlot>> ring_;  // case k at k % window, once produced
  std::vector<std::size_t> owner_;               // per ring entry, the worker that produced it
  std::vector<std::size_t> ready_;               // per ring entry, the case it holds
  std::vector<std::exception_ptr> errors_;
  std::vector<std::vector<std::unique_ptr<CaseSlot>>> garbage_;  // per worker, released cases
  std::mutex mu_;
  std::condition_variable ready_cv_, room_cv_;
  std::size_t next_ = 0, released_ = 0, waiting_for_ = kNone;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

ScenarioSize size_of(const Scenario& scenario) {
  return {static_cast<int>(scenario.script.turns.size()), attempt_count(scenario), event_count(scenario)};
}

ExploreOutcome explore(const ExploreOptions& options, std::ostream& log, ReportListener* listener) {
  const Stopwatch stopwatch;
  ExploreOutcome out;
  const std::string recovery = effective_recovery(options);

  RunOptions run_options;
  run_options.transport = options.transport;
  run_options.cloud = options.cloud;
  run_options.extra_defects = options.defects;
  if (options.http_idle_floor_ms > 0) run_options.min_idle_timeout_ms = options.http_idle_floor_ms;
  run_options.http_slower_reruns = options.http_slower_reruns;
  run_options.seed = 1;  // the runtime's seed; `hiccup run` uses the same default, so replays match
  run_options.keep_transcript = false;  // digests only; review transcripts come from run and journal

  if (listener) {
    RunInfo info{"explore", options.seed, transport_label(options), options.defects,
                 options.provider};
    info.recovery = recovery;
    listener->run_starting(info);
  }

  int shard_total = 0;
  for (int i = 0; i < options.cases; ++i) shard_total += in_shard(i, options.shard_index, options.shard_count);

  log << "explore: seed " << options.seed << ", " << shard_total << (shard_total == 1 ? " case" : " cases");
  if (options.shard_count > 1) log << " (shard " << options.shard_index << "/" << options.shard_count << ")";
  log << ", transport " << transport_label(options);
  if (options.base) log << ", from " << options.base_path << " (\"" << options.base->name << "\")";
  if (!options.defects.empty()) log << ", defects " << join(options.defects, ", ");
  if (options.determinism_pct > 0) log << ", determinism check " << options.determinism_pct << "%";
  log << "\n";

  // Properties for the report: every invariant, the oracle's expect, and determinism when checked.
  std::vector<std::string> properties;
  for (const auto& info : invariant_catalogue()) properties.emplace_back(info.name);
  properties.emplace_back("expect");
  properties.emplace_back("determinism");  // failing cases are always re-run once
  std::map<std::string, std::vector<Violation>> property_violations;
  std::map<std::string, std::string> property_detail;

  Progress progress(options.progress, options.progress_every_s, shard_total);
  std::vector<int> indices;
  for (int i = 0; i < options.cases; ++i) {
    if (in_shard(i, options.shard_index, options.shard_count)) indices.push_back(i);
  }
  // Each case is generated from (seed, index) alone and judged in index order, so the output
  // depends neither on `jobs` nor on timing. Cases are generated, predicted and run `jobs` at a
  // time on worker threads (CasePipeline) while this thread judges them. In memory a run is
  // CPU-bound: one job per hardware thread.
  const int memory_jobs = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
  const int jobs = std::max(1, options.jobs > 0 ? options.jobs
                                                : (over_network(options.transport) ? 64 : memory_jobs));
  // Set at the first failure when the exploration stops there: the cases still running end at
  // their next request instead of waiting out their stalls and idle timeouts over HTTP.
  std::atomic<bool> abandoned{false};
  RunOptions case_options = run_options;
  case_options.abandoned = &abandoned;
  // At most 16 cases a job ahead of the judged ones: enough that one slow case does not idle the
  // other workers (batches of 16 a job with a barrier between them, before, left workers idle
  // at each batch's end: 1.4x the wall time of 64 a job with two jobs).
  // Generation and prediction are CPU-bound: at most one per hardware thread at a time, so that
  // over HTTP 64 workers generating at once do not starve the real-time exchanges of the cases
  // already running (the old code generated on one thread).
  std::counting_semaphore<256> generating(memory_jobs);
  // In memory the judge wakes once every 8 cases a job (once a case, it preempted a worker
  // 20,000 times in 20,000 cases); over HTTP once a case, so that a failure is judged (and the
  // cases after it abandoned) as soon as it comes.
  const std::size_t window = static_cast<std::size_t>(jobs) * 16;
  // The WebSocket mode's own faults (a response the server forgets) are drawn over that transport
  // only: elsewhere they would change nothing, and the other transports' cases stay as they were.
  GenerateLimits limits = options.limits;
  limits.websocket_faults = options.transport == TransportKind::kWebSocket;
  const CaseTransport fixed_transport{options.transport, options.cloud, transport_label(options)};
  CasePipeline pipeline(indices.size(), jobs, window,
                        options.transport == TransportKind::kMemory ? window / 2 : 1,
                        [&options, &indices, &case_options, &generating, &recovery, &limits, &fixed_transport](std::size_t k, CaseSlot& slot) {
                          generating.acquire();
                          try {
                            slot.root = options.base ? generate_case_from(options.seed, indices[k], *options.base)
                                                     : generate_case(options.seed, indices[k], options.provider, recovery,
                                                                     limits);
                            slot.transport = fixed_transport;
                            if (options.draw_transport) {
                              slot.transport = case_transport(options.seed, indices[k], slot.root->value().script.provider);
                              if (slot.transport.kind == TransportKind::kWebSocket && !options.base) {
                                // A case that plays over the WebSocket mode is drawn again in its
                                // format with that mode's own faults (a response the server forgets).
                                GenerateLimits ws = limits;
                                ws.websocket_faults = true;
                                slot.root = generate_case(options.seed, indices[k], "openai-responses", recovery, ws);
                              }
                            }
                            slot.scenario = with_oracle_expect(slot.root->value());
                          } catch (...) {
                            generating.release();
                            throw;
                          }
                          generating.release();
                          RunOptions run = case_options;
                          run.transport = slot.transport.kind;
                          run.cloud = slot.transport.cloud;
                          slot.result = run_scenario(slot.scenario, run);
                          slot.provider = slot.scenario.script.provider;
                          slot.coverage = case_coverage(slot.result);
                          if (options.transcripts) slot.transcript = review_transcript(slot.result);
                          // A case after a failure that stops the exploration is never judged, so
                          // its re-run may end early (case_options' abandoned) like its run.
                          if (determinism_selected(indices[k], options.determinism_pct)) {
                            slot.rerun_digest = run_scenario(slot.scenario, run).digest;
                          }
                          if (slot.result.passed()) {
                            slot.result = verdict_only(std::move(slot.result));
                            slot.root.reset();
                            slot.scenario = Scenario{};
                          }
                        });
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (k > 0) pipeline.release(k - 1);
    const CaseSlot& slot = pipeline.take(k);
    const Scenario& scenario = slot.scenario;
    const CaseResult& result = slot.result;
    const int i = indices[k];
    ++out.cases_run;
    ++out.cases_per_transport[slot.transport.label];
    RunOptions case_run = run_options;  // how this case ran (its own transport under --transport any)
    case_run.transport = slot.transport.kind;
    case_run.cloud = slot.transport.cloud;
    if (result.slower_reruns > 0 && !result.differs_from_memory) out.rerun_cases.push_back(i);
    if (result.differs_from_memory) {
      out.differs_from_memory.push_back(i);
      progress.finish();
      const std::string& over = slot.transport.label;
      std::string label = over;  // the transport's name: HTTP, WEBSOCKET, BEDROCK, ...
      for (char& ch : label) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      log << label << " DIFFERS case " << i << ": over " << over << " its transcript digest " << result.digest
          << " differs from the in-memory run's " << result.memory_digest << " even at "
          << rerun_slowdown(result.slower_reruns)
          << "x the real time per virtual second: a difference of the " << over
          << " path, or a machine too loaded even for that; judged on that slowest run\n";
    }

    CaseRecord record{i, result.passed(), result.digest, {}, {}, slot.provider};
    for (const auto& v : result.violations) record.invariants.push_back(v.invariant);
    if (!result.passed()) record.violations = result.violations;
    if (options.transcripts) record.transcript = slot.transcript;

    if (slot.rerun_digest) {
      ++out.determinism_checked;
      const std::string& again_digest = *slot.rerun_digest;
      if (again_digest != result.digest) {
        out.determinism_mismatches.push_back(i);
        const std::string msg = "case " + std::to_string(i) + ": transcript digest " + result.digest +
                                " on the first run, " + again_digest + " on the re-run";
        progress.finish();
        log << "NONDETERMINISTIC " << msg << "\n";
        property_violations["determinism"].push_back(Violation{"determinism", msg, -1, -1, -1});
        property_detail["determinism"] = "seed " + std::to_string(options.seed) + "\nreplay: " +
                                         explore_command_line(options) + " --check-determinism all";
      }
    }
    out.records.push_back(record);
    out.coverage.add(slot.coverage);

    if (result.passed()) {
      ++out.passed;
      progress.update(out.cases_run, out.failed);
      continue;
    }
    ++out.failed;
    progress.finish();
    // A failure must reproduce before it is shrunk: one that does not (a flaky HTTP timing, a race)
    // is a determinism failure of the harness, reported as such and not shrunk.
    if (!slot.rerun_digest) {
      const CaseResult again = run_scenario(scenario, case_run);
      if (again.digest != result.digest) {
        out.determinism_mismatches.push_back(i);
        const std::string msg = "case " + std::to_string(i) + " failed (" + summarize_invariants(record.invariants) +
                                ") with digest " + result.digest + " but its re-run gave digest " +
                                again.digest + (again.passed() ? " and passed" : "");
        log << "NONDETERMINISTIC " << msg << "\n";
        for (const auto& v : result.violations) log << "  first run: " << format_violation(v) << "\n";
        property_violations["determinism"].push_back(Violation{"determinism", msg, -1, -1, -1});
        property_detail["determinism"] = "seed " + std::to_string(options.seed) + "\nreplay: " +
                                         explore_command_line(options) + " --check-determinism all";
        continue;
      }
    } else if (!out.determinism_mismatches.empty() && out.determinism_mismatches.back() == i) {
      continue;  // already reported by the determinism check above
    }
    if (out.failure) {  // only with stop_at_first_failure off: later failures are listed, not shrunk
      log << "FAIL case " << i << ": " << summarize_invariants(record.invariants) << "\n";
      continue;
    }

    // No later case will be judged: start none (the running ones end while this one shrinks).
    if (options.stop_at_first_failure) {
      pipeline.stop_starting();
      abandoned = true;
    }
    // Shrink greedily through RapidCheck's tree, then minimize by delta debugging: every step keeps
    // a scenario that still breaks every invariant the original broke (minimize.h failure_target).
    ExploreFailure failure;
    failure.case_index = i;
    failure.original = scenario;
    failure.original_violations = result.violations;
    failure.original_size = size_of(scenario);
    failure.original_transcript = review_transcript(result);
    const std::set<std::string> target = failure_target(result.violations);
    failure.target = target;
    log << "FAIL case " << i << " (seed " << options.seed
        << (options.draw_transport ? ", over " + slot.transport.label : std::string()) << "): "
        << summarize_invariants(record.invariants) << "\n";
    for (const auto& v : result.violations) log << "  " << format_violation(v) << "\n";

    const Stopwatch shrink_clock;
    // Shrinks `start` (whose run under `opts` is `start_result`) through RapidCheck's tree, then
    // minimizes it, every candidate run under `opts`.
    struct Shrunk {
      int shrink_tries = 0, shrink_steps = 0;
      MinimizeResult minimized;  // the counterexample and its run (over http once confirmed there)
    };
    auto shrink_under = [&](const RunOptions& opts, const CaseResult& start_result) {
      Shrunk out_shrunk;
      FailureJudge judge(opts, target);
      judge.keep_recovery(recovery);
      if (options.base) judge.keep_content(*options.base);
      rc::Shrinkable<Scenario> current = *slot.root;
      CaseResult current_result = start_result;
      bool progressed = true;
      while (progressed && out_shrunk.shrink_tries < options.max_shrink_tries) {
        progressed = false;
        auto shrinks = current.shrinks();
        while (auto candidate = shrinks.next()) {
          if (out_shrunk.shrink_tries >= options.max_shrink_tries) break;
          ++out_shrunk.shrink_tries;
          try {
            const Scenario s = with_oracle_expect(candidate->value());
            CaseResult r = run_scenario(s, opts);
            if (!breaks_all(r.violations, target) || !judge.passes_without_defects(s)) continue;
            current = *candidate;
            current_result = std::move(r);
            ++out_shrunk.shrink_steps;
            progressed = true;
            break;
          } catch (const std::exception&) {
            continue;  // a candidate the harness cannot run is not a counterexample
          }
        }
      }
      out_shrunk.minimized = minimize(current.value(), current_result, judge, options.max_minimize_tries);
      return out_shrunk;
    };
    // Over the network (http, websocket, a cloud path), a failure the in-memory transport
    // reproduces is shrunk there (the two give the same verdicts, over http the same digests:
    // explorer_test's 1,000-case equivalence), at memory speed instead of through real-time
    // stalls; the counterexample is then run over the network transport, and counts only if it
    // fails there as well, and passes there without the seeded defects. A failure memory does
    // not reproduce, or a counterexample the network transport does not confirm, is shrunk over
    // that transport.
    std::optional<Shrunk> shrunk_run;
    if (options.max_shrink_tries == 0) {
      // --max-shrinks 0: neither shrunk nor minimized; the counterexample is the case as generated.
      Shrunk as_generated;
      as_generated.minimized.scenario = scenario;
      as_generated.minimized.result = result;
      shrunk_run = std::move(as_generated);
    } else if (over_network(case_run.transport)) {
      RunOptions memory = case_run;
      memory.transport = TransportKind::kMemory;
      const CaseResult in_memory = run_scenario(scenario, memory);
      if (breaks_all(in_memory.violations, target)) {
        Shrunk candidate = shrink_under(memory, in_memory);
        CaseResult over_http = run_scenario(candidate.minimized.scenario, case_run);
        if (breaks_all(over_http.violations, target) &&
            FailureJudge(case_run, target).passes_without_defects(candidate.minimized.scenario)) {
          log << "  shrunk in memory (" << candidate.shrink_tries + candidate.minimized.tries
              << " runs); the counterexample fails over " << slot.transport.label << " too\n";
          candidate.minimized.result = std::move(over_http);
          shrunk_run = std::move(candidate);
        } else {
          log << "  shrunk in memory, but the counterexample does not fail the same way over " << slot.transport.label
              << ": shrinking over " << slot.transport.label << "\n";
        }
      } else {
        log << "  the in-memory transport does not reproduce this failure: shrinking over " << slot.transport.label << "\n";
      }
    }
    if (!shrunk_run) shrunk_run = shrink_under(case_run, result);
    failure.shrink_tries = shrunk_run->shrink_tries;
    failure.shrink_steps = shrunk_run->shrink_steps;
    failure.minimize_steps = shrunk_run->minimized.accepted;
    failure.minimize_tries = shrunk_run->minimized.tries;
    failure.one_minimal = shrunk_run->minimized.one_minimal;
    std::vector<Violation> current_violations = shrunk_run->minimized.result.violations;
    CaseResult current_result = std::move(shrunk_run->minimized.result);
    Scenario shrunk = std::move(shrunk_run->minimized.scenario);
    const std::set<std::string> shrunk_names = broken_names(current_violations);
    shrunk.tags = {"explore", "counterexample"};
    for (const auto& d : options.defects) {
      if (std::find(shrunk.runtime.defects.begin(), shrunk.runtime.defects.end(), d) == shrunk.runtime.defects.end()) {
        shrunk.runtime.defects.push_back(d);
      }
      if (std::find(shrunk.catches.begin(), shrunk.catches.end(), d) == shrunk.catches.end()) {
        shrunk.catches.push_back(d);
      }
    }
    // The description says which defects the file switches on: `hiccup run FILE` fails without
    // --defect, and a reader of the file alone should see why.
    const std::string found_with =
        shrunk.runtime.defects.empty()
            ? std::string()
            : ", found with defect" + std::string(shrunk.runtime.defects.size() > 1 ? "s " : " ") +
                  join(shrunk.runtime.defects, ", ") + " (switched on by its runtime.defects)";
    shrunk.description = std::string(options.max_shrink_tries == 0 ? "unshrunk" : "shrunk") +
                         " counterexample of hiccup explore --seed " + std::to_string(options.seed) + " (case " +
                         std::to_string(i) + ")" + found_with + ": " +
                         join(std::vector<std::string>(shrunk_names.begin(), shrunk_names.end()), ", ");
    failure.shrink_ms = shrink_clock.elapsed_ms();
    failure.shrunk = shrunk;
    failure.violations = current_violations;
    failure.shrunk_size = size_of(shrunk);
    failure.transcript = review_transcript(current_result);

    if (options.max_shrink_tries == 0) {
      log << "  not shrunk (--max-shrinks 0): the failing case as generated, ";
    } else {
      log << "  shrunk in " << failure.shrink_steps << " steps (" << failure.shrink_tries << " tries), minimized in "
          << failure.minimize_steps << " edits (" << failure.minimize_tries << " tries"
          << (failure.one_minimal ? ", 1-minimal" : ", budget spent before 1-minimal") << ") to ";
    }
    log << shrunk.script.turns.size() << " turns, " << attempt_count(shrunk) << " attempts, "
        << event_count(shrunk) << " events in " << std::fixed << std::setprecision(0) << failure.shrink_ms
        << std::defaultfloat << " ms:\n";
    for (const auto& v : current_violations) log << "  " << format_violation(v) << "\n";

    if (options.write_counterexample) {
      namespace fs = std::filesystem;
      const fs::path dir = fs::path(options.report_dir) / "counterexamples";
      std::error_code ec;
      fs::create_directories(dir, ec);
      const fs::path path = dir / (shrunk.name + ".json");
      std::ofstream file(path);
      file << write_scenario(shrunk);
      if (file) {
        failure.path = path.string();
        // The counterexample by its absolute path, as the binary: the line works pasted anywhere.
        std::error_code abs_ec;
        const fs::path absolute = fs::absolute(path, abs_ec);
        failure.replay_command = options.hiccup_path + " run " + shell_quote(abs_ec ? failure.path : absolute.string());
        // `hiccup run` plays over http by default: any other transport is named.
        if (slot.transport.label != "http") failure.replay_command += " --transport " + slot.transport.label;
        log << "  counterexample: " << failure.path << "\n";
      } else {
        log << "  error: cannot write counterexample " << path.string() << "\n";
      }
    }
    log << write_scenario(shrunk);
    failure.explore_command = explore_command_line(options);
    if (!failure.replay_command.empty()) log << "  replay:  " << failure.replay_command << "\n";
    log << "  explore: " << failure.explore_command << "\n";

    const std::string detail = "seed " + std::to_string(options.seed) + ", case " + std::to_string(i) +
                               (failure.path.empty() ? "" : "\ncounterexample: " + failure.path) +
                               (failure.replay_command.empty() ? "" : "\nreplay: " + failure.replay_command) +
                               "\nexplore: " + failure.explore_command;
    for (const auto& v : current_violations) {
      property_violations[property_of(v)].push_back(v);
      property_detail[property_of(v)] = detail;
    }
    out.failure = std::move(failure);
    if (options.stop_at_first_failure) break;
  }
  progress.finish();
  // A property fails when any case run broke it. The shrunk counterexample speaks for the
  // properties it still breaks; a property only the unshrunk case or a later case (--keep-going)
  // broke names that case with its own violations. Cases whose failure did not reproduce count
  // for `determinism` only.
  std::map<std::string, int> property_case;
  if (out.failure) {
    for (const auto& v : out.failure->violations) property_case.emplace(property_of(v), out.failure->case_index);
  }
  for (const CaseRecord& r : out.records) {
    if (r.passed || std::find(out.determinism_mismatches.begin(), out.determinism_mismatches.end(), r.index) !=
                        out.determinism_mismatches.end()) {
      continue;
    }
    std::set<std::string> added;
    for (const Violation& v : r.violations) {
      const std::string p = property_of(v);
      if (property_case.count(p) && !added.count(p)) continue;
      property_case.emplace(p, r.index);
      added.insert(p);
      property_violations[p].push_back(v);
      const bool first = out.failure && r.index == out.failure->case_index;
      property_detail[p] = "seed " + std::to_string(options.seed) + ", case " + std::to_string(r.index) + ": " +
                           (first ? "the case broke it before shrinking; its shrunk counterexample no longer does"
                                  : "not shrunk (only the first failing case, " +
                                        (out.failure ? std::to_string(out.failure->case_index) : std::string("?")) + ", is)") +
                           "\nexplore: " + explore_command_line(options);
    }
  }
  out.wall_ms = stopwatch.elapsed_ms();
  std::string digests;
  for (const CaseRecord& r : out.records) digests += std::to_string(r.index) + " " + r.digest + "\n";
  out.digest = fnv1a_hex(digests);

  if (listener) {
    RunTotals totals;
    for (const auto& p : properties) {
      ReportCase c;
      c.name = "explore/" + p;
      c.classname = "hiccup.explore";
      auto it = property_violations.find(p);
      c.passed = it == property_violations.end();
      if (!c.passed) c.violations = it->second;
      c.detail = property_detail[p];
      c.wall_ms = out.wall_ms;
      c.digest = out.digest;
      c.extra = {{"property", p}, {"seed", options.seed}, {"cases_run", out.cases_run}};
      const auto& pre = invariant_preconditions();
      if (std::any_of(pre.begin(), pre.end(), [&](const auto& x) { return x.invariant == p; })) {
        c.extra["exercised"] = out.coverage.count("invariant", p);
      }
      if (p == "determinism") c.extra["determinism_checked"] = out.determinism_checked;
      if (!c.passed && property_case.count(p)) c.extra["failing_case"] = property_case[p];
      const bool shrunk_breaks = out.failure && std::any_of(out.failure->violations.begin(), out.failure->violations.end(),
                                                            [&](const Violation& v) { return property_of(v) == p; });
      if (!c.passed && shrunk_breaks && p != "determinism") {
        const ExploreFailure& f = *out.failure;
        c.extra["counterexample"] = f.path;
        if (!f.replay_command.empty()) c.extra["replay"] = f.replay_command;
        c.extra["original_size"] = size_json(f.original_size);
        c.extra["shrunk_size"] = size_json(f.shrunk_size);
        c.extra["shrink_steps"] = f.shrink_steps;
        c.extra["shrink_tries"] = f.shrink_tries;
        c.extra["minimize_steps"] = f.minimize_steps;
        c.extra["minimize_tries"] = f.minimize_tries;
        c.extra["one_minimal"] = f.one_minimal;
        c.extra["shrink_ms"] = f.shrink_ms;
        c.transcript = f.transcript;  // its violations are the shrunk run's: their requests are its
        c.extra["scenario_text"] = write_scenario(f.shrunk);
      }
      (c.passed ? totals.passed : totals.failed) += 1;
      listener->case_ended(c);
    }
    totals.wall_ms = out.wall_ms;
    totals.extra["digest"] = out.digest;
    // What `hiccup report merge` needs to join shards into the unsharded run's verdict and digest.
    totals.extra["shard"] = {{"index", options.shard_index}, {"count", options.shard_count}};
    totals.extra["cases_requested"] = options.cases;
    totals.extra["keep_going"] = !options.stop_at_first_failure;
    // Each confirmed failing case with the invariants it broke: merge finds the unsharded run's
    // first failure from these.
    nlohmann::json failing_cases = nlohmann::json::array();
    for (const CaseRecord& r : out.records) {
      if (r.passed || std::find(out.determinism_mismatches.begin(), out.determinism_mismatches.end(), r.index) !=
                          out.determinism_mismatches.end()) {
        continue;
      }
      failing_cases.push_back(nlohmann::json::array({r.index, broken_names(r.violations)}));
    }
    totals.extra["failing_cases"] = std::move(failing_cases);
    nlohmann::json case_digests = nlohmann::json::array();
    for (const CaseRecord& r : out.records) case_digests.push_back(nlohmann::json::array({r.index, r.digest}));
    totals.extra["case_digests"] = std::move(case_digests);
    totals.extra["coverage"] = out.coverage.to_json();
    totals.extra["warnings"] = out.coverage.warnings();
    if (over_network(options.transport) && options.http_slower_reruns > 0) {
      totals.extra["http_rerun_cases"] = out.rerun_cases;
      totals.extra["http_differs_from_memory"] = out.differs_from_memory;
    }
    if (options.transcripts) {
      nlohmann::json explored = nlohmann::json::array();
      for (const CaseRecord& r : out.records) {
        explored.push_back({{"index", r.index}, {"name", case_name(options.seed, r.index)}, {"provider", r.provider},
                            {"passed", r.passed}, {"digest", r.digest}, {"invariants", r.invariants},
                            {"transcript", r.transcript}});
      }
      totals.extra["explored"] = std::move(explored);
    }
    listener->run_ended(totals);
  }

  const double s = out.wall_ms / 1000.0;
  log << "explored " << out.cases_run << (out.cases_run == 1 ? " case in " : " cases in ") << std::fixed << std::setprecision(2) << s << " s ("
      << std::setprecision(0) << (s > 0 ? out.cases_run / s : 0.0) << " cases/s)";
  if (options.determinism_pct > 0) {
    log << ", determinism re-runs " << out.determinism_checked << ", mismatches "
        << out.determinism_mismatches.size();
  }
  if (over_network(options.transport) && (!out.rerun_cases.empty() || !out.differs_from_memory.empty())) {
    log << ", " << out.rerun_cases.size() << " judged on a slower re-run (the first run differed from memory: the machine's load)";
    if (!out.differs_from_memory.empty()) {
      log << ", " << out.differs_from_memory.size() << " differ from memory over " << transport_label(options);
    }
  }
  log << "\n" << std::defaultfloat;
  std::map<std::string, std::pair<int, int>> per_provider;  // provider → (cases, failed)
  for (const CaseRecord& r : out.records) {
    auto& [n, failed] = per_provider[r.provider];
    ++n;
    failed += r.passed ? 0 : 1;
  }
  log << "per provider:";
  for (const auto& [provider, counts] : per_provider) {
    log << " " << provider << " " << counts.first << (counts.second ? " (" + std::to_string(counts.second) + " failed)" : "");
  }
  log << "\n";
  if (options.draw_transport) {
    log << "per transport:";
    for (const auto& [label, count] : out.cases_per_transport) log << " " << label << " " << count;
    log << "\n";
  }
  out.coverage.print(log);
  log << out.passed << " passed, " << out.failed << " failed";
  if (!out.determinism_mismatches.empty()) {
    log << ", " << out.determinism_mismatches.size() << " nondeterministic (exit 4)";
  }
  log << "\n";
  return out;
}

}  // namespace harness::explore
