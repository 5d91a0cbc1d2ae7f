// The session recorder without sockets: upstream URLs, turn matching, faults from how an answer
// ended, hostile bytes.
#include <catch2/catch.hpp>

#include "harness/record/recording_proxy.h"
#include "harness/record/session_recorder.h"
#include "harness/runner.h"
#include "harness/scenario_io.h"

namespace session_recorder_test {

using harness::record::AnswerEnd;
using harness::record::SessionRecorder;
using nlohmann::json;

const char* kGeminiPath = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
const std::vector<std::pair<std::string, std::string>> kSse = {{"content-type", "text/event-stream"}};

std::string problems(const std::string& text) {
  std::string out;
  for (const auto& p : harness::parse_scenario(text, "rec.json").problems) out += harness::format_problem(p) + "\n";
  return out;
}

TEST_CASE("record: upstream URLs are http or https with a host, an optional port and path") {
  std::string error;
  auto u = harness::record::parse_upstream_url("https://api.anthropic.com", error);
  REQUIRE(u);
  CHECK(u->origin() == "https://api.anthropic.com:443");
  CHECK(u->prefix == "");
  u = harness::record::parse_upstream_url("http://127.0.0.1:8080/proxy/v1/", error);
  REQUIRE(u);
  CHECK(u->origin() == "http://127.0.0.1:8080");
  CHECK(u->prefix == "/proxy/v1");
  for (const char* bad : {"ftp://x", "127.0.0.1:80", "http://", "http://:80", "http://h:0", "http://h:99999",
                          "http://h:8x", "http://user:key@h", "http://h/?key=1", "http://h b"}) {
    INFO(bad);
    error.clear();
    CHECK_FALSE(harness::record::parse_upstream_url(bad, error));
    CHECK(error.rfind("expected http://HOST", 0) == 0);
  }
}

TEST_CASE("record: turns are matched by the model contents of the request's history, attempts by arrival") {
  SessionRecorder rec;
  const std::string first = R"({"contents":[{"role":"user","parts":[{"text":"<ctx>"},{"text":"Deploy it."}]}]})";
  const std::string second = R"({"contents":[{"role":"user","parts":[{"text":"Deploy it."}]},
    {"role":"model","parts":[{"functionCall":{"name":"shell","args":{"command":"./deploy.sh"}}}]},
    {"role":"user","parts":[{"functionResponse":{"name":"shell","response":{"ok":true}}}]}]})";
  // Turn 0, attempt 0: a 503 with Retry-After.
  auto* a = rec.begin("POST", kGeminiPath, first);
  REQUIRE(a);
  a->head(503, {{"content-type", "application/json"}});
  a->body(R"({"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}})");
  a->end(AnswerEnd::kComplete);
  // Turn 0, attempt 1: a call, then a frame cut after 7 bytes.
  auto* b = rec.begin("POST", kGeminiPath, first);
  b->head(200, kSse);
  b->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"shell\",\"args\":{\"command\":\"./deploy.sh\"}}}]}}]}\n\n");
  b->body("data: {\"");
  b->end(AnswerEnd::kConnectionLost);
  // Turn 0, attempt 2: the call and its finish, in one frame.
  auto* c = rec.begin("POST", kGeminiPath, first);
  c->head(200, kSse);
  c->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"shell\",\"args\":{\"command\":\"./deploy.sh\"}}}]},\"finishReason\":\"STOP\"}]}\n\n");
  c->end(AnswerEnd::kComplete);
  // Turn 1: two text frames, the stream ends without a finish.
  auto* d = rec.begin("POST", kGeminiPath, second);
  d->head(200, kSse);
  d->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Dep\"}]}}]}\n\ndata: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"loyed.\"}]}}]}\n\n");
  d->end(AnswerEnd::kComplete);
  // Not model requests: not recorded.
  CHECK(rec.begin("GET", kGeminiPath, "") == nullptr);
  CHECK(rec.begin("POST", "/v1/unknown", first) == nullptr);

  const auto s = rec.scenario("My Session!");
  const json want = json::parse(R"({
    "schema": 1, "name": "my-session",
    "description": "Recorded by `hiccup record`: 4 model request(s) in 2 turn(s).",
    "tags": ["recorded"], "provider": "gemini", "prompt": "Deploy it.",
    "runtime": {"model": "gemini-2.5-flash"},
    "turns": [
      {"attempts": [
        {"status": 503, "retry_after_s": 2.0},
        {"events": [{"call": {"name": "shell", "args": {"command": "./deploy.sh"}}}],
         "fault": {"kind": "cut", "after_event": 1, "bytes": 8}},
        {"events": [{"call": {"name": "shell", "args": {"command": "./deploy.sh"}}}, {"finish": "stop"}]}]},
      {"attempts": [
        {"events": [{"text": "Dep"}, {"text": "loyed."}], "fault": {"kind": "end", "after_event": 2}}]}]})");
  CHECK(json(s) == want);
  CHECK(problems(s.dump()) == "");
  CHECK(rec.stats().requests == 4);
  CHECK(rec.stats().turns == 2);
  CHECK(rec.stats().faults == 3);
}

