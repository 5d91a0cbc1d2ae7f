// ITransport over the Responses API's WebSocket mode (see ws_transport.h).
#include "runtime_under_test/ws_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "json_reader/utf8.h"
#include "runtime_under_test/http_transport.h"

namespace rut {

namespace {

using nlohmann::json;

std::string base64(const unsigned char* data, int n) {
  std::string out(static_cast<std::size_t>(4 * ((n + 2) / 3)) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, n);
  out.resize(static_cast<std::size_t>(len));
  return out;
}

std::string expected_accept(const std::string& key) {
  const std::string input = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";  // RFC 6455 §1.3
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  return base64(digest, SHA_DIGEST_LENGTH);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// A client's frame: FIN, `opcode`, masked with `mask` (RFC 6455 §5.3).
std::string client_frame(int opcode, std::string_view payload, std::uint32_t mask) {
  std::string out;
  out.push_back(static_cast<char>(0x80 | opcode));
  const std::size_t n = payload.size();
  if (n <= 125) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<char>((static_cast<std::uint64_t>(n) >> s) & 0xFF));
  }
  const unsigned char key[4] = {static_cast<unsigned char>(mask >> 24), static_cast<unsigned char>(mask >> 16),
                                static_cast<unsigned char>(mask >> 8), static_cast<unsigned char>(mask)};
  out.append(reinterpret_cast<const char*>(key), 4);
  for (std::size_t i = 0; i < n; ++i) out.push_back(static_cast<char>(static_cast<unsigned char>(payload[i]) ^ key[i % 4]));
  return out;
}

constexpr std::size_t kMaxMessageBytes = 64u << 20;
constexpr double kHandshakeMs = 10000;  // the shortest wait for an upgrade's answer (real ms)

/// One server message: a text/binary message reassembled, or a control frame.
struct Frame {
  int opcode = 0;
  std::string payload;
};

enum class Decoded { kNeedMore, kFrame, kBroken };

/// Takes the next message from the front of `buf`, reassembling fragments into `partial`.
Decoded next_frame(std::string& buf, std::string& partial, int& partial_opcode, Frame& out) {
  for (;;) {
    if (buf.size() < 2) return Decoded::kNeedMore;
    const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
    const bool fin = (p[0] & 0x80) != 0;
    const int opcode = p[0] & 0x0F;
    if ((p[0] & 0x70) != 0 || (p[1] & 0x80) != 0) return Decoded::kBroken;  // RSV without extension; masked server frame
    std::uint64_t len = p[1] & 0x7F;
    std::size_t head = 2;
    if (len == 126) {
      if (buf.size() < 4) return Decoded::kNeedMore;
      len = (std::uint64_t{p[2]} << 8) | p[3];
      head = 4;
    } else if (len == 127) {
      if (buf.size() < 10) return Decoded::kNeedMore;
      len = 0;
      for (int k = 0; k < 8; ++k) len = (len << 8) | p[2 + k];
      head = 10;
    }
    const bool control = (opcode & 0x8) != 0;
    if (control && (!fin || len > 125)) return Decoded::kBroken;
    if (!control && opcode != 0 && opcode != 1 && opcode != 2) return Decoded::kBroken;
    if (control && opcode != 8 && opcode != 9 && opcode != 10) return Decoded::kBroken;
    if (len > kMaxMessageBytes || partial.size() + len > kMaxMessageBytes) return Decoded::kBroken;
    if (buf.size() < head + len) return Decoded::kNeedMore;
    std::string payload = buf.substr(head, static_cast<std::size_t>(len));
    buf.erase(0, head + static_cast<std::size_t>(len));
    if (control) {
      out = Frame{opcode, std::move(payload)};
      return Decoded::kFrame;
    }
    if (opcode == 0 && partial_opcode == 0) return Decoded::kBroken;  // continuation of nothing
    if (opcode != 0 && partial_opcode != 0) return Decoded::kBroken;  // new message inside one
    if (opcode != 0) partial_opcode = opcode;
    partial += payload;
    if (!fin) continue;
    out = Frame{partial_opcode, std::move(partial)};
    partial.clear();
    partial_opcode = 0;
    return Decoded::kFrame;
  }
}

/// `input` as a list of items: a string is one user message (the Responses API's shorthand).
json input_items(const json& input) {
  if (input.is_array()) return input;
  if (input.is_string()) {
    return json::array({{{"type", "message"}, {"role", "user"}, {"content", json::array({{{"type", "input_text"}, {"text", input}}})}}});
  }
  return json::array();
}

/// Whether `item` is one the model produced (an output item sent back as input): a function call,
/// reasoning, or an assistant message.
bool model_item(const json& item) {
  if (!item.is_object()) return false;
  const std::string type = item.value("type", std::string());
  if (type == "function_call" || type == "reasoning") return true;
  return item.value("role", std::string()) == "assistant";
}

/// An event's `type`: read off the front when it is the first member (every server's first
/// member here), else parsed; "" when the payload is not an object with a string type.
std::string event_type(std::string_view payload) {
  static constexpr std::string_view kLead = "{\"type\":\"";
  if (payload.substr(0, kLead.size()) == kLead) {
    const std::size_t end = payload.find('"', kLead.size());
    if (end != std::string_view::npos && payload.substr(kLead.size(), end - kLead.size()).find('\\') == std::string_view::npos) {
      return std::string(payload.substr(kLead.size(), end - kLead.size()));
    }
  }
  const json j = json::parse(payload, nullptr, false);
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : std::string();
}

/// The parts of model output items that make a conversation: per function call its call id,
/// name and arguments; per message its text. Reasoning is left out (ids and encrypted content).
json essentials(const json& items) {
  json out = json::array();
  for (const json& item : items) {
    if (!item.is_object()) continue;
    const std::string type = item.value("type", std::string());
    if (type == "function_call") {
      out.push_back({item.value("call_id", json()), item.value("name", json()), item.value("arguments", json())});
    } else if (type == "message" || (type.empty() && item.contains("role"))) {
      std::string text;
      if (const auto c = item.find("content"); c != item.end()) {
        if (c->is_string()) text = c->get<std::string>();
        else if (c->is_array()) {
          for (const json& part : *c) {
            if (part.is_object() && part.contains("text") && part["text"].is_string()) text += part["text"].get<std::string>();
          }
        }
      }
      out.push_back(text);
    }
  }
  return out;
}

/// Whether `echoed` (the model items a request sends back) holds what the server stored as the
/// output of the response.completed `payload`.
bool same_output(const json& echoed, const std::string& payload) {
  const json done = json::parse(payload, nullptr, false);
  if (!done.is_object() || !done.contains("response") || !done["response"].is_object()) return false;
  const json& response = done["response"];
  if (!response.contains("output") || !response["output"].is_array()) return false;
  return essentials(echoed) == essentials(response["output"]);
}

bool is_terminal(std::string_view type) {
  return type == "response.completed" || type == "response.incomplete" || type == "response.failed";
}

}  // namespace

