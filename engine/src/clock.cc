#include "hourglass/clock.h"

namespace hourglass {

Instant SystemClock::Now() const {
  return std::chrono::floor<Seconds>(std::chrono::system_clock::now());
}

}  // namespace hourglass
