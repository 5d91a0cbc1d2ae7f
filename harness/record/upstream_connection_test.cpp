// The recording proxy's own upstream client: the answer parser on every framing, split at every
// byte, and the connection against a real socket (reuse, an upstream that closed while idle, a
// refused connection).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "harness/record/upstream_connection.h"

namespace upstream_connection_test {

using harness::record::AnswerHead;
using harness::record::AnswerParser;
using harness::record::UpstreamConnection;

struct Parsed {
  AnswerParser::Status status = AnswerParser::Status::kNeedMore;
  int heads = 0;
  int code = 0;
  std::string body;
  bool reusable = false;
  std::string error;
};

/// Feeds `wire` in pieces of `step` bytes (0: whole), then EOF when `eof`.
Parsed parse(const std::string& wire, std::size_t step, bool eof = false, bool head_request = false) {
  Parsed p;
  AnswerParser parser(head_request);
  parser.on_head = [&](const AnswerHead& h) {
    ++p.heads;
    p.code = h.status;
    return true;
  };
  parser.on_body = [&](std::string_view b) {
    CHECK(!b.empty());
    p.body.append(b);
    return true;
  };
  const std::size_t n = step == 0 ? wire.size() : step;
  for (std::size_t i = 0; i < wire.size() && p.status == AnswerParser::Status::kNeedMore; i += n) {
    p.status = parser.feed(std::string_view(wire).substr(i, n));
  }
  if (eof && p.status == AnswerParser::Status::kNeedMore) p.status = parser.eof();
  p.reusable = parser.reusable();
  p.error = parser.error();
  return p;
}

TEST_CASE("proxy upstream answer parser: chunked, Content-Length and close-delimited bodies, split at every byte") {
  const std::string chunked =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "8;ext=1\r\ndata: 1\n\r\nA\r\ndata: 22\n\n\r\n0\r\nX-Trailer: t\r\n\r\n";
  const std::string length = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 11\r\n\r\n{\"error\":1}";
  const std::string until_close = "HTTP/1.0 200 OK\r\n\r\nsome body";
  for (std::size_t step : {0, 1, 2, 3, 5, 7, 64}) {
    INFO("step " << step);
    Parsed c = parse(chunked, step);
    CHECK(c.status == AnswerParser::Status::kDone);
    CHECK(c.heads == 1);  // the interim 100 is skipped
    CHECK(c.code == 200);
    CHECK(c.body == "data: 1\ndata: 22\n\n");
    CHECK(c.reusable);
    Parsed l = parse(length, step);
    CHECK(l.status == AnswerParser::Status::kDone);
    CHECK(l.code == 503);
    CHECK(l.body == "{\"error\":1}");
    CHECK(l.reusable);
    Parsed u = parse(until_close, step, true);
    CHECK(u.status == AnswerParser::Status::kDone);
    CHECK(u.body == "some body");
    CHECK_FALSE(u.reusable);
  }
}

TEST_CASE("proxy upstream answer parser: no body for HEAD, 204 and 304, no reuse after Connection: close or bytes past the answer") {
  CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 0, false, true).status == AnswerParser::Status::kDone);
  CHECK(parse("HTTP/1.1 204 No Content\r\n\r\n", 0).status == AnswerParser::Status::kDone);
  CHECK(parse("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", 0).status == AnswerParser::Status::kDone);
  const Parsed close = parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 0);
  CHECK(close.status == AnswerParser::Status::kDone);
  CHECK_FALSE(close.reusable);
  const Parsed extra = parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", 0);
  CHECK(extra.body == "ok");
  CHECK_FALSE(extra.reusable);
}

TEST_CASE("proxy upstream answer parser: what is not an HTTP answer, and a close before the end, are errors in words") {
  CHECK(parse("SSH-2.0-OpenSSH\r\n\r\n", 0).error.find("not an HTTP/1.x status line") != std::string::npos);
  CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", 0).error.find("Content-Length") != std::string::npos);
  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0).error.find("chunk size") != std::string::npos);
  CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 0).error.find("longer than its size") !=
        std::string::npos);
  CHECK(parse(std::string("HTTP/1.1 200 OK\r\nX: ") + std::string(70000, 'a'), 1000).error.find("64 KiB") != std::string::npos);
  const Parsed cut = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", 0, true);
  CHECK(cut.status == AnswerParser::Status::kBad);
  CHECK(cut.body == "ab");
  CHECK(cut.error == "closed the connection in the middle of the answer");
  CHECK(parse("", 0, true).error == "closed the connection before answering");
}

