#include "hourglass/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "hot_path_cache.h"

namespace hourglass {

namespace internal {
struct Caches {
  std::unique_ptr<BucketCache> buckets;
  std::unique_ptr<BlockedCache> blocked;
};
}  // namespace internal

namespace {

constexpr Seconds kMaxRetention{400 * 86400};
constexpr Seconds kGenerationTtl{60 * 86400};

struct PlanCache {
  uint64_t engine = 0;
  std::vector<Span> spans;
  std::optional<int64_t> open;
  ReadPlan plan;
};

std::string GenerationKey(const std::string& group) { return group + ":g"; }

// The coarse bounds of one window: the buckets of one level that overlap it.
struct Bound {
  size_t level = 0;
  std::vector<Bucket> buckets;
  bool first_inside = true;  // does the first bucket start inside the window?
};

Bound BoundFor(const Ladder& ladder, Span span) {
  Bound bound;
  const int64_t length = span.length();
  for (size_t level = ladder.levels(); level-- > 0;) {
    if (ladder.width(level).count() <= length || level == 0) {
      bound.level = level;
      break;
    }
  }
  const int64_t w = ladder.width(bound.level).count();
  const int64_t first = FloorDiv(span.first, w), last = FloorDiv(span.last, w);
  bound.buckets.reserve(static_cast<size_t>(last - first + 1));
  for (int64_t i = first; i <= last; ++i) {
    bound.buckets.push_back(Bucket{static_cast<uint32_t>(bound.level), i});
  }
  bound.first_inside = first * w >= span.first;
  return bound;
}

// The blocked-client cache's key: the group (printable, no 0x1f), then the policy as fixed-size
// binary records, so distinct policies never share a key and nothing is formatted per check.
std::string BlockedKey(const std::string& group, const Policy& policy) {
  std::string key;
  key.reserve(group.size() + 2 + policy.limits.size() * 26);
  key += group;
  key += '\x1f';
  key += static_cast<char>(policy.mode);
  const auto append = [&](int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const Limit& limit : policy.limits) {
    key += static_cast<char>(limit.window.kind());
    key += static_cast<char>(limit.window.unit());
    append(limit.window.length().count());
    append(limit.window.utc_offset().count());
    append(static_cast<int64_t>(limit.max_hits));
  }
  return key;
}

}  // namespace

Engine::Engine(Store& store, const Clock& clock, EngineOptions options, KeyCodec codec)
    : store_(&store),
      clock_(&clock),
      options_(std::move(options)),
      codec_(std::move(codec)),
      id_(NextId()),
      caches_(std::make_shared<internal::Caches>()) {
  const HotPathOptions& hot = options_.hot_path;
  if (hot.bucket_cache_features > 0) {
    caches_->buckets = std::make_unique<internal::BucketCache>(
        hot.bucket_cache_features, std::max<size_t>(16, hot.bucket_cache_buckets_per_feature));
  }
  if (hot.blocked_cache_entries > 0) {
    caches_->blocked =
        std::make_unique<internal::BlockedCache>(hot.blocked_cache_entries, hot.blocked_max_age);
  }
}

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
  if (options.hot_path.blocked_max_age < Seconds{1}) {
    return InvalidArgument("blocked_max_age must be >= 1s");
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

Result<Engine::Read> Engine::ReadCached(const std::string& group, std::span<const Bucket> buckets,
                                        std::vector<Increment> increments, Instant now) const {
  using internal::BucketCache;
  BucketCache* cache = caches_->buckets.get();
  const int64_t settled = ToUnix(now) - options_.settle_margin.count();
  Read read;
  read.values.assign(buckets.size(), 0);
  Batch batch{group, std::move(increments), {}};
  read.cost.keys_written = batch.increments.size();
  batch.reads.reserve(buckets.size() + 1);
  // Per bucket: immutable (may be cached) and served from the cache.
  std::vector<uint8_t> flags(buckets.size(), 0);
  if (cache != nullptr) {
    batch.reads.push_back(GenerationKey(group));  // first: see BucketCache for why
    for (size_t i = 0; i < buckets.size(); ++i) {
      const int64_t w = options_.ladder.width(buckets[i].level).count();
      if ((buckets[i].index + 1) * w - 1 < settled) flags[i] = BucketCache::kImmutable;
    }
    cache->Lookup(group, buckets, flags, read.values);
  }
  const auto from_cache = [&](size_t i) { return (flags[i] & BucketCache::kCached) != 0; };
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!from_cache(i)) batch.reads.push_back(BucketKey(group, buckets[i]));
  }
  if (batch.reads.empty() && batch.increments.empty()) return read;
  Result<std::vector<uint64_t>> values = store_->Apply(batch);
  if (!values.ok()) return values.error();
  read.cost.keys_read += batch.reads.size();
  read.cost.round_trips += batch.reads.empty() ? 0 : 1;
  size_t k = cache != nullptr ? 1 : 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (!from_cache(i)) read.values[i] = (*values)[k++];
  }
  if (cache == nullptr) return read;

  // The generation was read before any bucket: values cached under it are current.
  const uint64_t gen = (*values)[0];
  size_t hits = 0;
  for (size_t i = 0; i < buckets.size(); ++i) hits += from_cache(i) ? 1 : 0;
  if (!cache->Sync(group, gen) && hits > 0) {
    // A reset happened since those values were cached: read them again.
    Batch again{group, {}, {}};
    for (size_t i = 0; i < buckets.size(); ++i) {
      if (from_cache(i)) again.reads.push_back(BucketKey(group, buckets[i]));
    }
    Result<std::vector<uint64_t>> fresh = store_->Apply(again);
    if (!fresh.ok()) return fresh.error();
    k = 0;
    for (size_t i = 0; i < buckets.size(); ++i) {
      if (!from_cache(i)) continue;
      read.values[i] = (*fresh)[k++];
      flags[i] &= static_cast<uint8_t>(~BucketCache::kCached);
    }
    read.cost.keys_read += again.reads.size();
    read.cost.round_trips += 1;
    hits = 0;
  }
  read.cost.cache_hits += hits;
  cache->Store(group, gen, buckets, flags, read.values);
  return read;
}

