// MockHttpServer: executes the plans of Responders (ScriptEngine for the model formats,
// mcp::McpServer for MCP) over HTTP/1.1 on its own sockets — one epoll thread
// accepts, reads, parses and answers every request whose plan needs no real-time pause, with
// non-blocking sends; a connection whose plan pauses (delay, stall, drain, idle before a reset)
// moves to a worker thread with blocking I/O for the rest of its life. Chunked SSE streams go out
// one send per WriteAction (the response head and the chunked terminator ride with the first and
// last write), scaled stalls, FIN without the chunked terminator and RST after an idle pause
// (WIRE-FORMATS.md "All providers"; PERFORMANCE.md; docs/ROBUSTNESS.md "Throughput").
#pragma once

#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "mock_server/http_wire.h"
#include "mock_server/script_engine.h"

namespace mock {

/// Settings of one MockHttpServer.
struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                 ///< 0 = any free port
  double stall_ms_per_s = 20;   ///< real milliseconds slept per virtual second of a stall fault
  int max_delay_ms = -1;        ///< caps delay_ms / idle_ms when >= 0; -1 = the real values
  /// Connections open at once (on the event loop or on worker threads); more wait in the listen
  /// backlog until one closes. Every open keep-alive connection is served: none waits behind another.
  int max_connections = 4096;
  /// Worker threads at once (each serves one connection whose plan pauses: a stall, a delay, a
  /// drain; or computes a deferred answer such as a verdict). A request that needs one when all
  /// are busy is answered 503 with `Retry-After: 1` and its connection closed; its journal entry
  /// reads `played: "overloaded"` (docs/ROBUSTNESS.md "Limits on input").
  int max_workers = 512;
  int keep_alive_timeout_ms = 5000;  ///< an idle keep-alive connection is closed after this
  /// A request that stops arriving half-way, or an answer the client stops reading, ends the
  /// connection after this long without progress.
  int io_timeout_ms = 5000;
  /// A request's line and headers must all arrive within this of their first byte, however
  /// steadily they trickle (slowloris); else the client gets 408 and the connection is closed.
  int head_timeout_ms = 10000;
  /// Request bodies larger than this get 413 in the path's provider envelope, unread (32 MiB:
  /// Anthropic's documented Messages API request limit, the largest of the four providers').
  std::size_t max_body_bytes = 32u << 20;
  /// A request line and headers larger than this get 431 in the path's provider envelope.
  std::size_t max_head_bytes = 64u << 10;
  /// When set, a pause (a stall, a delayed ending, an error event's drain) ends early once
  /// *cancel_pauses is true, as if the client had hung up: the harness sets it when an
  /// exploration abandons its running cases, so a day-long stall does not hold the run open.
  const std::atomic<bool>* cancel_pauses = nullptr;
};

