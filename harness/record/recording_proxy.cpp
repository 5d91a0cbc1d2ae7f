// RecordingProxy; see recording_proxy.h. Part of the I/O shell: sockets and real time live here.
#include "harness/record/recording_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <strings.h>

#include <httplib.h>

#include "harness/record/live_faults.h"
#include "harness/record/upstream_connection.h"
#include "mock_server/http_wire.h"
#include "mock_server/json_text.h"
#include "runtime_under_test/codec.h"
#include "mock_server/wire_format.h"

namespace harness::record {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Request headers not passed upstream: hop-by-hop (RFC 9110 §7.6.1), the framing the client
/// library redoes, and Accept-Encoding (the proxy asks for identity so it can decode the answer).
bool dropped_request_header(const std::string& name) {
  static const char* const kDropped[] = {"host", "connection", "keep-alive", "content-length",
                                         "transfer-encoding", "te", "trailer", "upgrade",
                                         "proxy-connection", "proxy-authorization", "expect",
                                         "accept-encoding"};
  const std::string n = lower(name);
  for (const char* d : kDropped) {
    if (n == d) return true;
  }
  return false;
}

/// Answer headers not relayed: the framing the proxy redoes (chunked) and hop-by-hop ones.
bool dropped_answer_header(const std::string& name) {
  static const char* const kDropped[] = {"connection", "keep-alive", "content-length", "transfer-encoding",
                                         "te", "trailer", "upgrade", "content-encoding"};
  const std::string n = lower(name);
  for (const char* d : kDropped) {
    if (n == d) return true;
  }
  return false;
}

/// The reason phrase of `status` (RFC 9110 §15; clients read the number only).
const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
  }
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// Appends `bytes` to `out` as one chunk of a chunked body (RFC 9112 §7.1).
void append_chunk(std::string& out, std::string_view bytes) {
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  out.append(size, static_cast<std::size_t>(n));
  out.append(bytes);
  out += "\r\n";
}

/// A plain answer from the proxy itself (the upstream could not be reached), in the envelope of
/// the path's provider when it has one.
std::string own_answer(int status, const std::string& message, std::string_view target, bool keep_alive) {
  const std::string_view path = target.substr(0, target.find('?'));
  const mock::WireFormat* f = mock::format_for_path(path);
  std::string body;
  std::string type = "application/json";
  if (f != nullptr) {
    body = f->error_answer(status, message, std::nullopt).body;
    type = f->error_content_type(target);
  } else {
    body = nlohmann::json{{"error", {{"code", status}, {"message", message}}}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  out += "Content-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n" + body;
  return out;
}

/// Why cpp-httplib's client (https:// upstreams) got no answer, in words (its to_string() says
/// "Write", "Read", "Connection").
std::string httplib_reason(httplib::Error err, const ProxyOptions& o) {
  switch (err) {
    case httplib::Error::Connection: return "could not connect (refused, unreachable, or no answer within " + std::to_string(o.connect_timeout_s) + " s)";
    case httplib::Error::BindIPAddress: return "could not bind the local address";
    case httplib::Error::Read: return "the connection failed while reading the answer (closed, reset, or silent for " + std::to_string(o.read_timeout_s) + " s)";
    case httplib::Error::Write: return "the connection failed while sending the request (closed or reset)";
    case httplib::Error::ExceedRedirectCount: return "too many redirects";
    case httplib::Error::Canceled: return "the answer was canceled";
    case httplib::Error::SSLConnection: return "the TLS handshake failed";
    case httplib::Error::SSLLoadingCerts: return "the system's CA certificates could not be loaded";
    case httplib::Error::SSLServerVerification: return "its TLS certificate did not verify";
    case httplib::Error::UnsupportedMultipartBoundaryChars: return "a bad multipart boundary";
    case httplib::Error::Compression: return "the answer could not be decompressed";
    case httplib::Error::ConnectionTimeout: return "connecting timed out after " + std::to_string(o.connect_timeout_s) + " s";
    default: return "an unknown client error (" + httplib::to_string(err) + ")";
  }
}

/// The upstream's request head for `req` (request line and headers, ending in CRLF CRLF): the
/// client's headers minus the hop-by-hop ones, Host for the upstream, Accept-Encoding: identity.
std::string upstream_head(const mock::HttpRequest& req, const UpstreamUrl& u) {
  std::string head;
  head.reserve(256 + req.target.size());
  head += req.method;
  head += ' ';
  head += u.prefix;
  head += req.target;
  head += " HTTP/1.1\r\nHost: ";
  head += u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  if (u.port != 80) head += ":" + std::to_string(u.port);
  head += "\r\n";
  for (const auto& [name, value] : req.headers) {
    if (dropped_request_header(name)) continue;
    head += name;
    head += ": ";
    head += value;
    head += "\r\n";
  }
  head += "Accept-Encoding: identity\r\n";
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    head += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
  }
  head += "\r\n";
  return head;
}

}  // namespace

