// Loopback tests of MockHttpServer: byte-exact streams, envelopes, FIN and RST endings, scaled
// stalls, keep-alive and prompt shutdown. Delays are capped to a few milliseconds.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include <httplib.h>

#include "mock_server/gemini_format.h"
#include "mock_server/http_server.h"

namespace g = mock::gemini;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kStream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
const std::string kUnary = "/v1beta/models/gemini-2.5-flash:generateContent";
const std::string kBody = R"({"contents":[{"role":"user","parts":[{"text":"Deploy."}]}]})";

const mock::Event kText = mock::TextEvent{"Deploying."};
const mock::Event kCall = mock::CallEvent{"shell", json{{"command", "./deploy.sh"}}, ""};
const mock::Event kStop = mock::FinishEvent{mock::FinishReason::kStop};

mock::Script one_attempt(std::vector<mock::Event> events, std::optional<mock::Fault> fault = {}) {
  mock::Attempt a;
  a.events = std::move(events);
  a.fault = std::move(fault);
  mock::Script s;
  s.turns.push_back(mock::Turn{{a}});
  return s;
}

std::string frame(const mock::Event& e, std::size_t journal_index = 0) {
  return g::event_frame(e, {"gemini-2.5-flash", g::response_id(journal_index)});
}

mock::ServerOptions fast_options() {
  mock::ServerOptions o;
  o.max_delay_ms = 10;
  o.stall_ms_per_s = 1;
  return o;
}

httplib::Client client_for(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_tcp_nodelay(true);
  c.set_read_timeout(5, 0);
  return c;
}

/// Waits (up to 2 s) until journal entry `index` is settled and returns it.
mock::JournalEntry settled(const mock::ScriptEngine& engine, std::size_t index) {
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline) {
    const auto j = engine.journal();
    if (j.size() > index && j[index].settled) return j[index];
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  FAIL("journal entry " << index << " was not settled");
  return {};
}

/// What a raw socket client saw: all bytes until EOF or an error, and the errno (0 on EOF).
struct RawResult {
  std::string data;
  bool eof = false;
  int error = 0;
};

