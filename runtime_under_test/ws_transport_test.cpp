// Loopback tests of the Responses API's WebSocket mode: the mock's transport
// (mock_server/websocket/) against the runtime's (ws_transport.h), two framings written apart.
// Several cycles per connection, each fault in WebSocket terms (close codes read off the wire by a
// raw client), in-band errors, upgrade refusals and the fallback to HTTP. Pauses are capped to a
// few milliseconds.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "mock_server/http_server.h"
#include "mock_server/script_engine.h"
#include "mock_server/websocket/ws_frame.h"
#include "runtime_under_test/ws_transport.h"

namespace ws_transport_test {

using nlohmann::json;

const std::string kTarget = "/v1/responses";
const std::string kBody = R"({"model":"m","input":"go","stream":true})";
const mock::Event kText = mock::TextEvent{"Hello."};
const mock::Event kStop = mock::FinishEvent{mock::FinishReason::kStop};

mock::Attempt stream_attempt(std::optional<mock::Fault> fault = {}, std::optional<mock::WebSocketChoices> ws = {}) {
  mock::Attempt a;
  a.events = {kText, kText, kStop};
  a.fault = std::move(fault);
  a.websocket = ws;
  return a;
}

mock::Script script_of(std::vector<mock::Attempt> attempts) {
  mock::Script s;
  s.provider = "openai-responses";
  s.turns.push_back(mock::Turn{std::move(attempts)});
  return s;
}

/// A server on loopback playing `script`, pauses capped at 5 ms.
struct Fixture {
  explicit Fixture(mock::Script script) : engine(std::move(script)), server(engine, options()) { port = server.start(); }
  ~Fixture() { server.stop(); }
  static mock::ServerOptions options() {
    mock::ServerOptions o;
    o.max_delay_ms = 5;
    o.stall_ms_per_s = 20;
    return o;
  }
  mock::ScriptEngine engine;
  mock::MockHttpServer server;
  int port = 0;
};

struct Got {
  rut::TransportResult result;
  std::string body;
};

Got post(rut::WebSocketTransport& t, double idle_timeout_s = 60, const std::string& body = kBody) {
  Got g;
  rut::HttpRequest r{kTarget, body, {{"Authorization", "Bearer test"}}, idle_timeout_s};
  g.result = t.post(r, [&](std::string_view b) {
    g.body.append(b);
    return true;
  });
  return g;
}

/// A raw client: connects, upgrades, sends one response.create, and reads until the connection
/// ends or `after_terminal` and the terminal event arrived. Returns the messages and how it ended.
struct Raw {
  int status = 0;                 // of the upgrade
  std::vector<mock::ws::Message> messages;
  std::optional<int> close_code;  // the server's close frame, when one came
  bool eof = false;               // the connection ended (FIN or RST)
  bool broken = false;            // a frame broke RFC 6455
};

/// `creates`: the response.create messages to send, each after the previous one's
/// response.completed (none: one made of kBody).
Raw raw_cycle(int port, bool stop_at_terminal = false, std::vector<json> creates = {}) {
  Raw out;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  const std::string head = "GET " + kTarget + " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::string buf;
  char chunk[8192];
  auto read_some = [&] {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 3000) <= 0) return false;
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<std::size_t>(n));
    return true;
  };
  while (buf.find("\r\n\r\n") == std::string::npos) {
    if (!read_some()) {
      ::close(fd);
      out.eof = true;
      return out;
    }
  }
  out.status = std::atoi(buf.c_str() + 9);
  buf.erase(0, buf.find("\r\n\r\n") + 4);
  if (out.status != 101) {
    ::close(fd);
    return out;
  }
  if (creates.empty()) {
    json create = json::parse(kBody);
    create.erase("stream");
    create["type"] = "response.create";
    creates.push_back(create);
  }
  std::size_t sent = 0;
  auto send_next = [&] {
    const std::string frame = mock::ws::encode_frame(mock::ws::Opcode::kText, creates[sent++].dump(), true, 0x01020304);
    ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
  };
  send_next();
  mock::ws::FrameDecoder d(mock::ws::FrameDecoder::Role::kClient);
  d.feed(buf);
  buf.clear();
  for (;;) {
    mock::ws::Message m;
    const auto st = d.next(m);
    if (st == mock::ws::FrameDecoder::Status::kError) {
      out.broken = true;
      break;
    }
    if (st == mock::ws::FrameDecoder::Status::kMessage) {
      if (m.opcode == mock::ws::Opcode::kClose) {
        out.close_code = m.payload.size() >= 2 ? (static_cast<unsigned char>(m.payload[0]) << 8) | static_cast<unsigned char>(m.payload[1]) : 1005;
        break;
      }
      out.messages.push_back(m);
      const json j = json::parse(m.payload, nullptr, false);
      if (j.is_object() && j.value("type", "") == "response.completed") {
        if (sent < creates.size()) {
          send_next();
        } else if (stop_at_terminal) {
          break;
        }
      }
      continue;
    }
    if (!read_some()) {
      out.eof = true;
      break;
    }
    d.feed(buf);
    buf.clear();
  }
  ::close(fd);
  return out;
}

