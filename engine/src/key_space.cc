#include "hourglass/key_space.h"

namespace hourglass {

Seconds KeySpace::Ttl(size_t level) const {
  const Seconds reach =
      level + 1 < ladder_.levels() ? ladder_.width(level + 1) : ladder_.width(level);
  return retention_ + reach + settle_margin_;
}

std::vector<Increment> KeySpace::HitIncrements(const std::string& group, int64_t t,
                                               int64_t delta) const {
  std::vector<Increment> increments;
  increments.reserve(ladder_.levels());
  for (size_t level = 0; level < ladder_.levels(); ++level) {
    increments.push_back(
        Increment{BucketKey(group, ladder_.BucketAt(level, t)), delta, Ttl(level)});
  }
  return increments;
}

}  // namespace hourglass
