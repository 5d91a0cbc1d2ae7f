// hiccup's benchmarks (Google Benchmark), measured side by side in one run: exploration cases per
// second over the memory and HTTP transports, finding + shrinking a first failure, the bundled
// suite's wall time, and the mock server's throughput and p99 on a fault-free 6-frame stream.
// Not a test: numbers go into closing notes and docs/PERFORMANCE-NOTES.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "harness/explore/explorer.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "mock_server/eventstream/cloud_paths.h"
#include "mock_server/http_server.h"
#include "mock_server/script_engine.h"

namespace {

using namespace harness;

/// The provider a benchmark argument names: 0 gemini, 1 openai-chat, 2 openai-responses,
/// 3 anthropic; -1 = drawn per case (exploration only).
std::string provider_arg(std::int64_t index) {
  static const std::vector<std::string> names = {"gemini", "openai-chat", "openai-responses", "anthropic"};
  return index < 0 ? std::string() : names[static_cast<std::size_t>(index)];
}

void label_provider(benchmark::State& state, std::int64_t index) {
  const std::string p = provider_arg(index);
  state.SetLabel(p.empty() ? "providers drawn per case" : p);
}

/// Runs a defect-free exploration of state.range(0) cases (seed 1, no counterexample written) per
/// iteration, with `configure(options)` applied, and reports `cases_per_s`; an exploration that
/// fails is an error of the benchmark (its log printed).
template <typename Configure>
void explore_clean(benchmark::State& state, Configure configure) {
  int total = 0;
  for (auto _ : state) {
    explore::ExploreOptions o;
    o.cases = static_cast<int>(state.range(0));
    o.seed = 1;
    o.write_counterexample = false;
    configure(o);
    std::ostringstream log;
    const auto out = explore::explore(o, log);
    if (out.failed != 0) {
      std::cerr << log.str();
      state.SkipWithError("a defect-free exploration failed");
    }
    total += out.cases_run;
  }
  state.counters["cases_per_s"] = benchmark::Counter(total, benchmark::Counter::kIsRate);
}

void explore_cases(benchmark::State& state, TransportKind transport) {
  label_provider(state, state.range(1));
  explore_clean(state, [&](explore::ExploreOptions& o) {
    o.provider = provider_arg(state.range(1));
    o.transport = transport;
  });
}

void BM_ExploreMemory(benchmark::State& state) { explore_cases(state, TransportKind::kMemory); }
void BM_ExploreHttp(benchmark::State& state) { explore_cases(state, TransportKind::kHttp); }
BENCHMARK(BM_ExploreMemory)->ArgsProduct({{2000}, {-1, 0, 1, 2, 3}})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ExploreHttp)->ArgsProduct({{300}, {-1, 0, 1, 2, 3}})->Unit(benchmark::kMillisecond)->UseRealTime();

