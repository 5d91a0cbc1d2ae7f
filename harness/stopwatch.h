// Wall time for reporting only (case durations, cases per second, progress lines). This and
// stopwatch.cpp are the harness's one real-time file: nothing that shapes a transcript or a
// verdict reads the wall clock.
#pragma once

#include <cstdint>

namespace harness {

/// Measures elapsed wall time from construction (or the last restart()).
class Stopwatch {
 public:
  Stopwatch();
  /// Milliseconds since construction or restart().
  double elapsed_ms() const;
  void restart();

 private:
  std::int64_t start_ns_;
};

}  // namespace harness
