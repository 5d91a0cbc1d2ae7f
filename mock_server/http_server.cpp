// MockHttpServer on its own sockets. One event-loop thread (epoll, level-triggered) accepts
// connections, reads and parses requests (http_wire) and writes every answer whose plan needs no
// real-time pause with non-blocking sends, buffering what the socket does not take (EPOLLOUT).
// A plan that pauses (delay, stall, drain, idle before a reset) hands its connection to a worker
// thread with blocking I/O (PlanWriter) for the rest of the connection's life. Each connection
// owns its socket, so stalls, FIN and RST act on it directly. This file is part of the I/O shell:
// real time lives here.
#include "mock_server/http_server.h"

#include "mock_server/eventstream/cloud_paths.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/sockios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <csignal>
#include <cstring>
#include <strings.h>
#include <mutex>
#include <set>
#include <stdexcept>

#include "mock_server/http_wire.h"
#include "mock_server/json_text.h"
#include "mock_server/websocket/ws_session.h"

namespace mock {

/// A connection moved from the event loop to a worker thread, with the plan it must play first
/// (when `engine` is set) and the parser holding any bytes the client sent after that request.
struct MockHttpServer::Handoff {
  int fd = -1;
  RequestParser parser;
  std::shared_ptr<Responder> engine;  // null: no plan waits
  Plan plan;
  std::function<DirectAnswer()> deferred;  // set: make this answer first (Route::deferred)
  bool head_only = false;
  bool keep_alive = true;
  bool chunked = true;  // false: an HTTP/1.0 client, a stream goes close-delimited
  bool websocket = false;  // the parser's request is a WebSocket upgrade (mock_server/websocket/)
};

struct MockHttpServer::Shared {
  std::mutex mu;
  std::condition_variable cv;       // `active` or `threads` fell
  std::condition_variable work_cv;  // a connection waits in `pending`, or stopping
  int active = 0;         // connections accepted and not yet closed (event loop and workers)
  int threads = 0;        // worker threads alive (serving or idle)
  int idle = 0;           // worker threads waiting for a connection
  std::deque<Handoff> pending;  // connections handed to idle worker threads
  std::set<int> fds;      // connections on worker threads, for stop() to shut down
  bool accept_paused = false;   // the loop stopped accepting at max_connections
  std::atomic<bool> stopping{false};
  int wake_fd = -1;       // eventfd that wakes the event loop (stop, a worker closed a connection)
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();

  void wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd, &one, sizeof one);
  }
};

namespace {

using Clock = std::chrono::steady_clock;

/// True when the peer of `fd` has hung up (EOF, RDHUP, error).
bool peer_gone(int fd, int timeout_ms) {
  pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
  const int r = poll(&p, 1, timeout_ms);
  if (r <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    const auto n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    // Pipelined bytes from a live client: poll would return at once, so sleep the step.
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  }
  return false;
}

/// Waits until the peer's kernel has acknowledged every byte sent on `fd` (SIOCOUTQ is 0), at
/// most `max_ms`. A reset discards data the peer has received but not yet read, so a reset must
/// not race the bytes it follows: first they arrive, then `idle_ms` lets the client read them.
/// Polled every 1, 2, 4, then 8 ms: a client that delays its ACK (Linux: up to 40 ms on loopback)
/// costs about 8 wake-ups, not 40 (an in-stream error on every request took 955 µs of CPU each).
void wait_acked(int fd, int max_ms, const std::atomic<bool>& stopping) {
  for (int waited = 0, step = 1; waited < max_ms && !stopping.load(); waited += step, step = std::min(step * 2, 8)) {
    int unacked = 0;
    if (ioctl(fd, SIOCOUTQ, &unacked) != 0 || unacked == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(step, max_ms - waited)));
  }
}

/// Waits `ms` real milliseconds; returns false early when the client hangs up, the server stops or
/// `cancel` (when given) becomes true.
bool pause_ms(double ms, int fd, const std::atomic<bool>& stopping, const std::atomic<bool>* cancel = nullptr) {
  // At most two real days: longer than any client's idle limit (one real day without one), and a
  // scripted stall of 1e15 s would overflow the deadline (it then passed at once, as no stall).
  constexpr double kLongestPauseMs = 2 * 86400e3;
  const auto deadline = Clock::now() + std::chrono::microseconds(static_cast<long long>(std::min(ms, kLongestPauseMs) * 1000));
  while (!stopping.load() && !(cancel && cancel->load())) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return true;
    // poll() returns at once when the client hangs up or stop() shuts the socket down; the step
    // bounds how late `cancel` is seen (an abandoned harness case) and costs a wake-up each.
    const int step = static_cast<int>(std::min<long long>(left.count(), 20));
    if (peer_gone(fd, step)) return false;
  }
  return false;
}

/// Aborts the connection with RST (the caller closes `fd` afterwards).
void reset_connection(int fd) {
  linger lg{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  sockaddr sa{};
  sa.sa_family = AF_UNSPEC;
  connect(fd, &sa, sizeof sa);
}

/// Sends all of `data` (MSG_NOSIGNAL: a hung-up client is an error, not a signal); false when
/// the client is gone, the server stops, or the client reads nothing for `timeout_ms`.
bool send_all(int fd, std::string_view data, int timeout_ms, const std::atomic<bool>& stopping) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, timeout_ms) <= 0 || stopping.load()) return false;
      if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
      continue;
    }
    return false;
  }
  return true;
}

/// The WebSocket transport's view of a worker thread's blocking socket (ws::Io).
class SocketWsIo final : public ws::Io {
 public:
  SocketWsIo(int fd, const ServerOptions& options, const std::atomic<bool>& stopping, Clock::time_point origin)
      : fd_(fd), options_(options), stopping_(stopping), origin_(origin) {}
  bool send(std::string_view bytes) override { return send_all(fd_, bytes, options_.io_timeout_ms, stopping_); }
  long recv(char* buf, std::size_t n, int timeout_ms) override {
    if (stopping_.load()) return 0;
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, std::max(timeout_ms, 1));
    if (r == 0) return -2;
    if (r < 0) return -1;
    const ssize_t got = ::recv(fd_, buf, n, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return -2;
    return got < 0 ? -1 : static_cast<long>(got);
  }
  bool pause(double ms) override { return pause_ms(ms, fd_, stopping_, options_.cancel_pauses); }
  void reset() override { reset_connection(fd_); }
  void settle_sent() override { wait_acked(fd_, 1000, stopping_); }
  double now_ms() override { return std::chrono::duration<double, std::milli>(Clock::now() - origin_).count(); }

 private:
  int fd_;
  const ServerOptions& options_;
  const std::atomic<bool>& stopping_;
  Clock::time_point origin_;
};

