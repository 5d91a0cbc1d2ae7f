// MockHttpServer: executes ScriptEngine plans on cpp-httplib 0.11 over HTTP/1.1 — chunked SSE
// streams written one send per WriteAction, scaled stalls, FIN without the chunked terminator and
// RST after an idle pause (WIRE-FORMATS.md "All providers"; PERFORMANCE.md for the socket settings).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mock_server/script_engine.h"

namespace httplib {
class Server;
}

namespace mock {

/// Settings of one MockHttpServer.
struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                 ///< 0 = any free port
  double stall_ms_per_s = 20;   ///< real milliseconds slept per virtual second of a stall fault
  int max_delay_ms = -1;        ///< caps delay_ms / idle_ms when >= 0; -1 = the real values
  int threads = 8;              ///< worker threads (one per open connection)
  /// Request bodies larger than this get 413 in the path's provider envelope, unread (32 MiB:
  /// Anthropic's documented Messages API request limit, the largest of the four providers').
  std::size_t max_body_bytes = 32u << 20;
  /// A request's bytes must keep arriving, and an answer's be taken, within this many ms per
  /// read or write; otherwise the connection is closed (slowloris, clients that never read).
  int io_timeout_ms = 5000;
};

/// An answer made without a script engine (a control API, an unknown session): sent as is.
struct DirectAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Where one request goes: the engine that plays it and the target that engine sees (e.g. a
/// session's path prefix stripped), or, when `engine` is null, `direct`.
struct Route {
  std::shared_ptr<ScriptEngine> engine;
  std::string target;
  DirectAnswer direct;
};

/// Picks the engine for each request. Called from the server's worker threads concurrently, so
/// implementations must be thread-safe. The server holds the returned engine until the answer
/// has settled, so a router may drop or replace an engine while a request to it is streaming.
class RequestRouter {
 public:
  virtual ~RequestRouter() = default;
  /// `target` is path plus query as received; `body` the whole request body.
  virtual Route route(const std::string& method, const std::string& target, const std::string& body) = 0;
};

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

  /// Binds, starts listening on a background thread and returns the bound port.
  /// Throws std::runtime_error when the address cannot be bound or the server is already started.
  /// Sets SIGPIPE to ignored for the process (cpp-httplib 0.11 sends without MSG_NOSIGNAL, so a
  /// client hanging up mid-stream would otherwise kill the process).
  int start();

  /// Stops listening, closes open (also idle keep-alive) connections and joins the workers.
  /// Safe to call twice; returns promptly.
  void stop();

  /// "http://HOST:PORT" of the running server.
  std::string base_url() const;

  /// The bound port (0 before start()).
  int port() const { return port_; }

 private:
  void shut_down_connections() const;

  std::unique_ptr<RequestRouter> own_router_;  // the one-engine router of the first constructor
  RequestRouter& router_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::shared_ptr<std::atomic<bool>> stopping_;
};

}  // namespace mock
