// Sums of hit counts that stop at the largest count instead of wrapping.
//
// Bucket values come from a store that other clients can write too; however large they are, a
// sum of them must never wrap to a small number (which would admit) or be read as negative. The
// engine and every store add counts with it.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <limits>

namespace hourglass {

constexpr uint64_t kMaxCount = std::numeric_limits<uint64_t>::max();

// a + b, or kMaxCount when that does not fit.
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > kMaxCount - b ? kMaxCount : a + b;
}

}  // namespace hourglass
