#include "hourglass/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

namespace hourglass {
namespace {

constexpr Seconds kMaxRetention{400 * 86400};

struct PlanCache {
  uint64_t engine = 0;
  std::vector<Span> spans;
  std::optional<int64_t> open;
  ReadPlan plan;
};

}  // namespace

uint64_t Engine::NextId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

const ReadPlan& Engine::Plan(const std::vector<Span>& spans, std::optional<int64_t> open) const {
  thread_local PlanCache cache;
  if (cache.engine != id_ || cache.open != open || cache.spans != spans) {
    cache.plan = PlanReads(options_.ladder, spans, open, options_.cover);
    cache.engine = id_;
    cache.spans = spans;
    cache.open = open;
  }
  return cache.plan;
}

Result<Engine> Engine::Create(Store& store, const Clock& clock, EngineOptions options) {
  Result<KeyCodec> codec = KeyCodec::Create(options.name_space);
  if (!codec.ok()) return codec.error();
  if (options.retention < Seconds{1} || options.retention > kMaxRetention) {
    return InvalidArgument(
        fmt::format("retention {}: must be 1s to 400d", FormatDuration(options.retention)));
  }
  if (options.settle_margin < Seconds{0} || options.settle_margin > Seconds{3600}) {
    return InvalidArgument("settle margin must be 0s to 1h");
  }
  return Engine(store, clock, std::move(options), std::move(*codec));
}

Seconds Engine::Ttl(size_t level) const {
  const Ladder& ladder = options_.ladder;
  // A level's buckets serve as the complement of a partial parent at the window's far edge, so
  // they must outlive the window by the parent's width.
  const Seconds reach = level + 1 < ladder.levels() ? ladder.width(level + 1) : ladder.width(level);
  return options_.retention + reach + options_.settle_margin;
}

std::string Engine::GroupKey(std::string_view event, std::string_view feature) const {
  return codec_.GroupKey(event, feature);
}

std::string Engine::BucketKey(const std::string& group, const Bucket& bucket) const {
  return KeyCodec::BucketKey(group, options_.ladder.width(bucket.level), bucket.index);
}

Result<std::string> Engine::Group(std::string_view event, std::string_view feature) const {
  if (event.empty()) return InvalidArgument("event must not be empty");
  return codec_.GroupKey(event, feature);
}

Status Engine::CheckWindows(std::span<const Window> windows) const {
  for (const Window& window : windows) {
    if (window.length() > options_.retention) {
      return InvalidArgument(fmt::format(
          "window {} is longer than the engine's retention ({}): its buckets would expire; "
          "raise the retention",
          window.ToString(), FormatDuration(options_.retention)));
    }
  }
  return {};
}

std::vector<Increment> Engine::HitIncrements(const std::string& group, int64_t t,
                                             int64_t delta) const {
  std::vector<Increment> increments;
  for (size_t level = 0; level < options_.ladder.levels(); ++level) {
    increments.push_back(
        Increment{BucketKey(group, options_.ladder.BucketAt(level, t)), delta, Ttl(level)});
  }
  return increments;
}

Result<Cost> Engine::Record(std::string_view event, std::string_view feature, uint64_t cost,
                            std::optional<Instant> at) const {
  Result<std::string> group = Group(event, feature);
  if (!group.ok()) return group.error();
  if (cost < 1 || cost > (uint64_t{1} << 62)) return InvalidArgument("cost must be >= 1");
  const int64_t t = ToUnix(at.value_or(clock_->Now()));
  Batch batch{*group, HitIncrements(*group, t, static_cast<int64_t>(cost)), {}};
  for (const Increment& inc : batch.increments) batch.reads.push_back(inc.key);
  Result<std::vector<uint64_t>> values = store_->Apply(batch);
  if (!values.ok()) return values.error();
  return Cost{batch.increments.size(), batch.reads.size(), 1};
}

Result<Counts> Engine::Count(std::string_view event, std::string_view feature,
                             std::span<const Window> windows, std::optional<Instant> at) const {
  Result<std::string> group = Group(event, feature);
  if (!group.ok()) return group.error();
  if (Status s = CheckWindows(windows); !s.ok()) return s.error();
  const Instant now = clock_->Now();
  const Instant t = at.value_or(now);
  std::vector<Span> spans;
  for (const Window& window : windows) spans.push_back(window.SpanAt(t));
  const std::optional<int64_t> open = t == now ? std::optional(ToUnix(t)) : std::nullopt;
  const ReadPlan& plan = Plan(spans, open);
  Batch batch{*group, {}, {}};
  for (const Bucket& bucket : plan.reads) batch.reads.push_back(BucketKey(*group, bucket));
  Counts counts{t, {}, Cost{0, batch.reads.size(), batch.reads.empty() ? 0u : 1u}};
  std::vector<uint64_t> values;
  if (!batch.reads.empty()) {
    Result<std::vector<uint64_t>> read = store_->Apply(batch);
    if (!read.ok()) return read.error();
    values = std::move(*read);
  }
  for (size_t i = 0; i < windows.size(); ++i) {
    counts.windows.push_back(WindowCount{windows[i], plan.Total(i, values)});
  }
  return counts;
}

Result<Engine::BucketValues> Engine::ReadBuckets(std::string_view event, std::string_view feature,
                                                 std::span<const Bucket> buckets) const {
  Result<std::string> group = Group(event, feature);
  if (!group.ok()) return group.error();
  Batch batch{*group, {}, {}};
  for (const Bucket& bucket : buckets) {
    if (bucket.level >= options_.ladder.levels()) {
      return InvalidArgument(fmt::format("bucket level {} is not in the ladder {}", bucket.level,
                                         options_.ladder.ToString()));
    }
    batch.reads.push_back(BucketKey(*group, bucket));
  }
  if (batch.reads.empty()) return BucketValues{};
  Result<std::vector<uint64_t>> values = store_->Apply(batch);
  if (!values.ok()) return values.error();
  return BucketValues{std::move(*values), Cost{0, batch.reads.size(), 1}};
}

Result<Decision> Engine::Check(std::string_view event, std::string_view feature,
                               const Policy& policy, uint64_t cost,
                               std::optional<Instant> at) const {
  Result<std::string> group = Group(event, feature);
  if (!group.ok()) return group.error();
  if (cost < 1 || cost > (uint64_t{1} << 62)) return InvalidArgument("cost must be >= 1");
  std::vector<Window> windows;
  for (const Limit& limit : policy.limits) windows.push_back(limit.window);
  if (Status s = CheckWindows(windows); !s.ok()) return s.error();

  const Instant now = clock_->Now();
  const Instant t = at.value_or(now);
  const int64_t ut = ToUnix(t);
  std::vector<Span> spans;
  for (const Window& window : windows) spans.push_back(window.SpanAt(t));
  const std::optional<int64_t> open = t == now ? std::optional(ut) : std::nullopt;
  const ReadPlan& plan = Plan(spans, open);

  Batch batch{*group, HitIncrements(*group, ut, static_cast<int64_t>(cost)), {}};
  for (const Bucket& bucket : plan.reads) batch.reads.push_back(BucketKey(*group, bucket));
  Decision decision;
  decision.cost = Cost{batch.increments.size(), batch.reads.size(), 1};

  Result<std::vector<uint64_t>> values = store_->Apply(batch);
  if (!values.ok()) {
    decision.allowed = policy.on_store_failure == FailureMode::kFailOpen;
    decision.degraded = true;
    decision.store_error = values.error();
    decision.retry_after = decision.allowed ? Seconds{0} : Seconds{1};
    return decision;
  }

  // Every window contains t, and the reads followed the increments: counts include this hit.
  std::vector<std::vector<CountedSpan>> pieces;
  bool fits = true;
  for (size_t i = 0; i < policy.limits.size(); ++i) {
    pieces.push_back(plan.Pieces(i, *values));
    uint64_t count = 0;
    for (const CountedSpan& piece : pieces.back()) count += piece.hits;
    const bool exceeded = count > policy.limits[i].max_hits;
    decision.limits.push_back(LimitOutcome{policy.limits[i], count, 0, exceeded, Seconds{0}});
    fits = fits && !exceeded;
  }
  decision.allowed = fits;
  decision.recorded = true;

  if (!fits && policy.mode == CountingMode::kAdmitted) {
    // Take the increments back; nobody waits for the answer.
    Batch undo{*group, HitIncrements(*group, ut, -static_cast<int64_t>(cost)), {}};
    decision.cost.keys_written += undo.increments.size();
    Result<std::vector<uint64_t>> undone = store_->Apply(undo);
    decision.recorded = !undone.ok();
    if (!decision.recorded) {
      for (size_t i = 0; i < decision.limits.size(); ++i) {
        decision.limits[i].count -= std::min(decision.limits[i].count, cost);
        for (CountedSpan& piece : pieces[i]) {
          if (piece.span.Contains(ut)) piece.hits -= std::min(piece.hits, cost);
        }
      }
    }
  }

  for (size_t i = 0; i < decision.limits.size(); ++i) {
    LimitOutcome& outcome = decision.limits[i];
    const uint64_t max = outcome.limit.max_hits;
    outcome.remaining = outcome.count < max ? max - outcome.count : 0;
    outcome.retry_after = fits ? Seconds{0} : RetryAfter(outcome.limit, t, cost, pieces[i]);
    if (!outcome.retry_after) {
      decision.retry_after = std::nullopt;
    } else if (decision.retry_after) {
      decision.retry_after = std::max(*decision.retry_after, *outcome.retry_after);
    }
  }
  return decision;
}

Result<Cost> Engine::Reset(std::string_view event, std::string_view feature,
                           std::optional<Instant> around) const {
  Result<std::string> group = Group(event, feature);
  if (!group.ok()) return group.error();
  const Ladder& ladder = options_.ladder;
  const int64_t t = ToUnix(around.value_or(clock_->Now()));
  Cost cost;
  std::vector<std::string> doomed;
  // Candidates of the current level: at the top, every bucket that can still be alive; below,
  // the children of the buckets that held hits.
  const size_t top = ladder.levels() - 1;
  std::vector<Bucket> candidates;
  {
    const int64_t w = ladder.width(top).count();
    const int64_t first = FloorDiv(t - Ttl(top).count(), w);
    const int64_t last = FloorDiv(t + options_.settle_margin.count(), w);
    for (int64_t i = first; i <= last; ++i)
      candidates.push_back(Bucket{static_cast<uint32_t>(top), i});
  }
  for (size_t level = top + 1; level-- > 0 && !candidates.empty();) {
    Batch batch{*group, {}, {}};
    for (const Bucket& bucket : candidates) batch.reads.push_back(BucketKey(*group, bucket));
    Result<std::vector<uint64_t>> values = store_->Apply(batch);
    if (!values.ok()) return values.error();
    cost.keys_read += batch.reads.size();
    cost.round_trips += 1;
    std::vector<Bucket> children;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if ((*values)[i] == 0) continue;
      doomed.push_back(batch.reads[i]);
      if (level == 0) continue;
      const int64_t ratio = ladder.width(level).count() / ladder.width(level - 1).count();
      for (int64_t c = 0; c < ratio; ++c) {
        children.push_back(
            Bucket{static_cast<uint32_t>(level - 1), candidates[i].index * ratio + c});
      }
    }
    candidates = std::move(children);
  }
  if (!doomed.empty()) {
    if (Status s = store_->Delete(*group, doomed); !s.ok()) return s.error();
    cost.keys_written += doomed.size();
    cost.round_trips += 1;
  }
  return cost;
}

}  // namespace hourglass