/// Serves an upgraded WebSocket connection on a worker thread until it ends.
void serve_websocket(int fd, RequestParser& parser, RequestRouter& router, const ServerOptions& options,
                     const std::atomic<bool>& stopping, Clock::time_point origin) {
  const std::string first_bytes = parser.take_following();  // frames sent with the upgrade
  SocketWsIo io(fd, options, stopping, origin);
  ws::SessionOptions so;
  so.stall_ms_per_s = options.stall_ms_per_s;
  so.max_delay_ms = options.max_delay_ms;
  so.idle_timeout_ms = options.keep_alive_timeout_ms;
  so.max_message_bytes = options.max_body_bytes;
  ws::serve(io, parser.request(), router, so, first_bytes);
}

/// True when `plan` can be played without a real-time pause: only writes, ending with the
/// chunked terminator (or the whole body) or with a FIN that waits for nothing. Such plans run
/// on the event loop; the others on a worker thread (PlanWriter).
bool plays_without_pause(const Plan& plan, const ServerOptions& options) {
  for (const auto& action : plan.actions) {
    if (!std::holds_alternative<WriteAction>(action)) return false;
  }
  const int fin_delay_ms =
      options.max_delay_ms >= 0 ? std::min(plan.ending_delay_ms, options.max_delay_ms) : plan.ending_delay_ms;
  return plan.ending == Ending::kTerminator || (plan.ending == Ending::kFin && fin_delay_ms <= 0);
}

/// Executes one plan on a connection's socket (blocking I/O) and settles its journal entry.
/// Returns whether the connection may carry another request.
class PlanWriter {
 public:
  PlanWriter(const ServerOptions& options, int fd, const std::atomic<bool>& stopping, Clock::time_point origin)
      : options_(options), fd_(fd), stopping_(stopping), origin_(origin) {}

  /// Plays `plan` from `engine` (settled there) on the connection; `chunked` false (an HTTP/1.0
  /// client) sends a stream close-delimited.
  bool run(Responder& engine, const Plan& plan, bool head_only, bool keep_alive, bool chunked) {
    engine_ = &engine;
    return plan.streaming ? stream(plan, keep_alive, chunked) : whole(plan, head_only, keep_alive);
  }

 private:
  double since_start_ms() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - origin_).count();
  }
  int cap(int ms) const { return options_.max_delay_ms >= 0 ? std::min(ms, options_.max_delay_ms) : ms; }
  bool send(std::string_view data) const { return send_all(fd_, data, options_.io_timeout_ms, stopping_); }

  /// A non-streaming answer: stalls first (nothing, not even the status line, before they end),
  /// then head and body in one send; or, for a FIN/RST ending, the head announcing the whole
  /// body, its first body_bytes, then the end.
  bool whole(const Plan& plan, bool head_only, bool keep_alive) {
    const std::size_t index = plan.journal_index;
    for (const auto& action : plan.actions) {
      const auto* stall = std::get_if<StallAction>(&action);
      if (stall == nullptr) continue;
      if (!pause_ms(stall->seconds * options_.stall_ms_per_s, fd_, stopping_, options_.cancel_pauses)) {
        // The client timed out (or the server stops): answer nothing more.
        engine_->settle(index, Delivery{0, true, since_start_ms()});
        return false;
      }
    }
    if (plan.ending != Ending::kTerminator) {
      // The head promises the whole body and a connection kept open: the end is a surprise
      // (with `Connection: close`, clients would read the FIN as the body's end and report a
      // length mismatch instead of a closed socket).
      std::string out = response_head(plan.status, plan.content_type, plan.headers,
                                       static_cast<long long>(plan.body.size()), true);
      out.append(plan.body, 0, std::min(plan.body_bytes, plan.body.size()));
      send(out);
      end_connection(plan.ending, plan.ending_delay_ms);
      engine_->settle(index, Delivery{0, true, since_start_ms()});
      return false;
    }
    std::string out = response_head(plan.status, plan.content_type, plan.headers,
                                    static_cast<long long>(plan.body.size()), keep_alive);
    if (!head_only) out += plan.body;
    // Settle optimistically before the write: a client that has read the answer may ask for the
    // journal (or send its next request) before a settle after the write would run. A failed
    // write settles again as undelivered (the last report wins).
    engine_->settle(index, Delivery{0, false, since_start_ms()});
    const bool sent = send(out);
    if (!sent) engine_->settle(index, Delivery{0, true, since_start_ms()});
    return sent && keep_alive;
  }

  /// A chunked stream: one send per WriteAction; the head goes with the first write and the
  /// terminator with the last, unless a pause or a fault's ending separates them.
  bool stream(const Plan& plan, bool keep_alive, bool chunked) {
    const std::size_t index = plan.journal_index;
    // HTTP/1.0 knows no chunked coding (RFC 9112 §7.1): its stream ends when the connection does.
    if (!chunked) keep_alive = false;
    std::string pending = response_head(plan.status, plan.content_type, plan.headers,
                                        chunked ? kChunkedLength : kCloseDelimited,
                                        chunked && (keep_alive || plan.ending != Ending::kTerminator));
    int actions_done = 0;
    bool gone = false;
    bool ended = false;  // the terminator went out with the last write
    const std::size_t n = plan.actions.size();
    for (std::size_t i = 0; i < n && !gone; ++i) {
      const Action& action = plan.actions[i];
      if (auto* w = std::get_if<WriteAction>(&action)) {
        // Settle optimistically before the write: a fast client may send its next request
        // (answering this attempt's calls) before the settle below runs. A failed write
        // settles again with the real progress (the last report wins). Before the last write
        // the answer's end time goes too: a client that has read the last byte may ask for the
        // journal at once (an MCP tools/call with progress was read with ended_ms -1, "the call
        // took -63 ms", when the settle after the write had not run yet).
        engine_->settle(index, Delivery{actions_done + 1, false, i + 1 == n ? since_start_ms() : -1.0});
        if (chunked) append_chunk(pending, w->bytes);
        else pending += w->bytes;
        if (chunked && i + 1 == n && plan.ending == Ending::kTerminator) {
          pending += kChunkTerminator;
          ended = true;
        }
        if (!send(pending)) {
          gone = true;
          break;
        }
        pending.clear();
      } else {
        if (!pending.empty() && !send(pending)) {
          gone = true;
          break;
        }
        pending.clear();
        bool waited = false;
        if (auto* d = std::get_if<DrainAction>(&action)) {
          wait_acked(fd_, 1000, stopping_);
          waited = pause_ms(cap(d->pause_ms), fd_, stopping_, options_.cancel_pauses);
        } else {
          waited = pause_ms(std::get<StallAction>(action).seconds * options_.stall_ms_per_s, fd_, stopping_, options_.cancel_pauses);
        }
        if (!waited) {
          gone = !stopping_.load();
          engine_->settle(index, Delivery{actions_done, gone, since_start_ms()});
          return false;
        }
      }
      ++actions_done;
    }
    if (gone) {
      engine_->settle(index, Delivery{actions_done, true, since_start_ms()});
      return false;
    }
    bool open = false;
    if (plan.ending == Ending::kTerminator) {
      if (!ended && chunked) pending += kChunkTerminator;
      open = ended || pending.empty() || send(pending);
      open = open && keep_alive;
      if (!chunked) shutdown(fd_, SHUT_WR);  // the end of a close-delimited body
    } else {
      if (!pending.empty()) send(pending);
      end_connection(plan.ending, plan.ending_delay_ms);
    }
    engine_->settle(index, Delivery{actions_done, false, since_start_ms()});
    return open;
  }

  /// FIN (after `delay_ms`) or RST (once every byte is acknowledged, after `delay_ms`).
  void end_connection(Ending ending, int delay_ms) {
    if (ending == Ending::kReset) {
      wait_acked(fd_, 1000, stopping_);
      pause_ms(cap(delay_ms), fd_, stopping_, options_.cancel_pauses);
      reset_connection(fd_);
    } else {
      pause_ms(cap(delay_ms), fd_, stopping_, options_.cancel_pauses);
      shutdown(fd_, SHUT_WR);
    }
  }

  Responder* engine_ = nullptr;
  const ServerOptions& options_;
  int fd_;
  const std::atomic<bool>& stopping_;
  Clock::time_point origin_;
};