/// Sends one HTTP request on a fresh socket and reads until EOF, an error or `timeout_ms`.
/// `close_after` > 0: hang up once that many bytes arrived.
RawResult raw_post(int port, const std::string& target, const std::string& body,
                   std::size_t close_after = 0, int timeout_ms = 3000) {
  RawResult r;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const std::string req = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                          "Content-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  REQUIRE(send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  char buf[4096];
  while (true) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      r.data.append(buf, static_cast<std::size_t>(n));
      if (close_after > 0 && r.data.size() >= close_after) break;
      continue;
    }
    if (n == 0) {
      r.eof = true;
    } else {
      r.error = errno;
    }
    break;
  }
  close(fd);
  return r;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("a full stream arrives byte-exact as chunked SSE and settles as completed") {
  mock::ScriptEngine engine(one_attempt({kText, kCall, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  const int port = server.start();
  CHECK(server.base_url() == "http://127.0.0.1:" + std::to_string(port));
  auto cli = client_for(port);
  cli.set_keep_alive(true);
  auto res = cli.Post(kStream.c_str(), kBody, "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body == frame(kText) + frame(kCall) + frame(kStop));
  CHECK(res->get_header_value("Content-Type") == "text/event-stream");
  CHECK(res->get_header_value("Transfer-Encoding") == "chunked");
  CHECK(res->get_header_value("Connection") != "close");
  const auto e = settled(engine, 0);
  CHECK(e.completed);
  CHECK(e.events_delivered == 3);
  CHECK(e.delivered_calls.size() == 1);
}

TEST_CASE("a status attempt is answered with the Gemini error envelope over HTTP") {
  mock::Attempt a;
  a.status = 503;
  a.retry_after_s = 2;
  mock::Script s;
  s.turns.push_back(mock::Turn{{a}});
  mock::ScriptEngine engine(s);
  mock::MockHttpServer server(engine, fast_options());
  auto cli = client_for(server.start());
  auto res = cli.Post(kStream.c_str(), kBody, "application/json");
  REQUIRE(res);
  CHECK(res->status == 503);
  CHECK(res->body == g::error_body(503, g::default_message(503), 2.0));
  // As Google's front end answers streamGenerateContent?alt=sse: the pretty-printed envelope under
  // the stream's content type (gemini_format.h, error_body).
  CHECK(res->get_header_value("Content-Type") == "text/event-stream");
  CHECK(res->body ==
        "{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"The model is overloaded. Please try again later.\",\n"
        "    \"status\": \"UNAVAILABLE\",\n    \"details\": [\n      {\n        \"@type\": \"type.googleapis.com/google.rpc.RetryInfo\",\n"
        "        \"retryDelay\": \"2s\"\n      }\n    ]\n  }\n}\n");
  auto nf = cli.Post("/v1/unknown/endpoint", "{}", "application/json");
  REQUIRE(nf);
  CHECK(nf->status == 404);
  auto head = cli.Head("/");
  REQUIRE(head);
  CHECK(head->status == 200);
}

TEST_CASE("disconnect closes with FIN and no chunked terminator") {
  mock::ScriptEngine engine(one_attempt({kText, kCall, kStop}, mock::DisconnectFault{1, 5}));
  mock::MockHttpServer server(engine, fast_options());
  const int port = server.start();
  const auto r = raw_post(port, kStream, kBody);
  CHECK(r.eof);
  CHECK(r.error == 0);
  CHECK(r.data.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(r.data.find(frame(kText)) != std::string::npos);
  CHECK(r.data.find(frame(kCall)) == std::string::npos);
  CHECK(ends_with(r.data, frame(kText) + "\r\n"));  // the chunk, then nothing: no "0\r\n\r\n"
  CHECK(r.data.find("Connection: close") == std::string::npos);

  auto cli = client_for(port);
  auto res = cli.Post(kStream.c_str(), kBody, "application/json");
  CHECK_FALSE(res);  // the client sees a read error, not a response
  const auto e = settled(engine, 0);
  CHECK(e.events_delivered == 1);
  CHECK_FALSE(e.completed);
  CHECK(e.fault == "disconnect");
}

TEST_CASE("reset aborts with RST after the idle pause and the client sees ECONNRESET") {
  mock::ScriptEngine engine(one_attempt({kText, kCall, kStop}, mock::ResetFault{2, 5000}));
  mock::MockHttpServer server(engine, fast_options());  // idle capped to 10 ms
  const int port = server.start();
  const auto started = Clock::now();
  const auto r = raw_post(port, kStream, kBody);
  CHECK(Clock::now() - started < std::chrono::seconds(2));
  CHECK_FALSE(r.eof);
  CHECK(r.error == ECONNRESET);
  CHECK(r.data.find(frame(kText) + frame(kCall)) != std::string::npos);

  auto cli = client_for(port);
  CHECK_FALSE(cli.Post(kStream.c_str(), kBody, "application/json"));
  const auto e = settled(engine, 0);
  CHECK(e.events_delivered == 2);
  CHECK(e.delivered_calls.size() == 1);
  CHECK_FALSE(e.completed);
}

TEST_CASE("cut sends a partial frame, then FIN") {
  mock::ScriptEngine engine(one_attempt({kText, kCall, kStop}, mock::CutFault{1, 12}));
  mock::MockHttpServer server(engine, fast_options());
  const auto r = raw_post(server.start(), kStream, kBody);
  CHECK(r.eof);
  CHECK(ends_with(r.data, "c\r\n" + frame(kCall).substr(0, 12) + "\r\n"));
}

TEST_CASE("error_event and malformed faults arrive as their own chunks over HTTP") {
  mock::Attempt a;
  a.events = {kText, kStop};
  a.fault = mock::ErrorEventFault{1, 529};
  mock::Attempt b = a;
  b.fault = mock::MalformedFault{1};
  mock::Script s;
  s.turns.push_back(mock::Turn{{a, b}});
  mock::ScriptEngine engine(s);
  mock::MockHttpServer server(engine, fast_options());
  auto cli = client_for(server.start());
  auto res = cli.Post(kStream.c_str(), kBody, "application/json");
  REQUIRE(res);
  CHECK(res->body == frame(kText) + g::stream_error_chunk(529));
  res = cli.Post(kStream.c_str(), kBody, "application/json");
  REQUIRE(res);
  CHECK(res->body == frame(kText, 1) + g::malformed_frame() + frame(kStop, 1));
}

TEST_CASE("a stall sleeps its scaled time over HTTP, then the stream goes on") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}, mock::StallFault{1, 40}));
  auto options = fast_options();
  options.stall_ms_per_s = 3;  // 40 virtual seconds = 120 ms
  mock::MockHttpServer server(engine, options);
  auto cli = client_for(server.start());
  const auto started = Clock::now();
  auto res = cli.Post(kStream.c_str(), kBody, "application/json");
  const auto elapsed = Clock::now() - started;
  REQUIRE(res);
  CHECK(res->body == frame(kText) + frame(kStop));
  CHECK(elapsed >= std::chrono::milliseconds(110));
  CHECK(elapsed < std::chrono::milliseconds(1000));
  CHECK(settled(engine, 0).completed);
}

namespace http_server_test {

/// A ScriptEngine that records every settle it is given, in order.
class RecordingEngine : public mock::Responder {
 public:
  explicit RecordingEngine(mock::Script script) : engine_(std::move(script)) {}
  mock::Plan respond(const mock::Request& request) override { return engine_.respond(request); }
  void settle(std::size_t index, const mock::Delivery& delivery) override {
    {
      std::lock_guard lock(mu_);
      settles_.push_back(delivery);
    }
    engine_.settle(index, delivery);
  }
  void refuse(std::size_t index, int status, const std::string& reason) override { engine_.refuse(index, status, reason); }
  std::string error_provider() const override { return engine_.error_provider(); }
  std::vector<mock::Delivery> settles() {
    std::lock_guard lock(mu_);
    return settles_;
  }
  mock::ScriptEngine& engine() { return engine_; }

 private:
  mock::ScriptEngine engine_;
  std::mutex mu_;
  std::vector<mock::Delivery> settles_;
};

class OneEngineRouter : public mock::RequestRouter {
 public:
  explicit OneEngineRouter(std::shared_ptr<RecordingEngine> engine) : engine_(std::move(engine)) {}
  mock::Route route(const std::string&, const std::string& target, const std::string&) override {
    return mock::Route{engine_, target, {}};
  }

 private:
  std::shared_ptr<RecordingEngine> engine_;
};

}  // namespace http_server_test

TEST_CASE("a paused stream's end time is settled before its last write, so a client that read the last byte finds it") {
  // The stall sends the answer to a worker thread, which settles before each write and once more
  // after the last. A client that has read the last byte may read the journal before that final
  // settle runs: the end time must already be there (an MCP tools/call with progress was read
  // with ended_ms -1 under load).
  auto recording = std::make_shared<http_server_test::RecordingEngine>(one_attempt({kText, kStop}, mock::StallFault{1, 10}));
  http_server_test::OneEngineRouter router(recording);
  mock::MockHttpServer server(router, fast_options());
  auto cli = client_for(server.start());
  auto res = cli.Post(kStream.c_str(), kBody, "application/json");
  REQUIRE(res);
  CHECK(res->body == frame(kText) + frame(kStop));
  CHECK(settled(recording->engine(), 0).completed);
  // The settle after the last write may still be running on the worker (the very race the end
  // time guards against): stopping the server joins it (flaky under ASan at stop 63 without it).
  server.stop();
  const std::vector<mock::Delivery> settles = recording->settles();
  REQUIRE_FALSE(settles.empty());
  const int last = settles.back().actions_done;
  // The first settle that counts every action is the one made before the last write.
  const auto before_last_write = std::find_if(settles.begin(), settles.end(), [&](const mock::Delivery& d) { return d.actions_done == last; });
  REQUIRE(before_last_write != settles.end() - 1);
  CHECK(before_last_write->ended_ms >= 0);
  CHECK(settles.back().ended_ms >= before_last_write->ended_ms);
}

TEST_CASE("a stall ends early when the client hangs up, and nothing after it counts") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}, mock::StallFault{1, 100000}));
  auto options = fast_options();
  options.stall_ms_per_s = 1;  // 100 s of real time if the hang-up went unnoticed
  mock::MockHttpServer server(engine, options);
  const int port = server.start();
  const std::string first = frame(kText);
  const auto r = raw_post(port, kStream, kBody, /*close_after=*/1);
  (void)r;
  const auto e = settled(engine, 0);
  CHECK_FALSE(e.completed);
  CHECK(e.events_delivered <= 1);
  const auto started = Clock::now();
  server.stop();
  CHECK(Clock::now() - started < std::chrono::seconds(1));
}

