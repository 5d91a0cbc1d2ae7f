// Tests of the mock server's HTTP/1.1 framing: requests fed whole, byte by byte and pipelined;
// chunked bodies; limits; response heads and chunks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "mock_server/http_wire.h"

using Status = mock::RequestParser::Status;

namespace {

/// Feeds `bytes` one at a time; returns the first status that is not kNeedMore/kHeadDone.
Status feed_bytewise(mock::RequestParser& p, const std::string& bytes) {
  Status s = Status::kNeedMore;
  for (char c : bytes) {
    p.feed(&c, 1);
    s = p.parse();
    if (s == Status::kDone || s == Status::kBad) return s;
  }
  return s;
}

}  // namespace

TEST_CASE("a request with a Content-Length body parses whole and byte by byte") {
  const std::string raw =
      "POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\ncontent-length: 11\r\nX-A:  spaced \r\n\r\nhello world";
  for (bool bytewise : {false, true}) {
    mock::RequestParser p;
    Status s;
    if (bytewise) {
      s = feed_bytewise(p, raw);
    } else {
      p.feed(raw.data(), raw.size());
      s = p.parse();
    }
    REQUIRE(s == Status::kDone);
    CHECK(p.request().method == "POST");
    CHECK(p.request().target == "/v1/messages?beta=true");
    CHECK(p.request().body == "hello world");
    CHECK(p.request().header("x-a") == "spaced");
    CHECK(p.request().keep_alive);
    CHECK_FALSE(p.has_bytes() == false);  // the request is still buffered until next()
    p.next();
    CHECK_FALSE(p.has_bytes());
  }
}

TEST_CASE("pipelined requests parse one after the other") {
  const std::string raw =
      "GET / HTTP/1.1\r\n\r\nPOST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiHEAD / HTTP/1.0\r\n\r\n";
  mock::RequestParser p;
  p.feed(raw.data(), raw.size());
  REQUIRE(p.parse() == Status::kDone);
  CHECK(p.request().method == "GET");
  CHECK(p.request().body.empty());
  p.next();
  REQUIRE(p.parse() == Status::kDone);
  CHECK(p.request().target == "/a");
  CHECK(p.request().body == "hi");
  p.next();
  REQUIRE(p.parse() == Status::kDone);
  CHECK(p.request().method == "HEAD");
  CHECK_FALSE(p.request().keep_alive);  // HTTP/1.0 without keep-alive
  p.next();
  CHECK(p.parse() == Status::kNeedMore);
}

TEST_CASE("a chunked request body is decoded with extensions and trailers dropped") {
  const std::string raw =
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";
  mock::RequestParser p;
  REQUIRE(feed_bytewise(p, raw) == Status::kDone);
  CHECK(p.request().body == "hello world");
  CHECK_FALSE(p.request().keep_alive);
}

TEST_CASE("the head of a request with Expect 100-continue is reported before its body") {
  const std::string head = "POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
  mock::RequestParser p;
  p.feed(head.data(), head.size());
  REQUIRE(p.parse() == Status::kHeadDone);
  CHECK(p.request().expect_continue);
  CHECK(p.parse() == Status::kNeedMore);
  p.feed("abc", 3);
  REQUIRE(p.parse() == Status::kDone);
  CHECK(p.request().body == "abc");
}

TEST_CASE("an HTTP/1.0 request ignores Expect 100-continue") {
  const std::string head = "POST /x HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
  mock::RequestParser p;
  p.feed(head.data(), head.size());
  CHECK(p.parse() == Status::kHeadDone);
  CHECK_FALSE(p.request().expect_continue);
}

TEST_CASE("an endless trailer section is refused with 431 and not buffered") {
  mock::ParserLimits limits;
  limits.max_head_bytes = 1024;
  mock::RequestParser p(limits);
  const std::string head = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n";
  p.feed(head.data(), head.size());
  Status s = p.parse();
  const std::string trailer = "X-T: " + std::string(20, 'a') + "\r\n";
  for (int i = 0; i < 1000 && s != Status::kBad; ++i) {
    p.feed(trailer.data(), trailer.size());
    s = p.parse();
  }
  REQUIRE(s == Status::kBad);
  CHECK(p.error_status() == 431);
  CHECK(p.buffered_bytes() < 4096);
}

TEST_CASE("a chunked body in tiny chunks with long extensions is decoded without buffering its framing") {
  mock::RequestParser p;
  const std::string head = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  p.feed(head.data(), head.size());
  Status s = p.parse();
  std::string piece;
  for (int i = 0; i < 16; ++i) piece += "1;" + std::string(1000, 'e') + "\r\nx\r\n";
  std::size_t most = 0;
  for (int i = 0; i < 1000; ++i) {  // 16,000 chunks, 16 MB of framing for 16,000 body bytes
    p.feed(piece.data(), piece.size());
    s = p.parse();
    REQUIRE(s == Status::kNeedMore);
    most = std::max(most, p.buffered_bytes());
  }
  CHECK(most < (256u << 10));
  p.feed("0\r\n\r\n", 5);
  REQUIRE(p.parse() == Status::kDone);
  CHECK(p.request().body == std::string(16000, 'x'));
}