std::string last_type(const Raw& r) {
  if (r.messages.empty()) return "";
  const json j = json::parse(r.messages.back().payload, nullptr, false);
  return j.is_object() ? j.value("type", "") : "";
}

TEST_CASE("websocket loopback: two request/stream cycles on one connection, journaled like HTTP") {
  Fixture f(script_of({stream_attempt(), stream_attempt()}));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  for (int i = 0; i < 2; ++i) {
    const Got g = post(t);
    CHECK(g.result.end == rut::TransportEnd::kComplete);
    CHECK(g.result.status == 200);
    CHECK(g.body.find("data: {\"type\":\"response.created\"") == 0);
    CHECK(g.body.find("\"type\":\"response.completed\"") != std::string::npos);
  }
  CHECK(t.connections() == 1);
  CHECK_FALSE(t.fell_back());
  const auto journal = f.engine.journal();
  REQUIRE(journal.size() == 2);
  CHECK(journal[0].completed);
  CHECK(journal[1].completed);
  CHECK(journal[1].attempt == 1);
}

TEST_CASE("websocket loopback: each event is one text frame whose payload is the SSE data line's") {
  Fixture f(script_of({stream_attempt()}));
  const Raw r = raw_cycle(f.port, true);
  CHECK(r.status == 101);
  REQUIRE(r.messages.size() >= 4);
  for (const auto& m : r.messages) {
    CHECK(m.opcode == mock::ws::Opcode::kText);
    CHECK(json::parse(m.payload, nullptr, false).is_object());
  }
  CHECK(last_type(r) == "response.completed");
}

TEST_CASE("websocket loopback: disconnect, cut and reset end the connection before response.completed") {
  for (int kind : {0, 1, 3}) {  // disconnect (1006: FIN, no close frame), reset (RST), cut (a frame cut short)
    INFO("fault kind " << kind);
    std::optional<mock::Fault> fault;
    if (kind == 0) fault = mock::DisconnectFault{1};
    if (kind == 1) fault = mock::ResetFault{1, 5};
    if (kind == 3) fault = mock::CutFault{1, 10};
    // The raw client plays attempt 0, the runtime attempts 1 (the same fault) and 2.
    Fixture f(script_of({stream_attempt(fault), stream_attempt(fault), stream_attempt()}));
    const Raw r = raw_cycle(f.port);
    CHECK(r.eof);
    CHECK_FALSE(r.close_code);
    CHECK(last_type(r) != "response.completed");
    rut::WebSocketTransport t("127.0.0.1", f.port);
    CHECK(post(t).result.end == rut::TransportEnd::kConnectionLost);
    const Got again = post(t);  // the next attempt opens a new connection and completes
    CHECK(again.result.end == rut::TransportEnd::kComplete);
    CHECK(t.connections() == 2);
  }
}