TEST_CASE("proxy upstream answer parser: a callback that returns false cancels") {
  AnswerParser parser;
  parser.on_body = [](std::string_view) { return false; };
  CHECK(parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") == AnswerParser::Status::kCanceled);
  CHECK_FALSE(parser.reusable());
}

/// A listening socket on 127.0.0.1; returns {fd, port}.
std::pair<int, int> listen_any() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 8) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return {fd, ntohs(addr.sin_port)};
}

/// Reads one request (head and a Content-Length body) from `fd`; "" on EOF.
std::string read_request(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    const std::size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      const std::size_t cl = in.find("Content-Length: ");
      const std::size_t body = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16));
      if (in.size() >= end + 4 + body) return in;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    in.append(buf, static_cast<std::size_t>(n));
  }
}

TEST_CASE("proxy upstream connection: one request per sendmsg, the connection reused, a new one when upstream closed it") {
  auto [listen_fd, port] = listen_any();
  std::vector<std::string> requests;
  int connections = 0;
  std::promise<void> closed;
  std::future<void> closed_seen = closed.get_future();
  std::thread server([&, lfd = listen_fd] {
    // Connection 1 answers two requests and closes; connection 2 answers one.
    for (int c = 0; c < 2; ++c) {
      const int fd = ::accept(lfd, nullptr, nullptr);
      ++connections;
      for (int r = 0; r < (c == 0 ? 2 : 1); ++r) {
        requests.push_back(read_request(fd));
        const std::string answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nr" + std::to_string(requests.size()) + "\n\r\n0\r\n\r\n";
        ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
      }
      ::close(fd);  // on loopback the FIN is in the client's socket when close() returns
      if (c == 0) closed.set_value();
    }
  });
  UpstreamConnection conn("127.0.0.1", port, 5, 5);
  int flushes = 0;
  for (int i = 1; i <= 3; ++i) {
    AnswerParser parser;
    std::string body;
    parser.on_body = [&](std::string_view b) {
      body.append(b);
      return true;
    };
    const std::string head = "POST /x HTTP/1.1\r\nHost: u\r\nContent-Length: 4\r\n\r\n";
    if (i == 3) closed_seen.wait();  // upstream closed the idle connection
    const auto outcome = conn.exchange(head, "body", parser, [&] {
      ++flushes;
      return true;
    });
    INFO("request " << i << ": " << conn.error());
    CHECK(outcome == UpstreamConnection::Outcome::kComplete);
    CHECK(body == "r" + std::to_string(i) + "\n");
  }
  server.join();
  ::close(listen_fd);
  CHECK(connections == 2);
  REQUIRE(requests.size() == 3);
  CHECK(requests[0] == "POST /x HTTP/1.1\r\nHost: u\r\nContent-Length: 4\r\n\r\nbody");
  CHECK(flushes >= 3);  // before every read
}

TEST_CASE("proxy upstream connection: a refused connection and an answer that is not HTTP say why") {
  auto [listen_fd, port] = listen_any();
  ::close(listen_fd);  // nothing listens there now
  UpstreamConnection refused("127.0.0.1", port, 5, 5);
  AnswerParser p1;
  CHECK(refused.exchange("GET / HTTP/1.1\r\n\r\n", "", p1, [] { return true; }) == UpstreamConnection::Outcome::kConnectFailed);
  CHECK(refused.error() == "connection refused");

  UpstreamConnection unresolvable("no-such-host.invalid", 80, 5, 5);
  AnswerParser p2;
  CHECK(unresolvable.exchange("GET / HTTP/1.1\r\n\r\n", "", p2, [] { return true; }) == UpstreamConnection::Outcome::kConnectFailed);
  CHECK(unresolvable.error().rfind("cannot resolve the host no-such-host.invalid", 0) == 0);

  auto [fd2, port2] = listen_any();
  std::thread server([lfd = fd2] {
    const int fd = ::accept(lfd, nullptr, nullptr);
    read_request(fd);
    const std::string junk = "SSH-2.0-OpenSSH_9.2\r\n\r\n";
    ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    ::close(fd);
  });
  UpstreamConnection junk("127.0.0.1", port2, 5, 5);
  AnswerParser p3;
  CHECK(junk.exchange("GET / HTTP/1.1\r\n\r\n", "", p3, [] { return true; }) == UpstreamConnection::Outcome::kBadAnswer);
  CHECK(junk.error().find("not an HTTP/1.x status line") != std::string::npos);
  server.join();
  ::close(fd2);
}

}  // namespace upstream_connection_test
