// ITransport over the Responses API's WebSocket mode (docs/WIRE-FORMATS.md "Responses over
// WebSocket"): one connection opened with the RFC 6455 handshake on the request's path (with
// `OpenAI-Beta: responses_websockets=2026-02-06`, as codex sends it) and kept across attempts;
// each post() sends one masked `response.create` text frame (the request body without `stream`)
// and hands the codec each event frame as the SSE line it stands for (`data: {…}\n\n`), so the
// Responses codec decodes both transports alike. The third file allowed to read a real clock
// (poll timeouts), with http_transport.cpp and real_env.cpp.
// Its framing is its own (a client's: masks what it sends, refuses masked frames), written apart
// from the mock's (mock_server/websocket/ws_frame.h), so a loopback run checks one against the other.
#pragma once

#include <memory>
#include <string>

#include "runtime_under_test/defects.h"
#include "runtime_under_test/env.h"

namespace rut {

class WebSocketTransport final : public ITransport {
 public:
  /// Connects to `host`:`port` lazily (and again after a connection ends); an upgrade's answer is
  /// waited on for the idle timeout, at least 10 s real. Virtual seconds scale
  /// to real time by `ms_per_virtual_s`, as HttpTransport's. `defects`: the seeded defects whose
  /// site is this transport (replay-lost-context); the others change nothing here.
  WebSocketTransport(std::string host, int port, double ms_per_virtual_s = 20, DefectSet defects = {});
  ~WebSocketTransport() override;

  /// One request/stream cycle on the open connection (opened first when there is none).
  /// - Upgrade refused with 404, 405 or 426 (the server has no WebSocket mode): this transport
  ///   falls back to HTTP with SSE for this and every later request (fell_back()). Any other
  ///   refusal is the answer: its status and body, as over HTTP.
  /// - An `error` frame with a `status` as the cycle's first frame (the in-band form of an HTTP
  ///   error, codex's WrappedWebsocketErrorEvent): that status, `{"error": …}` as the body, and
  ///   the frame's `headers` (names lower-case) as headers; the connection stays open.
  /// - Ends kComplete at the terminal event (response.completed, response.incomplete,
  ///   response.failed), and at a close frame with 1000 or no code before it (the clean end: the
  ///   codec finds no terminal event, an incomplete stream as over HTTP); kConnectionLost when the
  ///   connection ends otherwise (another close code, FIN, RST, a frame that breaks RFC 6455)
  ///   before it; kIdleTimeout after the idle timeout without a frame (or
  ///   without the upgrade's answer: a silent server, as over HTTP before its response head);
  ///   kConnectFailed without a connection; kCancelled when `on_body` returned false (the
  ///   connection is kept only when that was at the terminal event).
  /// - A kept connection found dead before this cycle's first frame (a close frame, FIN or RST
  ///   before any byte of the response, or anything but a ping left on it between cycles) was
  ///   stale: the request goes again at once on a new connection, once, and that is not an
  ///   attempt (an HTTP client's retry on a stale pooled connection). The mock answers every
  ///   response.create it plays with a frame first (response.created or the in-band error), so
  ///   a request it played is never sent twice this way.
  TransportResult post(const HttpRequest& request,
                       const std::function<bool(std::string_view)>& on_body) override;

  /// A non-streaming request goes over HTTP (the WebSocket mode always streams).
  /// Continuation: when a request's input extends the last response completed on this connection
  /// (that request's input, then the model items of that response, equal to what the server
  /// stored in call ids, names, arguments and text), only the items after those are sent, with
  /// `previous_response_id`; answered `previous_response_not_found` (400, in band), the
  /// request is sent again at once with its full input, on the same connection (under the seeded
  /// defect replay-lost-context: its new items alone, without previous_response_id). A new connection
  /// starts a new chain (the server keeps responses per connection).
  /// Requests sent with previous_response_id so far, and those of them sent again whole.
  int continued() const;
  int restarted() const;

  /// Requests sent again on a new connection because the kept one was found dead before their
  /// response began (a close frame, FIN or RST before any frame, or bytes left between two
  /// cycles): once per request, not an attempt (see post()).
  int stale_reopened() const;

  /// True once an upgrade was refused with 404, 405 or 426 and requests go over HTTP.
  bool fell_back() const;
  /// Connections opened (upgrades accepted) so far.
  int connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rut
