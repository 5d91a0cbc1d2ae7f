// HTTP/1.1 framing for the mock server, without sockets: an incremental request parser (request
// line, headers, a Content-Length or chunked body; RFC 9112 §2–7) and the bytes of a response
// head and of chunks. http_server reads sockets into a RequestParser and writes what these build.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mock {

/// One parsed HTTP/1.1 request.
struct HttpRequest {
  std::string method;   ///< "POST", "GET", …
  std::string target;   ///< path and query, as sent
  std::string version;  ///< "HTTP/1.1" or "HTTP/1.0"
  std::vector<std::pair<std::string, std::string>> headers;  ///< names as sent, values trimmed
  std::string body;     ///< the decoded body (chunked framing removed)
  /// The connection stays open after the answer: HTTP/1.1 without `Connection: close`, or
  /// HTTP/1.0 with `Connection: keep-alive`.
  bool keep_alive = true;
  /// `Expect: 100-continue` was sent (curl sends it for bodies over 1 KiB).
  bool expect_continue = false;
  /// Set by a transport that is not plain HTTP and carries requests as messages ("websocket":
  /// a Responses `response.create` over the WebSocket mode); "" for HTTP. Journaled as is.
  std::string transport;

  /// The first header named `name` (case-insensitive); "" when absent.
  std::string_view header(std::string_view name) const;
};

/// Limits of a RequestParser, in bytes.
struct ParserLimits {
  std::size_t max_head_bytes = 64 * 1024;         ///< request line + headers; more → 431
  std::size_t max_body_bytes = 64 * 1024 * 1024;  ///< decoded body; more → 413
};

/// Incremental parser of one request at a time from a byte stream: feed() what the socket gave,
/// then parse(). Bytes after a complete request (pipelining) stay buffered for the next one.
class RequestParser {
 public:
  enum class Status {
    kNeedMore,   ///< the request is incomplete: feed more bytes
    kHeadDone,   ///< (only once per request, when the head is complete and the body is not yet)
    kDone,       ///< request() holds a complete request; call next() before the next parse()
    kBad,        ///< malformed or over a limit: answer error_status() and close
  };

  explicit RequestParser(ParserLimits limits = {}) : limits_(limits) {}

  void feed(const char* data, std::size_t n) { buf_.append(data, n); }

  /// Advances as far as the buffered bytes allow.
  Status parse();

  /// The request being parsed (complete after kDone; method/target/headers after kHeadDone).
  const HttpRequest& request() const { return req_; }
  HttpRequest& request() { return req_; }

  /// Drops the completed request, keeping any bytes that follow it.
  void next();

  /// After kDone: removes and returns the bytes buffered after the complete request (the first
  /// bytes of a protocol the connection switches to after it, e.g. a client's first WebSocket frames).
  std::string take_following();

  /// True when bytes of a request (complete or not) are buffered, or its body is being read (whose
  /// bytes are dropped once decoded).
  bool has_bytes() const { return !buf_.empty() || stage_ != Stage::kHead; }

  /// True when part of a request's line or headers has arrived and the head is not complete yet.
  bool reading_head() const { return stage_ == Stage::kHead && !buf_.empty(); }

  /// Bytes buffered: of the request in progress (its body's only until decoded) and any after it.
  std::size_t buffered_bytes() const { return buf_.size(); }

  /// After kBad: 400 (malformed), 413 (body too large), 431 (head too large) or 501 (a
  /// Transfer-Encoding other than chunked); error() says what, lower-case.
  int error_status() const { return error_status_; }
  const std::string& error() const { return error_; }

 private:
  Status fail(int status, std::string message);
  Status parse_head();
  Status parse_body();

  /// Decoded body bytes are dropped from buf_ once this many are consumed.
  static constexpr std::size_t kCompactBytes = 64 * 1024;

  ParserLimits limits_;
  std::string buf_;
  std::size_t pos_ = 0;  // bytes of buf_ consumed by the request in progress
  enum class Stage { kHead, kLengthBody, kChunkSize, kChunkData, kTrailers, kDone } stage_ = Stage::kHead;
  std::size_t remaining_ = 0;  // body or chunk bytes still to read
  std::size_t trailer_bytes_ = 0;  // of the trailer section so far
  bool head_reported_ = false;
  HttpRequest req_;
  int error_status_ = 400;
  std::string error_;
};

/// The reason phrase of `status` ("OK", "Too Many Requests", …; "Unknown" when not listed).
std::string_view reason_phrase(int status);

/// `content_length` of a response head whose body goes in chunks (`Transfer-Encoding: chunked`).
inline constexpr long long kChunkedLength = -1;
/// `content_length` of a response head whose body ends when the connection does (no length, no
/// chunks: RFC 9112 §6.3 item 8), for HTTP/1.0 clients, which know no chunked coding.
inline constexpr long long kCloseDelimited = -2;

/// A response head: status line, `Content-Type` (when not empty), `headers`, then
/// `Transfer-Encoding: chunked` (`content_length` kChunkedLength), nothing (kCloseDelimited) or
/// `Content-Length`, and `Connection: close` when `!keep_alive`; ends with the blank line.
std::string response_head(int status, std::string_view content_type,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          long long content_length, bool keep_alive);

/// Appends response_head(...) to `out`, reusing its capacity (the event loop's per-connection buffer).
void append_response_head(std::string& out, int status, std::string_view content_type,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          long long content_length, bool keep_alive);

/// Appends one chunk of chunked transfer coding (hex size, CRLF, data, CRLF; RFC 9112 §7.1) to
/// `out`. Empty data appends nothing (an empty chunk would be the terminator).
void append_chunk(std::string& out, std::string_view data);

/// The last chunk and the end of the message: "0\r\n\r\n".
inline constexpr std::string_view kChunkTerminator = "0\r\n\r\n";

}  // namespace mock
