// The real-time clock (see real_env.h).
#include "runtime_under_test/real_env.h"

#include <chrono>
#include <thread>

namespace rut {

namespace {
double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

RealClock::RealClock() : start_s_(steady_now_s()) {}

double RealClock::now_s() const { return steady_now_s() - start_s_; }

void RealClock::sleep_s(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace rut
