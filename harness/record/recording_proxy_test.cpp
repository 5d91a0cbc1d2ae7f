// The recording proxy end to end: the upstream is the mock server playing a bundled scenario (as
// `hiccup serve` does), the client the reference runtime over real HTTP; the recording must lint
// clean and replay to the transcript digest of the original, in all four wire formats.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "harness/record/live_faults.h"
#include "harness/record/recording_proxy.h"
#include "harness/record/session_recorder.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"
#include "mock_server/faults.h"
#include "mock_server/http_server.h"
#include "mock_server/script_engine.h"
#include "runtime_under_test/codec.h"
#include "runtime_under_test/http_transport.h"
#include "runtime_under_test/runtime.h"

namespace recording_proxy_test {

using harness::Scenario;
using harness::record::ProxyOptions;
using harness::record::RecordingProxy;
using harness::record::SessionRecorder;

Scenario load(const std::string& relative) {
  harness::LoadResult r = harness::load_scenario_file(std::string(HICCUP_SOURCE_DIR) + "/scenarios/" + relative);
  REQUIRE(r.problems.empty());
  return *r.scenario;
}

struct Recorded {
  std::string text;                   // the scenario file as written
  std::optional<Scenario> scenario;   // as the loader reads it back
  std::vector<harness::LoadProblem> problems;
};

/// Plays `original` from a mock server upstream, through a recording proxy, with the reference
/// runtime as the client (over real HTTP, virtual time), and returns the recording.
Recorded record(const Scenario& original) {
  mock::ScriptEngine engine(original.script);
  mock::ServerOptions server_options;
  server_options.max_delay_ms = 25;
  mock::MockHttpServer upstream(engine, server_options);
  const int upstream_port = upstream.start();

  SessionRecorder recorder;
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:" + std::to_string(upstream_port), error);
  RecordingProxy proxy(options, &recorder);
  const int port = proxy.start();
  {
    const rut::Config config = harness::runtime_config(original, {});
    rut::VirtualClock clock;
    rut::SplitMix64 random(1);
    rut::HttpTransport transport("127.0.0.1", port, 20);
    (void)rut::run_session(config, {original.prompt}, clock, random, transport);
  }
  proxy.stop();
  upstream.stop();
  Recorded out;
  out.text = recorder.scenario(original.name).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  harness::LoadResult r = harness::parse_scenario(out.text, "recorded.json");
  out.scenario = std::move(r.scenario);
  out.problems = std::move(r.problems);
  return out;
}

std::string problems_text(const std::vector<harness::LoadProblem>& problems) {
  std::string out;
  for (const auto& p : problems) out += harness::format_problem(p) + "\n";
  return out;
}

/// The in-memory digest of `s` played by the reference runtime.
std::string digest(const Scenario& s) {
  harness::RunOptions o;
  o.transport = harness::TransportKind::kMemory;
  return harness::run_scenario(s, o).digest;
}

/// Record `original` and compare the replay's digest with the original's: the recording stands in
/// for the original when it is given the agent's runtime settings (the client's configuration,
/// not part of the recording) and its name (which the transcript carries).
void check_round_trip(Scenario original) {
  const Recorded rec = record(original);
  INFO(rec.text);
  REQUIRE(problems_text(rec.problems) == "");
  Scenario replay = *rec.scenario;
  CHECK(replay.script.provider == original.script.provider);
  CHECK(replay.prompt == original.prompt);
  CHECK(replay.script.turns.size() == original.script.turns.size());
  // Fault-free, the recording's script is the original's: every event as delivered, calls with
  // their argument fragment count (Gemini sends a call whole: none), no ids.
  std::vector<mock::Turn> expected = original.script.turns;
  for (mock::Turn& t : expected) {
    for (mock::Attempt& a : t.attempts) {
      for (mock::Event& e : a.events) {
        if (auto* c = std::get_if<mock::CallEvent>(&e)) {
          if (original.script.provider == "gemini" || c->fragments == 1) c->fragments = 0;
        }
      }
    }
  }
  CHECK(replay.script.turns == expected);
  replay.runtime = original.runtime;
  replay.name = original.name;
  CHECK(digest(replay) == digest(original));
}

TEST_CASE("record: a recording replays to the original's transcript digest, in every wire format, streaming and not") {
  for (const char* file : {"tools/tools-parallel-calls.json", "tools/tools-same-call-in-two-turns.json",
                           "http-status/http-500-retried.json"}) {
    for (const char* provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
      for (bool stream : {true, false}) {
        Scenario s = load(file);
        s.script.provider = provider;
        s.runtime.stream = stream;
        if (stream) {  // arguments streamed in 3 fragments where the format streams them
          for (mock::Turn& t : s.script.turns) {
            for (mock::Attempt& a : t.attempts) {
              for (mock::Event& e : a.events) {
                if (auto* c = std::get_if<mock::CallEvent>(&e)) c->fragments = 3;
              }
            }
          }
        }
        INFO(file << " as " << provider << (stream ? " streaming" : " non-streaming"));
        check_round_trip(s);
      }
    }
  }
}

TEST_CASE("record: Anthropic redacted_thinking is recorded as redacted reasoning and replays as that block") {
  for (bool stream : {true, false}) {
    Scenario s = load("reasoning/reasoning-redacted-thinking-before-call.json");
    s.script.provider = "anthropic";
    s.runtime.stream = stream;
    INFO((stream ? "streaming" : "non-streaming"));
    check_round_trip(s);  // recorded as plain thinking, the replay sent a thinking block back (stop 48's newcomer)
  }
}

TEST_CASE("record: a thinking block followed by a redacted_thinking block lints clean and round-trips") {
  // Two reasoning events in a row, as the live API sends them (docs.claude.com "Extended
  // thinking", "Thinking redaction": a response's content holds thinking and redacted_thinking
  // blocks before its text or tool_use). Built in code, not loaded: lint refused the pair before.
  for (bool stream : {true, false}) {
    Scenario s = load("reasoning/reasoning-redacted-thinking-before-call.json");
    s.runtime.stream = stream;
    std::vector<mock::Event>& events = s.script.turns[0].attempts[0].events;
    mock::ReasoningEvent thinking;
    thinking.text = "Check the include paths.";
    thinking.signature = "c2lnLXRoaW5raW5n";
    events.insert(events.begin(), thinking);
    INFO((stream ? "streaming" : "non-streaming"));
    REQUIRE(std::holds_alternative<mock::ReasoningEvent>(events[1]));
    check_round_trip(s);
  }
}

TEST_CASE("record: an upstream 503 and a cut are recorded as the faults they were") {
  for (const char* provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    INFO(provider);
    Scenario s = load("mid-stream/midstream-cut-mid-frame.json");
    s.script.provider = provider;
    // Attempt 0 of turn 0: 503 with Retry-After, then the scenario's own attempts.
    mock::Attempt unavailable;
    unavailable.status = 503;
    unavailable.retry_after_s = 1;
    auto& attempts = s.script.turns[0].attempts;
    attempts.insert(attempts.begin(), unavailable);
    const Recorded rec = record(s);
    INFO(rec.text);
    REQUIRE(problems_text(rec.problems) == "");
    const auto& got = rec.scenario->script.turns[0].attempts;
    REQUIRE(got.size() >= 3);
    CHECK(got[0].status == 503);
    CHECK(got[0].retry_after_s == 1);
    REQUIRE(got[1].fault.has_value());
    const auto* cut = std::get_if<mock::CutFault>(&*got[1].fault);
    REQUIRE(cut != nullptr);
    const auto* want = std::get_if<mock::CutFault>(&*attempts[1].fault);
    REQUIRE(want != nullptr);
    CHECK(cut->after_event == want->after_event);
    CHECK(cut->bytes == want->bytes);
    CHECK_FALSE(got[2].fault.has_value());
  }
}

TEST_CASE("record: an in-stream error and a stream without its terminal event are recorded as error_event and end") {
  for (const char* provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
    INFO(provider);
    Scenario s = load("mid-stream/midstream-error-event-after-call.json");
    s.script.provider = provider;
    const Recorded rec = record(s);
    INFO(rec.text);
    REQUIRE(problems_text(rec.problems) == "");
    const auto& got = rec.scenario->script.turns[0].attempts;
    const auto* e = std::get_if<mock::ErrorEventFault>(&*got.at(0).fault);
    const auto* want = std::get_if<mock::ErrorEventFault>(&*s.script.turns[0].attempts[0].fault);
    REQUIRE(e != nullptr);
    REQUIRE(want != nullptr);
    // Anthropic sends the same overloaded_error for 503 and 529: the recorder reads it as its
    // overload, 529 (the bytes on the wire are the same).
    CHECK(e->status == (std::string(provider) == "anthropic" && want->status == 503 ? 529 : want->status));
    CHECK(e->after_event == want->after_event);
  }
  Scenario s = load("incomplete-stream/incomplete-end-after-call.json");
  const Recorded rec = record(s);
  INFO(rec.text);
  REQUIRE(problems_text(rec.problems) == "");
  CHECK(std::holds_alternative<mock::EndFault>(*rec.scenario->script.turns[0].attempts.at(0).fault));
}

TEST_CASE("record: credentials go upstream and never into the file, and each SSE frame reaches the client before the next is sent") {
  // An upstream that checks the client's key and sends its second frame only once the proxy's
  // client has read the first: a proxy that buffered the answer would deadlock (and time out).
  std::mutex mu;
  std::condition_variable cv;
  bool first_read = false;
  std::string seen_key, seen_auth;
  httplib::Server up;
  up.Post("/v1beta/models/gemini-2.5-flash:streamGenerateContent", [&](const httplib::Request& req, httplib::Response& res) {
    seen_key = req.get_header_value("x-goog-api-key");
    seen_auth = req.get_header_value("Authorization");
    res.set_chunked_content_provider("text/event-stream", [&](std::size_t, httplib::DataSink& sink) {
      const std::string f1 = R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}]})" "\n\n";
      sink.write(f1.data(), f1.size());
      std::unique_lock<std::mutex> lock(mu);
      const bool read = cv.wait_for(lock, std::chrono::seconds(10), [&] { return first_read; });
      const std::string f2 = std::string(R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":")") +
                             (read ? "lo" : "TIMEOUT") + R"("}]},"finishReason":"STOP"}]})" "\n\n";
      sink.write(f2.data(), f2.size());
      sink.done();
      return true;
    });
  });
  const int up_port = up.bind_to_any_port("127.0.0.1");
  std::thread up_thread([&] { up.listen_after_bind(); });

  SessionRecorder recorder;
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:" + std::to_string(up_port), error);
  RecordingProxy proxy(options, &recorder);
  const int port = proxy.start();
  const std::string key = "SECRET-hiccup-key-7f3a";
  httplib::Client client("127.0.0.1", port);
  httplib::Headers headers = {{"x-goog-api-key", key}, {"Authorization", "Bearer " + key}, {"Cookie", "session=" + key}};
  std::string received;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=" + key;
  req.headers = headers;
  req.body = R"({"contents":[{"role":"user","parts":[{"text":"Say hello."}]}]})";
  req.headers.emplace("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    received.append(data, n);
    if (received.find("Hel") != std::string::npos) {
      std::lock_guard<std::mutex> lock(mu);
      first_read = true;
      cv.notify_all();
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err;
  REQUIRE(client.send(req, res, err));
  CHECK(res.status == 200);
  CHECK(received.find("\"lo\"") != std::string::npos);
  CHECK(received.find("TIMEOUT") == std::string::npos);
  proxy.stop();
  up.stop();
  up_thread.join();
  CHECK(seen_key == key);
  CHECK(seen_auth == "Bearer " + key);
  const std::string text = recorder.scenario("creds").dump(2);
  INFO(text);
  CHECK(text.find("SECRET") == std::string::npos);
  CHECK(text.find("Hel") != std::string::npos);
  harness::LoadResult r = harness::parse_scenario(text, "creds.json");
  CHECK(problems_text(r.problems) == "");
}

TEST_CASE("record: an unreachable upstream answers 502 in the provider's envelope and records nothing") {
  SessionRecorder recorder;
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:1", error);
  options.connect_timeout_s = 2;
  RecordingProxy proxy(options, &recorder);
  const int port = proxy.start();
  httplib::Client client("127.0.0.1", port);
  auto res = client.Post("/v1/messages", R"({"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]})",
                         "application/json");
  REQUIRE(res);
  CHECK(res->status == 502);
  CHECK(res->body.find("\"type\":\"error\"") != std::string::npos);
  // The text names the upstream and says why in words (not cpp-httplib's "Write").
  CHECK(res->body.find("the upstream http://127.0.0.1:1 gave no answer: connection refused") != std::string::npos);
  proxy.stop();
  CHECK(recorder.stats().requests == 0);
  CHECK(recorder.notes().size() == 1);
}

