// The WebSocket mode's sessions (mock_server/websocket/ws_session.h) without sockets: each
// connection is one serve() over a fake Io that hands over the client's frames and keeps what the
// server writes. Responses stored across the connections of one session, `store: false` and
// `websocket.forget_response`; and a fault scripted after a response's terminal event played in
// that response's own send (never between two cycles, where it met the next request by timing).
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mock_server/http_server.h"
#include "mock_server/script_engine.h"
#include "mock_server/websocket/ws_frame.h"
#include "mock_server/websocket/ws_session.h"

namespace ws_session_test {

using nlohmann::json;

/// One connection: the client's bytes in, the server's out, every send counted.
class FakeIo final : public mock::ws::Io {
 public:
  explicit FakeIo(std::string in) : in_(std::move(in)) {}
  bool send(std::string_view bytes) override {
    out.append(bytes);
    sends.emplace_back(bytes);
    return true;
  }
  long recv(char* buf, std::size_t n, int) override {
    if (pos_ >= in_.size()) return 0;  // the client ends the connection
    const std::size_t k = std::min(n, in_.size() - pos_);
    in_.copy(buf, k, pos_);
    pos_ += k;
    return static_cast<long>(k);
  }
  bool pause(double ms) override {
    paused_ms += ms;
    return true;
  }
  void reset() override { was_reset = true; }
  double now_ms() override { return 0; }

  std::string out;
  std::vector<std::string> sends;
  double paused_ms = 0;
  bool was_reset = false;

 private:
  std::string in_;
  std::size_t pos_ = 0;
};

/// Every request to one engine (as the server's own single-engine router).
class Router final : public mock::RequestRouter {
 public:
  explicit Router(mock::ScriptEngine& engine) : engine_(std::shared_ptr<mock::ScriptEngine>(), &engine) {}
  mock::Route route(const std::string&, const std::string& target, const std::string&) override {
    return mock::Route{engine_, target, {}};
  }

 private:
  std::shared_ptr<mock::ScriptEngine> engine_;
};

const mock::Event kText = mock::TextEvent{"Hello."};
const mock::Event kStop = mock::FinishEvent{mock::FinishReason::kStop};

mock::Attempt attempt(std::optional<mock::Fault> fault = {}, bool forget = false) {
  mock::Attempt a;
  a.events = {kText, kStop};
  a.fault = std::move(fault);
  if (forget) {
    mock::WebSocketChoices ws;
    ws.forget_response = true;
    a.websocket = ws;
  }
  return a;
}

/// A script of one turn per attempt.
mock::Script script_of(std::vector<mock::Attempt> turns) {
  mock::Script s;
  s.provider = "openai-responses";
  for (auto& a : turns) s.turns.push_back(mock::Turn{{std::move(a)}});
  return s;
}

json user(const std::string& text) {
  return {{"type", "message"}, {"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", text}}})}};
}