/// Every request to one engine the caller owns.
class SingleEngineRouter : public RequestRouter {
 public:
  explicit SingleEngineRouter(ScriptEngine& engine)
      : engine_(std::shared_ptr<ScriptEngine>(), &engine) {}  // aliasing: not owned
  Route route(const std::string&, const std::string& target, const std::string&) override {
    if (auto c = cloud::make_cloud_responder(engine_, target)) return Route{std::move(c), target, {}};
    return Route{engine_, target, {}};
  }

 private:
  std::shared_ptr<ScriptEngine> engine_;
};

/// The answer to a request the parser refused or a request whose handling threw (no journal entry:
/// the engine never saw it, or did not finish): in the router's own envelope when it has one for
/// `target`, else the envelope of the provider whose path ends `target` (a session's /s/{id}
/// prefix aside), else of the provider of the engine the target routes to, else hiccup's own
/// {"error":{code,message}}. With `retry_after_s`, the answer carries a Retry-After header (the
/// provider's own, when it has its own form). May throw (a router's exception).
DirectAnswer refusal_answer(int status, const std::string& message, std::string_view target, RequestRouter& router,
                            std::optional<double> retry_after_s = std::nullopt) {
  if (std::optional<DirectAnswer> own = router.refusal(status, message, target)) {
    if (retry_after_s) own->headers.emplace_back("Retry-After", std::to_string(static_cast<long long>(*retry_after_s)));
    return std::move(*own);
  }
  const std::string_view path = target.substr(0, target.find('?'));
  const WireFormat* format = nullptr;
  std::string_view format_target = target;  // the target from the format's path on (a session prefix left out)
  for (std::size_t at = 0; at != std::string_view::npos && format == nullptr && !path.empty(); at = path.find('/', at + 1)) {
    format = format_for_path(path.substr(at));
    if (format) format_target = target.substr(at);
  }
  if (format == nullptr && !path.empty() && path.rfind("/_hiccup", 0) != 0) {
    const Route route = router.route("HEAD", std::string(target), "");  // HEAD: no side effect
    if (route.engine) format = wire_format(route.engine->error_provider());
  }
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  if (format) {
    ErrorAnswer answer = format->error_answer(status, message, retry_after_s);
    body = std::move(answer.body);
    headers = std::move(answer.headers);
    content_type = format->error_content_type(format_target);
  } else {
    body = nlohmann::json{{"error", {{"code", status}, {"message", message}}}}.dump();
  }
  // The header too where the provider says it only in the body (Gemini's RetryInfo): every HTTP
  // client reads Retry-After.
  const bool has_retry_after = std::any_of(headers.begin(), headers.end(), [](const auto& h) {
    return h.first.size() == 11 && strncasecmp(h.first.c_str(), "retry-after", 11) == 0;
  });
  if (retry_after_s && !has_retry_after) {
    headers.emplace_back("Retry-After", std::to_string(static_cast<long long>(*retry_after_s)));
  }
  return DirectAnswer{status, std::move(content_type), std::move(body), std::move(headers)};
}

/// A last answer when even the envelope could not be built.
std::string bare_internal_error() {
  const std::string body = R"({"error":{"code":500,"message":"internal error in hiccup"}})";
  return response_head(500, "application/json", {}, static_cast<long long>(body.size()), false) + body;
}

/// refusal_answer as bytes (status line to body, `Connection: close`). Never throws: a last plain
/// 500 when the envelope cannot be built.
std::string refusal(int status, const std::string& message, std::string_view target, RequestRouter& router,
                    std::optional<double> retry_after_s = std::nullopt) {
  try {
    const DirectAnswer a = refusal_answer(status, message, target, router, retry_after_s);
    return response_head(a.status, a.content_type, a.headers, static_cast<long long>(a.body.size()), false) + a.body;
  } catch (...) {
    return bare_internal_error();
  }
}

/// The 503 for a request that needs a worker thread when none is free: Retry-After 1 s.
std::string overloaded(std::string_view target, RequestRouter& router, int max_workers) {
  return refusal(503,
                 "the mock server has no worker thread free for this request (" + std::to_string(max_workers) +
                     " busy, --max-workers); retry after 1 s",
                 target, router, 1.0);
}

/// The 408 for a request whose line and headers took longer than `head_timeout_ms`.
std::string head_timed_out(RequestRouter& router, int head_timeout_ms) {
  return refusal(408,
                 "the request line and headers did not arrive within " + std::to_string(head_timeout_ms) +
                     " ms of their first byte",
                 "", router);
}

/// Makes a deferred answer; an exception it throws becomes a 500 in hiccup's envelope.
DirectAnswer make_deferred(const std::function<DirectAnswer()>& deferred) {
  try {
    return deferred();
  } catch (const std::exception& e) {
    DirectAnswer d;
    d.status = 500;
    d.body = nlohmann::json{{"error", {{"code", 500}, {"message", "internal error: " + json_text::escape_input(e.what(), 400)}}}}
                 .dump();
    return d;
  }
}

}  // namespace

std::string refusal_bytes(int status, const std::string& message, std::string_view target, RequestRouter& router) {
  return refusal(status, message, target, router);
}