TEST_CASE("record: an in-stream error is recorded with the status whose message it carries") {
  SessionRecorder rec;
  auto* a = rec.begin("POST", "/v1/messages", R"({"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]})");
  REQUIRE(a);
  a->head(200, kSse);
  a->body("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\"}}\n\n");
  a->body("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
  a->end(AnswerEnd::kComplete);
  const auto s = rec.scenario("x");
  CHECK(json(s["turns"][0]["attempts"][0]["fault"]) == json::parse(R"({"kind":"error_event","after_event":0,"status":529})"));
  CHECK(problems(s.dump()) == "");
}

TEST_CASE("record: hostile upstream bytes never throw and the scenario stays valid JSON") {
  const char* paths[] = {kGeminiPath, "/v1/chat/completions", "/v1/responses", "/v1/messages"};
  const char* bodies[] = {R"({"contents":[{"role":"user","parts":[{"text":"x"}]}]})",
                          R"({"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]})",
                          R"({"model":"m","stream":true,"input":"x"})",
                          R"({"model":"m","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"x"}]})"};
  const std::string junk[] = {"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":6}}]}}]}\n\n",
                              std::string("data: \xff\xfe{\n\n", 11), "data: [DONE]\n\n", "\r\n\r\n\n\ndata:",
                              "event: error\ndata: {\"error\":{\"code\":\"x\"}}\n\n",
                              "data: " + std::string(2000, '[') + "\n\n"};
  for (int i = 0; i < 4; ++i) {
    SessionRecorder rec;
    for (const std::string& j : junk) {
      for (AnswerEnd how : {AnswerEnd::kComplete, AnswerEnd::kConnectionLost}) {
        auto* e = rec.begin("POST", paths[i], bodies[i]);
        REQUIRE(e);
        e->head(200, kSse);
        e->body(j);
        e->end(how);
        auto* u = rec.begin("POST", paths[i], bodies[i]);
        u->head(200, {{"content-type", "application/json"}});
        u->body(j);
        u->end(how);
      }
    }
    const std::string text = rec.scenario("junk").dump(2, ' ', false, json::error_handler_t::replace);
    CHECK(json::accept(text));
  }
}

}  // namespace session_recorder_test