mock::HttpRequest upgrade() {
  mock::HttpRequest r;
  r.method = "GET";
  r.target = "/v1/responses";
  r.version = "HTTP/1.1";
  r.headers = {{"Upgrade", "websocket"}, {"Connection", "Upgrade"}, {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
               {"Sec-WebSocket-Version", "13"}};
  return r;
}

/// The server's messages on one connection (after the 101).
std::vector<json> messages(const std::string& out) {
  const std::size_t head = out.find("\r\n\r\n");
  REQUIRE(head != std::string::npos);
  mock::ws::FrameDecoder d(mock::ws::FrameDecoder::Role::kClient);
  d.feed(out.substr(head + 4));
  std::vector<json> got;
  mock::ws::Message m;
  while (d.next(m) == mock::ws::FrameDecoder::Status::kMessage) {
    got.push_back(m.opcode == mock::ws::Opcode::kText ? json::parse(m.payload, nullptr, false) : json("(control)"));
  }
  return got;
}

/// One connection sending `creates` (response.create messages) and closing; the server's messages.
std::vector<json> connection(Router& router, const std::vector<json>& creates, FakeIo** keep = nullptr) {
  std::string in;
  for (const json& c : creates) in += mock::ws::encode_frame(mock::ws::Opcode::kText, c.dump(), true, 0x01020304);
  auto io = std::make_unique<FakeIo>(in);
  mock::ws::serve(*io, upgrade(), router, mock::ws::SessionOptions{});
  const std::vector<json> got = messages(io->out);
  if (keep) *keep = io.release();
  return got;
}

json create(json input, const std::string& previous = "", std::optional<bool> store = std::nullopt) {
  json c = {{"type", "response.create"}, {"model", "m"}, {"input", std::move(input)}};
  if (!previous.empty()) c["previous_response_id"] = previous;
  if (store) c["store"] = *store;
  return c;
}

/// The id of the last response.completed among `got`, "" when none.
std::string completed_id(const std::vector<json>& got) {
  for (auto it = got.rbegin(); it != got.rend(); ++it) {
    if (it->is_object() && it->value("type", "") == "response.completed") return (*it)["response"]["id"];
  }
  return "";
}

/// The second turn's input after `first`'s answer, continued: only the new prompt.
json second_input() { return json::array({user("more")}); }

bool not_found(const std::vector<json>& got) {
  return got.size() == 1 && got[0].value("type", "") == "error" && got[0]["error"]["code"] == "previous_response_not_found";
}

TEST_CASE("websocket session: a response stored on one connection continues on the next") {
  mock::ScriptEngine engine(script_of({attempt(), attempt()}));
  Router router(engine);
  const std::string id = completed_id(connection(router, {create(json::array({user("go")}))}));
  REQUIRE_FALSE(id.empty());
  // Connection 2 of the same session names it: played as the full conversation, the second turn.
  const std::vector<json> got = connection(router, {create(second_input(), id)});
  CHECK_FALSE(not_found(got));
  CHECK(completed_id(got) != "");
  const auto journal = engine.journal();
  REQUIRE(journal.size() == 2);
  CHECK(journal[1].turn == 1);
  CHECK(journal[1].completed);
}

TEST_CASE("websocket session: a response stored over the WebSocket mode continues over HTTP, and one over HTTP on a connection") {
  SECTION("websocket, then HTTP") {
    mock::ScriptEngine engine(script_of({attempt(), attempt()}));
    Router router(engine);
    const std::string id = completed_id(connection(router, {create(json::array({user("go")}))}));
    REQUIRE_FALSE(id.empty());
    const json body = {{"model", "m"}, {"stream", true}, {"previous_response_id", id}, {"input", second_input()}};
    CHECK(engine.respond(mock::Request{"POST", "/v1/responses", body.dump()}).status == 200);
    REQUIRE(engine.journal().size() == 2);
    CHECK(engine.journal()[1].turn == 1);
  }
  SECTION("HTTP, then websocket") {
    mock::ScriptEngine engine(script_of({attempt(), attempt()}));
    Router router(engine);
    const json body = {{"model", "m"}, {"stream", true}, {"input", json::array({user("go")})}};
    REQUIRE(engine.respond(mock::Request{"POST", "/v1/responses", body.dump()}).status == 200);
    const std::vector<json> got = connection(router, {create(second_input(), "resp_hiccup_0")});
    CHECK_FALSE(not_found(got));
    REQUIRE(engine.journal().size() == 2);
    CHECK(engine.journal()[1].turn == 1);
  }
}

TEST_CASE("websocket session: store false and forget_response keep a response from the next connection") {
  SECTION("store false: only its own connection holds it") {
    mock::ScriptEngine engine(script_of({attempt(), attempt(), attempt()}));
    Router router(engine);
    const std::string id = completed_id(connection(router, {create(json::array({user("go")}), "", false)}));
    REQUIRE_FALSE(id.empty());
    CHECK(not_found(connection(router, {create(second_input(), id)})));
    CHECK(engine.journal().size() == 1);  // the refused continuation is not played
  }
  SECTION("forget_response: no connection holds it") {
    mock::ScriptEngine engine(script_of({attempt(std::nullopt, true), attempt()}));
    Router router(engine);
    const std::string id = completed_id(connection(router, {create(json::array({user("go")}))}));
    REQUIRE_FALSE(id.empty());
    CHECK(not_found(connection(router, {create(second_input(), id)})));
  }
  SECTION("another session (engine) never holds it") {
    mock::ScriptEngine engine(script_of({attempt()}));
    Router router(engine);
    const std::string id = completed_id(connection(router, {create(json::array({user("go")}))}));
    mock::ScriptEngine other_engine(script_of({attempt(), attempt()}));
    Router other(other_engine);
    CHECK(not_found(connection(other, {create(second_input(), id)})));
  }
}

TEST_CASE("websocket session: a fault after the terminal event plays in the terminal frame's send") {
  // A malformed frame, a reset after idle_ms, and a stall, each at after_event 2 (= the event
  // count): over HTTP part of a response already complete. Over WebSocket it must not land
  // between this cycle and the next: no pause after response.completed, and the terminal frame
  // and what follows it go out in one send, the connection's end at once.
  // An error event after a malformed-call finish (its terminal event is response.failed) too.
  for (int kind : {0, 1, 2, 3}) {
    INFO("fault kind " << kind);
    mock::Attempt a = attempt();
    if (kind == 0) a.fault = mock::MalformedFault{2};
    if (kind == 1) a.fault = mock::ResetFault{2, 400};
    if (kind == 2) a.fault = mock::StallFault{2, 30};
    if (kind == 3) {
      a.events = {kText, mock::FinishEvent{mock::FinishReason::kMalformedCall}};
      a.fault = mock::ErrorEventFault{2, 500};
    }
    mock::ScriptEngine engine(script_of({a}));
    Router router(engine);
    FakeIo* io = nullptr;
    const std::vector<json> got = connection(router, {create(json::array({user("go")}))}, &io);
    std::unique_ptr<FakeIo> owned(io);
    CHECK(io->paused_ms == 0);
    CHECK(io->was_reset == (kind == 1));
    // The send holding the terminal event is the last one with anything (what follows it in it).
    REQUIRE(io->sends.size() >= 2);
    const std::string& last = io->sends.back();
    if (kind == 3) {
      CHECK(last.find("\"type\":\"response.failed\"") != std::string::npos);
      CHECK(last.find("\"type\":\"error\"") != std::string::npos);
      continue;
    }
    REQUIRE(completed_id(got) != "");
    CHECK(last.find("\"type\":\"response.completed\"") != std::string::npos);
    if (kind == 0) CHECK(got.back().is_discarded());  // the malformed frame, after response.completed
    const auto journal = engine.journal();
    REQUIRE(journal.size() == 1);
    CHECK(journal[0].completed);
  }
}

}  // namespace ws_session_test
