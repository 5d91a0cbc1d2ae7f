// The recording proxy's upstream side for plain http:// upstreams: one keep-alive HTTP/1.1 client
// connection on a socket of its own, and the incremental answer parser it reads with.
//
// Why not cpp-httplib here: its client costs 13 system calls per relayed request (a select() before
// every read and write, a liveness peek before every write, head and body sent apart) and gives the
// proxy no point at which its read buffer is drained, so every piece went to the client in a send
// of its own. This connection sends the request in one sendmsg, blocks in recv (SO_RCVTIMEO is the
// read timeout), and calls `flush` before every recv: what one upstream read delivered leaves in one
// send, and nothing is held back while upstream is silent (each SSE frame still reaches the client
// as it arrives). https:// upstreams stay on cpp-httplib (TLS). Real sockets: part of the I/O shell.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace harness::record {

/// A parsed answer head. Header names as sent (compare case-insensitively).
struct AnswerHead {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Incremental parser of one HTTP/1.1 answer (RFC 9112): status line and headers (1xx interim
/// answers are skipped), then the body framed by `Transfer-Encoding: chunked` (decoded; chunk
/// extensions and trailers dropped), `Content-Length`, or the connection's close; no body for
/// HEAD, 204 and 304. Pure: bytes in, callbacks out.
class AnswerParser {
 public:
  enum class Status { kNeedMore, kDone, kBad, kCanceled };
  /// `on_head` once per answer; `on_body` per decoded piece (never empty). A callback that
  /// returns false cancels: feed() returns kCanceled.
  std::function<bool(const AnswerHead&)> on_head;
  std::function<bool(std::string_view)> on_body;

  /// `head_request`: the request was HEAD (the answer has no body whatever its headers say).
  explicit AnswerParser(bool head_request = false) : head_request_(head_request) {}

  /// Consumes `bytes`. kDone once the answer is complete (bytes after it are left unread:
  /// `leftover()` counts them), kBad with error() set on bytes that are not an HTTP answer.
  Status feed(std::string_view bytes);
  /// The connection closed: kDone for a body delimited by the close, else kBad ("closed …").
  Status eof();
  bool head_seen() const { return head_seen_; }
  /// Whether the connection can carry another request after this answer (HTTP/1.1 without
  /// `Connection: close`, body not delimited by the close, nothing left over).
  bool reusable() const { return state_ == State::kDone && keep_alive_ && leftover_ == 0; }
  std::size_t leftover() const { return leftover_; }
  const std::string& error() const { return error_; }

 private:
  enum class State { kHead, kLength, kChunkSize, kChunkData, kChunkDataEnd, kTrailer, kUntilClose, kDone, kBad };
  Status fail(std::string why);
  Status parse_head(std::string_view head);  // one complete head (ending in CRLF CRLF)
  bool line(std::string_view& bytes, std::string& out);  // appends up to LF; true once LF seen

  bool head_request_;
  State state_ = State::kHead;
  bool head_seen_ = false;
  bool keep_alive_ = true;
  std::string buf_;              // the head or a chunk-size / trailer line being read
  unsigned long long left_ = 0;  // bytes of the body or the chunk still to come
  std::size_t leftover_ = 0;
  std::string error_;
};

/// One client connection to `host:port`, reused across requests while the upstream keeps it open.
class UpstreamConnection {
 public:
  /// Timeouts in seconds: connecting, and silence while sending or reading an answer.
  UpstreamConnection(std::string host, int port, int connect_timeout_s, int io_timeout_s);
  ~UpstreamConnection();
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;

  enum class Outcome {
    kComplete,       ///< the whole answer was read
    kConnectFailed,  ///< no connection (error(): "connection refused", "cannot resolve …", …)
    kFailed,         ///< the connection failed or timed out while sending or reading (error() says which)
    kBadAnswer,      ///< bytes that are not an HTTP answer (error() says which)
    kCanceled,       ///< a callback returned false
  };
  /// Sends `head` (request line and headers, ending in CRLF CRLF) and `body` in one sendmsg over
  /// the open connection (a new one when there is none or upstream closed it while idle) and
  /// reads the answer into `parser`, calling `flush` before every blocking read (false from
  /// flush cancels). Never throws.
  Outcome exchange(std::string_view head, std::string_view body, AnswerParser& parser, const std::function<bool()>& flush);
  /// The reason of the last failure, lower-case, for a 502 text and the journal.
  const std::string& error() const { return error_; }
  /// From another thread: ends the exchange in progress (its reads fail) and every later one.
  void stop();

 private:
  bool connect_();
  void close_();

  std::string host_;
  int port_;
  int connect_timeout_s_;
  int io_timeout_s_;
  std::mutex mu_;  // fd_ against stop()
  int fd_ = -1;
  std::atomic<bool> stopped_{false};
  std::string error_;
};

}  // namespace harness::record
