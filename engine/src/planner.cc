#include "hourglass/planner.h"

#include <algorithm>
#include <cassert>

#include "hourglass/saturating.h"

namespace hourglass {
namespace {

int64_t FloorTo(int64_t t, int64_t w) { return FloorDiv(t, w) * w; }
int64_t CeilTo(int64_t t, int64_t w) { return -FloorDiv(-t, w) * w; }

// A cover under construction: pieces as ranges of one flat term array.
struct FlatCover {
  struct Range {
    Span span;
    uint32_t first_term;
    uint32_t term_count;
  };
  std::vector<Range> pieces;
  std::vector<Term> terms;

  void Open(Span span) { pieces.push_back(Range{span, static_cast<uint32_t>(terms.size()), 0}); }
  void Add(Bucket bucket, int sign) {
    terms.push_back(Term{bucket, sign});
    ++pieces.back().term_count;
  }
};

class Coverer {
 public:
  Coverer(const Ladder& ladder, CoverOptions options, FlatCover& out)
      : ladder_(ladder), options_(options), out_(out) {}

  // Covers [lo, hi) (hi exclusive) with pieces in time order, appended to `out`.
  void Cover(int64_t lo, int64_t hi) {
    const size_t top = ladder_.levels() - 1;
    right_.pieces.clear();
    right_.terms.clear();
    for (size_t i = 0; i <= top && lo < hi; ++i) {
      if (i == top) {
        Direct(i, lo, hi, out_, false);
        lo = hi;
        break;
      }
      const int64_t parent = ladder_.width(i + 1).count();
      const int64_t inner_lo = CeilTo(lo, parent);
      const int64_t inner_hi = FloorTo(hi, parent);
      if (inner_lo <= inner_hi) {
        Partial(i, lo, inner_lo, out_, false);
        Partial(i, inner_hi, hi, right_, true);
        lo = inner_lo;
        hi = inner_hi;
      } else {  // [lo, hi) lies inside one parent bucket
        Partial(i, lo, hi, out_, false);
        lo = hi;
      }
    }
    // Right-edge pieces were collected from the right end inward: append them reversed.
    for (size_t k = right_.pieces.size(); k-- > 0;) {
      const FlatCover::Range& piece = right_.pieces[k];
      out_.Open(piece.span);
      for (uint32_t t = 0; t < piece.term_count; ++t) {
        const Term& term = right_.terms[piece.first_term + t];
        out_.Add(term.bucket, term.sign);
      }
    }
  }

 private:
  // One piece per bucket of level i over [a, b); from the right end inward when `inward`.
  void Direct(size_t i, int64_t a, int64_t b, FlatCover& out, bool inward) {
    const int64_t w = ladder_.width(i).count();
    for (int64_t k = 0; k < (b - a) / w; ++k) {
      const int64_t start = inward ? b - (k + 1) * w : a + k * w;
      out.Open(Span{start, start + w - 1});
      out.Add(ladder_.BucketAt(i, start), +1);
    }
  }

  // [a, b) at level i, inside one bucket of level i + 1.
  void Partial(size_t i, int64_t a, int64_t b, FlatCover& out, bool inward) {
    if (a >= b) return;
    const int64_t w = ladder_.width(i).count();
    const int64_t parent_w = ladder_.width(i + 1).count();
    const int64_t p = FloorTo(a, parent_w);
    assert(b <= p + parent_w);
    const int64_t inside = (b - a) / w;
    const int64_t complement = (a - p) / w + (p + parent_w - b) / w;
    if (!options_.complements || 1 + complement >= inside || !Final(p, a, b, p + parent_w)) {
      Direct(i, a, b, out, inward);
      return;
    }
    out.Open(Span{a, b - 1});
    out.Add(ladder_.BucketAt(i + 1, p), +1);
    for (int64_t s = p; s < a; s += w) out.Add(ladder_.BucketAt(i, s), -1);
    for (int64_t s = b; s < p + parent_w; s += w) out.Add(ladder_.BucketAt(i, s), -1);
  }

  // Whether the complement of [a, b) in its parent [p, end), the buckets in [p, a) and [b, end),
  // ends before the buckets that may still change.
  bool Final(int64_t p, int64_t a, int64_t b, int64_t end) const {
    if (!options_.changing_from) return true;
    const int64_t last = b < end ? end - 1 : a - 1;  // the complement's last second
    return (a == p && b == end) || last < *options_.changing_from;
  }

