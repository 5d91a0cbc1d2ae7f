// One scenario run, judged; see runner.h.
#include "harness/runner.h"

#include "runtime_under_test/cloud_transport.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "harness/memory_transport.h"
#include "harness/scripted_tools.h"
#include "harness/stopwatch.h"
#include "harness/transcript.h"
#include "mock_server/http_server.h"
#include "mock_server/script_engine.h"
#include "runtime_under_test/http_transport.h"
#include "runtime_under_test/ws_transport.h"

namespace harness {
namespace {

/// Thrown through the runtime when a run reaches a harness cap. `hang`: the cap was reached while
/// the runtime sat on a silent stream (a liveness violation, not a retry one).
struct CapReached : std::runtime_error {
  explicit CapReached(const std::string& what, bool hang_ = false) : std::runtime_error(what), hang(hang_) {}
  bool hang = false;
};

/// Seconds as a message shows them: whole numbers as such ("3600"), others as they are ("0.5").
std::string seconds_text(double s) {
  if (std::isfinite(s) && s == std::floor(s) && std::fabs(s) < 9e15) return std::to_string(static_cast<long long>(s));
  std::ostringstream out;
  out << s;
  return out.str();
}

/// A virtual clock that stops the run at the virtual-time cap.
class CappedClock final : public rut::IClock {
 public:
  explicit CappedClock(double max_s) : max_(max_s) {}
  double now_s() const override { return now_; }
  void sleep_s(double seconds) override {
    now_ += seconds;
    if (now_ > max_) {
      throw CapReached("the run reached the cap of " + seconds_text(max_) +
                       " virtual seconds");
    }
  }

 private:
  double max_;
  double now_ = 0;
};

/// Counts requests, stops the run at the cap, and notes the virtual time each request was sent.
/// It is also the run's watchdog: a stream is never waited on past the virtual-time cap. When the
/// runtime's idle timeout (kNoIdleLimit included) reaches beyond the time left, the transport is
/// given an idle limit of its own: the time left, or `silence_bound_s` when that is shorter. The
/// bound lies beyond every scripted silence that ends before the cap (watch_bound_s), so a stream
/// still silent then is in a stall that outlasts the time left: the runtime would still be waiting
/// at the cap, and the run is stopped as hung. The verdict is the one the time left gives (for a
/// stall of S s, S >= min(left, bound) exactly when S >= left); over HTTP, where silence is real
/// time, the hang is found after the bound instead of the whole time left (a runtime with a 2 s
/// idle timeout and no idle limit in force, no other stall: 0.5 s of real time instead of 15
/// minutes). A long stall that ends before the cap still costs its own length first, played or not.
class CappedTransport final : public rut::ITransport {
 public:
  CappedTransport(rut::ITransport& inner, int max_requests, const rut::IClock& clock, double max_virtual_s,
                  double silence_bound_s, const std::atomic<bool>* abandoned)
      : inner_(inner), max_(max_requests), clock_(clock), max_virtual_s_(max_virtual_s),
        silence_bound_s_(silence_bound_s), abandoned_(abandoned) {}
  rut::TransportResult post(const rut::HttpRequest& request,
                            const std::function<bool(std::string_view)>& on_body) override {
    if (abandoned_ && abandoned_->load()) throw CapReached("the run was abandoned: its result is not wanted");
    if (sent_ >= max_) {
      throw CapReached("the run reached the cap of " + std::to_string(max_) +
                       " requests: retries are unbounded");
    }
    ++sent_;
    sent_at_s_.push_back(clock_.now_s());
    const double left_s = std::max(0.0, max_virtual_s_ - clock_.now_s());
    if (request.idle_timeout_s <= left_s) return inner_.post(request, on_body);
    rut::HttpRequest watched = request;
    watched.idle_timeout_s = std::min(left_s, silence_bound_s_);
    const rut::TransportResult result = inner_.post(watched, on_body);
    if (result.end == rut::TransportEnd::kIdleTimeout) {
      const std::string limit = std::isfinite(request.idle_timeout_s)
                                    ? "an idle timeout of " + seconds_text(request.idle_timeout_s) + " s"
                                    : "no idle timeout";
      throw CapReached("the run did not end within the cap of " +
                           seconds_text(max_virtual_s_) + " virtual seconds: request " +
                           std::to_string(sent_ - 1) + "'s stream went silent and the runtime (" + limit +
                           ") was still waiting on it",
                       /*hang=*/true);
    }
    return result;
  }
  int sent() const { return sent_; }
  const std::vector<double>& sent_at_s() const { return sent_at_s_; }