TEST_CASE("generateContent with a disconnect before the finish writes half the body, then FIN") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}, mock::DisconnectFault{1, 0}));
  mock::MockHttpServer server(engine, fast_options());
  const auto r = raw_post(server.start(), kUnary, kBody);
  CHECK(r.eof);
  const auto head_end = r.data.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  CHECK(r.data.rfind("HTTP/1.1 200", 0) == 0);
  const std::string body = r.data.substr(head_end + 4);
  const auto len_at = r.data.find("Content-Length: ");
  REQUIRE(len_at != std::string::npos);
  const auto announced = std::stoul(r.data.substr(len_at + 16));
  CHECK(body.size() == announced / 2);
  CHECK_FALSE(body.empty());
  // The close is a surprise: announced, clients would read it as the body's end (undici then
  // reports a length mismatch instead of "other side closed").
  CHECK(r.data.find("Connection: close") == std::string::npos);
  const auto e = settled(engine, 0);
  CHECK_FALSE(e.completed);
  CHECK(e.fault == "disconnect");
}

TEST_CASE("generateContent with a stall sends nothing, not even the status line, until it ends") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}, mock::StallFault{1, 10}));
  auto options = fast_options();
  options.stall_ms_per_s = 15;  // 150 ms
  mock::MockHttpServer server(engine, options);
  const int port = server.start();
  // A client that gives up after 60 ms sees no byte at all.
  const auto early = raw_post(port, kUnary, kBody, 0, 60);
  CHECK(early.data.empty());
  CHECK_FALSE(settled(engine, 0).completed);
  // One that waits gets the whole answer, late.
  const auto started = Clock::now();
  const auto late = raw_post(port, kUnary, kBody, 0, 3000);
  CHECK(Clock::now() - started >= std::chrono::milliseconds(140));
  CHECK(late.data.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(late.data.find("\"finishReason\":\"STOP\"") != std::string::npos);
}

