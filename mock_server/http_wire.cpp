// HTTP/1.1 request parsing and response framing (see http_wire.h).
#include "mock_server/http_wire.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "mock_server/json_text.h"

namespace mock {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// True when the comma-separated header value holds `token` (case-insensitive).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (iequals(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (iequals(n, name)) return v;
  }
  return {};
}

RequestParser::Status RequestParser::fail(int status, std::string message) {
  error_status_ = status;
  error_ = std::move(message);
  return Status::kBad;
}

void RequestParser::next() {
  buf_.erase(0, pos_);
  pos_ = 0;
  stage_ = Stage::kHead;
  remaining_ = 0;
  trailer_bytes_ = 0;
  head_reported_ = false;
  req_ = HttpRequest{};
}

std::string RequestParser::take_following() {
  std::string rest = buf_.substr(std::min(pos_, buf_.size()));
  buf_.erase(std::min(pos_, buf_.size()));
  return rest;
}

RequestParser::Status RequestParser::parse() {
  if (stage_ == Stage::kDone) return Status::kDone;
  if (stage_ == Stage::kHead) {
    const Status s = parse_head();
    if (s != Status::kDone) return s;
  }
  const Status s = parse_body();
  if (s == Status::kNeedMore && !head_reported_) {
    head_reported_ = true;
    return Status::kHeadDone;
  }
  return s;
}

RequestParser::Status RequestParser::parse_head() {
  // Empty lines before a request line are ignored (RFC 9112 §2.2).
  while (buf_.compare(pos_, 2, "\r\n") == 0) pos_ += 2;
  const std::size_t end = buf_.find("\r\n\r\n", pos_);
  // A head over the limit: its target, when the request line arrived whole, still says which
  // provider's envelope the 431 goes out in.
  auto too_long = [&] {
    const std::size_t eol = buf_.find("\r\n", pos_);
    if (eol != std::string::npos && eol - pos_ <= limits_.max_head_bytes) {
      const std::string_view line(buf_.data() + pos_, eol - pos_);
      const std::size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
      if (sp1 != std::string_view::npos && sp2 > sp1) {
        req_.target = json_text::percent_encode_unsafe(line.substr(sp1 + 1, sp2 - sp1 - 1));
      }
    }
    return fail(431, "the request head is longer than " + std::to_string(limits_.max_head_bytes) + " bytes");
  };
  if (end == std::string::npos) {
    if (buf_.size() - pos_ > limits_.max_head_bytes) return too_long();
    return Status::kNeedMore;
  }
  if (end - pos_ > limits_.max_head_bytes) {
    return too_long();
  }
  const std::string_view head(buf_.data() + pos_, end - pos_);
  const std::size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return fail(400, "malformed request line");
  }
  req_.method = std::string(line.substr(0, sp1));
  // Raw octets a URI may not hold (RFC 3986 §2: controls, bytes outside UTF-8) are percent-encoded
  // here, where the target is read: routing, journals and messages only ever see valid UTF-8.
  req_.target = json_text::percent_encode_unsafe(line.substr(sp1 + 1, sp2 - sp1 - 1));
  req_.version = std::string(line.substr(sp2 + 1));
  if (req_.method.empty() || !std::all_of(req_.method.begin(), req_.method.end(), is_token_char) ||
      req_.target.empty()) {
    return fail(400, "malformed request line");
  }
  if (req_.version != "HTTP/1.1" && req_.version != "HTTP/1.0") {
    return fail(400, "unsupported HTTP version " + json_text::quote_input(req_.version));
  }
  std::string_view rest = line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
  while (!rest.empty()) {
    const std::size_t eol = rest.find("\r\n");
    const std::string_view h = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 2);
    const std::size_t colon = h.find(':');
    if (colon == 0 || colon == std::string_view::npos ||
        !std::all_of(h.begin(), h.begin() + static_cast<long>(colon), is_token_char)) {
      return fail(400, "malformed header line");
    }
    req_.headers.emplace_back(std::string(h.substr(0, colon)), std::string(trim(h.substr(colon + 1))));
  }
  pos_ = end + 4;

  const std::string_view connection = req_.header("Connection");
  req_.keep_alive = req_.version == "HTTP/1.1" ? !has_token(connection, "close") : has_token(connection, "keep-alive");
  // An HTTP/1.0 client does not know 100 Continue: the expectation is ignored (RFC 9110 §10.1.1).
  req_.expect_continue = req_.version == "HTTP/1.1" && has_token(req_.header("Expect"), "100-continue");
  // Framing that two parsers could read differently is refused (RFC 9112 §6.3: request smuggling):
  // Content-Length with Transfer-Encoding, or Content-Length fields that disagree (an empty one
  // too). Transfer-Encoding fields form one list (RFC 9110 §5.3), which must be just `chunked`.
  std::optional<std::string_view> first_length;
  std::string te;
  bool has_te = false;
  for (const auto& [name, value] : req_.headers) {
    if (iequals(name, "Transfer-Encoding")) {
      te += has_te ? ", " + value : value;
      has_te = true;
    }
    if (!iequals(name, "Content-Length")) continue;
    if (!first_length) first_length = value;
    else if (value != *first_length) return fail(400, "Content-Length fields disagree");
  }
  if (has_te && first_length) return fail(400, "both Content-Length and Transfer-Encoding");
  if (has_te) {
    if (!iequals(trim(te), "chunked")) return fail(501, "unsupported Transfer-Encoding " + json_text::quote_input(te));
    stage_ = Stage::kChunkSize;
    return Status::kDone;
  }
  remaining_ = 0;
  if (first_length) {
    const std::string_view cl = *first_length;
    const auto [p, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), remaining_);
    if (ec != std::errc() || p != cl.data() + cl.size()) return fail(400, "malformed Content-Length " + json_text::quote_input(cl));
    if (remaining_ > limits_.max_body_bytes) {
      return fail(413, "the request body is longer than " + std::to_string(limits_.max_body_bytes) + " bytes");
    }
  }
  stage_ = Stage::kLengthBody;
  return Status::kDone;
}