namespace session_recorder_test {

TEST_CASE("record --timing: each event's delay_s is read from the injected clock, and replays as a stall scaled and capped") {
  double now = 100;  // the injected clock: no real time
  SessionRecorder rec([&now] { return now; });
  auto* a = rec.begin("POST", kGeminiPath, R"({"contents":[{"role":"user","parts":[{"text":"Hi."}]}]})");
  REQUIRE(a);
  now = 100.5;
  a->head(200, kSse);
  now = 101.25;  // the first event 1.25 s after the request
  a->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]}}]}\n\n");
  now = 101.5;   // the next 0.25 s later; its finish in the same read carries none
  a->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"lo\"}]},\"finishReason\":\"STOP\"}]}\n\n");
  a->end(AnswerEnd::kComplete);
  const json s = json::parse(rec.scenario("timed").dump());
  INFO(s.dump(2));
  const json& events = s["turns"][0]["attempts"][0]["events"];
  REQUIRE(events.size() == 3);
  CHECK(events[0] == json::parse(R"({"text": "Hel", "delay_s": 1.25})"));
  CHECK(events[1] == json::parse(R"({"text": "lo", "delay_s": 0.25})"));
  CHECK(events[2] == json::parse(R"({"finish": "stop"})"));
  CHECK(problems(s.dump()) == "");
  // Without a clock nothing is timed.
  SessionRecorder untimed;
  auto* b = untimed.begin("POST", kGeminiPath, R"({"contents":[{"role":"user","parts":[{"text":"Hi."}]}]})");
  b->head(200, kSse);
  b->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]},\"finishReason\":\"STOP\"}]}\n\n");
  b->end(AnswerEnd::kComplete);
  CHECK(untimed.scenario("untimed").dump().find("delay_s") == std::string::npos);

  // Replayed in virtual time: a delay at or past the idle timeout fails the attempt as a stall
  // does; the scenario's timing scales and caps it; the writer keeps delay_s and timing.
  const std::string text = R"({"schema": 1, "name": "timed", "prompt": "Hi.", "runtime": {"idle_timeout_s": 60, "max_attempts": 2, "backoff_s": [1]},
    "turns": [{"attempts": [{"events": [{"text": "Hel", "delay_s": 90}, {"finish": "stop"}]}]}]})";
  harness::LoadResult loaded = harness::parse_scenario(text, "timed.json");
  REQUIRE(problems(text) == "");
  const auto* t = std::get_if<mock::TextEvent>(&loaded.scenario->script.turns[0].attempts[0].events[0]);
  REQUIRE(t != nullptr);
  CHECK(t->delay_s == 90);
  harness::RunOptions o;
  o.transport = harness::TransportKind::kMemory;
  harness::Scenario as_recorded = *loaded.scenario;
  const harness::CaseResult slow = harness::run_scenario(as_recorded, o);
  CHECK_FALSE(slow.run.completed);  // 90 s of silence: idle timeout on both attempts
  CHECK(slow.run.requests == 2);
  for (const auto& [timing, label] : {std::pair<mock::Script::Timing, const char*>{{0.5, std::nullopt}, "scale 0.5"},
                                      {{1, 2.0}, "max_delay_s 2"}}) {
    INFO(label);
    harness::Scenario s2 = *loaded.scenario;
    s2.script.timing = timing;
    const harness::CaseResult fast = harness::run_scenario(s2, o);
    CHECK(fast.run.completed);
    CHECK(fast.run.requests == 1);
    const std::string written = harness::write_scenario(s2);
    CHECK(written.find("\"delay_s\": 90") != std::string::npos);
    harness::LoadResult back = harness::parse_scenario(written, "w.json");
    REQUIRE(back.scenario);
    CHECK(back.scenario->script.timing == timing);
  }
  // Bad values are named with their pointer.
  CHECK(problems(R"({"schema": 1, "name": "x", "prompt": "p", "timing": {"scale": -1, "cap": 1},
    "turns": [{"attempts": [{"events": [{"text": "a", "delay_s": "1"}, {"finish": "stop"}]}]}]})")
            .find("/turns/0/attempts/0/events/0/delay_s") != std::string::npos);
  const std::string bad_timing = problems(R"({"schema": 1, "name": "x", "prompt": "p", "timing": {"scale": -1, "cap": 1},
    "turns": [{"attempts": [{"events": [{"text": "a"}, {"finish": "stop"}]}]}]})");
  CHECK(bad_timing.find("/timing/scale") != std::string::npos);
  CHECK(bad_timing.find("cap") != std::string::npos);
}

