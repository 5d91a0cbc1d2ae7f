// UpstreamConnection and AnswerParser; see upstream_connection.h. Part of the I/O shell.
#include "harness/record/upstream_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace harness::record {

namespace {

constexpr std::size_t kMaxHead = 64u << 10;  // an answer head longer than this is refused
constexpr std::size_t kMaxLine = 8u << 10;   // a chunk-size or trailer line

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool icontains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (iequals(hay.substr(i, needle.size()), needle)) return true;
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// strerror(e) with a lower-case first letter ("connection refused").
std::string reason(int e) {
  std::string s = std::strerror(e);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

AnswerParser::Status AnswerParser::fail(std::string why) {
  state_ = State::kBad;
  keep_alive_ = false;
  error_ = std::move(why);
  return Status::kBad;
}

bool AnswerParser::line(std::string_view& bytes, std::string& out) {
  const std::size_t lf = bytes.find('\n');
  const std::size_t take = lf == std::string_view::npos ? bytes.size() : lf + 1;
  out.append(bytes.substr(0, take));
  bytes.remove_prefix(take);
  return lf != std::string_view::npos;
}

AnswerParser::Status AnswerParser::parse_head(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const std::size_t lf = head.find('\n');
    std::string_view l = head.substr(0, lf);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (!l.empty()) lines.push_back(l);
    head.remove_prefix(lf == std::string_view::npos ? head.size() : lf + 1);
  }
  if (lines.empty()) return fail("an empty answer head");
  const std::string_view status_line = lines.front();
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[8] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(status_line[9])) || !std::isdigit(static_cast<unsigned char>(status_line[10])) ||
      !std::isdigit(static_cast<unsigned char>(status_line[11])) || (status_line.size() > 12 && status_line[12] != ' ')) {
    return fail("not an HTTP/1.x status line: \"" + std::string(status_line.substr(0, 80)) + "\"");
  }
  AnswerHead h;
  h.status = std::stoi(std::string(status_line.substr(9, 3)));
  bool http10 = status_line[7] == '0';
  bool close = http10;
  bool chunked = false;
  long long length = -1;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos || colon == 0) return fail("a header line without a name: \"" + std::string(lines[i].substr(0, 80)) + "\"");
    const std::string_view name = lines[i].substr(0, colon);
    const std::string_view value = trim(lines[i].substr(colon + 1));
    if (iequals(name, "transfer-encoding")) {
      chunked = icontains(value, "chunked");
    } else if (iequals(name, "content-length")) {
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string_view::npos) {
        return fail("a bad Content-Length: \"" + std::string(value.substr(0, 40)) + "\"");
      }
      length = std::stoll(std::string(value));
    } else if (iequals(name, "connection")) {
      if (icontains(value, "close")) close = true;
      if (http10 && icontains(value, "keep-alive")) close = false;
    }
    h.headers.emplace_back(std::string(name), std::string(value));
  }
  if (h.status == 101) return fail("an upgrade (101 Switching Protocols), which the proxy does not relay");
  if (h.status >= 100 && h.status < 200) return Status::kNeedMore;  // an interim answer: the real one follows
  keep_alive_ = !close;
  head_seen_ = true;
  if (head_request_ || h.status == 204 || h.status == 304) {
    state_ = State::kDone;
  } else if (chunked) {
    state_ = State::kChunkSize;
  } else if (length >= 0) {
    left_ = static_cast<unsigned long long>(length);
    state_ = left_ == 0 ? State::kDone : State::kLength;
  } else {
    state_ = State::kUntilClose;
    keep_alive_ = false;
  }
  if (on_head && !on_head(h)) {
    keep_alive_ = false;
    state_ = State::kBad;
    return Status::kCanceled;
  }
  return Status::kNeedMore;
}

