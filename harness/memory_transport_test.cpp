// The in-process transport executes the engine's plans like the HTTP adapter: writes in order,
// stalls against the idle timeout, FIN/RST endings as a lost connection, delivery settled back.
#include <catch2/catch.hpp>

#include "harness/memory_transport.h"

namespace harness {
namespace {

mock::Script one_attempt(mock::Attempt a) {
  mock::Script s;
  s.turns = {mock::Turn{{std::move(a)}}};
  return s;
}

rut::HttpRequest request(double idle_timeout_s = 60) {
  rut::HttpRequest r;
  r.target = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
  r.body = R"({"contents":[{"role":"user","parts":[{"text":"go"}]}]})";
  r.idle_timeout_s = idle_timeout_s;
  return r;
}

TEST_CASE("a full stream arrives and the attempt is settled as completed") {
  mock::Attempt a;
  a.events = {mock::TextEvent{"hi"}, mock::FinishEvent{}};
  mock::ScriptEngine engine(one_attempt(a));
  MemoryTransport t(engine);
  std::string body;
  const auto r = t.post(request(), [&](std::string_view b) { body += b; return true; });
  CHECK(r.status == 200);
  CHECK(r.end == rut::TransportEnd::kComplete);
  CHECK(body.find("\"text\":\"hi\"") != std::string::npos);
  CHECK(body.find("STOP") != std::string::npos);
  const auto j = engine.journal();
  REQUIRE(j.size() == 1);
  CHECK(j[0].completed);
  CHECK(j[0].delivered_text == "hi");
}

TEST_CASE("a reset after the call is a lost connection and the call is delivered but not completed") {
  mock::Attempt a;
  a.events = {mock::CallEvent{"shell", {{"command", "ls"}}, ""}, mock::FinishEvent{}};
  a.fault = mock::ResetFault{1, 200};
  mock::ScriptEngine engine(one_attempt(a));
  MemoryTransport t(engine);
  const auto r = t.post(request(), [](std::string_view) { return true; });
  CHECK(r.end == rut::TransportEnd::kConnectionLost);
  const auto j = engine.journal();
  CHECK_FALSE(j[0].completed);
  REQUIRE(j[0].delivered_calls.size() == 1);
  CHECK(j[0].delivered_calls[0].name == "shell");
}

TEST_CASE("a stall at or beyond the idle timeout is an idle timeout, a shorter one is a delay") {
  mock::Attempt a;
  a.events = {mock::TextEvent{"hi"}, mock::FinishEvent{}};
  a.fault = mock::StallFault{1, 20};
  {
    mock::ScriptEngine engine(one_attempt(a));
    MemoryTransport t(engine);
    CHECK(t.post(request(10), [](std::string_view) { return true; }).end == rut::TransportEnd::kIdleTimeout);
    CHECK_FALSE(engine.journal()[0].completed);
  }
  {
    mock::ScriptEngine engine(one_attempt(a));
    MemoryTransport t(engine);
    CHECK(t.post(request(60), [](std::string_view) { return true; }).end == rut::TransportEnd::kComplete);
    CHECK(engine.journal()[0].completed);
  }
}

TEST_CASE("a reader that stops is cancelled and the rest is not delivered") {
  mock::Attempt a;
  a.events = {mock::TextEvent{"a"}, mock::TextEvent{"b"}, mock::FinishEvent{}};
  a.slice_bytes = 5;
  mock::ScriptEngine engine(one_attempt(a));
  MemoryTransport t(engine);
  int writes = 0;
  const auto r = t.post(request(), [&](std::string_view) { return ++writes < 2; });
  CHECK(r.end == rut::TransportEnd::kCancelled);
  CHECK(writes == 2);
  CHECK_FALSE(engine.journal()[0].completed);
}

TEST_CASE("a status attempt delivers the error envelope") {
  mock::Attempt a;
  a.status = 503;
  mock::ScriptEngine engine(one_attempt(a));
  MemoryTransport t(engine);
  std::string body;
  const auto r = t.post(request(), [&](std::string_view b) { body += b; return true; });
  CHECK(r.status == 503);
  CHECK(body.find("UNAVAILABLE") != std::string::npos);
}

}  // namespace
}  // namespace harness