TEST_CASE("websocket loopback: the scenario's close code ends the connection with a close frame") {
  for (int code : {1000, 1011}) {
    INFO("close code " << code);
    mock::WebSocketChoices ws;
    ws.close_code = code;
    Fixture f(script_of({stream_attempt(mock::DisconnectFault{2}, ws)}));
    const Raw r = raw_cycle(f.port);
    REQUIRE(r.close_code);
    CHECK(*r.close_code == code);
    CHECK(r.messages.size() >= 2);
  }
  // `end` (a clean end without the terminal event) closes with 1000 by default.
  Fixture f(script_of({stream_attempt(mock::EndFault{1}), stream_attempt(mock::EndFault{1}), stream_attempt()}));
  const Raw r = raw_cycle(f.port);
  REQUIRE(r.close_code);
  CHECK(*r.close_code == 1000);
  rut::WebSocketTransport t("127.0.0.1", f.port);
  // The client reads it as the clean end it is: the stream ended without its terminal event, as a
  // body that ends cleanly over HTTP (the codec then finds an incomplete stream); the connection is gone.
  const Got g = post(t);
  CHECK(g.result.end == rut::TransportEnd::kComplete);
  CHECK(g.body.find("response.output_text.delta") != std::string::npos);
  CHECK(g.body.find("response.completed") == std::string::npos);
  CHECK(post(t).result.end == rut::TransportEnd::kComplete);
  CHECK(t.connections() == 2);
}

TEST_CASE("websocket loopback: a close frame other than 1000 before response.completed is a lost connection") {
  mock::WebSocketChoices ws;
  ws.close_code = 1011;
  Fixture f(script_of({stream_attempt(mock::EndFault{1}, ws), stream_attempt()}));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  CHECK(post(t).result.end == rut::TransportEnd::kConnectionLost);
  CHECK(post(t).result.end == rut::TransportEnd::kComplete);
  CHECK(t.connections() == 2);
}

TEST_CASE("websocket loopback: an in-stream error event is an error frame, then response.failed, connection kept") {
  Fixture f(script_of({stream_attempt(mock::ErrorEventFault{1, 503}), stream_attempt()}));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  const Got g = post(t);
  CHECK(g.result.end == rut::TransportEnd::kComplete);
  CHECK(g.body.find("data: {\"type\":\"error\"") != std::string::npos);
  CHECK(g.body.find("\"type\":\"response.failed\"") != std::string::npos);
  CHECK(post(t).result.end == rut::TransportEnd::kComplete);
  CHECK(t.connections() == 1);
}

TEST_CASE("websocket loopback: a status attempt is an in-band error frame with status and headers") {
  mock::Attempt limited;
  limited.status = 429;
  limited.retry_after_s = 7;
  mock::Attempt string_typed;
  string_typed.status = 500;
  string_typed.websocket = mock::WebSocketChoices{std::nullopt, true};
  Fixture f(script_of({limited, string_typed, stream_attempt()}));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  const Got g = post(t);
  CHECK(g.result.end == rut::TransportEnd::kComplete);
  CHECK(g.result.status == 429);
  CHECK(std::find(g.result.headers.begin(), g.result.headers.end(), std::pair<std::string, std::string>{"retry-after", "7"}) !=
        g.result.headers.end());
  const json body = json::parse(g.body);
  CHECK(body["error"].is_object());
  CHECK(body["error"]["message"].is_string());
  // The string-typed error (anomalyco/opencode#49338): `error` is the message itself.
  const Got s = post(t);
  CHECK(s.result.status == 500);
  CHECK(json::parse(s.body)["error"].is_string());
  CHECK(post(t).result.end == rut::TransportEnd::kComplete);
  CHECK(t.connections() == 1);
}

TEST_CASE("websocket loopback: malformed is an undecodable text frame, or with malformed_frame a frame breaking RFC 6455") {
  {
    Fixture f(script_of({stream_attempt(mock::MalformedFault{1})}));
    rut::WebSocketTransport t("127.0.0.1", f.port);
    const Got g = post(t);
    CHECK(g.result.end == rut::TransportEnd::kComplete);  // the transport passes it on; the codec refuses it
    CHECK(g.body.find("data: {\"type\":\"response.output_text.delta\",\"sequence_number\":\n") != std::string::npos);
  }
  mock::WebSocketChoices ws;
  ws.malformed_frame = true;
  Fixture f(script_of({stream_attempt(mock::MalformedFault{1}, ws), stream_attempt(mock::MalformedFault{1}, ws)}));
  const Raw r = raw_cycle(f.port);
  CHECK(r.broken);
  rut::WebSocketTransport t("127.0.0.1", f.port);
  CHECK(post(t).result.end == rut::TransportEnd::kConnectionLost);
}