TEST_CASE("a request whose decoded body bytes were dropped from the buffer still counts as in progress") {
  // has_bytes() picks the I/O timeout (a request half-way) over the keep-alive one (idle).
  mock::RequestParser p;
  const std::string head = "POST /x HTTP/1.1\r\nContent-Length: 102400\r\n\r\n";
  const std::string part(70 * 1024, 'b');
  p.feed(head.data(), head.size());
  p.feed(part.data(), part.size());
  while (p.parse() == Status::kHeadDone) {
  }
  CHECK(p.parse() == Status::kNeedMore);  // nothing new: the decoded bytes leave the buffer
  CHECK(p.buffered_bytes() == 0);
  CHECK(p.has_bytes());
}

TEST_CASE("malformed and oversized requests are refused with 400, 413, 431 or 501") {
  auto status_of = [](const std::string& raw, mock::ParserLimits limits = {}) {
    mock::RequestParser p(limits);
    p.feed(raw.data(), raw.size());
    const Status s = p.parse();
    return s == Status::kBad ? p.error_status() : 0;
  };
  CHECK(status_of("NONSENSE\r\n\r\n") == 400);
  CHECK(status_of("GET / HTTP/2.0\r\n\r\n") == 400);
  CHECK(status_of("GET / HTTP/1.1\r\nno colon\r\n\r\n") == 400);
  CHECK(status_of("POST / HTTP/1.1\r\nContent-Length: x1\r\n\r\n") == 400);
  CHECK(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n") == 501);
  CHECK(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n") == 400);
  mock::ParserLimits small;
  small.max_body_bytes = 10;
  small.max_head_bytes = 64;
  CHECK(status_of("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", small) == 413);
  CHECK(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n", small) == 413);
  CHECK(status_of("GET / HTTP/1.1\r\nX: " + std::string(100, 'a'), small) == 431);
  CHECK(status_of("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", small) == 0);
}

TEST_CASE("response heads carry the framing and chunks are hex-sized") {
  CHECK(mock::response_head(200, "text/event-stream", {}, -1, true) ==
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
  CHECK(mock::response_head(429, "application/json", {{"retry-after", "3"}}, 2, false) ==
        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nretry-after: 3\r\n"
        "Content-Length: 2\r\nConnection: close\r\n\r\n");
  std::string out;
  mock::append_chunk(out, std::string(26, 'x'));
  mock::append_chunk(out, "");
  CHECK(out == "1a\r\n" + std::string(26, 'x') + "\r\n");
}

TEST_CASE("framing two parsers could read differently is refused with 400") {
  for (const char* head : {"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}",
                           "POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}"}) {
    mock::RequestParser parser;
    const std::string text = head;
    parser.feed(text.data(), text.size());
    CHECK(parser.parse() == mock::RequestParser::Status::kBad);
    CHECK(parser.error_status() == 400);
  }
  // An empty Content-Length is no length (it was read as 0, and a second field then went unchecked:
  // the body's bytes became the next request).
  for (const char* head : {"POST / HTTP/1.1\r\nContent-Length:\r\nContent-Length: 2\r\n\r\n{}",
                           "POST / HTTP/1.1\r\nContent-Length: \r\n\r\n{}"}) {
    mock::RequestParser parser;
    const std::string text = head;
    parser.feed(text.data(), text.size());
    CHECK(parser.parse() == mock::RequestParser::Status::kBad);
    CHECK(parser.error_status() == 400);
  }
  // Transfer-Encoding fields are one list: `chunked` then `gzip` is not a chunked body (only the
  // first field was read).
  for (const char* head : {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
                           "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"}) {
    mock::RequestParser parser;
    const std::string text = head;
    parser.feed(text.data(), text.size());
    CHECK(parser.parse() == mock::RequestParser::Status::kBad);
    CHECK(parser.error_status() == 501);
  }
  mock::RequestParser same;
  const std::string twice = "POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}";
  same.feed(twice.data(), twice.size());
  CHECK(same.parse() == mock::RequestParser::Status::kDone);
}

TEST_CASE("raw octets a URI may not hold are percent-encoded in the target") {
  const std::string raw = std::string("GET /s/\xFF/v1?q=\x1B&k=caf\xC3\xA9 HTTP/1.1\r\nHost: x\r\n\r\n");
  mock::RequestParser p;
  p.feed(raw.data(), raw.size());
  REQUIRE(p.parse() == Status::kDone);
  CHECK(p.request().target == "/s/%FF/v1?q=%1B&k=caf\xC3\xA9");
}

TEST_CASE("messages quoting the request head are valid UTF-8 with control bytes escaped") {
  struct Case {
    std::string raw;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"GET / HTTP/1.\xFF\r\n\r\n", 400, "unsupported HTTP version \"HTTP/1.\\xFF\""},
      {"POST / HTTP/1.1\r\nContent-Length: 1\xFF\r\n\r\n", 400, "malformed Content-Length \"1\\xFF\""},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\xC3\r\n\r\n", 501, "unsupported Transfer-Encoding \"chunked\\xC3\""},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\x1B[2J\r\n", 400, "malformed chunk size \"2\\x1B[2J\""},
  };
  for (const Case& c : cases) {
    mock::RequestParser p;
    p.feed(c.raw.data(), c.raw.size());
    INFO(c.raw);
    REQUIRE(p.parse() == Status::kBad);
    CHECK(p.error_status() == c.status);
    CHECK(p.error() == c.message);
  }
}

TEST_CASE("a close-delimited response head has neither Content-Length nor chunked coding") {
  const std::string h = mock::response_head(200, "text/event-stream", {}, mock::kCloseDelimited, false);
  CHECK(h == "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
}