TEST_CASE("record: a client that closes its connection after every request leaves no thread behind") {
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:1", error);
  RecordingProxy proxy(options, nullptr);
  const int port = proxy.start();
  for (int i = 0; i < 40; ++i) {
    httplib::Client client("127.0.0.1", port);
    client.set_keep_alive(false);  // Connection: close, a new connection (and thread) per request
    auto res = client.Get("/v1/models");
    REQUIRE(res);
    CHECK(res->status == 502);
  }
  // Each accept joins the threads whose connections ended: the last one or two are left.
  CHECK(proxy.connection_threads() <= 5);
  proxy.stop();
  CHECK(proxy.connection_threads() == 0);
}

TEST_CASE("proxy: an unreachable upstream is journaled as a connection failure with its reason") {
  const Scenario s = load("mid-stream/midstream-cut-mid-frame.json");
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:1", error);
  options.faults = &s.script;
  RecordingProxy proxy(options, nullptr);
  const int port = proxy.start();
  httplib::Client client("127.0.0.1", port);
  auto res = client.Post("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                         R"({"contents":[{"role":"user","parts":[{"text":"hi"}]}]})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 502);
  proxy.stop();
  const nlohmann::json journal = proxy.journal();
  INFO(journal.dump());
  REQUIRE(journal.size() == 1);
  CHECK(journal[0]["played"] == "upstream-failed");
  CHECK(journal[0]["status"] == 502);
  CHECK(journal[0]["upstream"] == true);
  CHECK(journal[0]["upstream_error"] == "connection refused");
}

}  // namespace recording_proxy_test