TEST_CASE("generateContent with an error_event answers the status in the provider's envelope") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}, mock::ErrorEventFault{1, 429}));
  mock::MockHttpServer server(engine, fast_options());
  auto cli = client_for(server.start());
  auto res = cli.Post(kUnary.c_str(), kBody, "application/json");
  REQUIRE(res);
  CHECK(res->status == 429);
  CHECK(json::parse(res->body)["error"]["status"] == "RESOURCE_EXHAUSTED");
  CHECK(res->get_header_value("Content-Type") == "application/json; charset=UTF-8");
  CHECK(res->body.rfind("{\n  \"error\": {\n    \"code\": 429,\n", 0) == 0);
  CHECK(settled(engine, 0).fault == "error_event");
}

TEST_CASE("generateContent with a clean attempt answers one JSON body") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  auto cli = client_for(server.start());
  auto res = cli.Post(kUnary.c_str(), kBody, "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body)["candidates"][0]["content"]["parts"][0]["text"] == "Deploying.");
  CHECK(settled(engine, 0).completed);
}

TEST_CASE("keep-alive: consecutive requests on one client reuse the connection") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  auto cli = client_for(server.start());
  cli.set_keep_alive(true);
  std::atomic<int> sockets{0};
  cli.set_socket_options([&sockets](int) { ++sockets; });
  for (int i = 0; i < 7; ++i) {  // beyond httplib's default of 5 requests per connection
    auto res = cli.Post(kStream.c_str(), kBody, "application/json");
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->get_header_value("Connection") != "close");
  }
  CHECK(sockets == 1);
}