/// An answer made without a script engine (a control API, an unknown session): sent as is.
struct DirectAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Where one request goes: the engine that plays it and the target that engine sees (e.g. a
/// session's path prefix stripped), or, when `engine` is null, `direct`; or, when `deferred` is
/// set (and `engine` null), the answer `deferred` makes on a worker thread, off the event loop:
/// for answers that take long to make (a verdict, a journal), so other connections go on.
struct Route {
  std::shared_ptr<Responder> engine;
  std::string target;
  DirectAnswer direct;
  std::function<DirectAnswer()> deferred;
};

/// Picks the engine for each request. Called from the server's event-loop thread and its worker
/// threads concurrently, so implementations must be thread-safe, and quick: while route() runs on
/// the event loop no other connection of that loop is served. The server holds the returned engine until the answer
/// has settled, so a router may drop or replace an engine while a request to it is streaming.
class RequestRouter {
 public:
  virtual ~RequestRouter() = default;
  /// `target` is path plus query as received; `body` the whole request body.
  virtual Route route(const std::string& method, const std::string& target, const std::string& body) = 0;
  /// The answer to a request the HTTP layer refused before routing (`status` 400, 413, 431 or 501;
  /// `target` as far as it was read, maybe ""), when the router has its own envelope for that
  /// target (a control API); nullopt = the server's default (the path's provider envelope).
  virtual std::optional<DirectAnswer> refusal(int status, const std::string& message, std::string_view target) {
    (void)status, (void)message, (void)target;
    return std::nullopt;
  }
};

/// What the server does with one complete request, decided without sockets (the event loop, its
/// worker threads and fuzz/server_bytes_fuzz.cpp share it).
struct Dispatch {
  std::shared_ptr<Responder> engine;  ///< set: play `plan` from this engine
  Plan plan;
  DirectAnswer direct;                   ///< the answer when `engine` and `deferred` are null
  /// Set when the router answers on a worker thread (Route::deferred): the caller runs it there.
  std::function<DirectAnswer()> deferred;
  /// The router or the engine threw: `direct` is a 500 in the path's envelope (the router's own
  /// for its paths, else the provider's), whose message names the exception.
  bool internal_error = false;
  std::string error;                     ///< the exception's what(), escaped; "" without one
};

/// Routes `request` (complete, as the parser left it; its method, target and body are moved out)
/// and asks the chosen engine for its plan. Never throws: an exception from the router or the
/// engine becomes `internal_error` with a 500, so no request can end the server.
Dispatch dispatch_request(RequestRouter& router, HttpRequest& request, double arrived_ms);

/// The bytes (status line to body, `Connection: close`) answering a request the parser refused
/// with `status` and `message`, in the envelope of `target`'s path (RequestRouter::refusal, else the
/// provider's, else hiccup's). Never throws (a last plain 500 when the envelope cannot be built).
std::string refusal_bytes(int status, const std::string& message, std::string_view target, RequestRouter& router);

/// An HTTP/1.1 server answering every request through the engine its router picks (one engine
/// for every request with the first constructor) and settling each journal entry with how far
/// its plan got on the wire.
class MockHttpServer {
 public:
  /// Every request goes to `engine` (which must outlive the server).
  MockHttpServer(ScriptEngine& engine, ServerOptions options);
  /// Every request goes where `router` (which must outlive the server) says.
  MockHttpServer(RequestRouter& router, ServerOptions options);
  ~MockHttpServer();
  MockHttpServer(const MockHttpServer&) = delete;
  MockHttpServer& operator=(const MockHttpServer&) = delete;

  /// Binds, starts the event-loop thread (which accepts) and returns the bound port.
  /// Throws std::runtime_error when the address cannot be bound or the server is already started.
  int start();

  /// Stops accepting, shuts down open (also idle keep-alive) connections and waits for their
  /// threads (pauses end at once when the server stops). Safe to call twice; returns promptly.
  void stop();

  /// "http://HOST:PORT" of the running server.
  std::string base_url() const;

  /// The bound port (0 before start()).
  int port() const { return port_; }

  /// Requests whose handling threw since the server was made (each answered 500 where an answer
  /// could still go out, its connection closed; the server went on). 0 unless hiccup has a bug.
  std::uint64_t internal_errors() const { return internal_errors_.load(); }

 private:
  struct Shared;
  struct Handoff;     // a connection moved from the event loop to a worker thread
  class EventLoop;
  /// True when a connection handed off now gets a worker thread (an idle one or a new one under
  /// max_workers). Only the event loop hands off, so the answer holds until it does.
  bool worker_available() const;
  void hand_off(Handoff handoff);
  void connection_thread(Handoff handoff);
  void serve_connection(Handoff& handoff);

  std::unique_ptr<RequestRouter> own_router_;  // the one-engine router of the first constructor
  RequestRouter& router_;
  ServerOptions options_;
  std::shared_ptr<Shared> shared_;
  std::thread loop_thread_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<std::uint64_t> internal_errors_{0};
};

}  // namespace mock