namespace recording_proxy_test {

/// The reference runtime's run of `faulted` through a proxy applying its faults to the live
/// answers of an upstream playing `faulted` without them; the proxy's journal in `journal`.
rut::RunResult through_proxy(const Scenario& faulted, nlohmann::json& journal) {
  Scenario live = faulted;
  for (mock::Turn& t : live.script.turns) {
    std::vector<mock::Attempt> kept;
    for (mock::Attempt& a : t.attempts) {
      if (!a.fault && !a.status) kept.push_back(a);
    }
    t.attempts = kept;
  }
  mock::ScriptEngine engine(live.script);
  mock::MockHttpServer upstream(engine, mock::ServerOptions{});
  const int upstream_port = upstream.start();
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:" + std::to_string(upstream_port), error);
  options.faults = &faulted.script;
  options.max_delay_ms = 25;
  RecordingProxy proxy(options, nullptr);
  const int port = proxy.start();
  rut::RunResult run;
  {
    const rut::Config config = harness::runtime_config(faulted, {});
    rut::VirtualClock clock;
    rut::SplitMix64 random(1);
    rut::HttpTransport transport("127.0.0.1", port, 20);
    run = rut::run_session(config, {faulted.prompt}, clock, random, transport);
  }
  proxy.stop();
  upstream.stop();
  journal = proxy.journal();
  return run;
}

TEST_CASE("proxy: faults applied to live answers give the run the outcome the same scenario gives under serve") {
  for (const char* file : {"mid-stream/midstream-cut-mid-frame.json", "mid-stream/midstream-error-event-after-call.json",
                           "http-status/http-500-retried.json", "mid-stream/midstream-reset-after-call.json"}) {
    for (const char* provider : {"gemini", "openai-chat", "openai-responses", "anthropic"}) {
      INFO(file << " as " << provider);
      Scenario s = load(file);
      s.script.provider = provider;
      // Live answers are the upstream's: a faulted attempt streams what the turn's fault-free
      // attempt streams (the scenario under serve is given the same events, so both runs meet
      // the same bytes).
      for (mock::Turn& t : s.script.turns) {
        const mock::Attempt* clean = nullptr;
        for (const mock::Attempt& a : t.attempts) {
          if (!a.fault && !a.status && !clean) clean = &a;
        }
        if (clean == nullptr) continue;
        const std::vector<mock::Event> events = clean->events;
        for (mock::Attempt& a : t.attempts) {
          if (a.fault) a.events = events;
        }
      }
      harness::RunOptions o;
      o.transport = harness::TransportKind::kHttp;
      const harness::CaseResult under_serve = harness::run_scenario(s, o);
      nlohmann::json journal;
      const rut::RunResult run = through_proxy(s, journal);
      INFO(journal.dump(1));
      CHECK(run.completed == under_serve.run.completed);
      CHECK(run.error == under_serve.run.error);
      CHECK(run.final_text == under_serve.run.final_text);
      CHECK(run.requests == under_serve.run.requests);
      CHECK(run.waited_s == under_serve.run.waited_s);
      CHECK(run.ledger.size() == under_serve.run.ledger.size());
      CHECK(nlohmann::json(run.events).dump() == nlohmann::json(under_serve.run.events).dump());
      REQUIRE(journal.size() >= 2);
      const mock::Attempt& first = s.script.turns[0].attempts[0];
      if (first.status) {
        CHECK(journal[0]["played"] == "status");
        CHECK(journal[0]["upstream"] == false);
      } else {
        CHECK(journal[0]["played"] == "live+fault");
        CHECK(journal[0]["fault"].get<std::string>().rfind(std::string(mock::fault_name(*first.fault)) + " after ", 0) == 0);
      }
      CHECK(journal[1]["played"] == "live");
    }
  }
}

}  // namespace recording_proxy_test