TEST_CASE("stop returns promptly with an idle keep-alive connection open") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  auto cli = client_for(server.start());
  cli.set_keep_alive(true);
  REQUIRE(cli.Post(kStream.c_str(), kBody, "application/json"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the worker is now idle on read
  const auto started = Clock::now();
  server.stop();
  CHECK(Clock::now() - started < std::chrono::milliseconds(1000));
  server.stop();  // a second stop is harmless
}

TEST_CASE("start throws a clear error when the port is taken") {
  mock::ScriptEngine engine(one_attempt({kStop}));
  mock::MockHttpServer first(engine, fast_options());
  const int port = first.start();
  auto options = fast_options();
  options.port = port;
  mock::MockHttpServer second(engine, options);
  CHECK_THROWS_WITH(second.start(), Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(port) +
                                                    ": Address already in use"));
}

namespace {

/// A raw keep-alive connection to 127.0.0.1:`port` with a 3 s receive timeout.
int connect_raw(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_request(int fd, const std::string& target, const std::string& body) {
  const std::string req = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  return send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size());
}

/// Reads one chunked response (up to its terminator); "" on a timeout or a closed connection.
std::string read_chunked_response(int fd) {
  std::string data;
  char buf[4096];
  while (!ends_with(data, "\r\n0\r\n\r\n")) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    data.append(buf, static_cast<std::size_t>(n));
  }
  return data;
}

}  // namespace

TEST_CASE("every one of 64 keep-alive connections open at once is answered, request after request") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  const int port = server.start();
  constexpr int kConnections = 64;
  constexpr int kRounds = 3;
  std::vector<int> fds;
  for (int c = 0; c < kConnections; ++c) {
    const int fd = connect_raw(port);
    REQUIRE(fd >= 0);
    fds.push_back(fd);
  }
  // All connections stay open; each asks in turn, so a connection that holds a worker for its
  // life would starve the ones after it.
  std::vector<int> answered(kConnections, 0);
  for (int round = 0; round < kRounds; ++round) {
    for (int c = 0; c < kConnections; ++c) {
      REQUIRE(send_request(fds[static_cast<std::size_t>(c)], kStream, kBody));
      const std::string answer = read_chunked_response(fds[static_cast<std::size_t>(c)]);
      if (answer.rfind("HTTP/1.1 200", 0) == 0 && answer.find(frame(kStop, engine.journal().size() - 1)) != std::string::npos) {
        ++answered[static_cast<std::size_t>(c)];
      }
    }
  }
  for (int fd : fds) close(fd);
  int starved = 0;
  for (int c = 0; c < kConnections; ++c) starved += answered[static_cast<std::size_t>(c)] == kRounds ? 0 : 1;
  CHECK(starved == 0);
  CHECK(engine.journal().size() == static_cast<std::size_t>(kConnections * kRounds));
}