 private:
  rut::ITransport& inner_;
  int max_;
  const rut::IClock& clock_;
  double max_virtual_s_;
  double silence_bound_s_;
  const std::atomic<bool>* abandoned_;
  int sent_ = 0;
  std::vector<double> sent_at_s_;
};

/// The watchdog on the tool side, as CappedTransport is on the model side: a tools/call is never
/// waited on past the virtual-time cap. When the runtime's tool timeout (kNoToolTimeout included)
/// reaches beyond the time left, the call is played with the time left as its timeout; a call that
/// then times out is one the runtime would still be waiting on at the cap, and the run is stopped
/// as hung, naming the tool and the model call.
class CappedToolPort final : public rut::IToolPort {
 public:
  CappedToolPort(ScriptedToolPort& inner, const rut::IClock& clock, double max_virtual_s)
      : inner_(inner), clock_(clock), max_virtual_s_(max_virtual_s) {}
  bool offers(std::string_view name) const override { return inner_.offers(name); }
  rut::ToolReply call(const rut::ToolRequest& request) override {
    const double left_s = std::max(0.0, max_virtual_s_ - clock_.now_s());
    if (request.timeout_s <= left_s) return inner_.call(request);
    rut::ToolRequest watched = request;
    watched.timeout_s = left_s;
    const rut::ToolReply reply = inner_.call(watched);
    if (reply.end == rut::ToolEnd::kTimedOut) {
      inner_.cut_at_cap();
      const std::string limit = std::isfinite(request.timeout_s)
                                    ? "a tool timeout of " + seconds_text(request.timeout_s) + " s"
                                    : "no tool timeout";
      throw CapReached("the run did not end within the cap of " + seconds_text(max_virtual_s_) +
                           " virtual seconds: tool \"" + request.name + "\" (call " +
                           std::to_string(request.call_index) + " of request " + std::to_string(request.request_seq) +
                           ") had not answered and the runtime (" + limit + ") was still waiting on it",
                       /*hang=*/true);
    }
    return reply;
  }

