// Internal to the engine: what every Engine operation shares, created once by Engine::Create.
//
// Thread-safety: immutable after creation except the caches, which are safe to use from many
// threads.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bucket_reader.h"
#include "hot_path_cache.h"
#include "hourglass/engine.h"
#include "hourglass/key_space.h"
#include "hourglass/planner.h"

namespace hourglass::internal {

struct EngineCore {
  EngineCore(Store& store, const Clock& clock, EngineOptions options, KeyCodec codec);

  // The plan for `spans`; reused from a per-thread cache when the same engine asks for the same
  // spans again (every check of one policy within one second). Buckets that may still change at
  // `now` (within the settle margin) are never subtracted.
  std::shared_ptr<const ReadPlan> Plan(const std::vector<Span>& spans, std::optional<int64_t> open,
                                       Instant now) const;
  // A reader with the immutable-bucket cache, or without it (`cached` false).
  BucketReader Reader(bool cached = true) const {
    return BucketReader(*store, keys, cached ? buckets.get() : nullptr, settle_margin());
  }
  Seconds settle_margin() const { return options.settle_margin; }
  // Whether second `t` lies before the settle margin of `now`: buckets holding it are treated as
  // immutable by every cache.
  bool IsSettled(int64_t t, Instant now) const { return t < ToUnix(now) - settle_margin().count(); }
  // A write at such a second changes buckets this process may have cached: forget `group`'s.
  void ForgetCachedIfSettled(const std::string& group, int64_t t, Instant now) const {
    if (buckets && IsSettled(t, now)) buckets->Invalidate(group);
  }
  // ... and other processes may have cached them too: a write batch at such a second also bumps
  // the feature's generation (after its increments), which drops every process's cached buckets
  // of it at its next read, as a reset does.
  void AnnounceIfSettled(Batch& batch, int64_t t, Instant now) const {
    if (!IsSettled(t, now)) return;
    batch.increments.push_back(KeySpace::GenerationBump(batch.group));
  }

  // The latest loss on `group`'s servers (options.losses) later than second `first`: windows
  // starting at or before it may miss hits. nullopt without one, or without a loss registry.
  std::optional<StoreLoss> LossSince(const std::string& group, int64_t first) const {
    const StoreLosses* losses = options.losses;
    if (losses == nullptr || !losses->AnyAfter(first)) return std::nullopt;
    return losses->Since(store->ServersOf(group), first, store->servers_are_copies());
  }
  // The latest loss that one of `spans` reaches back before (LossSince of their first second).
  std::optional<StoreLoss> LossBefore(const std::string& group, std::span<const Span> spans) const {
    if (spans.empty()) return std::nullopt;
    int64_t first = spans.front().first;
    for (const Span& span : spans) first = std::min(first, span.first);
    return LossSince(group, first);
  }

  Store* store;
  const Clock* clock;
  EngineOptions options;
  KeySpace keys;
  uint64_t id;                            // tells engines apart in the per-thread plan cache
  std::unique_ptr<BucketCache> buckets;   // null when the immutable-bucket cache is off
  std::unique_ptr<BlockedCache> blocked;  // null when the blocked-client cache is off
};

}  // namespace hourglass::internal