Result<Cost> Engine::Record(std::string_view event, std::string_view feature, uint64_t cost,
                            std::optional<Instant> at) const {
  Result<std::string> group = Group(event, feature);
  if (!group.ok()) return group.error();
  if (cost < 1 || cost > (uint64_t{1} << 62)) return InvalidArgument("cost must be >= 1");
  const Instant now = clock_->Now();
  const int64_t t = ToUnix(at.value_or(now));
  Batch batch{*group, HitIncrements(*group, t, static_cast<int64_t>(cost)), {}};
  for (const Increment& inc : batch.increments) batch.reads.push_back(inc.key);
  Result<std::vector<uint64_t>> values = store_->Apply(batch);
  // A hit recorded at a settled instant (a replay) changes buckets this process may have cached
  // as immutable: forget them. Other processes' caches assume no such writes (settle_margin).
  if (caches_->buckets && t < ToUnix(now) - options_.settle_margin.count()) {
    caches_->buckets->Invalidate(*group);
  }
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
  const ReadPlan& plan = Plan(spans, open);  // ReadCached does not plan: the reference holds
  Result<Read> read = ReadCached(*group, plan.reads, {}, now);
  if (!read.ok()) return read.error();
  Counts counts{t, {}, read->cost};
  for (size_t i = 0; i < windows.size(); ++i) {
    counts.windows.push_back(WindowCount{windows[i], plan.Total(i, read->values)});
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

Result<Cost> Engine::RefineForRetry(const std::string& group, const std::vector<Limit>& limits,
                                    int64_t t, uint64_t cost, uint64_t pending,
                                    std::vector<std::vector<CountedSpan>>& pieces,
                                    Instant now) const {
  Cost spent;
  const Ladder& ladder = options_.ladder;
  const auto hits = [&](const CountedSpan& p) {
    return p.span.Contains(t) ? p.hits - std::min(p.hits, pending) : p.hits;
  };
  // The piece of limit i that frees the room, if it is wider than a second.
  const auto crossing = [&](size_t i) -> std::optional<size_t> {
    const Limit& limit = limits[i];
    if (limit.window.kind() != WindowKind::kSliding || cost > limit.max_hits) return std::nullopt;
    uint64_t total = 0;
    for (const CountedSpan& p : pieces[i]) total += hits(p);
    if (total + cost <= limit.max_hits) return std::nullopt;
    // Hits leave in time order: the running sum of the oldest reaches what must leave.
    const uint64_t must_leave = total + cost - limit.max_hits;
    uint64_t left = 0;
    size_t k = 0;
    while (k < pieces[i].size() && (left += hits(pieces[i][k])) < must_leave) ++k;
    if (k == pieces[i].size() || pieces[i][k].span.length() <= 1) return std::nullopt;
    return k;
  };
  // The widest ladder level narrower than `span` whose buckets tile it.
  const auto child_level = [&](Span span) {
    for (size_t l = ladder.levels(); l-- > 0;) {
      const int64_t w = ladder.width(l).count();
      if (w < span.length() && FloorDiv(span.first, w) * w == span.first) return l;
    }
    return size_t{0};
  };
  for (size_t round = 0; round < ladder.levels(); ++round) {
    std::vector<std::optional<size_t>> split(limits.size());
    std::vector<Bucket> reads;
    for (size_t i = 0; i < limits.size(); ++i) {
      split[i] = crossing(i);
      if (!split[i]) continue;
      const Span span = pieces[i][*split[i]].span;
      const size_t level = child_level(span);
      const int64_t w = ladder.width(level).count();
      for (int64_t s = FloorDiv(span.first, w) * w; s <= span.last; s += w) {
        reads.push_back(ladder.BucketAt(level, s));
      }
    }
    if (reads.empty()) break;
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    Result<Read> read = ReadCached(group, reads, {}, now);
    if (!read.ok()) return read.error();
    spent += read->cost;
    for (size_t i = 0; i < limits.size(); ++i) {
      if (!split[i]) continue;
      const int64_t first_second = t - limits[i].window.length().count() + 1;
      const Span span = pieces[i][*split[i]].span;
      const size_t level = child_level(span);
      const int64_t w = ladder.width(level).count();
      std::vector<CountedSpan> children;
      for (int64_t s = FloorDiv(span.first, w) * w; s <= span.last; s += w) {
        const Bucket b = ladder.BucketAt(level, s);
        const Span child{std::max(s, first_second), std::min(s + w - 1, span.last)};
        if (child.last < first_second) continue;  // before the window: already gone
        const size_t at =
            static_cast<size_t>(std::lower_bound(reads.begin(), reads.end(), b) - reads.begin());
        children.push_back(CountedSpan{child, read->values[at]});
      }
      auto& p = pieces[i];
      p.erase(p.begin() + static_cast<long>(*split[i]));
      p.insert(p.begin() + static_cast<long>(*split[i]), children.begin(), children.end());
    }
  }
  return spent;
}

Decision Engine::Degraded(const Policy& policy, Error error, Cost cost) const {
  Decision decision;
  decision.allowed = policy.on_store_failure == FailureMode::kFailOpen;
  decision.degraded = true;
  decision.store_error = std::move(error);
  decision.retry_after = decision.allowed ? Seconds{0} : Seconds{1};
  decision.cost = cost;
  return decision;
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
  const bool live = t == now;
  const size_t n = policy.limits.size();

  // A client denied moments ago is certainly still denied: answer without reading.
  std::string blocked_key;
  if (caches_->blocked && live) {
    blocked_key = BlockedKey(*group, policy);
    if (std::optional<internal::BlockedCache::Entry> hit =
            caches_->blocked->Get(blocked_key, t, cost)) {
      Decision decision = hit->decision;
      decision.cost = Cost{};
      decision.cost.blocked_hits = 1;
      decision.recorded = false;
      if (policy.mode == CountingMode::kAttempts) {
        // Every attempt counts: send the increments, do not wait.
        Result<std::vector<uint64_t>> sent =
            store_->Apply(Batch{*group, HitIncrements(*group, ut, static_cast<int64_t>(cost)), {}});
        if (!sent.ok()) return Degraded(policy, sent.error(), decision.cost);
        decision.recorded = true;
        decision.cost.keys_written = options_.ladder.levels();
        for (auto& pieces : hit->pieces) {
          if (!pieces.empty() && pieces.back().span == Span{ut, ut}) {
            pieces.back().hits += cost;  // one piece per second: bounded by blocked_max_age
          } else {
            pieces.push_back(CountedSpan{Span{ut, ut}, cost});
          }
        }
      }
      // Counts are those of the decision that blocked the client, plus the attempts recorded
      // since: an upper bound now (hits may have left the windows since).
      decision.retry_after = Seconds{0};
      for (size_t i = 0; i < decision.limits.size(); ++i) {
        LimitOutcome& o = decision.limits[i];
        if (decision.recorded) o.count += cost;
        o.count_min = 0;
        o.exact = false;
        o.remaining = o.count < o.limit.max_hits ? o.limit.max_hits - o.count : 0;
        o.retry_after = RetryAfter(o.limit, t, cost, hit->pieces[i]);
        if (!o.retry_after) {
          decision.retry_after = std::nullopt;
        } else if (decision.retry_after) {
          decision.retry_after = std::max(*decision.retry_after, *o.retry_after);
        }
      }
      if (decision.recorded) {
        internal::BlockedCache::Entry updated = *hit;
        updated.decision = decision;
        updated.decision.cost = Cost{};
        caches_->blocked->Put(blocked_key, std::move(updated));
      }
      return decision;
    }
  }

  std::vector<Span> spans;
  spans.reserve(n);
  for (const Window& window : windows) spans.push_back(window.SpanAt(t));
  Decision decision;
  decision.limits.reserve(n);
  decision.recorded = true;
  std::vector<uint64_t> upper(n), lower(n);
  std::vector<std::vector<CountedSpan>> upper_pieces(n), lower_pieces(n);
  bool settled = false;

  // Reads the exact cover of every window (with `increments`, if any) into the pieces.
  const auto read_exact = [&](std::vector<Increment> increments,
                              std::optional<int64_t> open) -> Status {
    const ReadPlan& plan = Plan(spans, open);  // ReadCached does not plan: the reference holds
    Result<Read> read = ReadCached(*group, plan.reads, std::move(increments), now);
    if (!read.ok()) return read.error();
    decision.cost += read->cost;
    for (size_t i = 0; i < n; ++i) {
      upper_pieces[i] = lower_pieces[i] = plan.Pieces(i, read->values);
      upper[i] = 0;
      for (const CountedSpan& p : upper_pieces[i]) upper[i] += p.hits;
      lower[i] = upper[i];
    }
    return {};
  };

  if (options_.hot_path.bounds && live) {
    // Phase 1: the increments and the coarse bounds of every window, in one batch.
    std::vector<Bound> bounds;
    std::vector<Bucket> reads;
    bounds.reserve(n);
    for (const Span& span : spans) {
      bounds.push_back(BoundFor(options_.ladder, span));
      reads.insert(reads.end(), bounds.back().buckets.begin(), bounds.back().buckets.end());
    }
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    Result<Read> read =
        ReadCached(*group, reads, HitIncrements(*group, ut, static_cast<int64_t>(cost)), now);
    if (!read.ok()) return Degraded(policy, read.error(), decision.cost);
    decision.cost += read->cost;
    bool all_fit = true, one_over = false;
    for (size_t i = 0; i < n; ++i) {
      const int64_t w = options_.ladder.width(bounds[i].level).count();
      upper_pieces[i].reserve(bounds[i].buckets.size());
      lower_pieces[i].reserve(bounds[i].buckets.size());
      for (size_t k = 0; k < bounds[i].buckets.size(); ++k) {
        const Bucket& b = bounds[i].buckets[k];
        const uint64_t v = read->values[static_cast<size_t>(
            std::lower_bound(reads.begin(), reads.end(), b) - reads.begin())];
        const Span bucket_span{b.index * w, std::min(b.index * w + w - 1, ut)};
        upper[i] += v;
        upper_pieces[i].push_back(CountedSpan{bucket_span, v});
        if (k > 0 || bounds[i].first_inside) {
          lower[i] += v;
          lower_pieces[i].push_back(CountedSpan{bucket_span, v});
        }
      }
      all_fit = all_fit && upper[i] <= policy.limits[i].max_hits;
      one_over = one_over || lower[i] > policy.limits[i].max_hits;
    }
    settled = all_fit || one_over;
  } else {
    // Exact in one batch with the increments.
    if (Status st = read_exact(HitIncrements(*group, ut, static_cast<int64_t>(cost)),
                               live ? std::optional(ut) : std::nullopt);
        !st.ok()) {
      return Degraded(policy, st.error(), decision.cost);
    }
    settled = true;
  }

  if (!settled) {
    // Phase 2: the bounds did not settle it; read the exact cover (increments already sent).
    if (Status st = read_exact({}, std::optional(ut)); !st.ok()) {
      return Degraded(policy, st.error(), decision.cost);
    }
  }

  // Every window contains t and the reads followed the increments: counts include this hit.
  bool fits = true;
  for (size_t i = 0; i < n; ++i) {
    const bool exceeded =
        lower[i] > policy.limits[i].max_hits || upper[i] > policy.limits[i].max_hits;
    // With bounds settled, "exceeded" is certain only from the lower bound; an allowed decision
    // had every upper bound within its limit.
    decision.limits.push_back(LimitOutcome{policy.limits[i], upper[i], 0, exceeded, Seconds{0},
                                           lower[i] == upper[i], lower[i]});
    fits = fits && upper[i] <= policy.limits[i].max_hits;
  }
  decision.allowed = fits;

  if (!fits && options_.exact_retry_after) {
    // Pin the retry time to the second: read inside the piece that frees the room (on denials
    // only). Reads go before the take-back, so they include this hit; it is discounted as pending.
    const uint64_t pending = policy.mode == CountingMode::kAdmitted ? cost : 0;
    Result<Cost> spent =
        RefineForRetry(*group, policy.limits, ut, cost, pending, upper_pieces, now);
    if (spent.ok()) {  // otherwise keep the coarser retry: it is never early
      decision.cost += *spent;
      lower_pieces = upper_pieces;
    }
  }

  if (!fits && policy.mode == CountingMode::kAdmitted) {
    // Take the increments back; nobody waits for the answer.
    Batch undo{*group, HitIncrements(*group, ut, -static_cast<int64_t>(cost)), {}};
    decision.cost.keys_written += undo.increments.size();
    Result<std::vector<uint64_t>> undone = store_->Apply(undo);
    decision.recorded = !undone.ok();
    if (!decision.recorded) {
      for (size_t i = 0; i < n; ++i) {
        LimitOutcome& o = decision.limits[i];
        o.count -= std::min(o.count, cost);
        o.count_min -= std::min(o.count_min, cost);
        for (auto* pieces : {&upper_pieces[i], &lower_pieces[i]}) {
          for (CountedSpan& piece : *pieces) {
            if (piece.span.Contains(ut)) piece.hits -= std::min(piece.hits, cost);
          }
        }
      }
    }
  }

  std::optional<Seconds> earliest = Seconds{0};
  for (size_t i = 0; i < n; ++i) {
    LimitOutcome& outcome = decision.limits[i];
    const uint64_t max = outcome.limit.max_hits;
    outcome.remaining = outcome.count < max ? max - outcome.count : 0;
    outcome.retry_after = fits ? Seconds{0} : RetryAfter(outcome.limit, t, cost, upper_pieces[i]);
    if (!outcome.retry_after) {
      decision.retry_after = std::nullopt;
    } else if (decision.retry_after) {
      decision.retry_after = std::max(*decision.retry_after, *outcome.retry_after);
    }
    if (!fits) {
      const std::optional<Seconds> e = EarliestRetry(outcome.limit, t, cost, lower_pieces[i]);
      earliest = !e || !earliest ? std::nullopt : std::optional(std::max(*earliest, *e));
    }
  }
  if (!fits && caches_->blocked && live && (!earliest || *earliest > Seconds{0})) {
    const Instant until =
        earliest ? t + *earliest : t + options_.hot_path.blocked_max_age;  // never fits: re-check
    caches_->blocked->Put(blocked_key,
                          internal::BlockedCache::Entry{t, until, cost, decision, upper_pieces});
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
  // After the deletes: every process that reads the new generation drops what it cached.
  Batch bump{
      *group, {Increment{GenerationKey(*group), 1, kGenerationTtl}}, {GenerationKey(*group)}};
  Result<std::vector<uint64_t>> bumped = store_->Apply(bump);
  if (!bumped.ok()) return bumped.error();
  cost.keys_written += 1;
  cost.round_trips += 1;
  if (caches_->buckets) caches_->buckets->Invalidate(*group);
  return cost;
}

}  // namespace hourglass