struct WebSocketTransport::Impl {
  Impl(std::string h, int p, double scale, DefectSet d)
      : host(std::move(h)), port(p), ms_per_virtual_s(scale), defects(std::move(d)), http(host, port, scale) {}

  std::string host;
  int port;
  double ms_per_virtual_s;
  DefectSet defects;
  HttpTransport http;  // the fallback once an upgrade was refused with 404, 405 or 426
  bool fell_back = false;
  int fd = -1;
  int connections = 0;
  std::uint32_t counter = 0;  // keys and masks: deterministic, distinct per use
  std::string buf;            // bytes read and not yet decoded
  std::string partial;        // a fragmented message so far
  int partial_opcode = 0;

  int stale = 0;                  // kept connections found dead before a response began (reopened)
  int continued = 0;              // requests sent with previous_response_id
  int restarted = 0;              // of those, answered previous_response_not_found and sent again whole
  std::string last_response_id;  // the last completed response on this connection ("" = none)
  json last_input = json::array();  // the full input of the request it answered

  std::string last_completed;        // its response.completed payload

  void forget_context() {
    last_response_id.clear();
    last_input = json::array();
    last_completed.clear();
  }

  void drop() {
    // The server keeps responses per connection: a new connection starts a new chain.
    forget_context();
    if (fd >= 0) ::close(fd);
    fd = -1;
    buf.clear();
    partial.clear();
    partial_opcode = 0;
  }

