// MockHttpServer on its own sockets: an accept thread and a thread per connection (blocking I/O,
// poll for timeouts), HTTP framing from http_wire. Each connection owns its socket, so stalls,
// FIN and RST act on it directly. Routing is handle_request(); plan execution is PlanWriter.
#include "mock_server/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <csignal>
#include <mutex>
#include <set>
#include <stdexcept>

#include "mock_server/http_wire.h"

namespace mock {

struct MockHttpServer::Shared {
  std::mutex mu;
  std::condition_variable cv;       // `active` or `threads` fell
  std::condition_variable work_cv;  // a connection waits in `pending`, or stopping
  int active = 0;         // connections accepted and not yet closed
  int threads = 0;        // connection threads alive (serving or idle)
  int idle = 0;           // threads waiting for a connection
  std::deque<int> pending;  // accepted connections handed to idle threads
  std::set<int> fds;      // open connections, for stop() to shut down
  std::atomic<bool> stopping{false};
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
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
void wait_acked(int fd, int max_ms, const std::atomic<bool>& stopping) {
  for (int waited = 0; waited < max_ms && !stopping.load(); ++waited) {
    int unacked = 0;
    if (ioctl(fd, SIOCOUTQ, &unacked) != 0 || unacked == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Waits `ms` real milliseconds; returns false early when the client hangs up or the server stops.
bool pause_ms(double ms, int fd, const std::atomic<bool>& stopping) {
  const auto deadline = Clock::now() + std::chrono::microseconds(static_cast<long long>(ms * 1000));
  while (!stopping.load()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return true;
    const int step = static_cast<int>(std::min<long long>(left.count(), 5));
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

/// Executes one plan on a connection's socket and settles its journal entry. Returns whether
/// the connection may carry another request.
class PlanWriter {
 public:
  PlanWriter(const ServerOptions& options, int fd, const std::atomic<bool>& stopping, Clock::time_point origin)
      : options_(options), fd_(fd), stopping_(stopping), origin_(origin) {}

  /// Plays `plan` from `engine` (settled there) on the connection.
  bool run(ScriptEngine& engine, const Plan& plan, bool head_only, bool keep_alive) {
    engine_ = &engine;
    return plan.streaming ? stream(plan, keep_alive) : whole(plan, head_only, keep_alive);
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
      if (!pause_ms(stall->seconds * options_.stall_ms_per_s, fd_, stopping_)) {
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
  bool stream(const Plan& plan, bool keep_alive) {
    const std::size_t index = plan.journal_index;
    std::string pending = response_head(plan.status, plan.content_type, plan.headers, -1,
                                        keep_alive || plan.ending != Ending::kTerminator);
    int actions_done = 0;
    bool gone = false;
    bool ended = false;  // the terminator went out with the last write
    const std::size_t n = plan.actions.size();
    for (std::size_t i = 0; i < n && !gone; ++i) {
      const Action& action = plan.actions[i];
      if (auto* w = std::get_if<WriteAction>(&action)) {
        // Settle optimistically before the write: a fast client may send its next request
        // (answering this attempt's calls) before the settle below runs. A failed write
        // settles again with the real progress (the last report wins).
        engine_->settle(index, Delivery{actions_done + 1, false});
        append_chunk(pending, w->bytes);
        if (i + 1 == n && plan.ending == Ending::kTerminator) {
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
          waited = pause_ms(cap(d->pause_ms), fd_, stopping_);
        } else {
          waited = pause_ms(std::get<StallAction>(action).seconds * options_.stall_ms_per_s, fd_, stopping_);
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
      if (!ended) pending += kChunkTerminator;
      open = ended || send(pending);
      open = open && keep_alive;
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
      pause_ms(cap(delay_ms), fd_, stopping_);
      reset_connection(fd_);
    } else {
      pause_ms(cap(delay_ms), fd_, stopping_);
      shutdown(fd_, SHUT_WR);
    }
  }

  ScriptEngine* engine_ = nullptr;
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
    return Route{engine_, target, {}};
  }

 private:
  std::shared_ptr<ScriptEngine> engine_;
};

/// The answer to a request the parser refused (no journal entry: the engine never saw it): in the
/// envelope of the provider whose path ends `target` (a session's /s/{id} prefix aside), else of
/// the provider of the engine the target routes to, else hiccup's own {"error":{code,message}}.
std::string refusal(int status, const std::string& message, std::string_view target, RequestRouter& router) {
  if (std::optional<DirectAnswer> own = router.refusal(status, message, target)) {
    return response_head(own->status, own->content_type, own->headers, static_cast<long long>(own->body.size()), false) +
           own->body;
  }
  const std::string_view path = target.substr(0, target.find('?'));
  const WireFormat* format = nullptr;
  for (std::size_t at = 0; at != std::string_view::npos && format == nullptr && !path.empty(); at = path.find('/', at + 1)) {
    format = format_for_path(path.substr(at));
  }
  if (format == nullptr && !path.empty() && path.rfind("/_hiccup", 0) != 0) {
    const Route route = router.route("HEAD", std::string(target), "");  // HEAD: no side effect
    if (route.engine) format = wire_format(route.engine->script().provider);
  }
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  if (format) {
    ErrorAnswer answer = format->error_answer(status, message, std::nullopt);
    body = std::move(answer.body);
    headers = std::move(answer.headers);
  } else {
    body = nlohmann::json{{"error", {{"code", status}, {"message", message}}}}.dump();
  }
  return response_head(status, "application/json", headers, static_cast<long long>(body.size()), false) + body;
}

}  // namespace

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
  if (getaddrinfo(options_.host.c_str(), std::to_string(options_.port).c_str(), &hints, &found) != 0 || !found) {
    throw std::runtime_error("mock server: cannot resolve " + where);
  }
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR without SO_REUSEPORT: a taken port is an error, not a shared one.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) throw std::runtime_error("mock server: cannot listen on " + where);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
  listen_fd_ = fd;
  shared_ = std::make_shared<Shared>();
  accept_thread_ = std::thread([this] { accept_loop(); });
  return port_;
}

void MockHttpServer::accept_loop() {
  const auto shared = shared_;
  const int max_connections = std::max(1, options_.max_connections);
  while (true) {
    {
      std::unique_lock lock(shared->mu);
      shared->cv.wait(lock, [&] { return shared->stopping.load() || shared->active < max_connections; });
      if (shared->stopping.load()) return;
    }
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (shared->stopping.load()) return;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;  // EINTR, ECONNABORTED, a transient shortage
    }
    std::unique_lock lock(shared->mu);
    if (shared->stopping.load()) {
      close(fd);
      return;
    }
    shared->fds.insert(fd);
    ++shared->active;
    if (shared->idle > static_cast<int>(shared->pending.size())) {
      // A thread that served a closed connection takes this one: no thread is created per
      // connection when clients reconnect often (a fault that closes every answer).
      shared->pending.push_back(fd);
      shared->work_cv.notify_one();
      continue;
    }
    try {
      std::thread([this, shared, fd] { connection_thread(fd); }).detach();
      ++shared->threads;
    } catch (const std::system_error&) {  // no thread to be had: refuse this connection
      shared->fds.erase(fd);
      close(fd);
      --shared->active;
    }
  }
}

void MockHttpServer::connection_thread(int fd) {
  const auto shared = shared_;
  while (true) {
    serve_connection(fd);
    std::unique_lock lock(shared->mu);
    shared->fds.erase(fd);
    close(fd);
    --shared->active;
    shared->cv.notify_all();
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
    fd = shared->pending.front();
    shared->pending.pop_front();
  }
}

void MockHttpServer::serve_connection(int fd) {
  Shared& shared = *shared_;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int timeout_set_ms = -1;
  auto set_receive_timeout = [&](int ms) {
    if (ms == timeout_set_ms) return;
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    timeout_set_ms = ms;
  };
  RequestParser parser(ParserLimits{options_.max_head_bytes, options_.max_body_bytes});
  PlanWriter writer(options_, fd, shared.stopping, shared.origin);
  char buf[16 * 1024];
  while (!shared.stopping.load()) {
    RequestParser::Status status = parser.parse();
    while (status == RequestParser::Status::kNeedMore || status == RequestParser::Status::kHeadDone) {
      if (status == RequestParser::Status::kHeadDone && parser.request().expect_continue) {
        if (!send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", options_.io_timeout_ms, shared.stopping)) return;
      }
      // An idle keep-alive connection waits keep_alive_timeout_ms for a request; one half-way
      // through a request waits io_timeout_ms for more of it. A blocking recv with a receive
      // timeout is one system call per read (poll + recv would be two).
      set_receive_timeout(parser.has_bytes() ? options_.io_timeout_ms : options_.keep_alive_timeout_ms);
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0 || shared.stopping.load()) return;
      parser.feed(buf, static_cast<std::size_t>(n));
      status = parser.parse();
    }
    if (status == RequestParser::Status::kBad) {
      send_all(fd, refusal(parser.error_status(), parser.error(), parser.request().target, router_), options_.io_timeout_ms,
               shared.stopping);
      return;
    }
    HttpRequest& req = parser.request();
    const bool head_only = req.method == "HEAD";
    const bool keep_alive = req.keep_alive;
    const double arrived_ms = std::chrono::duration<double, std::milli>(Clock::now() - shared.origin).count();
    Route route = router_.route(req.method, req.target, req.body);
    if (!route.engine) {
      const DirectAnswer& d = route.direct;
      std::string out = response_head(d.status, d.content_type, d.headers, static_cast<long long>(d.body.size()), keep_alive);
      if (!head_only) out += d.body;
      if (!send_all(fd, out, options_.io_timeout_ms, shared.stopping) || !keep_alive) return;
      parser.next();
      continue;
    }
    // Held until the answer has settled: the router may drop the engine while it streams.
    const std::shared_ptr<ScriptEngine> engine = std::move(route.engine);
    const Plan plan = engine->respond(Request{std::move(req.method), std::move(route.target), std::move(req.body), arrived_ms});
    if (!writer.run(*engine, plan, head_only, keep_alive)) return;
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
  shutdown(listen_fd_, SHUT_RDWR);  // wakes the blocked accept
  if (accept_thread_.joinable()) accept_thread_.join();
  close(listen_fd_);
  listen_fd_ = -1;
  std::unique_lock lock(shared.mu);
  // Connections no thread took yet are closed unanswered.
  for (int fd : shared.pending) {
    shared.fds.erase(fd);
    close(fd);
    --shared.active;
  }
  shared.pending.clear();
  shared.work_cv.notify_all();
  // Wakes connection threads blocked on reads and writes; pauses see `stopping`.
  for (int fd : shared.fds) shutdown(fd, SHUT_RDWR);
  shared.cv.wait(lock, [&] { return shared.active == 0 && shared.threads == 0; });
  lock.unlock();
  shared_.reset();
}

}  // namespace mock