TEST_CASE("a fault-free stream on a raw keep-alive connection ends with the chunked terminator") {
  mock::ScriptEngine engine(one_attempt({kText, kCall, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  const int fd = connect_raw(server.start());
  REQUIRE(fd >= 0);
  REQUIRE(send_request(fd, kStream, kBody));
  const std::string answer = read_chunked_response(fd);
  CHECK(answer.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(ends_with(answer, frame(kText) + frame(kCall) + frame(kStop) + "\r\n0\r\n\r\n"));
  // The connection carries a second request (the terminator ended the first answer).
  REQUIRE(send_request(fd, kStream, kBody));
  CHECK(ends_with(read_chunked_response(fd), frame(kStop, 1) + "\r\n0\r\n\r\n"));
  close(fd);
}

// --- The event loop: pause-free answers on one thread, pausing plans on workers ----------------

namespace {

/// Turn 0 plays `first` for the first request and `then` for every later one.
mock::Script first_then(mock::Attempt first, mock::Attempt then) {
  mock::Script s;
  s.turns.push_back(mock::Turn{{std::move(first), std::move(then)}});
  return s;
}

mock::Attempt attempt(std::vector<mock::Event> events, std::optional<mock::Fault> fault = {}) {
  mock::Attempt a;
  a.events = std::move(events);
  a.fault = std::move(fault);
  return a;
}

/// The body of a chunked response (chunk framing removed); "" when it does not parse.
std::string dechunk(const std::string& response) {
  std::size_t at = response.find("\r\n\r\n");
  if (at == std::string::npos) return "";
  at += 4;
  std::string body;
  while (at < response.size()) {
    const std::size_t eol = response.find("\r\n", at);
    if (eol == std::string::npos) return "";
    const std::size_t size = std::stoul(response.substr(at, eol - at), nullptr, 16);
    if (size == 0) return body;
    body += response.substr(eol + 2, size);
    at = eol + 2 + size + 2;
  }
  return "";
}

}  // namespace

TEST_CASE("a stalled answer moves to a worker while another connection keeps being answered") {
  // The first request stalls 600 virtual seconds = 600 ms; every later one plays at once.
  mock::ScriptEngine engine(first_then(attempt({kText, kStop}, mock::StallFault{1, 600}), attempt({kText, kStop})));
  auto options = fast_options();
  options.stall_ms_per_s = 1;
  mock::MockHttpServer server(engine, options);
  const int port = server.start();
  const int stalled = connect_raw(port);
  const int quick = connect_raw(port);
  REQUIRE(stalled >= 0);
  REQUIRE(quick >= 0);
  REQUIRE(send_request(stalled, kStream, kBody));
  // Entry 0 is the stalled request: wait until the server has it before the quick ones start.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (engine.journal_size() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(engine.journal_size() == 1u);
  const auto started = Clock::now();
  for (int i = 0; i < 20; ++i) {
    REQUIRE(send_request(quick, kStream, kBody));
    const std::string answer = read_chunked_response(quick);
    REQUIRE(dechunk(answer) == frame(kText, static_cast<std::size_t>(i + 1)) + frame(kStop, static_cast<std::size_t>(i + 1)));
  }
  // Twenty answers while the stall (600 ms) still runs: a stall played on the event loop would
  // hold every one of them up behind it.
  CHECK(Clock::now() - started < std::chrono::milliseconds(400));
  CHECK_FALSE(engine.journal()[0].completed);  // settled so far only up to the frame before the stall
  // The stalled answer then arrives whole, and its connection (now on a worker) carries on.
  CHECK(dechunk(read_chunked_response(stalled)) == frame(kText) + frame(kStop));
  CHECK(settled(engine, 0).completed);
  REQUIRE(send_request(stalled, kStream, kBody));
  CHECK(dechunk(read_chunked_response(stalled)) == frame(kText, 21) + frame(kStop, 21));
  close(stalled);
  close(quick);
}

TEST_CASE("an answer larger than the socket buffers waits for a slow reader while others are served") {
  const std::string big(8u << 20, 'q');  // 8 MB: the kernel holds a few MB at most
  mock::ScriptEngine engine(one_attempt({mock::TextEvent{big}, kStop}));
  // The slow reader's blocked write must outlast the five other answers, however loaded the
  // machine (under ASan beside three builds they took over 5 s, the I/O timeout, and the slow
  // reader was dropped): dropping a reader that stays blocked is another entry's subject.
  mock::ServerOptions options = fast_options();
  options.io_timeout_ms = 120000;
  mock::MockHttpServer server(engine, options);
  const int port = server.start();
  const int slow = connect_raw(port);
  REQUIRE(slow >= 0);
  REQUIRE(send_request(slow, kStream, kBody));
  // The slow client reads nothing yet; a second connection is answered meanwhile, 5 times.
  const int other = connect_raw(port);
  REQUIRE(other >= 0);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(send_request(other, kStream, kBody));
    CHECK(read_chunked_response(other).find(frame(kStop, static_cast<std::size_t>(i + 1))) != std::string::npos);
  }
  close(other);
  // Nothing of the big answer was lost to the partial sends: it arrives byte-exact, terminated.
  // Compared without Catch2's expansion: printing two 8 MB strings, wrapped line by line, took
  // longer than ctest's timeout (stop 45's "hang" of this entry was a failure being printed).
  const std::string answer = dechunk(read_chunked_response(slow));
  const std::string expected = frame(mock::TextEvent{big}) + frame(kStop);
  CHECK(answer.size() == expected.size());
  CHECK((answer == expected));
  CHECK(settled(engine, 0).completed);
  // The same connection carries the next request.
  REQUIRE(send_request(slow, kStream, kBody));
  const std::string next = dechunk(read_chunked_response(slow));
  CHECK(next.size() == (frame(mock::TextEvent{big}, 6) + frame(kStop, 6)).size());
  CHECK((next == frame(mock::TextEvent{big}, 6) + frame(kStop, 6)));
  close(slow);
}

TEST_CASE("a sliced answer of more writes than one sendmmsg takes reaches a slow reader byte-exact") {
  // 3 MB in writes of 1,000 bytes: about 3,000 writes, 64 to a sendmmsg call, and more than the
  // socket buffers hold, so calls end part-way through a write and resume on EPOLLOUT.
  const std::string big(3u << 20, 'z');
  mock::Script script = one_attempt({mock::TextEvent{big}, kText, kStop});
  script.turns[0].attempts[0].slice_bytes = 1000;
  mock::ScriptEngine engine(std::move(script));
  mock::MockHttpServer server(engine, fast_options());
  const int port = server.start();
  const int slow = connect_raw(port);
  REQUIRE(slow >= 0);
  REQUIRE(send_request(slow, kStream, kBody));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the socket buffers fill up
  const std::string answer = read_chunked_response(slow);
  const std::string expected = frame(mock::TextEvent{big}) + frame(kText) + frame(kStop);
  CHECK(dechunk(answer).size() == expected.size());
  CHECK((dechunk(answer) == expected));  // not expanded: Catch2 would print 3 MB twice
  // The HTTP framing: one chunk per write, each at most 1,000 bytes (which segments carried
  // them is the kernel's choice; tcpdump shows one per write, docs/ROBUSTNESS.md).
  std::size_t chunks = 0;
  for (std::size_t at = answer.find("\r\n\r\n") + 4; at < answer.size();) {
    const std::size_t eol = answer.find("\r\n", at);
    REQUIRE(eol != std::string::npos);
    const std::size_t len = std::stoul(answer.substr(at, eol - at), nullptr, 16);
    if (len == 0) break;
    CHECK(len <= 1000);
    ++chunks;
    at = eol + 2 + len + 2;
  }
  CHECK(chunks >= (expected.size() + 999) / 1000);
  const auto e = settled(engine, 0);
  CHECK(e.completed);
  CHECK(e.events_delivered == 3);
  close(slow);
}

TEST_CASE("pipelined requests on one connection are answered in order") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  const int fd = connect_raw(server.start());
  REQUIRE(fd >= 0);
  const std::string one = "POST " + kStream + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                          std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
  const std::string three = one + one + one;
  REQUIRE(send(fd, three.data(), three.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(three.size()));
  std::string data;
  char buf[4096];
  while (data.find(frame(kStop, 2)) == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    REQUIRE(n > 0);
    data.append(buf, static_cast<std::size_t>(n));
  }
  const std::size_t a = data.find(frame(kStop, 0));
  const std::size_t b = data.find(frame(kStop, 1));
  const std::size_t c = data.find(frame(kStop, 2));
  CHECK(a != std::string::npos);
  CHECK(b != std::string::npos);
  CHECK((a < b && b < c));
  close(fd);
}

TEST_CASE("256 keep-alive connections that all ask at once are all answered") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  const int port = server.start();
  constexpr int kConnections = 256;
  std::vector<int> fds;
  for (int c = 0; c < kConnections; ++c) {
    const int fd = connect_raw(port);
    REQUIRE(fd >= 0);
    fds.push_back(fd);
  }
  for (int round = 0; round < 2; ++round) {
    for (int fd : fds) REQUIRE(send_request(fd, kStream, kBody));
    int answered = 0;
    for (int fd : fds) {
      const std::string answer = read_chunked_response(fd);
      answered += answer.rfind("HTTP/1.1 200 OK\r\n", 0) == 0 && dechunk(answer).find(frame(kText).substr(0, 40)) == 0;
    }
    CHECK(answered == kConnections);
  }
  for (int fd : fds) close(fd);
  CHECK(engine.journal().size() == static_cast<std::size_t>(2 * kConnections));
}

TEST_CASE("beyond max_connections a client waits in the backlog until a connection closes") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  auto options = fast_options();
  options.max_connections = 2;
  mock::MockHttpServer server(engine, options);
  const int port = server.start();
  const int a = connect_raw(port);
  const int b = connect_raw(port);
  REQUIRE(send_request(a, kStream, kBody));
  REQUIRE_FALSE(read_chunked_response(a).empty());
  REQUIRE(send_request(b, kStream, kBody));
  REQUIRE_FALSE(read_chunked_response(b).empty());
  // The third connection completes its handshake in the backlog but is not served yet.
  const int c = connect_raw(port);
  REQUIRE(c >= 0);
  timeval short_wait{0, 300 * 1000};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &short_wait, sizeof short_wait);
  REQUIRE(send_request(c, kStream, kBody));
  CHECK(read_chunked_response(c).empty());
  CHECK(engine.journal_size() == 2u);
  // One closes (here, on the event loop): the waiting one is accepted and answered.
  close(a);
  timeval long_wait{3, 0};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &long_wait, sizeof long_wait);
  CHECK(dechunk(read_chunked_response(c)) == frame(kText, 2) + frame(kStop, 2));
  close(b);
  close(c);
}