Dispatch dispatch_request(RequestRouter& router, HttpRequest& request, double arrived_ms) {
  Dispatch d;
  try {
    Route route = router.route(request.method, request.target, request.body);
    if (!route.engine) {
      d.direct = std::move(route.direct);
      d.deferred = std::move(route.deferred);
      return d;
    }
    d.plan = route.engine->respond(
        Request{std::move(request.method), std::move(route.target), std::move(request.body), arrived_ms,
                std::move(request.headers), std::move(request.transport)});
    d.engine = std::move(route.engine);
    return d;
  } catch (const std::exception& e) {
    d.error = json_text::escape_input(e.what(), 400);
  } catch (...) {
    d.error = "an exception that is not a std::exception";
  }
  d.engine.reset();
  d.internal_error = true;
  const std::string message = "internal error in hiccup (a bug; the server goes on): " + d.error;
  try {
    d.direct = refusal_answer(500, message, request.target, router);  // (only method and body were moved)
  } catch (...) {
    d.direct = DirectAnswer{500, "application/json",
                            nlohmann::json{{"error", {{"code", 500}, {"message", message}}}}.dump(), {}};
  }
  return d;
}

MockHttpServer::MockHttpServer(ScriptEngine& engine, ServerOptions options)
    : own_router_(std::make_unique<SingleEngineRouter>(engine)), router_(*own_router_), options_(std::move(options)) {}

MockHttpServer::MockHttpServer(RequestRouter& router, ServerOptions options)
    : router_(router), options_(std::move(options)) {}

MockHttpServer::~MockHttpServer() { stop(); }

std::string MockHttpServer::base_url() const {
  // An IPv6 literal goes in brackets (RFC 3986 §3.2.2): http://[::1]:PORT.
  const bool v6 = options_.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + options_.host + "]" : options_.host) + ":" + std::to_string(port_);
}

/// The event loop: every connection starts here and stays unless a plan needs a pause.
class MockHttpServer::EventLoop {
 public:
  explicit EventLoop(MockHttpServer& server)
      : server_(server), options_(server.options_), shared_(*server.shared_),
        max_connections_(std::max(1, server.options_.max_connections)) {}

