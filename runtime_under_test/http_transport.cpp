// ITransport over cpp-httplib (see http_transport.h).
#include "runtime_under_test/http_transport.h"

#include <cctype>
#include <chrono>
#include <cmath>

#include <httplib.h>

namespace rut {

struct HttpTransport::Impl {
  Impl(const std::string& host, int port) : client(host, port) {}
  httplib::Client client;
};

HttpTransport::HttpTransport(std::string host, int port, double ms_per_virtual_s)
    : impl_(std::make_unique<Impl>(host, port)), ms_per_virtual_s_(ms_per_virtual_s) {
  impl_->client.set_tcp_nodelay(true);
  impl_->client.set_keep_alive(true);
  impl_->client.set_connection_timeout(2, 0);
}

HttpTransport::~HttpTransport() = default;

TransportResult HttpTransport::post(const HttpRequest& request,
                                    const std::function<bool(std::string_view)>& on_body) {
  using Clock = std::chrono::steady_clock;
  // No idle limit (kNoIdleLimit): cpp-httplib needs a finite read timeout, so one real day.
  // The same day bounds any longer (or overflowing) product: its conversion to whole microseconds
  // below must not overflow (an infinite one became a negative timeout, and the read waited for ever).
  constexpr double kDayMs = 86400.0 * 1000;
  double timeout_ms = std::isfinite(request.idle_timeout_s) ? request.idle_timeout_s * ms_per_virtual_s_ : kDayMs;
  if (!(timeout_ms < kDayMs)) timeout_ms = kDayMs;  // also NaN
  if (!(timeout_ms > 0)) timeout_ms = 0;
  const auto timeout_us = static_cast<long long>(timeout_ms * 1000);
  impl_->client.set_read_timeout(static_cast<time_t>(timeout_us / 1000000),
                                 static_cast<time_t>(timeout_us % 1000000));

  TransportResult result;
  bool cancelled = false;
  bool delivered = false;
  auto last_byte = Clock::now();

  httplib::Request req;
  req.method = "POST";
  req.path = request.target;
  req.body = request.body;
  for (const auto& [name, value] : request.headers) req.headers.emplace(name, value);
  req.response_handler = [&](const httplib::Response& res) {
    result.status = res.status;
    for (const auto& [name, value] : res.headers) {
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      result.headers.emplace_back(std::move(lower), value);
    }
    last_byte = Clock::now();
    return true;
  };
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    last_byte = Clock::now();
    delivered = true;
    if (!on_body(std::string_view(data, size))) {
      cancelled = true;
      return false;
    }
    return true;
  };

  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool ok = impl_->client.send(req, res, err);
  if (result.status == 0 && res.status > 0) result.status = res.status;
  if (!delivered && !res.body.empty() && !cancelled) {
    if (!on_body(res.body)) cancelled = true;
  }

  if (cancelled) {
    result.end = TransportEnd::kCancelled;
  } else if (ok) {
    result.end = TransportEnd::kComplete;
  } else if (err == httplib::Error::Connection || err == httplib::Error::ConnectionTimeout) {
    result.status = 0;
    result.end = TransportEnd::kConnectFailed;
  } else {
    const double silent_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - last_byte).count();
    result.end = silent_ms >= 0.8 * timeout_ms ? TransportEnd::kIdleTimeout
                                               : TransportEnd::kConnectionLost;
  }
  return result;
}

}  // namespace rut