 private:
  ScriptedToolPort& inner_;
  const rut::IClock& clock_;
  double max_virtual_s_;
};

}  // namespace

double watch_bound_s(const mock::Script& script, double max_virtual_s, double idle_timeout_s) {
  double longest = 0;  // the longest stall that ends before the cap
  for (const mock::Turn& turn : script.turns) {
    for (const mock::Attempt& attempt : turn.attempts) {
      if (!attempt.fault) continue;
      if (const auto* stall = std::get_if<mock::StallFault>(&*attempt.fault); stall && stall->seconds < max_virtual_s) {
        longest = std::max(longest, stall->seconds);
      }
    }
  }
  const double margin_s = std::isfinite(idle_timeout_s) && idle_timeout_s > 0 ? std::min(idle_timeout_s, 60.0) : 60;
  return longest + margin_s;
}

std::string_view transport_name(TransportKind kind) {
  return kind == TransportKind::kHttp ? "http" : kind == TransportKind::kWebSocket ? "websocket" : "memory";
}

bool transport_from_name(std::string_view name, TransportKind& out) {
  if (name == "http") out = TransportKind::kHttp;
  else if (name == "memory") out = TransportKind::kMemory;
  else if (name == "websocket") out = TransportKind::kWebSocket;
  else return false;
  return true;
}

rut::Config runtime_config(const Scenario& scenario, const std::vector<std::string>& extra_defects) {
  rut::Config c;
  c.provider = scenario.script.provider;
  const RuntimeSettings& r = scenario.runtime;
  if (r.stream) c.stream = *r.stream;
  if (r.model) c.model = *r.model;
  if (r.max_attempts) c.max_attempts = *r.max_attempts;
  if (r.backoff_s) c.backoff_s = *r.backoff_s;
  c.fallback_model = r.fallback_model;
  if (r.idle_timeout_s) c.idle_timeout_s = *r.idle_timeout_s;
  if (r.consumer && *r.consumer == "subagent") c.consumer = rut::ConsumerKind::kSubagent;
  if (r.recovery == "continue") c.recovery = rut::Recovery::kContinue;
  c.continuation_prompt = r.continuation_prompt;
  if (scenario.interrupt) {
    const Interrupt& in = *scenario.interrupt;
    // The runtime counts the text and call parts it receives; a scenario's after_event counts
    // events, reasoning included (which is neither text nor a call): count the parts before it.
    std::optional<int> after_part = in.after_event;
    if (in.after_event && in.turn >= 0 && static_cast<std::size_t>(in.turn) < scenario.script.turns.size()) {
      const auto& attempts = scenario.script.turns[static_cast<std::size_t>(in.turn)].attempts;
      const auto a = static_cast<std::size_t>(in.attempt.value_or(0));
      if (a < attempts.size()) {
        int reasoning = 0;
        for (int i = 0; i < *in.after_event && static_cast<std::size_t>(i) < attempts[a].events.size(); ++i) {
          reasoning += std::holds_alternative<mock::ReasoningEvent>(attempts[a].events[static_cast<std::size_t>(i)]) ? 1 : 0;
        }
        *after_part -= reasoning;
      }
    }
    c.interrupt = rut::UserInterrupt{in.turn, in.attempt.value_or(0), after_part, in.after_calls, in.before_attempt,
                                     in.after_fragment};
  }
  for (const auto* names : {&r.defects, &extra_defects}) {
    for (const std::string& name : *names) {
      if (auto d = rut::defect_from_name(name)) c.defects.insert(*d);
    }
  }
  return c;
}

namespace {

/// One run over `options.transport`, judged.
CaseResult run_once(const Scenario& scenario, const RunOptions& options) {
  const Stopwatch stopwatch;
  CaseResult result;
  result.scenario = scenario;
  const rut::Config config = runtime_config(scenario, options.extra_defects);

  mock::ScriptEngine engine(scenario.script);
  std::unique_ptr<mock::MockHttpServer> server;
  std::unique_ptr<rut::ITransport> inner;
  std::unique_ptr<rut::ITransport> http;  // under `inner` when a cloud path wraps it
  if (over_network(options.transport)) {
    // Over HTTP virtual seconds of silence become real milliseconds; a floor on the real idle
    // timeout keeps a loaded machine's scheduling jitter from turning slow bytes into timeouts.
    // The loader refuses an idle timeout below kMinIdleTimeoutS; one set in code is scaled as that
    // shortest one, so the scale stays finite (500 ms / 3e-306 s is infinite, and the run hung).
    const double scale = std::max(options.stall_ms_per_s,
                                  options.min_idle_timeout_ms / std::max(config.idle_timeout_s, kMinIdleTimeoutS));
    mock::ServerOptions server_options;
    server_options.stall_ms_per_s = scale;
    server_options.max_delay_ms = options.max_delay_ms;
    server_options.cancel_pauses = options.abandoned;  // an abandoned case ends at its next request
    server = std::make_unique<mock::MockHttpServer>(engine, server_options);
    const int port = server->start();
    if (options.transport == TransportKind::kWebSocket) {
      inner = std::make_unique<rut::WebSocketTransport>("127.0.0.1", port, scale, config.defects);
    } else {
      inner = std::make_unique<rut::HttpTransport>("127.0.0.1", port, scale);
      if (const auto cloud = rut::cloud_path_from_name(options.cloud)) {
        http = std::move(inner);
        inner = std::make_unique<rut::CloudTransport>(*http, *cloud);
      }
    }
  } else {
    inner = std::make_unique<MemoryTransport>(engine);
  }
  const double max_virtual_s = scenario.max_virtual_s.value_or(options.max_virtual_s);
  CappedClock clock(max_virtual_s);
  CappedTransport transport(*inner, options.max_requests, clock, max_virtual_s,
                            watch_bound_s(scenario.script, max_virtual_s, config.idle_timeout_s), options.abandoned);
  rut::SplitMix64 random(options.seed);
  // The scenario's tools, played in virtual time behind the runtime's tool port (none: no port,
  // every call simulated as before).
  ScriptedToolPort scripted_tools(scenario.tools, clock);
  CappedToolPort tools(scripted_tools, clock, max_virtual_s);
  rut::IToolPort* tool_port = scenario.tools.tools.empty() ? nullptr : &tools;

  std::string cap_message;
  bool hung = false;
  try {
    std::vector<std::string> prompts = {scenario.prompt};
    for (const SessionPrompt& p : scenario.session) prompts.push_back(p.prompt);
    result.run = rut::run_session(config, prompts, clock, random, transport, tool_port);
  } catch (const CapReached& cap) {
    cap_message = cap.what();
    hung = cap.hang;
    result.cap_reached = true;
    result.run = rut::RunResult{};
    result.run.error = "cap";
    result.run.error_message = cap_message;
    result.run.requests = transport.sent();
    result.run.waited_s = clock.now_s();
  }
  inner.reset();
  http.reset();
  if (server) server->stop();
  result.journal = engine.take_journal();  // the server is stopped: nothing settles any more
  result.sent_at_s = transport.sent_at_s();
  result.tool_calls = scripted_tools.records();
  for (ToolCallRecord& r : result.tool_calls) {
    if (r.request_seq >= 0 && static_cast<std::size_t>(r.request_seq) < result.journal.size()) {
      r.turn = result.journal[static_cast<std::size_t>(r.request_seq)].turn;
    }
  }

  Evidence evidence{scenario, result.run, result.journal, config.max_attempts, cap_message};
  evidence.hung = hung;
  evidence.tool_calls = &result.tool_calls;
  result.violations = check_invariants(evidence);
  for (Violation& v : check_expect(evidence)) result.violations.push_back(std::move(v));
  if (options.keep_transcript) {
    result.transcript = make_transcript(scenario, result.run, result.journal, result.tool_calls);
    result.digest = transcript_digest(result.transcript);
  } else {
    result.digest = transcript_digest(scenario, result.run, result.journal, result.tool_calls);
  }
  result.wall_ms = stopwatch.elapsed_ms();
  return result;
}

/// Whether real time can have shaped an HTTP run: the runtime meets a silence as an idle timeout
/// (an attempt that failed with `idle_timeout`, retried or not) and the harness as the watchdog's
/// cap. Scheduling delays only lengthen silences, so a run that met neither is what it would be
/// on an idle machine.
bool met_silence(const CaseResult& r) {
  if (r.cap_reached) return true;
  for (const nlohmann::json& e : r.run.events) {
    const auto type = e.find("type");
    if (type == e.end() || !type->is_string()) continue;
    const char* key = *type == "retry" ? "error" : *type == "error" ? "attempt_error" : nullptr;
    if (key == nullptr) continue;
    const auto code = e.find(key);
    if (code != e.end() && code->is_string() && *code == "idle_timeout") return true;
  }
  return false;
}

/// Whether some attempt of `scenario` ends, over WebSocket, in a way the in-memory transport reads
/// as another error by design: a `disconnect` the scenario closes with a close frame 1000 (the
/// clean closing handshake: an incomplete stream over WebSocket, a lost connection in memory), or
/// an `end` (or events with no finish and no fault) it closes with 1011 or without a close frame
/// (1006: a lost connection, where in memory and over HTTP it is an incomplete stream). The
/// transcripts differ, the verdicts do not (both retryable; docs/WIRE-FORMATS.md "Responses over
/// WebSocket"). An `end` with its default close 1000 reads as over HTTP.
bool websocket_reads_otherwise(const Scenario& scenario) {
  for (const mock::Turn& turn : scenario.script.turns) {
    for (const mock::Attempt& a : turn.attempts) {
      if (a.status || !a.websocket || !a.websocket->close_code) continue;
      const int code = *a.websocket->close_code;
      if (a.fault) {
        if (std::holds_alternative<mock::DisconnectFault>(*a.fault) && code == 1000) return true;
        if (std::holds_alternative<mock::EndFault>(*a.fault) && code != 1000) return true;
        continue;
      }
      const bool finished = std::any_of(a.events.begin(), a.events.end(), [](const mock::Event& e) {
        return std::holds_alternative<mock::FinishEvent>(e);
      });
      if (!finished && code != 1000) return true;
    }
  }
  return false;
}

/// Whether Bedrock's answer to `scenario` reaches the runtime with other error wording than the
/// Anthropic path's: a status Bedrock sends as another (401 as 403, 408 as 504, 529 as 503) or
/// an in-stream error, which arrives as an exception event with Bedrock's message
/// (docs/WIRE-FORMATS.md "Cloud paths"). The runtime's retry and error messages then differ from
/// the in-memory run's by design: the transcripts differ, the verdicts do not.
bool bedrock_rewords_errors(const Scenario& scenario) {
  for (const mock::Turn& turn : scenario.script.turns) {
    for (const mock::Attempt& a : turn.attempts) {
      if (a.status && (*a.status == 401 || *a.status == 408 || *a.status == 529)) return true;
      if (a.fault && std::holds_alternative<mock::ErrorEventFault>(*a.fault)) return true;
    }
  }
  return false;
}

}  // namespace

CaseResult run_scenario(const Scenario& scenario, const RunOptions& options) {
  CaseResult first = run_once(scenario, options);
  const bool abandoned = options.abandoned != nullptr && options.abandoned->load();
  if (!over_network(options.transport) || options.http_slower_reruns <= 0 || abandoned ||
      !met_silence(first)) {
    return first;
  }
  // Over WebSocket a close code can make a lost connection of an incomplete stream or the other
  // way round: no in-memory run is a reference for such a transcript.
  if (options.transport == TransportKind::kWebSocket && websocket_reads_otherwise(scenario)) return first;
  // On Bedrock's path some errors come worded as Bedrock words them: no in-memory run is a
  // reference for such a transcript either.
  if (options.cloud == "bedrock" && bedrock_rewords_errors(scenario)) return first;
  // The in-memory run is the reference: it has no real time, so no scheduling delay can make a
  // stream look silent there. Both transports give the same digest for the same case (explorer_test:
  // 1,000 cases), so an HTTP run that differs is a timing artifact (an idle timeout the script did
  // not ask for, on a loaded machine) or a difference of the HTTP path itself.
  RunOptions memory = options;
  memory.transport = TransportKind::kMemory;
  memory.keep_transcript = false;
  const std::string reference = run_once(scenario, memory).digest;
  first.memory_digest = reference;
  if (first.digest == reference) return first;
  RunOptions slower = options;
  double wall_ms = first.wall_ms;
  CaseResult again;
  for (int k = 1; k <= options.http_slower_reruns; ++k) {
    slower.stall_ms_per_s *= kSlowerRerunFactor;
    slower.min_idle_timeout_ms *= kSlowerRerunFactor;
    again = run_once(scenario, slower);
    again.slower_reruns = k;
    wall_ms += again.wall_ms;
    again.wall_ms = wall_ms;
    again.memory_digest = reference;
    if (again.digest == reference) return again;
    if (options.abandoned != nullptr && options.abandoned->load()) return first;
  }
  // Still different with that much more real time: a difference of the HTTP path, or a machine too
  // loaded even for that. The slowest run's result stands, and the difference is reported.
  again.differs_from_memory = true;
  return again;
}

}  // namespace harness