/// In memory, providers drawn per case, with reasoning (docs/POLICY.md "Reasoning") never drawn
/// (0), drawn as `explore` draws it, one case in five (1), or in every case (2).
void BM_ExploreMemoryReasoning(benchmark::State& state) {
  const std::int64_t reasoning = state.range(1);
  state.SetLabel(reasoning == 0 ? "reasoning never" : reasoning == 1 ? "reasoning in 1 case of 5" : "reasoning in every case");
  explore_clean(state, [&](explore::ExploreOptions& o) {
    o.limits.reasoning = reasoning != 0;
    o.limits.reasoning_every_case = reasoning == 2;
  });
}
BENCHMARK(BM_ExploreMemoryReasoning)->ArgsProduct({{10000}, {0, 1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FindAndShrink(benchmark::State& state) {
  for (auto _ : state) {
    explore::ExploreOptions o;
    o.cases = 200;
    o.seed = 1;
    o.defects = {"keep-calls-on-retry"};
    o.write_counterexample = false;
    o.transport = state.range(0) == 0 ? TransportKind::kMemory : TransportKind::kHttp;
    std::ostringstream log;
    const auto out = explore::explore(o, log);
    if (out.failed == 0) state.SkipWithError("keep-calls-on-retry survived");
  }
}
BENCHMARK(BM_FindAndShrink)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

std::vector<Scenario> suite() {
  std::vector<LoadProblem> problems;
  std::vector<Scenario> out;
  for (const auto& f : collect_scenario_files({std::string(HICCUP_SOURCE_DIR) + "/scenarios"}, problems)) {
    if (auto r = load_scenario_file(f); r.scenario) out.push_back(*r.scenario);
  }
  return out;
}

void BM_Suite(benchmark::State& state) {
  auto scenarios = suite();
  label_provider(state, state.range(1));
  for (auto& s : scenarios) s.script.provider = provider_arg(state.range(1));
  RunOptions o;
  o.transport = state.range(0) == 0 ? TransportKind::kMemory : TransportKind::kHttp;
  double virtual_s = 0;
  for (auto _ : state) {
    virtual_s = 0;
    for (const auto& s : scenarios) virtual_s += run_scenario(s, o).run.waited_s;
  }
  state.counters["scenarios"] = static_cast<double>(scenarios.size());
  state.counters["virtual_backoff_s"] = virtual_s;
}
BENCHMARK(BM_Suite)->ArgsProduct({{0, 1}, {0, 1, 2, 3}})->Unit(benchmark::kMillisecond)->UseRealTime();

/// A one-turn streaming request in each provider's format: target and body.
std::pair<std::string, std::string> stream_request(const std::string& provider) {
  if (provider == "openai-chat") {
    return {"/v1/chat/completions",
            R"({"model":"gpt-4.1-mini","stream":true,"messages":[{"role":"user","content":"Deploy."}]})"};
  }
  if (provider == "openai-responses") {
    return {"/v1/responses", R"({"model":"gpt-4.1-mini","stream":true,"input":"Deploy."})"};
  }
  if (provider == "anthropic") {
    return {"/v1/messages",
            R"({"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Deploy."}]})"};
  }
  return {"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
          R"({"contents":[{"role":"user","parts":[{"text":"Deploy."}]}]})"};
}

/// 16 keep-alive clients against one mock server streaming a fault-free reply of five text events
/// and a stop finish (6 frames in Gemini; more in the formats that wrap each event in several).
void BM_MockServerThroughput(benchmark::State& state) {
  label_provider(state, state.range(1));
  const auto request = stream_request(provider_arg(state.range(1)));
  const std::string& target = request.first;
  const std::string& body = request.second;
  mock::Script script;
  mock::Attempt a;
  a.events = {mock::TextEvent{"The build"}, mock::TextEvent{" is"}, mock::TextEvent{" deployed"},
              mock::TextEvent{" to"}, mock::TextEvent{" staging."}, mock::FinishEvent{}};
  script.turns = {mock::Turn{{a}}};
  const int clients = static_cast<int>(state.range(0));
  const auto duration = std::chrono::milliseconds(1500);
  for (auto _ : state) {
    mock::ScriptEngine engine(script);
    mock::ServerOptions options;
    mock::MockHttpServer server(engine, options);
    const int port = server.start();
    std::vector<std::vector<double>> latencies(static_cast<std::size_t>(clients));
    std::atomic<long> errors{0};
    const auto until = std::chrono::steady_clock::now() + duration;
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        httplib::Client cli("127.0.0.1", port);
        cli.set_tcp_nodelay(true);
        cli.set_keep_alive(true);
        while (std::chrono::steady_clock::now() < until) {
          const auto t0 = std::chrono::steady_clock::now();
          auto res = cli.Post(target.c_str(), body, "application/json");
          if (!res || res->status != 200) ++errors;
          latencies[static_cast<std::size_t>(c)].push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
      });
    }
    for (auto& t : threads) t.join();
    server.stop();
    std::vector<double> all;
    for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
    std::sort(all.begin(), all.end());
    state.counters["req_per_s"] = static_cast<double>(all.size()) / (duration.count() / 1000.0);
    state.counters["p50_ms"] = all.empty() ? 0 : all[all.size() / 2];
    state.counters["p99_ms"] = all.empty() ? 0 : all[all.size() * 99 / 100];
    state.counters["errors"] = static_cast<double>(errors.load());
  }
}
BENCHMARK(BM_MockServerThroughput)->ArgsProduct({{16}, {0, 1, 2, 3}})->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The user-space cost of planning one answer (no socket): the same three-text Anthropic answer
/// asked for over SSE (`/v1/messages`, argument 0) and over Bedrock's event stream
/// (`/model/{id}/invoke-with-response-stream`, argument 1: the request rewritten, the SSE frames
/// turned into event-stream messages), each settled as delivered; a journal window of 1,000 as
/// `hiccup serve` keeps. bench/transport_cost.py measures the whole server's CPU per answer.
void BM_PlanAnswer(benchmark::State& state) {
  const bool bedrock = state.range(0) == 1;
  state.SetLabel(bedrock ? "anthropic over bedrock" : "anthropic over sse");
  mock::Script script;
  mock::Attempt a;
  a.events = {mock::TextEvent{"The build"}, mock::TextEvent{" is deployed"}, mock::TextEvent{" to staging."},
              mock::FinishEvent{}};
  script.turns = {mock::Turn{{a}}};
  auto engine = std::make_shared<mock::ScriptEngine>(script);
  engine->set_journal_window(1000, false);
  const std::string target = bedrock ? "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
                                     : "/v1/messages";
  const std::string body =
      bedrock ? R"({"anthropic_version":"bedrock-2023-05-31","max_tokens":1024,"messages":[{"role":"user","content":"Deploy."}]})"
              : R"({"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Deploy."}]})";
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::shared_ptr<mock::Responder> responder = engine;
    if (bedrock) responder = mock::cloud::make_cloud_responder(engine, target);
    const mock::Plan plan = responder->respond({"POST", target, body});
    mock::Delivery delivery;
    delivery.actions_done = static_cast<int>(plan.actions.size());
    responder->settle(plan.journal_index, delivery);
    bytes = 0;
    for (const mock::Action& action : plan.actions) {
      if (const auto* w = std::get_if<mock::WriteAction>(&action)) bytes += w->bytes.size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["answer_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_PlanAnswer)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
