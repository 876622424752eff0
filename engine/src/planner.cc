#include "hourglass/planner.h"

#include <cassert>
#include <map>

namespace hourglass {
namespace {

int64_t FloorTo(int64_t t, int64_t w) { return FloorDiv(t, w) * w; }
int64_t CeilTo(int64_t t, int64_t w) { return -FloorDiv(-t, w) * w; }

class Coverer {
 public:
  Coverer(const Ladder& ladder, CoverOptions options) : ladder_(ladder), options_(options) {}

  // Covers [lo, hi) (hi exclusive) with pieces in time order.
  std::vector<Piece> Cover(int64_t lo, int64_t hi) {
    const size_t top = ladder_.levels() - 1;
    std::vector<Piece> right;  // right-edge pieces, collected inward, emitted in reverse
    for (size_t i = 0; i <= top && lo < hi; ++i) {
      if (i == top) {
        Direct(i, lo, hi, pieces_);
        lo = hi;
        break;
      }
      const int64_t parent = ladder_.width(i + 1).count();
      const int64_t inner_lo = CeilTo(lo, parent);
      const int64_t inner_hi = FloorTo(hi, parent);
      if (inner_lo <= inner_hi) {
        Partial(i, lo, inner_lo, pieces_);
        Partial(i, inner_hi, hi, right);
        lo = inner_lo;
        hi = inner_hi;
      } else {  // [lo, hi) lies inside one parent bucket
        Partial(i, lo, hi, pieces_);
        lo = hi;
      }
    }
    pieces_.insert(pieces_.end(), right.rbegin(), right.rend());
    return std::move(pieces_);
  }

 private:
  // One piece per bucket of level i over [a, b).
  void Direct(size_t i, int64_t a, int64_t b, std::vector<Piece>& out) {
    const int64_t w = ladder_.width(i).count();
    // Right-edge pieces are reversed later, so emit them from the right end inward.
    const bool reversed = &out != &pieces_;
    for (int64_t k = 0; k < (b - a) / w; ++k) {
      const int64_t start = reversed ? b - (k + 1) * w : a + k * w;
      out.push_back(Piece{Span{start, start + w - 1}, {Term{ladder_.BucketAt(i, start), +1}}});
    }
  }

  // [a, b) at level i, inside one bucket of level i + 1.
  void Partial(size_t i, int64_t a, int64_t b, std::vector<Piece>& out) {
    if (a >= b) return;
    const int64_t w = ladder_.width(i).count();
    const int64_t parent_w = ladder_.width(i + 1).count();
    const int64_t p = FloorTo(a, parent_w);
    assert(b <= p + parent_w);
    const int64_t inside = (b - a) / w;
    const int64_t complement = (a - p) / w + (p + parent_w - b) / w;
    if (!options_.complements || 1 + complement >= inside) {
      Direct(i, a, b, out);
      return;
    }
    Piece piece{Span{a, b - 1}, {Term{ladder_.BucketAt(i + 1, p), +1}}};
    for (int64_t s = p; s < a; s += w) piece.terms.push_back(Term{ladder_.BucketAt(i, s), -1});
    for (int64_t s = b; s < p + parent_w; s += w) {
      piece.terms.push_back(Term{ladder_.BucketAt(i, s), -1});
    }
    out.push_back(std::move(piece));
  }

  const Ladder& ladder_;
  CoverOptions options_;
  std::vector<Piece> pieces_;
};

}  // namespace

std::vector<Piece> CoverSpan(const Ladder& ladder, Span span, std::optional<int64_t> now,
                             CoverOptions options) {
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
  if (lo >= hi) return {};
  std::vector<Piece> pieces = Coverer(ladder, options).Cover(lo, hi);
  if (open) pieces.back().span.last = *now;  // the open bucket holds no hit after now
  return pieces;
}

std::vector<CountedSpan> ReadPlan::Pieces(size_t w, std::span<const uint64_t> values) const {
  std::vector<CountedSpan> out;
  out.reserve(windows[w].size());
  for (const IndexedPiece& piece : windows[w]) {
    // Signed sum; a piece never counts below zero (decrements can floor a bucket at 0 in the
    // store before its parent, so clamp rather than wrap).
    int64_t hits = 0;
    for (const IndexedTerm& term : piece.terms) {
      hits += term.sign * static_cast<int64_t>(values[term.read]);
    }
    out.push_back(CountedSpan{piece.span, hits > 0 ? static_cast<uint64_t>(hits) : 0});
  }
  return out;
}

uint64_t ReadPlan::Total(size_t w, std::span<const uint64_t> values) const {
  uint64_t total = 0;
  for (const CountedSpan& piece : Pieces(w, values)) total += piece.hits;
  return total;
}

ReadPlan PlanReads(const Ladder& ladder, std::span<const Span> spans, std::optional<int64_t> now,
                   CoverOptions options) {
  std::vector<std::vector<Piece>> covers;
  std::map<Bucket, uint32_t> index;
  for (const Span& span : spans) {
    covers.push_back(CoverSpan(ladder, span, now, options));
    for (const Piece& piece : covers.back()) {
      for (const Term& term : piece.terms) index.emplace(term.bucket, 0);
    }
  }
  // Reads go finest level first: a parent read after its complement can only have gained hits, so
  // a concurrent increment makes a parent-minus-complement piece over-count, never under-count.
  ReadPlan plan;
  plan.reads.reserve(index.size());
  for (auto& [bucket, i] : index) {
    i = static_cast<uint32_t>(plan.reads.size());
    plan.reads.push_back(bucket);
  }
  for (const std::vector<Piece>& cover : covers) {
    std::vector<ReadPlan::IndexedPiece>& pieces = plan.windows.emplace_back();
    for (const Piece& piece : cover) {
      ReadPlan::IndexedPiece& indexed = pieces.emplace_back();
      indexed.span = piece.span;
      for (const Term& term : piece.terms) {
        indexed.terms.push_back(ReadPlan::IndexedTerm{index.at(term.bucket), term.sign});
      }
    }
  }
  return plan;
}

}  // namespace hourglass
