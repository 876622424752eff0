// The bucket ladder: levels of bucket widths, each dividing the next (docs/design.md).
//
// A hit increments one bucket per level. Level 0 is always one second wide, so every window is
// answered exactly at one-second resolution.
//
//   Ladder ladder = Ladder::Default();                 // 1s, 1m, 1h
//   Result<Ladder> days = Ladder::Parse("1s,1m,1h,1d");
//
// Thread-safety: immutable value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/status.h"

namespace hourglass {

// One bucket: the `index`-th span of width `width(level)`, i.e. Unix seconds
// [index * width, (index + 1) * width - 1].
struct Bucket {
  uint32_t level = 0;
  int64_t index = 0;
  auto operator<=>(const Bucket&) const = default;
};

class Ladder {
 public:
  static constexpr size_t kMaxLevels = 8;

  // Widths strictly increasing, the first exactly 1s, each dividing the next, at most kMaxLevels.
  static Result<Ladder> Create(std::vector<Seconds> widths);
  // "1s,1m,1h" or "1,60,3600": durations as in ParseDuration().
  static Result<Ladder> Parse(std::string_view spec);
  // 1s, 1m, 1h: a day's window is about 142 buckets at worst.
  static Ladder Default();

  size_t levels() const { return widths_.size(); }
  Seconds width(size_t level) const { return widths_[level]; }
  const std::vector<Seconds>& widths() const { return widths_; }
  // The bucket of `level` that contains second `t`.
  Bucket BucketAt(size_t level, int64_t t) const;
  // The most buckets a cover of a span of `span` seconds takes: the top level's whole buckets,
  // and at each edge fewer than a parent's worth of each finer level (2 * 59 seconds, 2 * 59
  // minutes and 24 hours for a day on 1s,1m,1h). Caches sized by it hold a window's cover.
  size_t CoverBucketsAtMost(Seconds span) const;
  // "1s,1m,1h"
  std::string ToString() const;

  bool operator==(const Ladder&) const = default;

 private:
  explicit Ladder(std::vector<Seconds> widths) : widths_(std::move(widths)) {}
  std::vector<Seconds> widths_;
};

// How the planner may cover a span with the ladder's buckets (see planner.h).
struct CoverOptions {
  bool complements = true;  // allow parent-minus-complement pieces
  // Unix second from which buckets may still change (live hits, take-backs of denied checks): a
  // complement never subtracts a bucket that ends at or after it, since a read of several keys is
  // not a snapshot and a change landing between the reads would be lost or counted twice. The
  // engine passes "now minus the settle margin"; nullopt treats every bucket as final.
  std::optional<int64_t> changing_from;
};

// Floor division for possibly negative numerators (b > 0).
inline int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && (a < 0)); }

}  // namespace hourglass
