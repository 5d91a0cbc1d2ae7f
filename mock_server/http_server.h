// MockHttpServer: executes ScriptEngine plans on cpp-httplib 0.11 over HTTP/1.1 — chunked SSE
// streams written one send per WriteAction, scaled stalls, FIN without the chunked terminator and
// RST after an idle pause (WIRE-FORMATS.md "All providers"; PERFORMANCE.md for the socket settings).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

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
};

/// An HTTP/1.1 server answering every request through `engine` (which must outlive it) and
/// settling each journal entry with how far its plan got on the wire.
class MockHttpServer {
 public:
  MockHttpServer(ScriptEngine& engine, ServerOptions options);
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

  ScriptEngine& engine_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::shared_ptr<std::atomic<bool>> stopping_;
};

}  // namespace mock