TEST_CASE("websocket loopback: a stall longer than the idle timeout is an idle timeout") {
  Fixture f(script_of({stream_attempt(mock::StallFault{1, 30}), stream_attempt()}));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  CHECK(post(t, 5).result.end == rut::TransportEnd::kIdleTimeout);  // 100 ms real against a 600 ms stall
  CHECK(post(t, 5).result.end == rut::TransportEnd::kComplete);
}

TEST_CASE("websocket loopback: a refused upgrade falls back to HTTP (404, 405, 426) or is the answer (403)") {
  for (int status : {426, 404, 405}) {
    INFO("status " << status);
    mock::Script s = script_of({stream_attempt()});
    s.websocket_upgrade_status = status;
    Fixture f(std::move(s));
    const Raw r = raw_cycle(f.port);
    CHECK(r.status == status);
    rut::WebSocketTransport t("127.0.0.1", f.port);
    const Got g = post(t);
    CHECK(g.result.end == rut::TransportEnd::kComplete);
    CHECK(g.result.status == 200);
    CHECK(g.body.find("event: response.completed") != std::string::npos);  // SSE, over HTTP
    CHECK(t.fell_back());
    CHECK(t.connections() == 0);
  }
  mock::Script s = script_of({stream_attempt()});
  s.websocket_upgrade_status = 403;
  Fixture f(std::move(s));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  const Got g = post(t);
  CHECK(g.result.status == 403);
  CHECK_FALSE(t.fell_back());
  CHECK(json::parse(g.body)["error"].is_object());
  CHECK(f.engine.journal().empty());  // refused before any request reached the script
}

TEST_CASE("websocket loopback: hostile client frames close the connection with the RFC's code, server unharmed") {
  Fixture f(script_of({stream_attempt()}));
  for (const std::string& bad : {mock::ws::encode_frame(mock::ws::Opcode::kText, "x"),  // unmasked
                                 mock::ws::encode_frame(mock::ws::Opcode::kText, "\xff", true, 7),
                                 std::string("\x81\xff\x7f\xff\xff\xff\xff\xff\xff\xff" "abcd", 14)}) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(f.port));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const std::string head = "GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" + bad;
    ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    std::string got;
    char chunk[4096];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 3000) <= 0) break;
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      got.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(fd);
    const std::size_t end = got.find("\r\n\r\n");
    REQUIRE(end != std::string::npos);
    const std::string frames = got.substr(end + 4);
    REQUIRE(frames.size() >= 4);
    CHECK(static_cast<unsigned char>(frames[0]) == 0x88);  // a close frame
    const int code = (static_cast<unsigned char>(frames[2]) << 8) | static_cast<unsigned char>(frames[3]);
    CHECK((code == 1002 || code == 1007 || code == 1009));
  }
  rut::WebSocketTransport t("127.0.0.1", f.port);
  CHECK(post(t).result.end == rut::TransportEnd::kComplete);
  CHECK(f.server.internal_errors() == 0);
}

TEST_CASE("websocket loopback: a connection ended after a response's terminal event is reopened, not a failed attempt") {
  // A fault at after_event 3 (the attempt's event count) comes after response.completed: over HTTP
  // part of a response already complete. The next request finds the kept connection dead (before
  // it is sent, or before any frame of its response) and goes again on a new one, whichever comes
  // first: the server never played it, and it is not an attempt.
  for (int kind : {0, 1, 2, 3}) {
    INFO("fault kind " << kind);
    std::optional<mock::Fault> fault;
    std::optional<mock::WebSocketChoices> ws;
    if (kind == 0) fault = mock::ResetFault{3, 400};
    if (kind == 1) fault = mock::DisconnectFault{3};
    if (kind == 2) {
      fault = mock::DisconnectFault{3};
      ws = mock::WebSocketChoices{};
      ws->close_code = 1011;
    }
    if (kind == 3) fault = mock::MalformedFault{3};
    Fixture f(script_of({stream_attempt(fault, ws), stream_attempt()}));
    rut::WebSocketTransport t("127.0.0.1", f.port);
    for (int round = 0; round < 2; ++round) {
      INFO("request " << round);
      const Got g = post(t);
      CHECK(g.result.end == rut::TransportEnd::kComplete);
      CHECK(g.body.find("\"type\":\"response.completed\"") != std::string::npos);
    }
    CHECK(t.stale_reopened() == 1);
    CHECK(t.connections() == 2);
    const auto journal = f.engine.journal();
    REQUIRE(journal.size() == 2);  // the request sent into the dead connection was never played
    CHECK(journal[0].completed);
    CHECK(journal[1].completed);
  }
}

