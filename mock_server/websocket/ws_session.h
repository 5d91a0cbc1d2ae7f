// The Responses API's WebSocket mode served by the mock (docs/WIRE-FORMATS.md "Responses over
// WebSocket"): the RFC 6455 handshake on `GET …/responses` with `Upgrade: websocket`, then
// `response.create` text frames in, each played as one scenario request (a POST of the same body
// with `"stream": true`, through the same router and script engine as HTTP), its events out as one
// JSON text frame per SSE `data:` payload; several request/stream cycles per connection. Only the
// framing differs from SSE: the engine, the Responses encoder and the journal are the HTTP path's.
// Faults map to WebSocket terms here (docs/SCENARIO-FORMAT.md "Over WebSocket").
// Socket-free: the server passes an Io over its blocking worker-thread socket; tests pass a fake.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "mock_server/http_server.h"
#include "mock_server/http_wire.h"

namespace mock::ws {

/// The connection under a session. Implementations block.
class Io {
 public:
  virtual ~Io() = default;
  /// Sends all of `bytes`; false when the peer is gone (or the server stops).
  virtual bool send(std::string_view bytes) = 0;
  /// Up to `n` bytes into `buf`: > 0 bytes read, 0 end of stream, -1 error, -2 nothing within
  /// `timeout_ms`.
  virtual long recv(char* buf, std::size_t n, int timeout_ms) = 0;
  /// Waits `ms` real milliseconds; false when it ended early (peer gone, server stopping, cancelled).
  virtual bool pause(double ms) = 0;
  /// Aborts the connection with a TCP RST (SO_LINGER 0).
  virtual void reset() = 0;
  /// Waits until the peer has acknowledged every byte sent (a bounded wait), before the
  /// connection ends: a RST, or a close with the client's next request unread (which the kernel
  /// turns into a RST), discards what is still unsent.
  virtual void settle_sent() {}
  /// Real monotonic milliseconds since the server started (journal times).
  virtual double now_ms() = 0;
};

/// Settings of a session (copied from the server's ServerOptions).
struct SessionOptions {
  double stall_ms_per_s = 20;    ///< real ms per virtual second of a stall fault
  int max_delay_ms = -1;         ///< caps delay_ms / idle_ms when >= 0
  int idle_timeout_ms = 5000;    ///< an open connection with no frame for this long is closed (1000)
  std::size_t max_message_bytes = 32u << 20;  ///< a larger message closes the connection with 1009
};

/// The OpenAI-Beta value codex sends on its upgrade (codex-rs; also opencode): informative only,
/// the mock accepts an upgrade without it.
inline constexpr std::string_view kOpenAiBetaWebSockets = "responses_websockets=2026-02-06";

/// Whether `req` asks for a WebSocket upgrade (`Upgrade: websocket`, any case).
bool is_upgrade(const HttpRequest& req);

/// The answer to an upgrade request: the 101 (accepted) or a refusal with `status` (400 for a
/// malformed handshake, 404 for a path that serves no Responses endpoint, 405 for a method other
/// than GET, 426 with `Sec-WebSocket-Version: 13` for another version, or the scenario's
/// `websocket.upgrade_status`), its bytes ready to send; a refusal's body is the Responses error
/// envelope and closes the connection.
struct HandshakeAnswer {
  bool accepted = false;
  int status = 101;
  std::string bytes;
};
HandshakeAnswer answer_upgrade(const HttpRequest& req, int refuse_with = 0);

/// Serves one upgraded connection until it closes: answers `upgrade` (refused when the routed
/// engine's scenario says so), then reads frames and plays every `response.create` through
/// `router`. `first_bytes`: what the client sent after the upgrade request before it was answered
/// (its first frames), read before the socket. Never throws.
/// Completed responses are kept for `previous_response_id` on this connection and, unless the
/// request said `store: false`, in the routed engine's SessionMemory (the engine keeps them
/// there, as over HTTP), where the session's later connections and HTTP requests find them. A fault scripted after a response's terminal event plays inside that
/// response's cycle (in the terminal frame's send, no pause, the connection's end at once),
/// never between two cycles.
void serve(Io& io, const HttpRequest& upgrade, RequestRouter& router, const SessionOptions& options,
           std::string_view first_bytes = {});

}  // namespace mock::ws