  std::uint32_t next_mask() { return 0x9e3779b9u * ++counter; }

  bool send_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  /// Reads more bytes into `buf` within `timeout_ms`: 1 read, 0 end/error, -1 timeout.
  int read_more(double timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    const int wait = timeout_ms >= 2147483647.0 ? -1 : static_cast<int>(std::ceil(timeout_ms));
    int r;
    do r = ::poll(&p, 1, wait); while (r < 0 && errno == EINTR);
    if (r == 0) return -1;
    if (r < 0) return 0;
    char chunk[16 * 1024];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return 0;
    buf.append(chunk, static_cast<std::size_t>(n));
    return 1;
  }

  /// Between two cycles: a connection the server ended while idle (a close frame, FIN or RST
  /// waiting unread), or one that holds anything but a ping (a frame left after the last
  /// response's terminal event belongs to no response), is dropped: the next request opens a new one.
  void drop_if_closed() {
    if (fd < 0) return;
    const auto stale_drop = [this] {
      ++stale;
      drop();
    };
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      char chunk[16 * 1024];
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
      if (n <= 0) return stale_drop();
      buf.append(chunk, static_cast<std::size_t>(n));
    }
    for (;;) {
      Frame f;
      const Decoded d = next_frame(buf, partial, partial_opcode, f);
      if (d == Decoded::kNeedMore) {
        if (!buf.empty() || !partial.empty()) stale_drop();  // part of a frame: nothing the next cycle can use
        return;
      }
      if (d == Decoded::kFrame && f.opcode == 0x9 && send_all(client_frame(0xA, f.payload, next_mask()))) continue;
      if (d == Decoded::kFrame && f.opcode == 0xA) continue;
      return stale_drop();
    }
  }

  struct Refusal {
    int status = 0;
    bool timed_out = false;  // status 0: the upgrade got no answer within the idle timeout
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
  };

  /// Opens the connection: TCP, then the upgrade on `target`. nullopt when open; a Refusal with
  /// status 0 when there is no connection, else the refused upgrade's answer.
  std::optional<Refusal> open(const HttpRequest& request, double timeout_ms) {
    drop();
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Refusal{};
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &addr.sin_addr) != 1 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      drop();
      return Refusal{};
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char raw[17];
    std::snprintf(raw, sizeof raw, "hiccup-ws-%06u", static_cast<unsigned>(++counter % 1000000));
    const std::string key = base64(reinterpret_cast<const unsigned char*>(raw), 16);
    std::string head = "GET " + request.target + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                       "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
                       "\r\nSec-WebSocket-Version: 13\r\nOpenAI-Beta: responses_websockets=2026-02-06\r\n";
    for (const auto& [name, value] : request.headers) {
      const std::string n = lower(name);
      if (n == "content-type" || n == "accept" || n == "content-length") continue;
      head += name + ": " + value + "\r\n";
    }
    head += "\r\n";
    if (!send_all(head)) {
      drop();
      return Refusal{};
    }
    std::size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      const int r = buf.size() > (64u << 10) ? 0 : read_more(timeout_ms);
      if (r != 1) {
        drop();
        Refusal silent;
        silent.timed_out = r < 0;  // a server silent for the idle timeout, as over HTTP before its head
        return silent;
      }
    }
    Refusal r;
    const std::string head_text = buf.substr(0, end);
    buf.erase(0, end + 4);
    if (head_text.size() < 12 || head_text.compare(0, 5, "HTTP/") != 0) {
      drop();
      return Refusal{};
    }
    r.status = std::atoi(head_text.c_str() + 9);
    std::size_t pos = head_text.find("\r\n");
    std::size_t content_length = 0;
    std::string accept;
    while (pos != std::string::npos && pos + 2 < head_text.size()) {
      const std::size_t next = head_text.find("\r\n", pos + 2);
      const std::string line = head_text.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = lower(line.substr(0, colon));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        if (name == "content-length") content_length = static_cast<std::size_t>(std::strtoull(value.c_str(), nullptr, 10));
        if (name == "sec-websocket-accept") accept = value;
        r.headers.emplace_back(std::move(name), std::move(value));
      }
      pos = next;
    }
    if (r.status == 101) {
      if (accept != expected_accept(key)) {
        drop();
        return Refusal{};
      }
      ++connections;
      return std::nullopt;
    }
    content_length = std::min<std::size_t>(content_length, 1u << 20);
    while (buf.size() < content_length && read_more(timeout_ms) == 1) {
    }
    r.body = buf.substr(0, content_length);
    drop();
    return r;
  }
};

