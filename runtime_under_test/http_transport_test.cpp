// Tests of HttpTransport against a local cpp-httplib server: streamed body, error body, cancel,
// connection refused.
#include "runtime_under_test/http_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <catch2/catch.hpp>
#include <httplib.h>

namespace rut {

namespace {

struct LocalServer {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  LocalServer() {
    server.Post(R"(/v1beta/models/.*)", [](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("x-goog-api-key") != "hiccup") {
        res.status = 401;
        return;
      }
      if (req.path.find("busy") != std::string::npos) {
        res.status = 503;
        res.set_content(R"({"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}})",
                        "application/json");
        return;
      }
      if (req.path.find("stall") != std::string::npos) {
        res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
          sink.write("data: {}\n\n", 10);
          std::this_thread::sleep_for(std::chrono::milliseconds(300));  // stalls the stream
          sink.done();
          return true;
        });
        return;
      }
      if (req.path.find("drop") != std::string::npos) {
        res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
          sink.write("data: {}\n\n", 10);
          return false;  // httplib closes the connection without the chunked terminator
        });
        return;
      }
      res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
        sink.write("data: {\"a\":1}\n\n", 15);
        sink.write("data: {\"b\":2}\n\n", 15);
        sink.done();
        return true;
      });
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::yield();
  }
  ~LocalServer() {
    server.stop();
    thread.join();
  }
};

HttpRequest request(const std::string& target) {
  HttpRequest r;
  r.target = target;
  r.body = "{}";
  r.headers = {{"Content-Type", "application/json"}, {"x-goog-api-key", "hiccup"}};
  r.idle_timeout_s = 60;
  return r;
}

}  // namespace

TEST_CASE("http transport streams a chunked body and reports a complete end") {
  LocalServer s;
  HttpTransport t("127.0.0.1", s.port);
  std::string body;
  auto r = t.post(request("/v1beta/models/m:streamGenerateContent?alt=sse"),
                  [&](std::string_view b) { body.append(b); return true; });
  CHECK(r.status == 200);
  CHECK(r.end == TransportEnd::kComplete);
  CHECK(body == "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n");
}

TEST_CASE("http transport delivers the body of an error status") {
  LocalServer s;
  HttpTransport t("127.0.0.1", s.port);
  std::string body;
  auto r = t.post(request("/v1beta/models/busy:streamGenerateContent?alt=sse"),
                  [&](std::string_view b) { body.append(b); return true; });
  CHECK(r.status == 503);
  CHECK(body.find("UNAVAILABLE") != std::string::npos);
}

TEST_CASE("http transport reports kCancelled when the receiver stops reading") {
  LocalServer s;
  HttpTransport t("127.0.0.1", s.port);
  auto r = t.post(request("/v1beta/models/m:streamGenerateContent?alt=sse"),
                  [&](std::string_view) { return false; });
  CHECK(r.end == TransportEnd::kCancelled);
  // the transport is usable again after a cancel
  auto again = t.post(request("/v1beta/models/m:streamGenerateContent?alt=sse"),
                      [&](std::string_view) { return true; });
  CHECK(again.end == TransportEnd::kComplete);
}

TEST_CASE("http transport reports a silent stream as kIdleTimeout") {
  LocalServer s;
  HttpTransport t("127.0.0.1", s.port, /*ms_per_virtual_s=*/50);
  HttpRequest r = request("/v1beta/models/stall:streamGenerateContent?alt=sse");
  r.idle_timeout_s = 1;  // 50 ms of real time
  auto result = t.post(r, [&](std::string_view) { return true; });
  CHECK(result.status == 200);
  CHECK(result.end == TransportEnd::kIdleTimeout);
}

TEST_CASE("http transport reports a close before the chunked terminator as kConnectionLost") {
  LocalServer s;
  HttpTransport t("127.0.0.1", s.port);
  std::string body;
  auto result = t.post(request("/v1beta/models/drop:streamGenerateContent?alt=sse"),
                       [&](std::string_view b) { body.append(b); return true; });
  CHECK(result.status == 200);
  CHECK(body == "data: {}\n\n");
  CHECK(result.end == TransportEnd::kConnectionLost);
}

TEST_CASE("http transport reports a refused connection as kConnectFailed") {
  // a port that was free a moment ago and has no listener: bind, read the port, close
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  HttpTransport t("127.0.0.1", port);
  auto r = t.post(request("/x"), [&](std::string_view) { return true; });
  CHECK(r.status == 0);
  CHECK(r.end == TransportEnd::kConnectFailed);
}

}  // namespace rut