TEST_CASE("websocket loopback: a fault at the start of a later cycle on a kept connection is that attempt's failure") {
  // The server answers a request it plays with response.created first, so a disconnect or reset
  // before the first event on the kept connection is not taken for a stale connection.
  for (int kind : {0, 1}) {
    INFO("fault kind " << kind);
    std::optional<mock::Fault> fault;
    if (kind == 0) fault = mock::DisconnectFault{0};
    if (kind == 1) fault = mock::ResetFault{0, 5};
    Fixture f(script_of({stream_attempt(), stream_attempt(fault), stream_attempt()}));
    rut::WebSocketTransport t("127.0.0.1", f.port);
    CHECK(post(t).result.end == rut::TransportEnd::kComplete);
    CHECK(post(t).result.end == rut::TransportEnd::kConnectionLost);
    CHECK(t.stale_reopened() == 0);
    CHECK(post(t).result.end == rut::TransportEnd::kComplete);
    CHECK(f.engine.journal().size() == 3);
  }
}

json user(const std::string& text) {
  return {{"type", "message"}, {"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", text}}})}};
}

/// The second turn's body: the first prompt, the model's answer as the runtime sends it back, a new prompt.
std::string second_turn_body() {
  const json answer = {{"type", "message"}, {"role", "assistant"},
                       {"content", json::array({{{"type", "output_text"}, {"text", "Hello.Hello."}}})}};
  return json{{"model", "m"}, {"input", json::array({user("go"), answer, user("more")})}, {"stream", true}}.dump();
}

TEST_CASE("websocket loopback: a later turn continues with previous_response_id and only the new input") {
  mock::Script s = script_of({stream_attempt()});
  s.turns.push_back(mock::Turn{{stream_attempt()}});
  Fixture f(std::move(s));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  const std::string first = json{{"model", "m"}, {"input", json::array({user("go")})}, {"stream", true}}.dump();
  CHECK(post(t, 60, first).result.end == rut::TransportEnd::kComplete);
  CHECK(post(t, 60, second_turn_body()).result.end == rut::TransportEnd::kComplete);
  CHECK(t.continued() == 1);
  CHECK(t.restarted() == 0);
  const auto journal = f.engine.journal();
  REQUIRE(journal.size() == 2);
  CHECK(journal[1].turn == 1);  // the server played the full conversation: the second turn
  CHECK(journal[1].completed);
}

TEST_CASE("websocket loopback: a forgotten response is previous_response_not_found, and the runtime resends the full input") {
  mock::WebSocketChoices forget;
  forget.forget_response = true;
  mock::Script s = script_of({stream_attempt(std::nullopt, forget)});
  s.turns.push_back(mock::Turn{{stream_attempt()}});
  Fixture f(std::move(s));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  const std::string first = json{{"model", "m"}, {"input", json::array({user("go")})}, {"stream", true}}.dump();
  CHECK(post(t, 60, first).result.end == rut::TransportEnd::kComplete);
  const Got g = post(t, 60, second_turn_body());
  CHECK(g.result.end == rut::TransportEnd::kComplete);
  CHECK(g.result.status == 200);
  CHECK(t.continued() == 1);
  CHECK(t.restarted() == 1);
  CHECK(t.connections() == 1);
  const auto journal = f.engine.journal();
  INFO(g.body.substr(0, 600));
  INFO("played " << journal.back().played << " turn " << journal.back().turn << " validated " << journal.back().validated);
  REQUIRE(journal.size() == 2);  // the refused continuation is not played
  CHECK(journal[1].turn == 1);
  CHECK(journal[1].completed);
}