namespace recording_proxy_test {

TEST_CASE("record: a cut inside a call's arguments is recorded as the call, its fragments delivered and the cut") {
  // The first attempt streams a call in 3 argument fragments and is cut inside the second: the
  // recording holds the call (name, the arguments it had, completed into an object) and the cut
  // after its first fragment, not an empty answer; replayed, it meets the original's expectations.
  for (const char* provider : {"openai-chat", "openai-responses", "anthropic"}) {
    INFO(provider);
    Scenario s = load("arguments/args-cut-mid-fragments.json");
    s.script.provider = provider;
    const Recorded rec = record(s);
    INFO(rec.text);
    REQUIRE(problems_text(rec.problems) == "");
    const mock::Attempt& got = rec.scenario->script.turns.at(0).attempts.at(0);
    REQUIRE(got.events.size() == 1);
    const auto* call = std::get_if<mock::CallEvent>(&got.events[0]);
    REQUIRE(call != nullptr);
    CHECK(call->name == "deploy");
    CHECK(call->fragments >= 2);
    // The arguments delivered: a non-empty prefix of the original's, each string value a prefix.
    const auto& want = std::get<mock::CallEvent>(s.script.turns[0].attempts[0].events[0]).args;
    REQUIRE(call->args.is_object());
    CHECK_FALSE(call->args.empty());
    for (const auto& [key, value] : call->args.items()) {
      INFO(key);
      REQUIRE(want.contains(key));
      REQUIRE(value.is_string());
      CHECK(want[key].get<std::string>().rfind(value.get<std::string>(), 0) == 0);
    }
    REQUIRE(got.fault.has_value());
    const auto* cut = std::get_if<mock::CutFault>(&*got.fault);
    REQUIRE(cut != nullptr);
    CHECK(cut->after_event == 0);
    CHECK(mock::fault_after_fragment(*got.fault) == 1);
    CHECK(cut->bytes >= 1);
    // The retry is recorded whole, and the recording plays to the original's expectations.
    const auto& retry = rec.scenario->script.turns.at(0).attempts.at(1);
    CHECK_FALSE(retry.fault.has_value());
    Scenario replay = *rec.scenario;
    replay.runtime = s.runtime;
    replay.expect = s.expect;
    harness::RunOptions o;
    o.transport = harness::TransportKind::kMemory;
    const harness::CaseResult r = harness::run_scenario(replay, o);
    for (const auto& v : r.violations) FAIL_CHECK(v.invariant << ": " << v.message);
  }
}

TEST_CASE("object_from_partial_json: a cut argument text becomes the object it had so far") {
  using harness::record::object_from_partial_json;
  using nlohmann::ordered_json;
  CHECK(object_from_partial_json(R"({"target": "stag)") == ordered_json::parse(R"({"target": "stag"})"));
  CHECK(object_from_partial_json(R"({"a": 1, "b)") == ordered_json::parse(R"({"a": 1})"));
  CHECK(object_from_partial_json(R"({"a": 1,)") == ordered_json::parse(R"({"a": 1})"));
  CHECK(object_from_partial_json(R"({"a":)") == ordered_json::parse(R"({"a": null})"));
  CHECK(object_from_partial_json(R"({"a": {"b": [1, 2)") == ordered_json::parse(R"({"a": {"b": [1, 2]}})"));
  CHECK(object_from_partial_json(R"({"a": "x\)") == ordered_json::parse(R"({"a": "x"})"));
  CHECK(object_from_partial_json(R"({"a": "x\u00)") == ordered_json::parse(R"({"a": "x"})"));
  CHECK(object_from_partial_json(R"({"a": tr)") == ordered_json::object());
  CHECK(object_from_partial_json(R"({"a": 1, "b": tr)") == ordered_json::parse(R"({"a": 1})"));
  CHECK(object_from_partial_json("") == ordered_json::object());
  CHECK(object_from_partial_json("[1,") == ordered_json::object());
  CHECK(object_from_partial_json(std::string(100000, '{')) == ordered_json::object());
}

/// Sends one streamed Gemini request to 127.0.0.1:`port` and reads until "Hel" arrived; returns
/// the open socket.
int request_until_first_frame(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const std::string body = R"({"contents":[{"role":"user","parts":[{"text":"Say hello."}]}]})";
  const std::string request = "POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string received;
  char buf[4096];
  while (received.find("Hel") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    REQUIRE(n > 0);
    received.append(buf, static_cast<std::size_t>(n));
  }
  return fd;
}

TEST_CASE("record: a client that leaves mid-stream is recorded as what it got, not as the whole upstream answer") {
  // The upstream sends its first frame, and the rest of the answer only after the client has
  // read that frame and closed its connection. The recording must stop where the client left.
  std::mutex mu;
  std::condition_variable cv;
  bool client_closed = false, upstream_done = false;
  httplib::Server up;
  up.Post("/v1beta/models/gemini-2.5-flash:streamGenerateContent", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [&](std::size_t, httplib::DataSink& sink) {
      const std::string f1 = R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}]})" "\n\n";
      sink.write(f1.data(), f1.size());
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return client_closed; });
      const std::string rest = R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"lo-after-the-client-left"}]},"finishReason":"STOP"}]})" "\n\n";
      sink.write(rest.data(), rest.size());
      sink.done();
      upstream_done = true;
      cv.notify_all();
      return true;
    });
  });
  const int up_port = up.bind_to_any_port("127.0.0.1");
  std::thread up_thread([&] { up.listen_after_bind(); });

  SessionRecorder recorder;
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:" + std::to_string(up_port), error);
  RecordingProxy proxy(options, &recorder);
  const int port = proxy.start();
  ::close(request_until_first_frame(port));  // the client leaves mid-stream
  {
    std::unique_lock<std::mutex> lock(mu);
    client_closed = true;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return upstream_done; });
  }
  // The proxy's connection thread records the exchange's end once it has seen the client gone.
  for (int i = 0; i < 2000 && recorder.stats().requests == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  proxy.stop();
  up.stop();
  up_thread.join();
  const std::string text = recorder.scenario("client-left").dump(2);
  INFO(text);
  REQUIRE(recorder.stats().requests == 1);
  CHECK(text.find("lo-after-the-client-left") == std::string::npos);
  harness::LoadResult r = harness::parse_scenario(text, "client-left.json");
  REQUIRE(problems_text(r.problems) == "");
  const mock::Attempt& got = r.scenario->script.turns.at(0).attempts.at(0);
  REQUIRE(got.events.size() == 1);
  CHECK(std::get<mock::TextEvent>(got.events[0]).text == "Hel");
  REQUIRE(got.fault.has_value());
  const auto* gone = std::get_if<mock::DisconnectFault>(&*got.fault);
  REQUIRE(gone != nullptr);
  CHECK(gone->after_event == 1);
  // The file and the notes say it was the client that left.
  CHECK(r.scenario->description.find("the client closed its connection after 1 event(s)") != std::string::npos);
  const auto notes = recorder.notes();
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].rfind("request 0 (/turns/0/attempts/0): the client closed its connection", 0) == 0);
}

}  // namespace recording_proxy_test

