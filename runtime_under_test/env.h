// The world behind interfaces (FoundationDB's INetwork/IRandom habit): the runtime reaches time,
// randomness and the network only through these, passed into constructors. Virtual versions are
// what tests and the harness use; real-time ones live in real_env.cpp and http_transport.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rut {

/// A clock in seconds. `sleep_s` advances it (virtually, or really for the real clock).
class IClock {
 public:
  virtual ~IClock() = default;
  virtual double now_s() const = 0;
  virtual void sleep_s(double seconds) = 0;
};

/// A seeded random source (the policy draws no jitter today; kept for future jitter).
class IRandom {
 public:
  virtual ~IRandom() = default;
  virtual std::uint64_t next_u64() = 0;
};

/// A virtual clock: starts at 0, `sleep_s` adds to it, costs no wall time.
class VirtualClock final : public IClock {
 public:
  double now_s() const override { return now_; }
  void sleep_s(double seconds) override { now_ += seconds; }
 private:
  double now_ = 0;
};

/// splitmix64, fully specified (same seed, same sequence on every platform).
class SplitMix64 final : public IRandom {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64() override {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
 private:
  std::uint64_t state_;
};

/// `HttpRequest::idle_timeout_s` of a client that sets no idle limit (waits on a silent stream
/// forever); a transport may still be bounded from outside (the harness's virtual-time cap).
inline constexpr double kNoIdleLimit = std::numeric_limits<double>::infinity();

/// One POST to the model server. `target` is path plus query; `idle_timeout_s` is the runtime's
/// idle timeout in virtual seconds (the transport fails a stream silent that long; kNoIdleLimit:
/// never).
struct HttpRequest {
  std::string target;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  double idle_timeout_s = 60;
};

/// How a response ended, as the runtime can observe it.
enum class TransportEnd {
  kComplete,        ///< the whole HTTP response arrived (clean end)
  kConnectionLost,  ///< connection closed (FIN) or reset (RST) before the response ended
  kIdleTimeout,     ///< nothing arrived for idle_timeout_s
  kConnectFailed,   ///< no response at all (connection refused)
  kCancelled,       ///< the body callback returned false (the runtime stopped reading)
};

struct TransportResult {
  int status = 0;  ///< HTTP status; 0 when no response head arrived
  TransportEnd end = TransportEnd::kConnectFailed;
  /// Response headers, names lower-case (e.g. {"retry-after", "30"}); empty when none arrived.
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Sends one request and streams the response body to `on_body` as it arrives (any chunking).
/// `on_body` returns false to stop reading (the transport then drops the connection).
/// The body of non-2xx responses is delivered through `on_body` too.
class ITransport {
 public:
  virtual ~ITransport() = default;
  virtual TransportResult post(const HttpRequest& request,
                               const std::function<bool(std::string_view)>& on_body) = 0;
};

}  // namespace rut