std::string UpstreamUrl::origin() const {
  const bool ipv6 = host.find(':') != std::string::npos;  // RFC 3986 3.2.2: an IPv6 literal in brackets
  return scheme + "://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<UpstreamUrl> parse_upstream_url(std::string_view text, std::string& error) {
  const auto bad = [&](const std::string& why) -> std::optional<UpstreamUrl> {
    // Quoted as text from outside (valid UTF-8, control characters escaped), and a password
    // before an '@' never echoed: the user part of the authority shows as "***".
    std::string shown(text);
    const std::size_t scheme_end = shown.find("://");
    const std::size_t start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    const std::size_t at = shown.find('@', start);
    if (at != std::string::npos && shown.find_first_of("/?#", start) > at) shown.replace(start, at - start, "***");
    error = "expected http://HOST[:PORT][/PATH] or https://HOST[:PORT][/PATH], found " +
            mock::json_text::quote_input(shown, 200) + " (" + why + ")";
    return std::nullopt;
  };
  UpstreamUrl u;
  std::string_view rest;
  if (text.rfind("http://", 0) == 0) {
    u.scheme = "http";
    u.port = 80;
    rest = text.substr(7);
  } else if (text.rfind("https://", 0) == 0) {
    u.scheme = "https";
    u.port = 443;
    rest = text.substr(8);
  } else {
    return bad("the scheme must be http or https");
  }
  if (rest.find_first_of("?#") != std::string_view::npos) return bad("a query or fragment is not allowed");
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view prefix = rest.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    for (const char c : prefix) {
      const auto b = static_cast<unsigned char>(c);
      if (b <= 0x20 || b >= 0x7F) return bad("the path holds a space, a control character or a byte outside ASCII (percent-encode it)");
    }
    u.prefix = std::string(prefix);
  }
  if (authority.find('@') != std::string_view::npos) return bad("credentials in the URL are not allowed; pass them as headers");
  if (authority.empty()) return bad("no host");
  std::string_view host = authority;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("an unclosed IPv6 address");
    host = authority.substr(1, close - 1);
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':') return bad("text after the IPv6 address");
  } else {
    const std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    authority = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
  }
  if (host.empty()) return bad("no host");
  for (char c : host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '_')) return bad("a bad host");
  }
  u.host = std::string(host);
  if (!authority.empty()) {
    const std::string_view port = authority.substr(1);
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return bad("a bad port");
    const int p = std::stoi(std::string(port));
    if (p < 1 || p > 65535) return bad("the port must be 1..65535");
    u.port = p;
  }
  return u;
}

RecordingProxy::RecordingProxy(ProxyOptions options, SessionRecorder* recorder)
    : options_(std::move(options)), recorder_(recorder) {}

RecordingProxy::~RecordingProxy() { stop(); }

int RecordingProxy::start() {
  if (listen_fd_ >= 0) throw std::runtime_error("the proxy is already started");
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket(): " + std::string(std::strerror(errno)));
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(options_.port));
  if (inet_pton(AF_INET, options_.host.c_str(), &addr.sin_addr) != 1) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error("cannot listen on " + options_.host + ": not an IPv4 address");
  }
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 512) != 0) {
    const std::string why = std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " + why);
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (::pipe2(wake_fds_, O_CLOEXEC) != 0) throw std::runtime_error("pipe(): " + std::string(std::strerror(errno)));
  accept_thread_ = std::thread([this] { accept_loop(); });
  return port_;
}

