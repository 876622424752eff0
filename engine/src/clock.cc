#include "hourglass/clock.h"

namespace hourglass {

Instant SystemClock::Now() const {
  return std::chrono::floor<Seconds>(std::chrono::system_clock::now());
}

MonoTime SystemClock::Monotonic() const { return std::chrono::steady_clock::now(); }

const SystemClock& SystemClock::Get() {
  static const SystemClock clock;
  return clock;
}

}  // namespace hourglass