namespace recording_proxy_test {

TEST_CASE("proxy: a scripted attempt's event timing is a pause before the live frame of each event, scaled and capped") {
  // The gate is pure: the pauses it asks for are numbers (the proxy, the I/O shell, sleeps them).
  const mock::WireFormat& format = *mock::wire_format("gemini");
  const rut::ICodec& codec = *rut::codec_for("gemini");
  mock::Attempt scripted;
  mock::TextEvent a, b, c;
  a.text = "a";
  a.delay_s = 2;
  b.text = "b";
  c.text = "c";
  c.delay_s = 0.5;
  mock::FinishEvent finish;
  finish.delay_s = 1;
  scripted.events = {a, b, c, finish};
  mock::Script::Timing timing;
  timing.scale = 2;
  timing.max_delay_s = 3;
  CHECK(harness::record::LiveFaultGate::has_timing(scripted, timing));
  CHECK_FALSE(harness::record::LiveFaultGate::has_timing(scripted, mock::Script::Timing{0, std::nullopt}));
  // The live answer: other texts than the scripted ones (the content is the live model's), one
  // frame per event.
  std::unique_ptr<mock::StreamEncoder> live = format.stream_encoder(mock::ResponseContext{});
  std::string upstream = live->open();
  int i = 0;
  for (const char* t : {"live one", "live two", "live three"}) {
    for (const std::string& u : live->event_units(mock::TextEvent{t}, i++)) upstream += u;
  }
  for (const std::string& u : live->event_units(mock::FinishEvent{}, 0)) upstream += u;
  harness::record::LiveFaultGate gate(format, codec, scripted, mock::ResponseContext{}, 10, -1, timing);
  std::vector<harness::record::GateStep> steps = gate.feed(upstream);
  for (harness::record::GateStep& s : gate.finish()) steps.push_back(std::move(s));
  std::vector<double> pauses;
  for (const harness::record::GateStep& s : steps) {
    if (!s.bytes.empty()) pauses.push_back(s.pause_ms);
  }
  // 2 s × 2 capped at 3 s; none; 0.5 s × 2; 1 s × 2: at 10 ms per virtual second.
  CHECK(pauses == std::vector<double>{30, 0, 10, 20});
  CHECK(gate.delayed_s() == 6);
  CHECK(gate.applied().empty());  // timing is no fault: the journal says "live"
  CHECK(steps.back().end == harness::record::GateStep::End::kTerminate);
}

}  // namespace recording_proxy_test