  void run() {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) return;  // nothing is served; stop() still returns
    set_listening(true);
    watch(shared_.wake_fd, EPOLLIN, EPOLL_CTL_ADD);
    // Deadlines are checked every tick: a tenth of the shortest timeout, 1–100 ms.
    const int tick_ms = std::clamp(std::min(options_.keep_alive_timeout_ms, options_.io_timeout_ms) / 10, 1, 100);
    auto next_sweep = Clock::now() + std::chrono::milliseconds(tick_ms);
    epoll_event events[256];
    while (!shared_.stopping.load()) {
      const int n = epoll_wait(epoll_fd_, events, 256, tick_ms);
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < n && !shared_.stopping.load(); ++i) {
        const int fd = events[i].data.fd;
        if (fd == shared_.wake_fd) {
          std::uint64_t count = 0;
          [[maybe_unused]] const auto r = ::read(shared_.wake_fd, &count, sizeof count);
          resume_accepting();
        } else if (fd == server_.listen_fd_) {
          accept_all();
        } else if (Conn* c = find(fd)) {
          guarded(fd, [&] {
            if (c->want_out) {
              on_writable(*c);
            } else {
              process(*c);
            }
          });
        }
      }
      const auto now = Clock::now();
      if (backoff_until_ && now >= *backoff_until_) {
        backoff_until_.reset();
        resume_accepting();
      }
      if (now >= next_sweep) {
        sweep(now);
        next_sweep = now + std::chrono::milliseconds(tick_ms);
      }
    }
    // Stopping: connections still here close now; an answer cut short settles as not delivered.
    int closed = 0;
    for (auto& c : conns_) {
      if (!c) continue;
      settle_failed(*c);
      close(c->fd);
      c.reset();
      ++closed;
    }
    close(epoll_fd_);
    std::lock_guard lock(shared_.mu);
    shared_.active -= closed;
    shared_.cv.notify_all();
  }

 private:
  enum class After { kNext, kClose, kFin };  // once the answer in `out` is sent

  struct Conn {
    explicit Conn(ParserLimits limits) : parser(limits) {}
    int fd = -1;
    RequestParser parser;
    std::string out;                // the answer being sent (one at a time per connection)
    std::size_t sent = 0;           // bytes of `out` sent
    std::vector<std::size_t> cuts;  // ends of the sends in `out`, ascending: one per WriteAction
    After after = After::kNext;
    // The engine whose plan is in `out`, to settle again when the answer fails or ends late.
    std::shared_ptr<Responder> engine;
    std::size_t journal_index = 0;
    std::vector<std::pair<std::size_t, int>> progress;  // (end in `out`, actions done once sent)
    Delivery delivered;                                  // what a complete send delivers
    bool late = false;              // the answer waited for EPOLLOUT: settle again at its end
    bool want_out = false;          // watched for EPOLLOUT (else EPOLLIN)
    bool watched = false;           // in the epoll set (a new connection joins only if it stays)
    Clock::time_point deadline;     // idle, I/O or head timeout
    std::optional<Clock::time_point> head_since;  // first byte of the request head being read
  };

  /// Runs `f` on connection `fd`'s behalf: an exception (dispatch_request answers those of routers
  /// and engines, so this is one of the server's own) is counted and closes that connection only.
  template <typename F>
  void guarded(int fd, F&& f) {
    try {
      f();
    } catch (...) {
      server_.internal_errors_.fetch_add(1);
      if (Conn* c = find(fd)) close_conn(*c, true);
    }
  }

  Conn* find(int fd) { return fd >= 0 && static_cast<std::size_t>(fd) < conns_.size() ? conns_[fd].get() : nullptr; }

  void watch(int fd, std::uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, op, fd, &ev);
  }

  /// Watches a connection for `events`, adding it to the epoll set on first use.
  void watch_conn(Conn& c, std::uint32_t events) {
    watch(c.fd, events, c.watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD);
    c.watched = true;
  }

  double since_start_ms() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - shared_.origin).count();
  }

  /// Accepts every connection waiting in the backlog, up to max_connections open at once.
  void accept_all() {
    while (!shared_.stopping.load()) {
      {
        std::lock_guard lock(shared_.mu);
        if (shared_.active >= max_connections_) {
          // A closing connection (here or on a worker) resumes accepting.
          shared_.accept_paused = true;
          set_listening(false);
          return;
        }
      }
      const int fd = accept4(server_.listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors or memory: stop watching the listen socket for 10 ms.
          set_listening(false);
          backoff_until_ = Clock::now() + std::chrono::milliseconds(10);
          return;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN: the backlog is empty
      }
      {
        std::lock_guard lock(shared_.mu);
        ++shared_.active;
      }
      // TCP_NODELAY comes from the listen socket (Linux copies it to accepted sockets).
      if (conns_.size() <= static_cast<std::size_t>(fd)) conns_.resize(static_cast<std::size_t>(fd) + 1);
      auto& c = conns_[static_cast<std::size_t>(fd)];
      c = std::make_unique<Conn>(ParserLimits{options_.max_head_bytes, options_.max_body_bytes});
      c->fd = fd;
      c->deadline = Clock::now() + std::chrono::milliseconds(options_.keep_alive_timeout_ms);
      // TCP_DEFER_ACCEPT: the request has usually arrived with the connection, so read it now
      // rather than after another epoll_wait (a client that reconnects for every request). The
      // connection joins the epoll set only if it is still here afterwards: one answered and
      // closed at once (a FIN or reset on every request) costs no epoll_ctl.
      Conn* const conn = c.get();
      guarded(fd, [&] { process(*conn); });
      if (find(fd) == conn && !conn->watched) watch_conn(*conn, EPOLLIN);
    }
  }

  /// Watches the listen socket again after max_connections or a shortage of descriptors.
  void resume_accepting() {
    if (backoff_until_ || listening_) return;
    {
      std::lock_guard lock(shared_.mu);
      if (shared_.active >= max_connections_) return;
      shared_.accept_paused = false;
    }
    set_listening(true);
    accept_all();
  }

  void set_listening(bool on) {
    if (on == listening_) return;
    watch(server_.listen_fd_, on ? std::uint32_t{EPOLLIN} : 0u, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL);
    listening_ = on;
  }

  /// Closes connections past their deadline: idle keep-alive ones, requests that stopped
  /// arriving, answers the client stopped reading (settled as not delivered in full).
  void sweep(Clock::time_point now) {
    for (auto& c : conns_) {
      if (!c || now < c->deadline) continue;
      if (!c->want_out && c->parser.reading_head() && c->head_since &&
          now >= *c->head_since + std::chrono::milliseconds(options_.head_timeout_ms)) {
        // A head trickling in (slowloris) or stalled half-way past its deadline: 408, then close.
        begin(*c, After::kClose);
        c->out = head_timed_out(server_.router_, options_.head_timeout_ms);
        c->cuts.push_back(c->out.size());
        send_out(*c);
        continue;
      }
      close_conn(*c, true);
    }
  }

  void close_conn(Conn& c, bool failed) {
    if (failed) settle_failed(c);
    const int fd = c.fd;
    close(fd);  // also leaves the epoll set
    conns_[static_cast<std::size_t>(fd)].reset();
    std::lock_guard lock(shared_.mu);
    --shared_.active;
    shared_.cv.notify_all();
    if (shared_.accept_paused) shared_.wake();
  }

  /// Settles the answer in `out` with how far it got (the actions whose bytes were all sent).
  void settle_failed(Conn& c) {
    if (!c.engine) return;
    int done = 0;
    for (const auto& [end, actions] : c.progress) {
      if (end <= c.sent) done = actions;
    }
    c.engine->settle(c.journal_index, Delivery{done, true, since_start_ms()});
    c.engine.reset();
  }

  /// Reads, parses and answers requests until the socket has nothing more or an answer waits
  /// for the client to read.
  void process(Conn& c) {
    bool progressed = false;
    bool may_have_more = true;  // a short recv emptied the socket: epoll says when more arrives
    while (true) {
      const RequestParser::Status status = c.parser.parse();
      if (status == RequestParser::Status::kHeadDone) {
        if (c.parser.request().expect_continue) {
          begin(c, After::kNext);
          c.out += "HTTP/1.1 100 Continue\r\n\r\n";
          c.cuts.push_back(c.out.size());
          if (!send_out(c)) return;
        }
        continue;
      }
      if (status == RequestParser::Status::kNeedMore) {
        if (!may_have_more) break;
        const ssize_t n = recv(c.fd, buf_, sizeof buf_, 0);
        if (n > 0) {
          c.parser.feed(buf_, static_cast<std::size_t>(n));
          progressed = true;
          may_have_more = static_cast<std::size_t>(n) == sizeof buf_;
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0 && errno == EINTR) continue;
        close_conn(c, false);  // EOF or an error: the client hung up between requests
        return;
      }
      if (status == RequestParser::Status::kBad) {
        begin(c, After::kClose);
        c.out = refusal_bytes(c.parser.error_status(), c.parser.error(), c.parser.request().target, server_.router_);
        c.cuts.push_back(c.out.size());
        send_out(c);
        return;
      }
      progressed = true;
      if (!answer(c)) return;
    }
    if (progressed) {
      c.deadline = Clock::now() + std::chrono::milliseconds(c.parser.has_bytes() ? options_.io_timeout_ms
                                                                                  : options_.keep_alive_timeout_ms);
    }
    // A head must arrive whole within head_timeout_ms of its first byte, however steadily it
    // trickles: each byte renews the I/O timeout, never this one.
    if (c.parser.reading_head()) {
      if (!c.head_since) c.head_since = Clock::now();
      c.deadline = std::min(c.deadline, *c.head_since + std::chrono::milliseconds(options_.head_timeout_ms));
    } else {
      c.head_since.reset();
    }
  }

  void begin(Conn& c, After after) {
    // The buffer's capacity stays for the next answer, unless a large answer grew it.
    if (c.out.capacity() > (256u << 10)) c.out = std::string();
    c.out.clear();
    c.sent = 0;
    c.cuts.clear();
    c.progress.clear();
    c.after = after;
    c.late = false;
  }

  /// Answers the complete request in the parser. Returns whether the connection is ready for
  /// the next request (false: closed, handed to a worker, or waiting for EPOLLOUT).
  bool answer(Conn& c) {
    c.head_since.reset();
    HttpRequest& req = c.parser.request();
    const bool head_only = req.method == "HEAD";
    const bool chunked = req.version != "HTTP/1.0";
    if (ws::is_upgrade(req)) {
      // A WebSocket lives on a worker thread (blocking I/O, pauses) until it closes.
      if (!server_.worker_available()) return refuse_overloaded(c, req.target);
      Handoff h;
      h.websocket = true;
      move_to_worker(c, std::move(h));
      return false;
    }
    const double arrived_ms = since_start_ms();
    Dispatch d = dispatch_request(server_.router_, req, arrived_ms);
    // After an internal error the connection closes: what the failed handler left is unknown.
    const bool keep_alive = req.keep_alive && !d.internal_error;
    if (d.internal_error) server_.internal_errors_.fetch_add(1);
    if (!d.engine && d.deferred) {
      // Made on a worker thread: the event loop goes on serving every other connection.
      if (!server_.worker_available()) return refuse_overloaded(c, req.target);
      Handoff h;
      h.deferred = std::move(d.deferred);
      h.head_only = head_only;
      h.keep_alive = keep_alive;
      h.chunked = chunked;
      move_to_worker(c, std::move(h));
      return false;
    }
    if (!d.engine) {
      const DirectAnswer& a = d.direct;
      begin(c, keep_alive ? After::kNext : After::kClose);
      append_response_head(c.out, a.status, a.content_type, a.headers, static_cast<long long>(a.body.size()), keep_alive);
      if (!head_only) c.out += a.body;
      c.cuts.push_back(c.out.size());
      c.parser.next();
      return send_out(c);
    }
    // Held until the answer has settled: the router may drop the engine while it streams.
    std::shared_ptr<Responder> engine = std::move(d.engine);
    Plan plan = std::move(d.plan);
    if (!plays_without_pause(plan, options_)) {
      if (!server_.worker_available()) {
        engine->refuse(plan.journal_index, 503,
                       "no worker thread free for a plan that pauses (max_workers " +
                           std::to_string(options_.max_workers) + ")");
        return refuse_overloaded(c, req.target);
      }
      Handoff h;
      h.engine = std::move(engine);
      h.plan = std::move(plan);
      h.head_only = head_only;
      h.keep_alive = keep_alive;
      h.chunked = chunked;
      move_to_worker(c, std::move(h));
      return false;
    }
    c.parser.next();
    if (plan.streaming) {
      queue_stream(c, plan, keep_alive, chunked);
    } else {
      queue_whole(c, plan, head_only, keep_alive);
    }
    c.engine = std::move(engine);
    c.journal_index = plan.journal_index;
    // Settle before the write: a client that has read the answer may ask for the journal (or
    // send its next request) at once. A failed write settles again (the last report wins).
    c.delivered.ended_ms = since_start_ms();
    c.engine->settle(c.journal_index, c.delivered);
    return send_out(c);
  }

  /// Moves the connection (its parser with any bytes after the request) to a worker thread.
  void move_to_worker(Conn& c, Handoff h) {
    if (c.watched) watch(c.fd, 0, EPOLL_CTL_DEL);
    fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) & ~O_NONBLOCK);
    h.fd = c.fd;
    h.parser = std::move(c.parser);
    conns_[static_cast<std::size_t>(c.fd)].reset();  // the worker owns the socket now
    server_.hand_off(std::move(h));
  }

  /// Answers 503 with Retry-After (every worker thread busy) and closes the connection once sent.
  bool refuse_overloaded(Conn& c, std::string_view target) {
    c.parser.next();
    begin(c, After::kClose);
    c.out = overloaded(target, server_.router_, std::max(1, options_.max_workers));
    c.cuts.push_back(c.out.size());
    send_out(c);
    return false;
  }

  /// Bytes of a response head with `headers` (status line, framing and connection lines included),
  /// at least: to reserve `out` once for the whole answer (a large answer appended piece by piece
  /// would double the buffer's capacity on the way, holding up to twice its size).
  static std::size_t head_bytes(const std::vector<std::pair<std::string, std::string>>& headers) {
    std::size_t n = 160;
    for (const auto& [name, value] : headers) n += name.size() + value.size() + 4;
    return n;
  }

  /// A chunked stream: the head rides with the first write and the terminator with the last;
  /// one send per WriteAction, as PlanWriter::stream does. Not `chunked` (an HTTP/1.0 client): the
  /// writes go as they are and the connection's end (FIN) ends the body.
  void queue_stream(Conn& c, const Plan& plan, bool keep_alive, bool chunked) {
    const bool fin = plan.ending == Ending::kFin || !chunked;
    begin(c, fin ? After::kFin : keep_alive ? After::kNext : After::kClose);
    std::size_t total = head_bytes(plan.headers) + plan.content_type.size() + kChunkTerminator.size();
    for (const auto& action : plan.actions) total += std::get<WriteAction>(action).bytes.size() + 20;
    c.out.reserve(total);
    append_response_head(c.out, plan.status, plan.content_type, plan.headers, chunked ? kChunkedLength : kCloseDelimited,
                         chunked && (keep_alive || fin));
    const std::size_t n = plan.actions.size();
    for (std::size_t i = 0; i < n; ++i) {
      const std::string& bytes = std::get<WriteAction>(plan.actions[i]).bytes;
      if (chunked) append_chunk(c.out, bytes);
      else c.out += bytes;
      if (i + 1 == n && !fin) c.out += kChunkTerminator;
      c.cuts.push_back(c.out.size());
      c.progress.emplace_back(c.out.size(), static_cast<int>(i + 1));
    }
    if (n == 0) {
      if (!fin) c.out += kChunkTerminator;
      c.cuts.push_back(c.out.size());
    }
    c.delivered = Delivery{static_cast<int>(n), false, -1};
  }

  /// A whole answer with Content-Length, or (a FIN ending) the head announcing the whole body,
  /// its first body_bytes, then FIN — as PlanWriter::whole does.
  void queue_whole(Conn& c, const Plan& plan, bool head_only, bool keep_alive) {
    c.out.reserve(head_bytes(plan.headers) + plan.content_type.size() + (head_only ? 0 : plan.body.size()));
    if (plan.ending != Ending::kTerminator) {
      begin(c, After::kFin);
      append_response_head(c.out, plan.status, plan.content_type, plan.headers, static_cast<long long>(plan.body.size()),
                           true);
      c.out.append(plan.body, 0, std::min(plan.body_bytes, plan.body.size()));
      c.delivered = Delivery{0, true, -1};
    } else {
      begin(c, keep_alive ? After::kNext : After::kClose);
      append_response_head(c.out, plan.status, plan.content_type, plan.headers,
                           static_cast<long long>(plan.body.size()), keep_alive);
      if (!head_only) c.out += plan.body;
      c.delivered = Delivery{0, false, -1};
    }
    c.cuts.push_back(c.out.size());
  }

  /// Sends what `out` holds, one send per cut, without blocking. Returns whether the connection
  /// is ready for the next request; false when it closed or waits for EPOLLOUT.
  bool send_out(Conn& c) {
    bool moved = false;
    std::size_t cut = 0;
    while (c.sent < c.out.size()) {
      while (cut < c.cuts.size() && c.cuts[cut] <= c.sent) ++cut;
      const std::size_t first_end = cut < c.cuts.size() ? c.cuts[cut] : c.out.size();
      // Every cut still to go in one sendmmsg: the kernel runs one tcp_sendmsg per message, so
      // with TCP_NODELAY each WriteAction still leaves as a segment (or segments) of its own, as
      // separate send calls would, for one system call (on this project's VMs a system call costs
      // more than the send itself: a malformed frame's three sends cost 3.1x a clean answer).
      std::size_t k = 0;
      for (std::size_t from = c.sent, end = first_end; from < c.out.size() && k < kMaxSendBatch; ++k) {
        iov_[k] = iovec{c.out.data() + from, end - from};
        msgs_[k] = mmsghdr{};
        msgs_[k].msg_hdr.msg_iov = &iov_[k];
        msgs_[k].msg_hdr.msg_iovlen = 1;
        from = end;
        end = cut + k + 1 < c.cuts.size() ? c.cuts[cut + k + 1] : c.out.size();
      }
      ssize_t n = 0;  // bytes sent, or -1 with errno
      if (k == 1) {
        // The last write before a FIN ending waits in the socket (MSG_MORE) for shutdown() to
        // send it with the FIN in one segment: the client reads the same bytes, then EOF.
        const int more = c.after == After::kFin ? MSG_MORE : 0;
        n = ::send(c.fd, iov_[0].iov_base, iov_[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT | more);
      } else {
        const int m = ::sendmmsg(c.fd, msgs_, static_cast<unsigned>(k), MSG_NOSIGNAL | MSG_DONTWAIT);
        n = m < 0 ? -1 : 0;
        for (int i = 0; i < m; ++i) n += msgs_[i].msg_len;
      }
      if (n > 0) {
        c.sent += static_cast<std::size_t>(n);
        moved = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        // The client reads slowly: the rest waits for EPOLLOUT, at most io_timeout_ms without progress.
        const bool first = !c.want_out;
        if (first) {
          c.want_out = true;
          watch_conn(c, EPOLLOUT);
        }
        c.late = true;
        if (moved || first) c.deadline = Clock::now() + std::chrono::milliseconds(options_.io_timeout_ms);
        return false;
      }
      close_conn(c, true);  // the client is gone
      return false;
    }
    if (c.want_out) {
      c.want_out = false;
      watch_conn(c, EPOLLIN);
    }
    if (c.engine && c.late) {
      c.delivered.ended_ms = since_start_ms();
      c.engine->settle(c.journal_index, c.delivered);
    }
    c.engine.reset();
    if (c.out.capacity() > (256u << 10)) c.out = std::string();  // no large buffer held while idle
    switch (c.after) {
      case After::kNext:
        return true;
      case After::kFin:
        shutdown(c.fd, SHUT_WR);
        close_conn(c, false);
        return false;
      case After::kClose:
        close_conn(c, false);
        return false;
    }
    return false;
  }

  void on_writable(Conn& c) {
    const int fd = c.fd;
    if (send_out(c) && find(fd) == &c) process(c);
  }

  MockHttpServer& server_;
  const ServerOptions& options_;
  Shared& shared_;
  const int max_connections_;
  int epoll_fd_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;  // by file descriptor
  std::optional<Clock::time_point> backoff_until_;  // accepting waits for descriptors until then
  bool listening_ = false;  // the listen socket is in the epoll set
  char buf_[64 * 1024];
  static constexpr std::size_t kMaxSendBatch = 64;  // messages one sendmmsg call takes (send_out)
  iovec iov_[kMaxSendBatch];
  mmsghdr msgs_[kMaxSendBatch];
};