AnswerParser::Status AnswerParser::feed(std::string_view bytes) {
  const auto body = [&](std::string_view piece) { return piece.empty() || !on_body || on_body(piece); };
  while (!bytes.empty()) {
    switch (state_) {
      case State::kHead: {
        const std::size_t old = buf_.size();
        buf_.append(bytes.substr(0, kMaxHead + 4 - std::min(old, kMaxHead)));
        const std::size_t end = buf_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
        if (end == std::string::npos) {
          if (buf_.size() > kMaxHead) return fail("an answer head longer than 64 KiB");
          bytes = {};
          break;
        }
        const std::size_t head_len = end + 4;
        bytes.remove_prefix(head_len - old);
        const std::string head = std::move(buf_);
        buf_.clear();
        const Status st = parse_head(std::string_view(head).substr(0, head_len));
        if (st != Status::kNeedMore) return st;
        break;
      }
      case State::kLength:
      case State::kChunkData: {
        const std::size_t take = static_cast<std::size_t>(std::min<unsigned long long>(left_, bytes.size()));
        if (!body(bytes.substr(0, take))) {
          state_ = State::kBad;
          keep_alive_ = false;
          return Status::kCanceled;
        }
        bytes.remove_prefix(take);
        left_ -= take;
        if (left_ == 0) state_ = state_ == State::kLength ? State::kDone : State::kChunkDataEnd;
        break;
      }
      case State::kUntilClose:
        if (!body(bytes)) {
          state_ = State::kBad;
          return Status::kCanceled;
        }
        bytes = {};
        break;
      case State::kChunkSize: {
        if (!line(bytes, buf_)) {
          if (buf_.size() > kMaxLine) return fail("a chunk-size line longer than 8 KiB");
          break;
        }
        const std::string_view l = trim(std::string_view(buf_).substr(0, buf_.find_first_of(";\r\n")));
        if (l.empty() || l.size() > 15 || l.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
          return fail("a bad chunk size: \"" + std::string(l.substr(0, 40)) + "\"");
        }
        left_ = std::stoull(std::string(l), nullptr, 16);
        buf_.clear();
        state_ = left_ == 0 ? State::kTrailer : State::kChunkData;
        break;
      }
      case State::kChunkDataEnd: {
        if (!line(bytes, buf_)) {
          if (buf_.size() > 2) return fail("chunk data longer than its size");
          break;
        }
        if (buf_ != "\r\n" && buf_ != "\n") return fail("chunk data longer than its size");
        buf_.clear();
        state_ = State::kChunkSize;
        break;
      }
      case State::kTrailer: {
        if (!line(bytes, buf_)) {
          if (buf_.size() > kMaxLine) return fail("a trailer line longer than 8 KiB");
          break;
        }
        const bool last = buf_ == "\r\n" || buf_ == "\n";
        buf_.clear();
        if (last) state_ = State::kDone;
        break;
      }
      case State::kDone:
        leftover_ += bytes.size();
        return Status::kDone;
      case State::kBad:
        return Status::kBad;
    }
  }
  if (state_ == State::kBad) return Status::kBad;
  return state_ == State::kDone ? Status::kDone : Status::kNeedMore;
}

AnswerParser::Status AnswerParser::eof() {
  if (state_ == State::kUntilClose || state_ == State::kDone) {
    state_ = State::kDone;
    return Status::kDone;
  }
  if (state_ == State::kBad) return Status::kBad;
  return fail(head_seen_ ? "closed the connection in the middle of the answer" : "closed the connection before answering");
}

UpstreamConnection::UpstreamConnection(std::string host, int port, int connect_timeout_s, int io_timeout_s)
    : host_(std::move(host)), port_(port), connect_timeout_s_(connect_timeout_s), io_timeout_s_(io_timeout_s) {}

UpstreamConnection::~UpstreamConnection() { close_(); }