TEST_CASE("record: notes name each request by its number in arrival order from 0, recorded or not") {
  // Requests 0 (a GET), 1 and 2 (bodies that do not decode) are not recorded, 3 is, 4 got no
  // answer, 5 is recorded and its client left. Two skipped requests in a row were both "request 1"
  // (the number counted recorded exchanges only). Numbered from 0, as journals index requests.
  SessionRecorder rec;
  const std::string good = R"({"contents":[{"role":"user","parts":[{"text":"Say hi."}]}]})";
  CHECK(rec.begin("GET", "/v1beta/models", "") == nullptr);
  CHECK(rec.begin("POST", kGeminiPath, "{not json") == nullptr);
  CHECK(rec.begin("POST", kGeminiPath, "[1]") == nullptr);
  auto* a = rec.begin("POST", kGeminiPath, good);
  REQUIRE(a);
  a->head(200, kSse);
  a->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"hi\"}]},\"finishReason\":\"STOP\"}]}\n\n");
  a->end(AnswerEnd::kComplete);
  auto* b = rec.begin("POST", kGeminiPath, good);
  REQUIRE(b);
  b->end(AnswerEnd::kNoAnswer);
  auto* c = rec.begin("POST", kGeminiPath, good);
  REQUIRE(c);
  c->head(200, kSse);
  c->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"h\"}]}}]}\n\n");
  c->end(AnswerEnd::kClientGone);
  const std::vector<std::string> notes = rec.notes();
  std::string all;
  for (const std::string& n : notes) all += n + "\n";
  INFO(all);
  REQUIRE(notes.size() == 4);
  CHECK(notes[0].rfind("request 1 (/v1beta/models/gemini-2.5-flash:streamGenerateContent): its body does not decode", 0) == 0);
  CHECK(notes[1].rfind("request 2 (/v1beta/models/gemini-2.5-flash:streamGenerateContent): its body does not decode", 0) == 0);
  CHECK(notes[2].rfind("request 5 (/turns/0/attempts/1): the client closed its connection", 0) == 0);
  CHECK(notes[3] == "request 4 got no answer from upstream: not recorded");
}

// The recorder decodes a streamed answer read by read, after the proxy has sent each on (or, without
// timing, at the answer's end): what it records must not depend on where upstream's reads split
// the stream, a frame end ("\n\n", "\r\n\r\n") split between two reads included.
TEST_CASE("record: a streamed answer is recorded alike however its reads split it, a cut frame's bytes included") {
  const std::string good = R"({"contents":[{"role":"user","parts":[{"text":"Say hi."}]}]})";
  const std::string frame = R"(data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}]})";
  for (const std::string& sep : {std::string("\n\n"), std::string("\r\n\r\n")}) {
    // Two whole frames, then 11 bytes of a third (the cut).
    const std::string stream = frame + sep + frame + sep + "data: {\"can";
    const auto record = [&](const std::vector<std::size_t>& splits) {
      SessionRecorder rec;
      auto* a = rec.begin("POST", kGeminiPath, good);
      a->head(200, kSse);
      std::size_t from = 0;
      for (const std::size_t at : splits) {
        a->body(std::string_view(stream).substr(from, at - from));
        from = at;
      }
      a->body(std::string_view(stream).substr(from));
      a->end(AnswerEnd::kConnectionLost);
      return json(rec.scenario("x")["turns"][0]["attempts"][0]);
    };
    const json want = json::parse(R"({"events": [{"text": "Hel"}, {"text": "Hel"}],
                                      "fault": {"kind": "cut", "after_event": 2, "bytes": 11}})");
    INFO("separator of " << sep.size() << " bytes");
    CHECK(record({}) == want);
    for (std::size_t at = 1; at < stream.size(); ++at) {
      INFO("split at " << at);
      CHECK(record({at}) == want);
    }
    std::vector<std::size_t> every;
    for (std::size_t at = 1; at < stream.size(); ++at) every.push_back(at);
    CHECK(record(every) == want);
  }
}

// body() gathers a stream's reads and decodes them once 1 MiB has gathered, and the rest at end().
TEST_CASE("record: a stream longer than the bytes gathered before decoding is recorded whole") {
  SessionRecorder rec;
  auto* a = rec.begin("POST", kGeminiPath, R"({"contents":[{"role":"user","parts":[{"text":"Say hi."}]}]})");
  a->head(200, kSse);
  const std::string frame = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"" +
                            std::string(1000, 'x') + "\"}]}}]}\n\n";
  for (int i = 0; i < 1500; ++i) a->body(frame);  // about 1.5 MB
  a->body("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"!\"}]},\"finishReason\":\"STOP\"}]}\n\n");
  a->end(AnswerEnd::kComplete);
  const auto s = rec.scenario("x");
  const auto& events = s["turns"][0]["attempts"][0]["events"];
  REQUIRE(events.size() == 1502);
  CHECK(events[1499]["text"] == std::string(1000, 'x'));
  CHECK(events[1500]["text"] == "!");
  CHECK(events[1501]["finish"] == "stop");
  CHECK_FALSE(s["turns"][0]["attempts"][0].contains("fault"));
}

}  // namespace session_recorder_test
