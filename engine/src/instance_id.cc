#include "hourglass/instance_id.h"

#include <atomic>

namespace hourglass {

uint64_t NextInstanceId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace hourglass