int MockHttpServer::start() {
  if (shared_) throw std::runtime_error("mock server: already started");
  // Sends use MSG_NOSIGNAL; this keeps other writers of the process (clients in the same
  // process) from being killed by a peer that hung up.
  std::signal(SIGPIPE, SIG_IGN);

  const std::string where = options_.host + ":" + std::to_string(options_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(options_.host.c_str(), std::to_string(options_.port).c_str(), &hints, &found);
      rc != 0 || !found) {
    throw std::runtime_error("mock server: cannot resolve " + where + (rc != 0 ? ": " + std::string(gai_strerror(rc)) : ""));
  }
  int fd = -1;
  int error = 0;  // why the last address could not be bound ("Address already in use", …)
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    // SO_REUSEADDR without SO_REUSEPORT: a taken port is an error, not a shared one.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
      error = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) throw std::runtime_error("mock server: cannot listen on " + where + ": " + std::strerror(error));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
  // Accept a connection once its first bytes arrive (Linux; at most 1 s later without them): a
  // client reconnecting for every request is accepted and answered in one wake-up.
  int defer_s = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof defer_s);
  // Every answer without a pause goes out in one send per frame: no Nagle delay between them.
  // Accepted sockets inherit it.
  int nodelay = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
  listen_fd_ = fd;
  auto shared = std::make_shared<Shared>();
  shared->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (shared->wake_fd < 0) {
    close(fd);
    listen_fd_ = -1;
    throw std::runtime_error("mock server: cannot create an eventfd for " + where);
  }
  shared_ = std::move(shared);
  loop_thread_ = std::thread([this] { EventLoop(*this).run(); });
  return port_;
}