  const Ladder& ladder_;
  CoverOptions options_;
  FlatCover& out_;
  FlatCover right_;
};

// Appends the cover of `span` to `out`.
void CoverInto(const Ladder& ladder, Span span, std::optional<int64_t> now, CoverOptions options,
               FlatCover& out) {
  int64_t lo = span.first;
  int64_t hi = span.last + 1;
  bool open = false;
  if (now && span.last >= *now) {
    hi = *now + 1;
    // The largest level whose open bucket starts inside the span stands for everything from its
    // start up to now.
    for (size_t level = ladder.levels(); level-- > 0;) {
      const int64_t w = ladder.width(level).count();
      if (FloorTo(*now, w) >= lo) {
        hi = FloorTo(*now, w) + w;
        open = true;
        break;
      }
    }
  }
  if (lo >= hi) return;
  const size_t first = out.pieces.size();
  Coverer(ladder, options, out).Cover(lo, hi);
  if (open && out.pieces.size() > first) out.pieces.back().span.last = *now;  // no hit after now
}

}  // namespace

std::vector<Piece> CoverSpan(const Ladder& ladder, Span span, std::optional<int64_t> now,
                             CoverOptions options) {
  FlatCover flat;
  CoverInto(ladder, span, now, options, flat);
  std::vector<Piece> pieces;
  pieces.reserve(flat.pieces.size());
  for (const FlatCover::Range& range : flat.pieces) {
    pieces.push_back(Piece{range.span,
                           {flat.terms.begin() + range.first_term,
                            flat.terms.begin() + range.first_term + range.term_count}});
  }
  return pieces;
}

std::vector<CountedSpan> ReadPlan::Pieces(size_t w, std::span<const uint64_t> values) const {
  std::vector<CountedSpan> out;
  out.reserve(window_begin[w + 1] - window_begin[w]);
  for (uint32_t p = window_begin[w]; p < window_begin[w + 1]; ++p) {
    const IndexedPiece& piece = pieces[p];
    // Signed sum, saturating: a piece never counts below zero (decrements can floor a bucket at
    // 0 in the store before its parent, so clamp rather than wrap) nor wraps past the largest
    // count, however large the values another client wrote.
    uint64_t added = 0, subtracted = 0;
    for (uint32_t t = piece.first_term; t < piece.first_term + piece.term_count; ++t) {
      uint64_t& sum = terms[t].sign > 0 ? added : subtracted;
      sum = SaturatingAdd(sum, values[terms[t].read]);
    }
    out.push_back(CountedSpan{piece.span, added > subtracted ? added - subtracted : 0});
  }
  return out;
}

uint64_t ReadPlan::Total(size_t w, std::span<const uint64_t> values) const {
  uint64_t total = 0;
  for (const CountedSpan& piece : Pieces(w, values)) total = SaturatingAdd(total, piece.hits);
  return total;
}

ReadPlan PlanReads(const Ladder& ladder, std::span<const Span> spans, std::optional<int64_t> now,
                   CoverOptions options) {
  FlatCover flat;
  ReadPlan plan;
  plan.window_begin.push_back(0);
  for (const Span& span : spans) {
    CoverInto(ladder, span, now, options, flat);
    plan.window_begin.push_back(static_cast<uint32_t>(flat.pieces.size()));
  }
  // Reads go finest level first (Bucket orders by level, then index): a parent read after its
  // complement can only have gained hits, so a concurrent increment makes a parent-minus-
  // complement piece over-count, never under-count.
  plan.reads.reserve(flat.terms.size());
  for (const Term& term : flat.terms) plan.reads.push_back(term.bucket);
  std::sort(plan.reads.begin(), plan.reads.end());
  plan.reads.erase(std::unique(plan.reads.begin(), plan.reads.end()), plan.reads.end());
  plan.terms.reserve(flat.terms.size());
  for (const Term& term : flat.terms) {
    const auto at = std::lower_bound(plan.reads.begin(), plan.reads.end(), term.bucket);
    plan.terms.push_back(
        ReadPlan::IndexedTerm{static_cast<uint32_t>(at - plan.reads.begin()), term.sign});
  }
  plan.pieces.reserve(flat.pieces.size());
  for (const FlatCover::Range& range : flat.pieces) {
    plan.pieces.push_back(ReadPlan::IndexedPiece{range.span, range.first_term, range.term_count});
  }
  return plan;
}

}  // namespace hourglass