void RecordingProxy::stop() {
  if (stopping_.exchange(true)) return;
  if (wake_fds_[1] >= 0) {
    const char c = 0;
    [[maybe_unused]] const auto n = ::write(wake_fds_[1], &c, 1);
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    for (httplib::Client* c : clients_) c->stop();
    for (UpstreamConnection* c : plain_clients_) c->stop();
  }
  std::list<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (int& fd : wake_fds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

nlohmann::json RecordingProxy::journal() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nlohmann::json(journal_);
}

std::string RecordingProxy::base_url() const { return "http://" + options_.host + ":" + std::to_string(port_); }

void RecordingProxy::accept_loop() {
  while (!stopping_.load()) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fds_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0 || stopping_.load()) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.insert(fd);
    // Join the threads of connections that have ended (a client without keep-alive opens one per
    // request): an unjoined thread keeps its stack until stop().
    for (const std::thread::id id : finished_) {
      const auto t = std::find_if(threads_.begin(), threads_.end(), [&](const std::thread& x) { return x.get_id() == id; });
      if (t == threads_.end()) continue;
      t->join();  // it only closes its sockets after saying it finished
      threads_.erase(t);
    }
    finished_.clear();
    threads_.emplace_back([this, fd] { serve_connection(fd); });
  }
}

void RecordingProxy::serve_connection(int fd) {
  // http:// upstreams: our own connection (one sendmsg per request, one send to the client per
  // upstream read); https://: cpp-httplib's client (TLS), one send to the client per piece.
  std::unique_ptr<UpstreamConnection> plain;
  std::unique_ptr<httplib::Client> tls;
  if (options_.upstream.scheme == "http") {
    plain = std::make_unique<UpstreamConnection>(options_.upstream.host, options_.upstream.port, options_.connect_timeout_s,
                                                 options_.read_timeout_s);
  } else {
    tls = std::make_unique<httplib::Client>(options_.upstream.origin());
    tls->set_connection_timeout(options_.connect_timeout_s, 0);
    tls->set_read_timeout(options_.read_timeout_s, 0);
    tls->set_write_timeout(options_.read_timeout_s, 0);
    tls->set_keep_alive(true);
    tls->set_tcp_nodelay(true);
    tls->set_decompress(false);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (plain) plain_clients_.insert(plain.get());
    if (tls) clients_.insert(tls.get());
  }
  // Nothing a client or upstream sends ends the proxy: an exception inside hiccup (a bug) ends
  // this connection only, counted in internal_errors().
  try {
  mock::RequestParser parser(mock::ParserLimits{64u << 10, 64u << 20});
  char buf[16384];
  bool open = true;
  while (open && !stopping_.load()) {
    mock::RequestParser::Status st = parser.parse();
    if (st == mock::RequestParser::Status::kHeadDone) {
      if (parser.request().expect_continue) send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");
      st = parser.parse();
    }
    if (st == mock::RequestParser::Status::kNeedMore || st == mock::RequestParser::Status::kHeadDone) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      parser.feed(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (st == mock::RequestParser::Status::kBad) {
      send_all(fd, own_answer(parser.error_status(), "hiccup proxy: " + parser.error(), parser.request().target, false));
      break;
    }
    // A complete request: relay it.
    const mock::HttpRequest& req = parser.request();
    ++relayed_;
    const bool keep_alive = req.keep_alive;
    Exchange* ex = recorder_ ? recorder_->begin(req.method, req.target, req.body) : nullptr;

    // `hiccup proxy`: the scripted attempt for this request, matched as the script engine does.
    std::optional<mock::Attempt> scripted;
    std::unique_ptr<LiveFaultGate> gate;
    std::size_t entry = 0;
    bool journaled = false;  // this request has journal entry `entry`
    const mock::WireFormat* format = mock::format_for_path(std::string_view(req.target).substr(0, req.target.find('?')));
    if (options_.faults != nullptr && format != nullptr && req.method == "POST") {
      const mock::DecodedRequest d = format->decode_request(req.target, req.body);
      if (!d.contents.is_null()) {
        const int turn = mock::turn_index(d.contents);
        std::lock_guard<std::mutex> lock(mu_);
        const int attempt = attempts_[turn]++;
        entry = journal_.size();
        journaled = true;
        journal_.push_back(nlohmann::json{{"request", entry}, {"turn", turn}, {"attempt", attempt}, {"played", "live"},
                                          {"status", 0}, {"fault", ""}, {"upstream", true}});
        const auto& turns = options_.faults->turns;
        if (turn < static_cast<int>(turns.size()) && !turns[static_cast<std::size_t>(turn)].attempts.empty()) {
          const auto& attempts = turns[static_cast<std::size_t>(turn)].attempts;
          scripted = attempts[std::min(static_cast<std::size_t>(attempt), attempts.size() - 1)];
        }
        if (scripted && !scripted->status && d.streaming) {
          bool filter = false;
          for (const mock::Event& e : scripted->events) {
            if (const auto* f = std::get_if<mock::FinishEvent>(&e)) filter = filter || f->reason == mock::FinishReason::kContentFilter;
          }
          const rut::ICodec* codec = rut::codec_for(format->name());
          const mock::Script::Timing& timing = options_.faults->timing;
          if ((scripted->fault || filter || LiveFaultGate::has_timing(*scripted, timing)) && codec != nullptr) {
            mock::ResponseContext ctx;
            ctx.model = d.model;
            ctx.journal_index = entry;
            ctx.include_usage = d.include_usage;
            gate = std::make_unique<LiveFaultGate>(*format, *codec, *scripted, ctx, options_.stall_ms_per_s,
                                                   options_.max_delay_ms, timing);
          }
        }
      }
    }
    if (scripted && scripted->status) {
      // A scripted HTTP error: answered here, upstream is not asked.
      const mock::ErrorAnswer a = format->error_answer(*scripted->status, format->default_message(*scripted->status), scripted->retry_after_s);
      std::string out = "HTTP/1.1 " + std::to_string(*scripted->status) + " " + reason_phrase(*scripted->status) + "\r\n";
      out += "Content-Type: " + format->error_content_type(req.target) + "\r\nContent-Length: " + std::to_string(a.body.size()) + "\r\n";
      for (const auto& [name, value] : a.headers) out += name + ": " + value + "\r\n";
      if (!keep_alive) out += "Connection: close\r\n";
      out += "\r\n" + a.body;
      {
        std::lock_guard<std::mutex> lock(mu_);
        journal_[entry]["played"] = "status";
        journal_[entry]["status"] = *scripted->status;
        journal_[entry]["upstream"] = false;
      }
      if (ex) ex->end(AnswerEnd::kNoAnswer);
      if (!send_all(fd, out) || !keep_alive) break;
      parser.next();
      continue;
    }

    bool head_sent = false;
    bool client_ok = true;
    bool client_gone = false;  // the client closed its connection mid-answer (recorded as what it got)
    bool client_left = false;  // the same, for the journal (`hiccup proxy`): gate or not, recorder or not
    bool pause_cut = false;    // a stop ended a pause before its time
    // Whether the client has closed its side (FIN, RST): a client that leaves mid-stream must not
    // have the rest of the upstream answer recorded as delivered to it.
    const auto client_hung_up = [fd] {
      pollfd p{fd, POLLRDHUP, 0};
      return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    };
    int status = 0;
    GateStep::End gate_end = GateStep::End::kGoOn;
    // What is to go to the client: sent by flush(), before every blocking upstream read (plain) or
    // after every piece (https), so a frame waits only for the rest of the read it came in.
    // The recorder (which decodes every frame: 5-7 µs of CPU each) reads the bytes after they
    // went to the client, so recording delays no frame.
    std::string pending;
    std::string to_record;
    bool hangup_checked = false;  // client_hung_up() was asked since the last flush()
    const auto flush = [&] {
      hangup_checked = false;
      if (!pending.empty()) {
        const bool was_ok = client_ok;
        client_ok = client_ok && send_all(fd, pending);
        pending.clear();
        if (was_ok && !client_ok && !stopping_.load()) client_left = true;
        // The client left mid-answer (stop() shuts client sockets down itself): recorded as what it got.
        if (ex && !gate && was_ok && !client_ok && !stopping_.load()) client_gone = true;
      }
      if (!to_record.empty()) {
        if (client_ok || gate) ex->body(to_record);
        to_record.clear();
      }
      return client_ok;
    };
    const auto end_exchange = [&](AnswerEnd how) {
      flush();
      if (ex) ex->end(how);
    };
    // Plays a gate's steps on the client connection; the first step that ends the answer ends it.
    const auto run_steps = [&](const std::vector<GateStep>& steps) {
      for (const GateStep& step : steps) {
        if (step.pause_ms > 0) {
          flush();
          // What the gate applied is journaled before the pause, however long it lasts.
          if (journaled && !gate->applied().empty()) {
            std::lock_guard<std::mutex> lock(mu_);
            journal_[entry]["fault"] = gate->applied();
            journal_[entry]["played"] = "live+fault";
          }
        }
        // Slept in 20 ms steps: a stop, or a client that leaves during the pause (an endless
        // stall among them), ends it.
        for (double left = step.pause_ms; left > 0 && client_ok && !stopping_.load(); left -= 20) {
          std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long long>(std::min(left, 20.0) * 1000)));
          if (client_hung_up()) {
            client_ok = false;
            client_left = !stopping_.load();
          }
        }
        pause_cut = pause_cut || (step.pause_ms > 0 && stopping_.load());
        if (!step.bytes.empty()) append_chunk(pending, step.bytes);
        if (step.end == GateStep::End::kTerminate) pending += "0\r\n\r\n";
        if (step.end != GateStep::End::kGoOn) {
          gate_end = step.end;
          return;
        }
      }
    };
    const auto on_head = [&](int answer_status, const std::vector<std::pair<std::string, std::string>>& answer_headers) {
      status = answer_status;
      if (answer_status != 200) gate.reset();  // faults act on streams; an upstream error goes through
      std::string head = "HTTP/1.1 " + std::to_string(answer_status) + " " + reason_phrase(answer_status) + "\r\n";
      std::vector<std::pair<std::string, std::string>> headers;
      for (const auto& [name, value] : answer_headers) {
        headers.emplace_back(lower(name), value);
        if (dropped_answer_header(name)) continue;
        head += name + ": " + value + "\r\n";
      }
      head += "Transfer-Encoding: chunked\r\n";
      if (!keep_alive) head += "Connection: close\r\n";
      head += "\r\n";
      if (ex) ex->head(answer_status, headers);
      head_sent = true;
      pending += head;
      return client_ok;
    };
    const auto on_body = [&](std::string_view data) {
      if (gate) {
        if (ex) to_record.append(data);
        run_steps(gate->feed(data));
        return client_ok && gate_end == GateStep::End::kGoOn;  // a fault that ended the answer drops upstream
      }
      // Recording: a client that has left gets nothing more, and the recorder is handed only what
      // went to the client (flush() below), so the rest of the upstream answer is not recorded as
      // delivered.
      // Asked once per upstream read: pieces of one read leave in one send (flush()), so a client
      // seen gone at a later piece of the read gets none of them either.
      if ((ex || journaled) && client_ok && !hangup_checked) {
        hangup_checked = true;
        if (client_hung_up()) {
          client_ok = false;
          client_gone = ex != nullptr && !stopping_.load();
          client_left = !stopping_.load();
        }
      }
      append_chunk(pending, data);
      if (ex) to_record.append(data);
      return client_ok;
    };
    bool ok = false;
    std::string upstream_error;  // why upstream gave no (whole) answer, in words
    if (plain) {
      AnswerParser answer(req.method == "HEAD");
      answer.on_head = [&](const AnswerHead& h) { return on_head(h.status, h.headers); };
      answer.on_body = on_body;
      const UpstreamConnection::Outcome outcome = plain->exchange(upstream_head(req, options_.upstream), req.body, answer, flush);
      ok = outcome == UpstreamConnection::Outcome::kComplete;
      if (!ok && outcome != UpstreamConnection::Outcome::kCanceled) upstream_error = plain->error();
    } else {
      httplib::Request up;
      up.method = req.method;
      up.path = options_.upstream.prefix + req.target;
      for (const auto& [name, value] : req.headers) {
        if (!dropped_request_header(name)) up.headers.emplace(name, value);
      }
      up.headers.emplace("Accept-Encoding", "identity");
      up.body = req.body;
      up.response_handler = [&](const httplib::Response& r) {
        const std::vector<std::pair<std::string, std::string>> headers(r.headers.begin(), r.headers.end());
        on_head(r.status, headers);
        return flush();
      };
      up.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
        const bool go_on = on_body(std::string_view(data, n));
        return flush() && go_on;
      };
      httplib::Response res;
      httplib::Error err = httplib::Error::Success;
      ok = tls->send(up, res, err);
      if (!ok && err != httplib::Error::Canceled) upstream_error = httplib_reason(err, options_);
    }
    if (gate) {
      if (ok && gate_end == GateStep::End::kGoOn) run_steps(gate->finish());
      std::lock_guard<std::mutex> lock(mu_);
      journal_[entry]["fault"] = gate->applied();
      if (!gate->applied().empty()) journal_[entry]["played"] = "live+fault";
      if (gate->delayed_s() > 0) journal_[entry]["delay_s"] = gate->delayed_s();
    }
    if (journaled) {
      std::lock_guard<std::mutex> lock(mu_);
      journal_[entry]["status"] = head_sent ? status : 502;
      if (!head_sent) journal_[entry]["played"] = "upstream-failed";
      if (!upstream_error.empty() && !client_left && !stopping_.load()) journal_[entry]["upstream_error"] = upstream_error;
      // Why the client got less than the whole answer, when it was not upstream: the client
      // closed its connection, or the proxy was stopped (SIGINT/SIGTERM) in the middle of it.
      if (client_left) journal_[entry]["client_left"] = true;
      else if (stopping_.load() && (pause_cut || !ok)) journal_[entry]["proxy_stopped"] = true;
    }
    if (gate_end == GateStep::End::kReset) {
      flush();  // what the fault lets through leaves before the RST
      linger lg{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
      end_exchange(AnswerEnd::kConnectionLost);
      break;
    }
    if (gate_end == GateStep::End::kFin) {
      end_exchange(AnswerEnd::kConnectionLost);
      break;
    }
    if (gate_end == GateStep::End::kTerminate) {
      end_exchange(AnswerEnd::kComplete);
      if (!client_ok) break;
    } else if (!head_sent) {
      end_exchange(AnswerEnd::kNoAnswer);
      const std::string message = "hiccup proxy: the upstream " + options_.upstream.origin() + options_.upstream.prefix +
                                  " gave no answer: " + (upstream_error.empty() ? "the request was canceled" : upstream_error);
      if (!send_all(fd, own_answer(502, message, req.target, keep_alive))) break;
    } else if (client_gone) {
      // The client left mid-answer (upstream was dropped there): recorded as what it got.
      if (ex) ex->end(AnswerEnd::kClientGone);
      break;
    } else if (ok) {
      pending += "0\r\n\r\n";
      end_exchange(AnswerEnd::kComplete);
      if (!client_ok) break;
    } else {
      // Upstream closed or reset mid-answer, or the proxy was stopped in the middle of it: the
      // client sees the same (no chunked terminator); a stop is not the provider's doing.
      end_exchange(stopping_.load() ? AnswerEnd::kProxyStopped : AnswerEnd::kConnectionLost);
      break;
    }
    if (!keep_alive) break;
    parser.next();
  }
  } catch (const std::exception&) {
    internal_errors_.fetch_add(1);
  } catch (...) {
    internal_errors_.fetch_add(1);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    clients_.erase(tls.get());
    plain_clients_.erase(plain.get());
    open_fds_.erase(fd);
    finished_.push_back(std::this_thread::get_id());
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

}  // namespace harness::record