void MockHttpServer::hand_off(Handoff handoff) {
  const auto shared = shared_;
  std::unique_lock lock(shared->mu);
  if (shared->stopping.load()) {
    close(handoff.fd);
    --shared->active;
    shared->cv.notify_all();
    return;
  }
  shared->fds.insert(handoff.fd);
  if (shared->idle > static_cast<int>(shared->pending.size())) {
    // A worker that served a closed connection takes this one: no thread is created per
    // connection when clients reconnect often (a fault that closes every answer).
    shared->pending.push_back(std::move(handoff));
    shared->work_cv.notify_one();
    return;
  }
  const int fd = handoff.fd;
  std::shared_ptr<Responder> engine = handoff.engine;
  const std::size_t journal_index = handoff.plan.journal_index;
  try {
    std::thread([this, h = std::move(handoff)]() mutable { connection_thread(std::move(h)); }).detach();
    ++shared->threads;
  } catch (const std::system_error&) {
    // No thread to be had (a process or memory limit below max_workers): the client hears so
    // (503, Retry-After), the journal says so, and the connection closes.
    if (engine) engine->refuse(journal_index, 503, "no worker thread could be started");
    const std::string answer = overloaded("", router_, std::max(1, options_.max_workers));
    [[maybe_unused]] const auto sent = ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    shared->fds.erase(fd);
    close(fd);
    --shared->active;
    shared->cv.notify_all();
  }
}

bool MockHttpServer::worker_available() const {
  std::lock_guard lock(shared_->mu);
  return shared_->idle > static_cast<int>(shared_->pending.size()) ||
         shared_->threads < std::max(1, options_.max_workers);
}