RequestParser::Status RequestParser::parse_body() {
  // The body's bytes are dropped from the buffer once decoded, so what is buffered stays bounded
  // by the body limit whatever the framing (many small chunks, long chunk extensions).
  if (pos_ >= kCompactBytes) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  while (true) {
    switch (stage_) {
      case Stage::kHead:
      case Stage::kDone:
        return Status::kDone;
      case Stage::kLengthBody: {
        const std::size_t take = std::min(remaining_, buf_.size() - pos_);
        req_.body.append(buf_, pos_, take);
        pos_ += take;
        remaining_ -= take;
        if (remaining_ > 0) return Status::kNeedMore;
        stage_ = Stage::kDone;
        return Status::kDone;
      }
      case Stage::kChunkSize: {
        const std::size_t eol = buf_.find("\r\n", pos_);
        if (eol == std::string::npos) {
          if (buf_.size() - pos_ > 1024) return fail(400, "malformed chunk size line");
          return Status::kNeedMore;
        }
        std::string_view line(buf_.data() + pos_, eol - pos_);
        line = line.substr(0, line.find(';'));  // chunk extensions are ignored
        line = trim(line);
        std::size_t size = 0;
        const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
        if (line.empty() || ec != std::errc() || p != line.data() + line.size()) {
          return fail(400, "malformed chunk size " + json_text::quote_input(line));
        }
        if (size > limits_.max_body_bytes - req_.body.size()) {
          return fail(413, "the request body is longer than " + std::to_string(limits_.max_body_bytes) + " bytes");
        }
        pos_ = eol + 2;
        remaining_ = size;
        stage_ = size == 0 ? Stage::kTrailers : Stage::kChunkData;
        break;
      }
      case Stage::kChunkData: {
        const std::size_t take = std::min(remaining_, buf_.size() - pos_);
        req_.body.append(buf_, pos_, take);
        pos_ += take;
        remaining_ -= take;
        if (remaining_ > 0 || buf_.size() - pos_ < 2) return Status::kNeedMore;
        if (buf_.compare(pos_, 2, "\r\n") != 0) return fail(400, "a chunk does not end with CRLF");
        pos_ += 2;
        stage_ = Stage::kChunkSize;
        break;
      }
      case Stage::kTrailers: {
        // Trailer fields are read and dropped, up to the empty line; together they are limited
        // like a head.
        const std::size_t eol = buf_.find("\r\n", pos_);
        const std::size_t line = (eol == std::string::npos ? buf_.size() : eol + 2) - pos_;
        if (trailer_bytes_ + line > limits_.max_head_bytes) {
          return fail(431, "the trailer section is longer than " + std::to_string(limits_.max_head_bytes) + " bytes");
        }
        if (eol == std::string::npos) return Status::kNeedMore;
        trailer_bytes_ += line;
        const bool empty = eol == pos_;
        pos_ = eol + 2;
        if (empty) {
          stage_ = Stage::kDone;
          return Status::kDone;
        }
        break;
      }
    }
  }
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Site Overloaded";
    default: return "Unknown";
  }
}

std::string response_head(int status, std::string_view content_type,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          long long content_length, bool keep_alive) {
  std::string out;
  out.reserve(160);
  append_response_head(out, status, content_type, headers, content_length, keep_alive);
  return out;
}

void append_response_head(std::string& out, int status, std::string_view content_type,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          long long content_length, bool keep_alive) {
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  if (!content_type.empty()) {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\n";
  }
  for (const auto& [name, value] : headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (content_length == kChunkedLength) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (content_length >= 0) {
    out += "Content-Length: ";
    out += std::to_string(content_length);
    out += "\r\n";
  }
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
}

void append_chunk(std::string& out, std::string_view data) {
  if (data.empty()) return;
  char size[20];
  const auto [end, ec] = std::to_chars(size, size + sizeof size, data.size(), 16);
  (void)ec;
  out.append(size, end);
  out += "\r\n";
  out += data;
  out += "\r\n";
}

}  // namespace mock
