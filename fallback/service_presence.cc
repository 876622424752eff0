#include "hourglass/service_presence.h"

#include <algorithm>

namespace hourglass {

ServicePresence::ServicePresence(const Engine& engine, Seconds slot)
    : engine_(engine), slot_(std::max(slot, Seconds{2})) {}

std::optional<uint64_t> ServicePresence::Tick(Instant now) {
  const int64_t width = slot_.count();
  const int64_t slot = ToUnix(now) / width;
  const Instant start = FromUnix(slot * width);
  if (recorded_ != slot) {
    if (!engine_.Record(kEvent, kFeature, 1, start).ok()) return std::nullopt;
    recorded_ = slot;
  }
  const Window window = *Window::Fixed(slot_);
  Result<Counts> before = engine_.Count(kEvent, kFeature, {&window, 1}, start - Seconds{1});
  Result<Counts> current = engine_.Count(kEvent, kFeature, {&window, 1}, now);
  if (!before.ok() || !current.ok()) return std::nullopt;
  return std::max<uint64_t>({before->windows[0].count, current->windows[0].count, 1});
}

}  // namespace hourglass