void UpstreamConnection::stop() {
  stopped_ = true;
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void UpstreamConnection::close_() {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool UpstreamConnection::connect_() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(port_);
  if (const int rc = ::getaddrinfo(host_.c_str(), port.c_str(), &hints, &found); rc != 0) {
    error_ = "cannot resolve the host " + host_ + ": " + ::gai_strerror(rc);
    return false;
  }
  error_ = "no address for the host " + host_;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      error_ = reason(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      do {
        rc = ::poll(&p, 1, connect_timeout_s_ * 1000);
      } while (rc < 0 && errno == EINTR);
      if (rc == 0) {
        error_ = "connecting timed out after " + std::to_string(connect_timeout_s_) + " s";
        ::close(fd);
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof so_error;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      rc = so_error == 0 ? 0 : -1;
      errno = so_error;
    }
    if (rc != 0) {
      error_ = reason(errno);
      ::close(fd);
      continue;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const timeval tv{io_timeout_s_, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    {
      std::lock_guard<std::mutex> lock(mu_);
      fd_ = fd;
      if (stopped_) ::shutdown(fd_, SHUT_RDWR);
    }
    error_.clear();
    ::freeaddrinfo(found);
    return true;
  }
  ::freeaddrinfo(found);
  return false;
}

UpstreamConnection::Outcome UpstreamConnection::exchange(std::string_view head, std::string_view body, AnswerParser& parser,
                                                         const std::function<bool()>& flush) {
  error_.clear();
  if (stopped_) {
    error_ = "the proxy is stopping";
    return Outcome::kFailed;
  }
  if (fd_ >= 0) {
    // Reuse the idle connection unless upstream closed it (EOF) or sent something unasked.
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (!(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) close_();
  }
  if (fd_ < 0 && !connect_()) return Outcome::kConnectFailed;

  iovec iov[2] = {{const_cast<char*>(head.data()), head.size()}, {const_cast<char*>(body.data()), body.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = body.empty() ? 1 : 2;
  while (msg.msg_iovlen > 0) {
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno == EAGAIN || errno == EWOULDBLOCK
                   ? "took no request bytes for " + std::to_string(io_timeout_s_) + " s (the write timeout)"
                   : "the connection failed while sending the request: " + reason(errno);
      close_();
      return Outcome::kFailed;
    }
    std::size_t sent = static_cast<std::size_t>(n);
    while (msg.msg_iovlen > 0 && sent >= msg.msg_iov[0].iov_len) {
      sent -= msg.msg_iov[0].iov_len;
      ++msg.msg_iov;
      --msg.msg_iovlen;
    }
    if (msg.msg_iovlen > 0) {
      msg.msg_iov[0].iov_base = static_cast<char*>(msg.msg_iov[0].iov_base) + sent;
      msg.msg_iov[0].iov_len -= sent;
    }
  }

  char buf[16384];
  for (;;) {
    if (!flush()) {
      close_();
      return Outcome::kCanceled;
    }
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      const AnswerParser::Status st = parser.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      if (st == AnswerParser::Status::kNeedMore) continue;
      if (st == AnswerParser::Status::kDone) {
        if (!parser.reusable()) close_();
        return Outcome::kComplete;
      }
      close_();
      if (st == AnswerParser::Status::kCanceled) return Outcome::kCanceled;
      error_ = "sent an answer that is not HTTP/1.1: " + parser.error();
      return Outcome::kBadAnswer;
    }
    if (n == 0) {
      const AnswerParser::Status st = parser.eof();
      close_();
      if (st == AnswerParser::Status::kDone) return Outcome::kComplete;
      error_ = stopped_ ? "the proxy is stopping" : parser.error();
      return Outcome::kFailed;
    }
    if (errno == EINTR) continue;
    error_ = errno == EAGAIN || errno == EWOULDBLOCK
                 ? "sent nothing for " + std::to_string(io_timeout_s_) + " s (the read timeout)"
                 : errno == ECONNRESET ? "reset the connection" : "the connection failed while reading the answer: " + reason(errno);
    close_();
    return Outcome::kFailed;
  }
}

}  // namespace harness::record
