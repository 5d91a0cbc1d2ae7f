// ITransport over real HTTP/1.1 (cpp-httplib 0.11): keep-alive, TCP_NODELAY, the body streamed to
// the caller as it arrives. The second of the two files allowed to read a real clock: it tells an
// idle stall (read timeout) from a lost connection by the time since the last byte.
#pragma once

#include <memory>
#include <string>

#include "runtime_under_test/env.h"

namespace rut {

class HttpTransport final : public ITransport {
 public:
  /// Connects to `host`:`port` lazily. Virtual seconds scale to real time by `ms_per_virtual_s`:
  /// the read timeout is `request.idle_timeout_s * ms_per_virtual_s` milliseconds.
  HttpTransport(std::string host, int port, double ms_per_virtual_s = 20);
  ~HttpTransport() override;

  /// Status 0 + kConnectFailed when no connection; kCancelled when `on_body` returned false;
  /// kIdleTimeout when the read failed after >= 0.8 × the read timeout without a byte; else a read
  /// failure is kConnectionLost. Non-2xx bodies are delivered through `on_body` too.
  TransportResult post(const HttpRequest& request,
                       const std::function<bool(std::string_view)>& on_body) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  double ms_per_virtual_s_;
};

}  // namespace rut