void MockHttpServer::connection_thread(Handoff handoff) {
  const auto shared = shared_;
  while (true) {
    try {
      serve_connection(handoff);
    } catch (...) {
      // Nothing a request does may end the server: count it, and the connection closes below.
      internal_errors_.fetch_add(1);
    }
    handoff.engine.reset();
    std::unique_lock lock(shared->mu);
    shared->fds.erase(handoff.fd);
    close(handoff.fd);
    --shared->active;
    shared->cv.notify_all();
    if (shared->accept_paused) shared->wake();
    // Stay a while for the next connection.
    ++shared->idle;
    shared->work_cv.wait_for(lock, std::chrono::seconds(10),
                             [&] { return shared->stopping.load() || !shared->pending.empty(); });
    --shared->idle;
    if (shared->stopping.load() || shared->pending.empty()) {
      --shared->threads;
      shared->cv.notify_all();
      return;
    }
    handoff = std::move(shared->pending.front());
    shared->pending.pop_front();
  }
}

void MockHttpServer::serve_connection(Handoff& handoff) {
  Shared& shared = *shared_;
  const int fd = handoff.fd;
  RequestParser& parser = handoff.parser;
  PlanWriter writer(options_, fd, shared.stopping, shared.origin);
  auto send_direct = [&](const DirectAnswer& d, bool head_only, bool keep_alive) {
    std::string out = response_head(d.status, d.content_type, d.headers, static_cast<long long>(d.body.size()), keep_alive);
    if (!head_only) out += d.body;
    return send_all(fd, out, options_.io_timeout_ms, shared.stopping) && keep_alive;
  };
  if (handoff.websocket) {
    serve_websocket(fd, parser, router_, options_, shared.stopping, shared.origin);
    return;
  }
  if (handoff.engine) {
    const bool more = writer.run(*handoff.engine, handoff.plan, handoff.head_only, handoff.keep_alive, handoff.chunked);
    handoff.engine.reset();
    if (!more) return;
    parser.next();
  } else if (handoff.deferred) {
    const DirectAnswer d = make_deferred(handoff.deferred);
    handoff.deferred = nullptr;
    if (!send_direct(d, handoff.head_only, handoff.keep_alive)) return;
    parser.next();
  }
  int timeout_set_ms = -1;
  auto set_receive_timeout = [&](int ms) {
    if (ms == timeout_set_ms) return;
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    timeout_set_ms = ms;
  };
  char buf[16 * 1024];
  const auto head_timeout = std::chrono::milliseconds(options_.head_timeout_ms);
  while (!shared.stopping.load()) {
    std::optional<Clock::time_point> head_since;  // first byte of this request's head
    RequestParser::Status status = parser.parse();
    while (status == RequestParser::Status::kNeedMore || status == RequestParser::Status::kHeadDone) {
      if (status == RequestParser::Status::kHeadDone && parser.request().expect_continue) {
        if (!send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", options_.io_timeout_ms, shared.stopping)) return;
      }
      // An idle keep-alive connection waits keep_alive_timeout_ms for a request; one half-way
      // through a request waits io_timeout_ms for more of it, and a head no longer than
      // head_timeout_ms since its first byte. A blocking recv with a receive timeout is one
      // system call per read (poll + recv would be two).
      int wait_ms = parser.has_bytes() ? options_.io_timeout_ms : options_.keep_alive_timeout_ms;
      if (parser.reading_head()) {
        const auto now = Clock::now();
        if (!head_since) head_since = now;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*head_since + head_timeout - now).count();
        if (left <= 0) {
          send_all(fd, head_timed_out(router_, options_.head_timeout_ms), options_.io_timeout_ms, shared.stopping);
          return;
        }
        wait_ms = static_cast<int>(std::min<long long>(wait_ms, left));
      }
      set_receive_timeout(std::max(wait_ms, 1));
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && head_since && parser.reading_head() &&
          Clock::now() >= *head_since + head_timeout && !shared.stopping.load()) {
        send_all(fd, head_timed_out(router_, options_.head_timeout_ms), options_.io_timeout_ms, shared.stopping);
        return;
      }
      if (n <= 0 || shared.stopping.load()) return;
      parser.feed(buf, static_cast<std::size_t>(n));
      status = parser.parse();
    }
    if (status == RequestParser::Status::kBad) {
      send_all(fd, refusal_bytes(parser.error_status(), parser.error(), parser.request().target, router_),
               options_.io_timeout_ms, shared.stopping);
      return;
    }
    HttpRequest& req = parser.request();
    const bool head_only = req.method == "HEAD";
    const bool chunked = req.version != "HTTP/1.0";
    if (ws::is_upgrade(req)) {
      serve_websocket(fd, parser, router_, options_, shared.stopping, shared.origin);
      return;
    }
    const double arrived_ms = std::chrono::duration<double, std::milli>(Clock::now() - shared.origin).count();
    Dispatch d = dispatch_request(router_, req, arrived_ms);
    // After an internal error the connection closes: what the failed handler left is unknown.
    const bool keep_alive = req.keep_alive && !d.internal_error;
    if (d.internal_error) internal_errors_.fetch_add(1);
    if (!d.engine) {
      // On a worker already: a deferred answer is made here.
      const DirectAnswer a = d.deferred ? make_deferred(d.deferred) : std::move(d.direct);
      if (!send_direct(a, head_only, keep_alive)) return;
      parser.next();
      continue;
    }
    // Held until the answer has settled: the router may drop the engine while it streams.
    if (!writer.run(*d.engine, d.plan, head_only, keep_alive, chunked)) return;
    parser.next();
  }
}

void MockHttpServer::stop() {
  if (!shared_) return;
  Shared& shared = *shared_;
  {
    std::lock_guard lock(shared.mu);
    shared.stopping.store(true);
    shared.cv.notify_all();
  }
  shared.wake();  // the event loop closes its connections and returns
  if (loop_thread_.joinable()) loop_thread_.join();
  close(listen_fd_);
  listen_fd_ = -1;
  std::unique_lock lock(shared.mu);
  // Connections no worker took yet are closed unanswered (their plans settle as not delivered).
  for (Handoff& h : shared.pending) {
    if (h.engine) h.engine->settle(h.plan.journal_index, Delivery{0, true, -1});
    shared.fds.erase(h.fd);
    close(h.fd);
    --shared.active;
  }
  shared.pending.clear();
  shared.work_cv.notify_all();
  // Wakes worker threads blocked on reads and writes; pauses see `stopping`.
  for (int fd : shared.fds) shutdown(fd, SHUT_RDWR);
  shared.cv.wait(lock, [&] { return shared.active == 0 && shared.threads == 0; });
  lock.unlock();
  close(shared.wake_fd);  // no thread is left to write to it
  shared_.reset();
}

}  // namespace mock
