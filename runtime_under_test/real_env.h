// The real-time IClock (FoundationDB's Net2 counterpart of the virtual clock in env.h): the one
// place besides http_transport.cpp that reads wall time. The harness uses VirtualClock instead.
#pragma once

#include "runtime_under_test/env.h"

namespace rut {

/// Seconds since construction on std::chrono::steady_clock; `sleep_s` really sleeps.
class RealClock final : public IClock {
 public:
  RealClock();
  double now_s() const override;
  void sleep_s(double seconds) override;

 private:
  double start_s_;
};

}  // namespace rut
