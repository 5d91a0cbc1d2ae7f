// The harness's one real-time file; see stopwatch.h.
#include "harness/stopwatch.h"

#include <chrono>

namespace harness {
namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Stopwatch::Stopwatch() : start_ns_(now_ns()) {}
double Stopwatch::elapsed_ms() const { return static_cast<double>(now_ns() - start_ns_) / 1e6; }
void Stopwatch::restart() { start_ns_ = now_ns(); }

}  // namespace harness