TEST_CASE("stop returns promptly while a worker plays a long stall") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}, mock::StallFault{1, 60}));
  auto options = fast_options();
  options.stall_ms_per_s = 1000;  // a minute of real time
  mock::MockHttpServer server(engine, options);
  const int fd = connect_raw(server.start());
  REQUIRE(send_request(fd, kStream, kBody));
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (engine.journal_size() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(engine.journal_size() == 1u);
  const auto stopping = Clock::now();
  server.stop();
  CHECK(Clock::now() - stopping < std::chrono::milliseconds(500));
  close(fd);
}

TEST_CASE("an idle keep-alive connection is closed after keep_alive_timeout_ms, a busy one is not") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  auto options = fast_options();
  options.keep_alive_timeout_ms = 200;
  mock::MockHttpServer server(engine, options);
  const int port = server.start();
  const int fd = connect_raw(port);
  REQUIRE(fd >= 0);
  // Requests 100 ms apart keep it open past the timeout: each answer restarts the idle clock.
  for (int i = 0; i < 4; ++i) {
    REQUIRE(send_request(fd, kStream, kBody));
    REQUIRE(dechunk(read_chunked_response(fd)) == frame(kText, static_cast<std::size_t>(i)) + frame(kStop, static_cast<std::size_t>(i)));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Then idle: the server closes it (EOF) about 200 ms after the last answer.
  const auto idle_since = Clock::now() - std::chrono::milliseconds(100);
  char c;
  CHECK(recv(fd, &c, 1, 0) == 0);
  const auto idle = Clock::now() - idle_since;
  CHECK(idle >= std::chrono::milliseconds(180));
  CHECK(idle < std::chrono::milliseconds(1500));
  close(fd);
}

TEST_CASE("a request with Expect 100-continue gets the interim answer before its body is sent") {
  mock::ScriptEngine engine(one_attempt({kText, kStop}));
  mock::MockHttpServer server(engine, fast_options());
  const int fd = connect_raw(server.start());
  REQUIRE(fd >= 0);
  const std::string head = "POST " + kStream + " HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: " +
                           std::to_string(kBody.size()) + "\r\n\r\n";
  REQUIRE(send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size()));
  const std::string interim = "HTTP/1.1 100 Continue\r\n\r\n";
  std::string got;
  char buf[256];
  while (got.size() < interim.size()) {
    const ssize_t n = recv(fd, buf, interim.size() - got.size(), 0);
    REQUIRE(n > 0);
    got.append(buf, static_cast<std::size_t>(n));
  }
  CHECK(got == interim);
  REQUIRE(send(fd, kBody.data(), kBody.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(kBody.size()));
  const std::string answer = read_chunked_response(fd);
  CHECK(answer.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(dechunk(answer) == frame(kText) + frame(kStop));
  close(fd);
}