TEST_CASE("websocket loopback: under replay-lost-context the continuation's new items go again alone, and the server plays a conversation without its first turn") {
  for (const bool defect : {false, true}) {
    INFO("replay-lost-context " << (defect ? "on" : "off"));
    mock::WebSocketChoices forget;
    forget.forget_response = true;
    mock::Script s = script_of({stream_attempt(std::nullopt, forget)});
    s.turns.push_back(mock::Turn{{stream_attempt()}});
    Fixture f(std::move(s));
    rut::DefectSet defects;
    if (defect) defects.insert(rut::Defect::kReplayLostContext);
    rut::WebSocketTransport t("127.0.0.1", f.port, 20, defects);
    const std::string first = json{{"model", "m"}, {"input", json::array({user("go")})}, {"stream", true}}.dump();
    CHECK(post(t, 60, first).result.end == rut::TransportEnd::kComplete);
    CHECK(post(t, 60, second_turn_body()).result.end == rut::TransportEnd::kComplete);
    CHECK(t.continued() == 1);
    CHECK(t.restarted() == 1);
    const auto journal = f.engine.journal();
    REQUIRE(journal.size() == 2);
    // Correct: the full input, the second turn. The defect: the prompt "more" alone, which the
    // server takes for the first turn of a conversation that never had "go" or the answer.
    CHECK(journal[1].turn == (defect ? 0 : 1));
    REQUIRE(journal[1].contents.is_array());
    CHECK(journal[1].contents.size() == (defect ? 1u : 3u));
  }
}

TEST_CASE("websocket loopback: a generate false warm-up answers an empty response to chain from and plays no attempt") {
  Fixture f(script_of({stream_attempt()}));
  // As codex sends it before a turn: the turn's input with generate false, then the request
  // itself chained from the warm-up with no new input.
  const json warm = {{"type", "response.create"}, {"model", "m"}, {"input", json::array({user("go")})}, {"generate", false}};
  const json real = {{"type", "response.create"}, {"model", "m"}, {"input", json::array()}, {"previous_response_id", "resp_warmup_0"}};
  const Raw r = raw_cycle(f.port, true, {warm, real});
  REQUIRE(r.messages.size() >= 4);
  const json created = json::parse(r.messages[0].payload);
  const json done = json::parse(r.messages[1].payload);
  CHECK(created["type"] == "response.created");
  CHECK(created["response"]["status"] == "in_progress");
  CHECK(done["type"] == "response.completed");
  CHECK(done["response"]["id"] == "resp_warmup_0");
  CHECK(done["response"]["output"] == json::array());
  CHECK(done["response"]["model"] == "m");
  CHECK(last_type(r) == "response.completed");
  // The chained request is the script's first attempt, played as the full input.
  const auto journal = f.engine.journal();
  REQUIRE(journal.size() == 1);
  CHECK(journal[0].turn == 0);
  CHECK(journal[0].script_attempt == 0);
  CHECK(journal[0].completed);
  CHECK(journal[0].validated);
  CHECK(journal[0].transport == "websocket");
  CHECK(mock::journal_entry_to_json(journal[0])["transport"] == "websocket");
  CHECK(f.server.internal_errors() == 0);
}

TEST_CASE("websocket loopback: previous_response_id naming no stored response is answered 400 in band") {
  Fixture f(script_of({stream_attempt()}));
  rut::WebSocketTransport t("127.0.0.1", f.port);
  // A body that already names a previous response (a client continuing across connections).
  const std::string body = json{{"model", "m"}, {"input", "go"}, {"previous_response_id", "resp_gone"}, {"stream", true}}.dump();
  const Got g = post(t, 60, body);
  CHECK(g.result.status == 400);
  const json e = json::parse(g.body)["error"];
  CHECK(e["code"] == "previous_response_not_found");
  CHECK(e["param"] == "previous_response_id");
  CHECK(e["message"] == "Previous response with id 'resp_gone' not found.");
  CHECK(f.engine.journal().empty());
}

}  // namespace ws_transport_test
