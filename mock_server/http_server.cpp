// MockHttpServer on cpp-httplib 0.11. cpp-httplib hides accepted sockets (its socket_options hook
// only runs for the listening socket), so the socket of a request is found by its address pair
// in /proc/self/fd, and only when a plan needs it (stalls, FIN, RST, stop()).
#include "mock_server/http_server.h"

#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>

#include <httplib.h>

namespace mock {
namespace {

using Clock = std::chrono::steady_clock;

/// httplib::Server with access to its listening socket (protected member).
class Server : public httplib::Server {
 public:
  int listen_fd() const { return svr_sock_; }
};

int port_of(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
  return -1;
}

/// Calls `fn(fd)` for every connected socket of this process whose local port is `local_port`
/// and whose peer port is `remote_port` (any peer port when -1). Stops when `fn` returns false.
template <class Fn>
void for_each_connection(int local_port, int remote_port, Fn fn) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  const int dir_fd = dirfd(dir);
  while (dirent* d = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(d->d_name, &end, 10);
    if (end == d->d_name || *end != '\0' || fd == dir_fd) continue;
    sockaddr_storage local{}, peer{};
    socklen_t len = sizeof local;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    if (port_of(local) != local_port) continue;
    len = sizeof peer;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    if (remote_port >= 0 && port_of(peer) != remote_port) continue;
    if (!fn(static_cast<int>(fd))) break;
  }
  closedir(dir);
}

int find_connection(int local_port, int remote_port) {
  int found = -1;
  for_each_connection(local_port, remote_port, [&](int fd) {
    found = fd;
    return false;
  });
  return found;
}

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
  if (fd < 0) return;
  for (int waited = 0; waited < max_ms && !stopping.load(); ++waited) {
    int unacked = 0;
    if (ioctl(fd, SIOCOUTQ, &unacked) != 0 || unacked == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// Waits `ms` real milliseconds; returns false early when the client hangs up or the server stops.
/// `fd` < 0: plain waiting.
bool pause_ms(double ms, int fd, const std::atomic<bool>& stopping) {
  const auto deadline = Clock::now() + std::chrono::microseconds(static_cast<long long>(ms * 1000));
  while (!stopping.load()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return true;
    const int step = static_cast<int>(std::min<long long>(left.count(), 5));
    if (fd >= 0) {
      if (peer_gone(fd, step)) return false;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(step));
    }
  }
  return false;
}

/// Abort the connection with RST without closing `fd` (httplib owns and closes it).
void reset_connection(int fd) {
  if (fd < 0) return;
  linger lg{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  sockaddr sa{};
  sa.sa_family = AF_UNSPEC;
  connect(fd, &sa, sizeof sa);
}

void fin_connection(int fd) {
  if (fd >= 0) shutdown(fd, SHUT_WR);
}

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

}  // namespace

MockHttpServer::MockHttpServer(ScriptEngine& engine, ServerOptions options)
    : own_router_(std::make_unique<SingleEngineRouter>(engine)),
      router_(*own_router_),
      options_(std::move(options)),
      stopping_(std::make_shared<std::atomic<bool>>(false)) {}

MockHttpServer::MockHttpServer(RequestRouter& router, ServerOptions options)
    : router_(router), options_(std::move(options)), stopping_(std::make_shared<std::atomic<bool>>(false)) {}

MockHttpServer::~MockHttpServer() { stop(); }

std::string MockHttpServer::base_url() const {
  return "http://" + options_.host + ":" + std::to_string(port_);
}

int MockHttpServer::start() {
  if (server_) throw std::runtime_error("mock server: already started");
  // A client that hangs up mid-stream makes the next send raise SIGPIPE (httplib sends without
  // MSG_NOSIGNAL); the error must come back from send instead.
  std::signal(SIGPIPE, SIG_IGN);

  auto server = std::make_unique<Server>();
  const int threads = std::max(1, options_.threads);
  server->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server->set_tcp_nodelay(true);
  server->set_keep_alive_max_count(1'000'000);
  // httplib's default sets SO_REUSEPORT, which would let a second server silently share the port
  // (and its requests); SO_REUSEADDR alone makes a taken port an error.
  server->set_socket_options([](int fd) {
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });

  // Hostile requests: a body over max_body_bytes is refused unread (413), a request line or
  // header over cpp-httplib's 8,192 bytes is a 400; both in the path's provider envelope (the
  // scenario's provider for unknown paths). A peer that stalls mid-request or stops reading is
  // dropped after io_timeout_ms per read or write; other connections are served meanwhile.
  server->set_payload_max_length(options_.max_body_bytes);
  const auto io_timeout = std::chrono::milliseconds(std::max(1, options_.io_timeout_ms));
  server->set_read_timeout(io_timeout);
  server->set_write_timeout(io_timeout);
  server->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                         httplib::Response& res) {
    // The script's own answers always carry a Content-Type: leave those as they are.
    if (res.has_header("Content-Type") || !res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    // The provider whose path ends the request path (a session's /s/{id} prefix aside), else the
    // provider of the engine the path routes to (HEAD: the router has no side effect for it).
    const WireFormat* format = nullptr;
    for (std::size_t at = 0; at != std::string::npos && format == nullptr; at = req.path.find('/', at + 1)) {
      format = format_for_path(std::string_view(req.path).substr(at));
    }
    if (format == nullptr && req.path.rfind("/_hiccup", 0) != 0) {
      const Route route = router_.route("HEAD", req.target, "");
      if (route.engine) format = wire_format(route.engine->script().provider);
    }
    if (format == nullptr) format = wire_formats().front();
    std::string message = format->default_message(res.status);
    if (res.status == 413) {
      message = "the request body is larger than " + std::to_string(options_.max_body_bytes) + " bytes";
    } else if (res.status == 400) {
      message = "the request could not be read: a request line or header over 8192 bytes, or bytes "
                "that stopped arriving for " + std::to_string(options_.io_timeout_ms) + " ms";
    }
    ErrorAnswer answer = format->error_answer(res.status, message, std::nullopt);
    for (const auto& [name, value] : answer.headers) res.set_header(name.c_str(), value);
    res.set_content(answer.body, "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));

  const double stall_ms_per_s = options_.stall_ms_per_s;
  const int max_delay_ms = options_.max_delay_ms;
  auto stopping = stopping_;
  auto cap = [max_delay_ms](int ms) { return max_delay_ms >= 0 ? std::min(ms, max_delay_ms) : ms; };

  const auto origin = Clock::now();
  auto since_start_ms = [origin] {
    return std::chrono::duration<double, std::milli>(Clock::now() - origin).count();
  };
  auto handler = [this, stall_ms_per_s, cap, stopping, since_start_ms](const httplib::Request& req,
                                                       httplib::Response& res) {
    Route route = router_.route(req.method, req.target, req.body);
    if (!route.engine) {
      res.status = route.direct.status;
      for (const auto& [name, value] : route.direct.headers) res.set_header(name.c_str(), value);
      res.set_content(route.direct.body, route.direct.content_type.c_str());
      return;
    }
    // Held by every callback below: the router may drop the engine while this answer streams.
    const std::shared_ptr<ScriptEngine> engine = std::move(route.engine);
    Plan plan = engine->respond(Request{req.method, route.target, req.body, since_start_ms()});
    const std::size_t index = plan.journal_index;
    const int local_port = port_;
    const int remote_port = req.remote_port;
    res.status = plan.status;
    for (const auto& [name, value] : plan.headers) res.set_header(name.c_str(), value);

    if (!plan.streaming) {
      // A stall delays the whole answer: nothing, not even the status line, before it ends.
      for (const auto& action : plan.actions) {
        const auto* stall = std::get_if<StallAction>(&action);
        if (stall == nullptr) continue;
        const int fd = find_connection(local_port, remote_port);
        if (!pause_ms(stall->seconds * stall_ms_per_s, fd, *stopping)) {
          // The client timed out (or the server stops): answer nothing more.
          engine->settle(index, Delivery{0, true, since_start_ms()});
          res.set_content_provider(
              1, "application/json", [](size_t, size_t, httplib::DataSink&) { return false; },
              [](bool) {});
          return;
        }
      }
      if (plan.ending != Ending::kTerminator) {
        // A fault on a non-streaming request: the headers announce the whole body, the first
        // body_bytes go out, then FIN or RST mid-body.
        auto shared_plan = std::make_shared<Plan>(std::move(plan));
        res.set_content_provider(
            shared_plan->body.size(), shared_plan->content_type.c_str(),
            [shared_plan, local_port, remote_port, cap, stopping](size_t, size_t, httplib::DataSink& sink) {
              const Plan& p = *shared_plan;
              const std::size_t n = std::min(p.body_bytes, p.body.size());
              if (n > 0 && !sink.write(p.body.data(), n)) return false;
              const int fd = find_connection(local_port, remote_port);
              if (p.ending == Ending::kReset) {
                wait_acked(fd, 1000, *stopping);
                pause_ms(cap(p.ending_delay_ms), fd, *stopping);
                reset_connection(fd);
              } else {
                pause_ms(cap(p.ending_delay_ms), fd, *stopping);
                fin_connection(fd);
              }
              return false;
            },
            [engine, index, since_start_ms](bool) { engine->settle(index, Delivery{0, true, since_start_ms()}); });
        return;
      }
      if (plan.body.empty()) {
        res.set_content("", plan.content_type.c_str());
        engine->settle(index, Delivery{0, false, since_start_ms()});
        return;
      }
      auto body = std::make_shared<std::string>(std::move(plan.body));
      res.set_content_provider(
          body->size(), plan.content_type.c_str(),
          [engine, index, body, since_start_ms](size_t offset, size_t length, httplib::DataSink& sink) {
            // Settle optimistically before the last write: a client that has read the answer may
            // ask for the journal (or send its next request) before the releaser below runs. A
            // failed write settles again as undelivered (the last report wins).
            if (offset + length >= body->size()) engine->settle(index, Delivery{0, false, since_start_ms()});
            return sink.write(body->data() + offset, length);
          },
          [engine, index, since_start_ms](bool success) { engine->settle(index, Delivery{0, !success, since_start_ms()}); });
      return;
    }

    struct Progress {
      int actions_done = 0;
      bool client_gone = false;
      bool ran = false;
    };
    auto progress = std::make_shared<Progress>();
    auto shared_plan = std::make_shared<Plan>(std::move(plan));
    res.set_chunked_content_provider(
        shared_plan->content_type.c_str(),
        [engine, index, shared_plan, progress, local_port, remote_port, stall_ms_per_s, cap, stopping](
            size_t, httplib::DataSink& sink) {
          if (progress->ran) return false;
          progress->ran = true;
          int fd = -1;
          bool fd_looked_up = false;
          auto conn = [&] {
            if (!fd_looked_up) fd = find_connection(local_port, remote_port);
            fd_looked_up = true;
            return fd;
          };
          for (const auto& action : shared_plan->actions) {
            if (auto* w = std::get_if<WriteAction>(&action)) {
              // Settle optimistically before the write: a fast client may send its next request
              // (answering this attempt's calls) before the releaser below runs. A failed write
              // settles again with the real progress (the last report wins).
              engine->settle(index, Delivery{progress->actions_done + 1, false});
              if (!sink.write(w->bytes.data(), w->bytes.size())) {
                progress->client_gone = true;
                return false;
              }
            } else if (auto* d = std::get_if<DrainAction>(&action)) {
              wait_acked(conn(), 1000, *stopping);
              if (!pause_ms(cap(d->pause_ms), conn(), *stopping)) {
                progress->client_gone = !stopping->load();
                return false;
              }
            } else {
              const auto& s = std::get<StallAction>(action);
              if (!pause_ms(s.seconds * stall_ms_per_s, conn(), *stopping)) {
                progress->client_gone = !stopping->load();
                return false;
              }
            }
            ++progress->actions_done;
          }
          switch (shared_plan->ending) {
            case Ending::kTerminator:
              sink.done();
              return true;
            case Ending::kFin:
              pause_ms(cap(shared_plan->ending_delay_ms), conn(), *stopping);
              fin_connection(conn());
              return false;
            case Ending::kReset:
              wait_acked(conn(), 1000, *stopping);
              pause_ms(cap(shared_plan->ending_delay_ms), conn(), *stopping);
              reset_connection(conn());
              return false;
          }
          return false;
        },
        [engine, index, progress, since_start_ms](bool success) {
          const bool gone = progress->client_gone || (!progress->ran && !success);
          engine->settle(index, Delivery{progress->actions_done, gone, since_start_ms()});
        });
  };
  for (const char* any : {".*"}) {
    server->Get(any, handler);
    server->Post(any, handler);
    server->Put(any, handler);
    server->Patch(any, handler);
    server->Delete(any, handler);
    server->Options(any, handler);
  }

  int port = -1;
  if (options_.port == 0) {
    port = server->bind_to_any_port(options_.host);
  } else if (server->bind_to_port(options_.host, options_.port)) {
    port = options_.port;
  }
  if (port <= 0) {
    throw std::runtime_error("mock server: cannot listen on " + options_.host + ":" +
                             std::to_string(options_.port));
  }
  // httplib listens with a compiled-in backlog of 5; listen() again raises it.
  ::listen(server->listen_fd(), 1024);
  port_ = port;
  stopping_->store(false);
  server_ = std::move(server);
  thread_ = std::thread([s = server_.get()] { s->listen_after_bind(); });
  // httplib's stop() is a no-op until the accept loop runs, so wait for it.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!server_->is_running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return port_;
}

void MockHttpServer::shut_down_connections() const {
  for_each_connection(port_, -1, [](int fd) {
    shutdown(fd, SHUT_RDWR);
    return true;
  });
}

void MockHttpServer::stop() {
  if (!server_) return;
  stopping_->store(true);
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (thread_.joinable() && !server_->is_running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Idle keep-alive connections would hold their worker for the keep-alive timeout (5 s). Shut
  // them down while the listening socket still holds the port: once it is closed, another server
  // in this process may bind the same port, and a scan by port would hit its connections.
  shut_down_connections();
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace mock