namespace recording_proxy_client_left_test {

using harness::record::ProxyOptions;
using harness::record::RecordingProxy;
using harness::record::SessionRecorder;

/// An upstream Gemini stream that sends its first frame ("Hel"), then holds the rest until
/// release() (the test's client has left by then, or the proxy was stopped).
struct HeldUpstream {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  httplib::Server server;
  int port = 0;
  std::thread thread;

  HeldUpstream() {
    server.Post("/v1beta/models/gemini-2.5-flash:streamGenerateContent", [this](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/event-stream", [this](std::size_t, httplib::DataSink& sink) {
        const std::string f1 = R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}]})" "\n\n";
        sink.write(f1.data(), f1.size());
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, std::chrono::seconds(20), [this] { return released; });
        const std::string rest = R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP"}]})" "\n\n";
        sink.write(rest.data(), rest.size());
        sink.done();
        return true;
      });
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
  }
  ~HeldUpstream() {
    release();
    server.stop();
    thread.join();
  }
};

using recording_proxy_test::request_until_first_frame;

/// The proxy's journal entry 0 once `done` holds for it (the connection's thread writes it when the
/// exchange ends; polled, at most 10 s).
nlohmann::json entry_when(const RecordingProxy& proxy, const std::function<bool(const nlohmann::json&)>& done) {
  for (int i = 0; i < 2000; ++i) {
    const nlohmann::json j = proxy.journal();
    if (!j.empty() && done(j[0])) return j[0];
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return proxy.journal().empty() ? nlohmann::json() : proxy.journal()[0];
}

/// A scenario script of one turn: `attempt` (JSON) as its only attempt.
mock::Script script_of(const std::string& attempt) {
  const harness::LoadResult r = harness::parse_scenario(
      R"({"schema": 1, "name": "x", "provider": "gemini", "prompt": "Say hello.", "turns": [{"attempts": [)" + attempt + "]}]}",
      "x.json");
  REQUIRE(r.scenario);
  return r.scenario->script;
}

TEST_CASE("proxy: a client that leaves while the live answer streams is journaled as client_left, live or faulted") {
  // Relayed untouched (no gate), and through a gate whose stall after event 1 would pause for a
  // day: the client leaves once it has the first frame; the journal says so, blames no upstream,
  // and the day-long pause ends with the client (the entry is written at once).
  for (const char* attempt : {R"({"events": [{"text": "a"}, {"finish": "stop"}]})",
                              R"({"events": [{"text": "a"}, {"finish": "stop"}], "fault": {"kind": "stall", "after_event": 1, "seconds": 86400}})"}) {
    INFO(attempt);
    HeldUpstream up;
    const mock::Script script = script_of(attempt);
    ProxyOptions options;
    std::string error;
    options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:" + std::to_string(up.port), error);
    options.faults = &script;
    options.stall_ms_per_s = 1000;
    RecordingProxy proxy(options, nullptr);
    const int port = proxy.start();
    const int fd = request_until_first_frame(port);
    ::close(fd);  // the client leaves mid-answer
    up.release();
    const nlohmann::json e = entry_when(proxy, [](const nlohmann::json& j) { return j.contains("client_left"); });
    INFO(e.dump());
    CHECK(e.value("client_left", false));
    CHECK_FALSE(e.contains("upstream_error"));
    CHECK_FALSE(e.contains("proxy_stopped"));
    CHECK(e["status"] == 200);
    proxy.stop();
  }
}

TEST_CASE("proxy: a stop during an endless stall journals the request as stopped by the proxy") {
  // Ctrl-C while the gate pauses for a day: the pause ends with the stop and the journal keeps the
  // request (its fault, and that the proxy stopped it), so the journal loses nothing.
  HeldUpstream up;
  const mock::Script script = script_of(
      R"({"events": [{"text": "a"}, {"finish": "stop"}], "fault": {"kind": "stall", "after_event": 1, "seconds": 1e300}})");
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:" + std::to_string(up.port), error);
  options.faults = &script;
  options.stall_ms_per_s = 1000;  // 1e303 ms: endless
  RecordingProxy proxy(options, nullptr);
  const int port = proxy.start();
  const int fd = request_until_first_frame(port);
  up.release();  // the rest of the live answer arrives; the gate holds it behind the stall
  // The stall is applied once the next frame arrives, and journaled before its pause starts.
  const nlohmann::json before = entry_when(proxy, [](const nlohmann::json& e) { return e["fault"] != ""; });
  REQUIRE(before.value("fault", "") == "stall after 1 event(s)");
  proxy.stop();  // what SIGINT does in `hiccup proxy`
  ::close(fd);
  const nlohmann::json j = proxy.journal();
  REQUIRE(j.size() == 1);
  INFO(j.dump());
  CHECK(j[0]["request"] == 0);
  CHECK(j[0]["fault"] == "stall after 1 event(s)");
  CHECK(j[0]["played"] == "live+fault");
  CHECK(j[0].value("proxy_stopped", false));
  CHECK_FALSE(j[0].contains("client_left"));
  CHECK_FALSE(j[0].contains("upstream_error"));
  // Its text dumps as JSON without a null (nothing overflowed).
  CHECK(j.dump().find("null") == std::string::npos);
}

TEST_CASE("record: a stop while upstream stalls is recorded as what the client got and said to be the stop") {
  // Ctrl-C of `hiccup record` while the provider holds its answer: the file must not pass the cut
  // off as a disconnect the provider sent.
  HeldUpstream up;
  SessionRecorder recorder;
  ProxyOptions options;
  std::string error;
  options.upstream = *harness::record::parse_upstream_url("http://127.0.0.1:" + std::to_string(up.port), error);
  RecordingProxy proxy(options, &recorder);
  const int port = proxy.start();
  const int fd = request_until_first_frame(port);
  proxy.stop();  // what SIGINT does in `hiccup record`
  ::close(fd);
  up.release();
  const std::vector<std::string> notes = recorder.notes();
  INFO(nlohmann::json(notes).dump());
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("the recording proxy was stopped") != std::string::npos);
  const std::string description = recorder.scenario("stopped").value("description", std::string());
  CHECK(description.find("the recording proxy was stopped") != std::string::npos);
  CHECK(description.find("the provider did not end it") != std::string::npos);
}

}  // namespace recording_proxy_client_left_test