WebSocketTransport::WebSocketTransport(std::string host, int port, double ms_per_virtual_s, DefectSet defects)
    : impl_(std::make_unique<Impl>(std::move(host), port, ms_per_virtual_s, std::move(defects))) {}

WebSocketTransport::~WebSocketTransport() { impl_->drop(); }

bool WebSocketTransport::fell_back() const { return impl_->fell_back; }
int WebSocketTransport::connections() const { return impl_->connections; }
int WebSocketTransport::continued() const { return impl_->continued; }
int WebSocketTransport::restarted() const { return impl_->restarted; }
int WebSocketTransport::stale_reopened() const { return impl_->stale; }

TransportResult WebSocketTransport::post(const HttpRequest& request,
                                         const std::function<bool(std::string_view)>& on_body) {
  Impl& s = *impl_;
  if (s.fell_back) return s.http.post(request, on_body);
  constexpr double kDayMs = 86400.0 * 1000;
  double timeout_ms = std::isfinite(request.idle_timeout_s) ? request.idle_timeout_s * s.ms_per_virtual_s : kDayMs;
  if (!(timeout_ms < kDayMs)) timeout_ms = kDayMs;
  if (!(timeout_ms > 0)) timeout_ms = 1;

  TransportResult result;
  // The WebSocket mode always streams: a non-streaming request goes over HTTP.
  if (request.body.find("\"stream\":true") == std::string::npos) {
    const json b = json::parse(request.body, nullptr, false);
    if (!(b.is_object() && b.value("stream", false) == true)) return s.http.post(request, on_body);
  }
  json body = json::parse(request.body, nullptr, false);
  if (!body.is_object()) body = json::object();
  body.erase("stream");  // implied over WebSocket (the Responses API's WebSocket-mode guide)
  body["type"] = "response.create";
  const json full_input = input_items(body.contains("input") ? body["input"] : json::array());

  // A kept connection can die between two cycles (the server closed or reset it after the last
  // response's terminal event). Found dead before this cycle's first frame, it was stale, not
  // this request's failure: the request goes again once on a new connection, and that is not an
  // attempt, as an HTTP client retries a request on a stale pooled connection (curl's "Connection
  // died, retrying a fresh connect"; Go's net/http for a reused connection closed before any
  // response byte). The server never played it: it ends a connection without reading further.
  for (bool may_reopen = true;; may_reopen = false) {
    s.drop_if_closed();
    const bool reused = s.fd >= 0;
    if (s.fd < 0) {
      // The upgrade's answer is waited on at least kHandshakeMs of real time: it is no part of a
      // response (no scenario stalls it), and a loaded machine hands the upgraded connection to
      // a server thread late; a stream's silence is still timed by the idle timeout.
      if (auto refused = s.open(request, std::max(timeout_ms, kHandshakeMs))) {
        if (refused->status == 0) {
          result.end = refused->timed_out ? TransportEnd::kIdleTimeout : TransportEnd::kConnectFailed;
          return result;
        }
        if (refused->status == 404 || refused->status == 405 || refused->status == 426) {
          s.fell_back = true;  // no WebSocket mode here: HTTP with SSE from now on (codex's fallback)
          return s.http.post(request, on_body);
        }
        result.status = refused->status;
        result.headers = std::move(refused->headers);
        result.end = on_body(refused->body) ? TransportEnd::kComplete : TransportEnd::kCancelled;
        return result;
      }
    }
    const bool stale_ok = reused && may_reopen;

    // Continuation (the WebSocket mode's point): when this request's input extends the last
    // completed one's (its input, then the model's output items), send only the new items with
    // `previous_response_id`.
    json create = body;
    bool continued = false;
    if (!s.last_response_id.empty() && full_input.size() > s.last_input.size() &&
        std::equal(s.last_input.begin(), s.last_input.end(), full_input.begin())) {
      std::size_t k = s.last_input.size();
      while (k < full_input.size() && model_item(full_input[k])) ++k;  // the response's own output
      // Only when those items are what the server holds (the runtime may have renamed a call's id,
      // or kept less of the answer): else the full input goes out.
      json echoed = json::array();
      for (std::size_t i = s.last_input.size(); i < k; ++i) echoed.push_back(full_input[i]);
      if (k < full_input.size() && same_output(echoed, s.last_completed)) {
        json rest = json::array();
        for (; k < full_input.size(); ++k) rest.push_back(full_input[k]);
        create["input"] = std::move(rest);
        create["previous_response_id"] = s.last_response_id;
        continued = true;
        ++s.continued;
      }
    }
    bool stale = false;  // the kept connection was found dead before the first frame

    for (;;) {
      if (!s.send_all(client_frame(0x1, create.dump(-1, ' ', false, json::error_handler_t::replace), s.next_mask()))) {
        s.drop();
        if (stale_ok) {
          stale = true;
          break;
        }
        result.end = TransportEnd::kConnectionLost;
        return result;
      }
      result.status = 200;
      bool first = true;
      bool restart = false;
      for (;;) {
        Frame f;
        const Decoded d = next_frame(s.buf, s.partial, s.partial_opcode, f);
        if (d == Decoded::kBroken) {
          s.send_all(client_frame(0x8, std::string("\x03\xea", 2), s.next_mask()));  // 1002
          s.drop();
          result.end = TransportEnd::kConnectionLost;
          return result;
        }
        if (d == Decoded::kNeedMore) {
          const int r = s.read_more(timeout_ms);
          if (r == 1) continue;
          // Ended (FIN, RST) before any byte of the response: the kept connection was stale (a
          // server answers every response.create it plays with a frame first: response.created,
          // or the in-band error).
          const bool before_any = first && r == 0 && s.buf.empty() && s.partial.empty();
          s.drop();
          if (before_any && stale_ok) {
            stale = true;
            break;
          }
          result.end = r < 0 ? TransportEnd::kIdleTimeout : TransportEnd::kConnectionLost;
          return result;
        }
        if (f.opcode == 0x9) {
          s.send_all(client_frame(0xA, f.payload, s.next_mask()));
          continue;
        }
        if (f.opcode == 0xA) continue;
        if (f.opcode == 0x8 || f.opcode == 0x2) {
          // Closed by the server before the terminal event (or a binary message, which this mode
          // never sends): the connection is gone.
          s.send_all(client_frame(0x8, f.opcode == 0x8 ? f.payload.substr(0, 2) : std::string("\x03\xeb", 2), s.next_mask()));
          const bool before_any = first && f.opcode == 0x8;  // closed before this response began: stale
          s.drop();
          if (before_any && stale_ok) {
            stale = true;
            break;
          }
          // A close frame with 1000 (normal closure, RFC 6455 §7.4.1) or no code is the closing
          // handshake, the WebSocket's clean end: before the terminal event it is what a body that
          // ends cleanly without one is over HTTP, an incomplete stream for the codec to find
          // (docs/POLICY.md: incomplete_stream is a clean end without the terminal frame). Any
          // other code (1011), or a binary message, is a lost connection, as FIN and RST are.
          const bool clean = f.opcode == 0x8 && (f.payload.size() < 2 || (static_cast<unsigned char>(f.payload[0]) == 0x03 &&
                                                                           static_cast<unsigned char>(f.payload[1]) == 0xe8));
          result.end = clean ? TransportEnd::kComplete : TransportEnd::kConnectionLost;
          return result;
        }
        if (!json_reader::is_utf8(f.payload)) {  // RFC 3629, json_reader/utf8.h
          // RFC 6455 §8.1: invalid UTF-8 in a text message fails the connection with 1007 (a frame
          // cut short and followed by other bytes, e.g. the server's close frame, reads so).
          s.send_all(client_frame(0x8, std::string("\x03\xef", 2), s.next_mask()));  // 1007
          s.drop();
          result.end = TransportEnd::kConnectionLost;
          return result;
        }
        const std::string type = event_type(f.payload);
        // Parsed only when the transport reads it (an error, the completed response); the codec parses each event anyway.
        const json event = type == "error" ? json::parse(f.payload, nullptr, false) : json();
        if (first && type == "error" && event.contains("status") && event["status"].is_number_integer()) {
          const int status = event["status"].get<int>();
          const json* error = event.contains("error") && event["error"].is_object() ? &event["error"] : nullptr;
          if (continued && status == 400 && error && error->value("code", json()) == "previous_response_not_found") {
            // The server no longer holds the context: start over with the full input (never
            // assume it still has what it lost).
            s.forget_context();
            ++s.restarted;
            if (s.defects.contains(Defect::kReplayLostContext)) {
              // Seeded defect: the continuation goes again as it was, only without the id the
              // server lost: the new items alone, the conversation before them gone.
              create.erase("previous_response_id");
            } else {
              create = body;
            }
            continued = false;
            restart = true;
            break;
          }
          // The in-band form of an HTTP error: answered as that status.
          result.status = status;
          if (const auto h = event.find("headers"); h != event.end() && h->is_object()) {
            for (const auto& [name, value] : h->items()) {
              if (value.is_string()) result.headers.emplace_back(lower(name), value.get<std::string>());
              else if (value.is_number()) result.headers.emplace_back(lower(name), value.dump());
            }
          }
          const json envelope = {{"error", event.contains("error") ? event["error"] : json(nullptr)}};
          result.end = on_body(envelope.dump(-1, ' ', false, json::error_handler_t::replace)) ? TransportEnd::kComplete
                                                                                            : TransportEnd::kCancelled;
          return result;
        }
        first = false;
        if (type == "response.completed") {
          // The context the next request may continue from.
          // Its id, read off the response object's front (the API's order), else parsed.
          static constexpr std::string_view kId = "\"response\":{\"id\":\"";
          const std::size_t at = f.payload.find(kId);
          const std::size_t end = at == std::string::npos ? at : f.payload.find('"', at + kId.size());
          std::string id;
          if (end != std::string::npos) {
            id = f.payload.substr(at + kId.size(), end - at - kId.size());
          } else {
            const json done = json::parse(f.payload, nullptr, false);
            if (done.is_object() && done.contains("response") && done["response"].is_object() &&
                done["response"].contains("id") && done["response"]["id"].is_string()) {
              id = done["response"]["id"].get<std::string>();
            }
          }
          if (!id.empty()) {
            s.last_response_id = id;
            s.last_input = full_input;
            s.last_completed = f.payload;  // parsed only if the next request may continue from it
          }
        }
        if (!on_body("data: " + f.payload + "\n\n")) {
          if (!is_terminal(type)) s.drop();  // mid-response: the rest would land in the next cycle
          result.end = TransportEnd::kCancelled;
          return result;
        }
        if (is_terminal(type)) {
          result.end = TransportEnd::kComplete;
          return result;
        }
      }
      if (stale || !restart) break;
    }
    if (!stale) return result;
    ++s.stale;
  }
}

}  // namespace rut
