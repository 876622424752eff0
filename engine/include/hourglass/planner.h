// The planner: which buckets cover a window exactly (docs/design.md, "The bucket ladder").
//
// A window's span is split into pieces; each piece's hit count is a signed sum of bucket values:
// - whole buckets, taken greedily from both edges with the largest level that fits;
// - a partial run of buckets inside one parent may be read as parent minus complement when that
//   reads fewer keys (CoverOptions::complements) and the complement can no longer change
//   (CoverOptions::changing_from);
// - at the current time (`now` given), no hit is later than now, so the open bucket of a level
//   (the one containing now) stands for all its finer buckets up to now: one key.
// Hits later than span.last are never counted, even when buckets hold them (queries in the past).
//
//   ReadPlan plan = PlanReads(ladder, {Span{t - 86399, t}}, /*now=*/t);
//   // read plan.reads from the store, then:
//   uint64_t hits = plan.Total(0, values);
//
// Thread-safety: pure functions and immutable values.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hourglass/ladder.h"
#include "hourglass/window.h"

namespace hourglass {

struct Term {
  Bucket bucket;
  int sign = 1;  // +1 or -1
};

// Hits in `span` = sum of sign * value(bucket) over `terms`.
struct Piece {
  Span span;
  std::vector<Term> terms;
};

// Covers the hits at seconds in `span`. With `now`, hits later than `now` are known not to exist:
// the span is clipped to now and open buckets are used.
std::vector<Piece> CoverSpan(const Ladder& ladder, Span span, std::optional<int64_t> now,
                             CoverOptions options = {});

// One read for several windows: the union of their buckets, each read once. Flat arrays, so a
// plan costs a handful of allocations however many buckets it reads.
struct ReadPlan {
  struct IndexedTerm {
    uint32_t read = 0;  // index into `reads`
    int32_t sign = 1;
  };
  struct IndexedPiece {
    Span span;
    uint32_t first_term = 0;  // into `terms`
    uint32_t term_count = 0;
  };
  std::vector<Bucket> reads;  // distinct buckets, finest level first
  std::vector<IndexedTerm> terms;
  std::vector<IndexedPiece> pieces;
  std::vector<uint32_t> window_begin;  // window w's pieces: [window_begin[w], window_begin[w + 1])

  size_t windows() const { return window_begin.empty() ? 0 : window_begin.size() - 1; }
  // Hits per piece of window `w`, given values[i] = value of reads[i].
  std::vector<CountedSpan> Pieces(size_t w, std::span<const uint64_t> values) const;
  // Hits in window `w`.
  uint64_t Total(size_t w, std::span<const uint64_t> values) const;
};

ReadPlan PlanReads(const Ladder& ladder, std::span<const Span> spans, std::optional<int64_t> now,
                   CoverOptions options = {});

}  // namespace hourglass
