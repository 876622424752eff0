#include "retry_refiner.h"

#include <algorithm>

#include "hourglass/saturating.h"
#include "sorted_buckets.h"

namespace hourglass::internal {

std::optional<size_t> RetryRefiner::Crossing(const Limit& limit,
                                             const std::vector<CountedSpan>& pieces) const {
  const int64_t t = t_;
  const uint64_t hits = hits_, pending = pending_;
  if (limit.window.kind() != WindowKind::kSliding || hits > limit.max_hits) return std::nullopt;
  const auto stays = [&](const CountedSpan& p) {
    return p.span.Contains(t) ? p.hits - std::min(p.hits, pending) : p.hits;
  };
  uint64_t total = 0;
  for (const CountedSpan& p : pieces) total = SaturatingAdd(total, stays(p));
  if (SaturatingAdd(total, hits) <= limit.max_hits) return std::nullopt;
  // Hits leave in time order: the running sum of the oldest reaches what must leave.
  const uint64_t must_leave = SaturatingAdd(total, hits) - limit.max_hits;
  uint64_t left = 0;
  size_t k = 0;
  while (k < pieces.size() && (left = SaturatingAdd(left, stays(pieces[k]))) < must_leave) ++k;
  if (k == pieces.size() || pieces[k].span.length() <= 1) return std::nullopt;
  return k;
}

size_t RetryRefiner::ChildLevel(Span span) const {
  const Ladder& ladder = ladder_;
  for (size_t l = ladder.levels(); l-- > 0;) {
    const int64_t w = ladder.width(l).count();
    if (w < span.length() && FloorDiv(span.first, w) * w == span.first) return l;
  }
  return 0;
}

std::vector<Bucket> RetryRefiner::Children(Span span, size_t level) const {
  const Ladder& ladder = ladder_;
  const int64_t w = ladder.width(level).count();
  std::vector<Bucket> children;
  for (int64_t s = FloorDiv(span.first, w) * w; s <= span.last; s += w) {
    children.push_back(ladder.BucketAt(level, s));
  }
  return children;
}

std::vector<Bucket> RetryRefiner::NextReads() {
  reads_.clear();
  if (rounds_ == ladder_.levels()) return reads_;
  ++rounds_;
  split_.assign(limits_.size(), std::nullopt);
  children_.assign(limits_.size(), {});
  for (size_t i = 0; i < limits_.size(); ++i) {
    split_[i] = Crossing(limits_[i], pieces_[i]);
    if (!split_[i]) continue;
    const Span span = pieces_[i][*split_[i]].span;
    children_[i] = Children(span, ChildLevel(span));
    reads_.insert(reads_.end(), children_[i].begin(), children_[i].end());
  }
  SortUnique(reads_);
  if (reads_.empty()) rounds_ = ladder_.levels();
  return reads_;
}

void RetryRefiner::Split(const std::vector<uint64_t>& values) {
  for (size_t i = 0; i < limits_.size(); ++i) {
    if (!split_[i]) continue;
    // The window's first second: children wholly before it are gone, the one across it is cut.
    const int64_t first_second = t_ - limits_[i].window.length().count() + 1;
    const Span span = pieces_[i][*split_[i]].span;
    std::vector<CountedSpan> counted;
    for (const Bucket& b : children_[i]) {
      const int64_t w = ladder_.width(b.level).count();
      const int64_t s = b.index * w;
      const Span child{std::max(s, first_second), std::min(s + w - 1, span.last)};
      if (child.last < first_second) continue;
      counted.push_back(CountedSpan{child, values[IndexOf(reads_, b)]});
    }
    auto& p = pieces_[i];
    p.erase(p.begin() + static_cast<long>(*split_[i]));
    p.insert(p.begin() + static_cast<long>(*split_[i]), counted.begin(), counted.end());
  }
}

}  // namespace hourglass::internal
