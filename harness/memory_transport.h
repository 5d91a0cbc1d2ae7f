// The in-process transport: plays the mock server's script engine straight into the runtime, with
// no sockets and no threads, on virtual time. It executes the engine's plans exactly as the HTTP
// adapter does (writes in order, stalls, endings) and reports delivery back, so both paths share
// every decision and produce the same transcript.
#pragma once

#include "mock_server/script_engine.h"
#include "runtime_under_test/env.h"

namespace harness {

class MemoryTransport final : public rut::ITransport {
 public:
  /// `engine` must outlive the transport.
  explicit MemoryTransport(mock::ScriptEngine& engine) : engine_(engine) {}

  /// Plays the plan for `request`. A stall of `seconds >= request.idle_timeout_s` ends the
  /// response with kIdleTimeout (the runtime accounts the idle time on its own clock; status 0
  /// when the stall delays a non-streaming answer, as no head arrived); FIN and RST endings are
  /// kConnectionLost (a non-streaming plan first hands out its `body_bytes`); `on_body` returning
  /// false is kCancelled.
  rut::TransportResult post(const rut::HttpRequest& request,
                            const std::function<bool(std::string_view)>& on_body) override;

 private:
  mock::ScriptEngine& engine_;
};

}  // namespace harness
