// The Engine's operations, each read top to bottom: validate, then let the collaborators do the
// steps (KeySpace names keys, BucketReader reads with the caches, CheckRun decides a check,
// ResetGroup resets).
#include "hourglass/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "day_ledger.h"
#include "engine_core.h"
#include "hourglass/instance_id.h"
#include "hourglass/saturating.h"
#include "request_runs.h"
#include "reset.h"
#include "write_back.h"

namespace hourglass {
namespace {

constexpr Seconds kMaxRetention{400 * 86400};
Status CheckHits(uint64_t hits) {
  if (hits < 1 || hits > kMaxHitsPerCall) {
    return InvalidArgument(fmt::format("cost {}: must be 1 to {}", hits, kMaxHitsPerCall));
  }
  return {};
}

Status CheckInstant(Instant t) {
  if (InRange(t)) return {};
  return InvalidArgument(
      fmt::format("instant {}: must be {} to {} (1970-01-01 to 9999-12-31 in Unix seconds)",
                  ToUnix(t), ToUnix(kFirstInstant), ToUnix(kLastInstant)));
}

// A penalty's length (ValidateBlockFor), or 0 where `none_ok` (no penalty).
Status CheckBlockFor(Seconds block_for, bool none_ok) {
  if (none_ok && block_for == Seconds{0}) return {};
  return ValidateBlockFor(block_for);
}

Status CheckOptions(const EngineOptions& options) {
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
  return {};
}

struct PlanCache {
  uint64_t engine = 0;
  std::vector<Span> spans;
  std::optional<int64_t> open;
  CoverOptions cover;
  std::shared_ptr<const ReadPlan> plan;
};

Engine::CheckRequest OneCheck(std::string_view event, std::string_view feature,
                              const Policy& policy, uint64_t hits, std::optional<Instant> at,
                              bool record) {
  Engine::CheckRequest check(event, feature, policy, hits);
  check.at = at;
  check.record = record;
  return check;
}

// `check` (of group `group`, at `now`) decided from the blocked-client cache alone, or nullopt when
// its client is not known denied. A blocked check takes nothing back.
std::optional<Decision> DecideIfBlocked(const internal::EngineCore& core,
                                        const Engine::CheckRequest& check, std::string group,
                                        Instant now) {
  internal::CheckRun run(core, std::move(group), *check.policy, check.hits, now, now, check.record);
  if (!run.AnswerBlocked()) return std::nullopt;
  return internal::RequestRuns::DecideAlone(core, run, now);
}

// Today's hits (from `today`, a day some of `spans` holds) that the buckets of `read`, read as
// `plan` says, lack against the day ledger read with them (0 when it was not whole).
uint64_t MissingToday(const ReadPlan& plan, std::span<const Span> spans,
                      const internal::BucketRead& read, int64_t today) {
  if (!read.ledger) return 0;
  const size_t whole = internal::WindowHoldingDay(spans, today);
  return internal::MissingHits(plan.Pieces(whole, read.values), today, *read.ledger);
}

// Marks `once`'s id settled in `group` (one round trip): true the first time, false when it was
// marked before.
Result<bool> MarkSettled(Store& store, const std::string& group, const Engine::Once& once) {
  if (once.id.empty() || once.id.size() > 64 || once.keep < Seconds{1}) {
    return InvalidArgument("a settlement's id is 1 to 64 bytes, kept 1 s or more");
  }
  const std::string key = KeySpace::SettledKey(group, once.id);
  Result<std::vector<uint64_t>> mark = store.Apply(Batch{group, {{key, 1, once.keep}}, {key}});
  if (!mark.ok()) return mark.error();
  return !mark->empty() && mark->front() == 1;
}

}  // namespace

namespace internal {

EngineCore::EngineCore(Store& s, const Clock& c, EngineOptions o, KeyCodec codec)
    : store(&s),
      clock(&c),
      options(std::move(o)),
      keys(std::move(codec), options.ladder, options.retention, options.settle_margin),
      id(NextInstanceId()) {
  const HotPathOptions& hot = options.hot_path;
  if (hot.bucket_cache_features > 0) {
    // Twice the longest window's cover: a feature's cover moves on every second, and what it
    // left behind is dropped (as the older half) only when the cache is full.
    const size_t per_feature = std::max({size_t{16}, hot.bucket_cache_buckets_per_feature,
                                         2 * options.ladder.CoverBucketsAtMost(options.retention)});
    buckets = std::make_unique<BucketCache>(hot.bucket_cache_features, per_feature, options.ladder);
  }
  if (hot.blocked_cache_entries > 0) {
    blocked = std::make_unique<BlockedCache>(hot.blocked_cache_entries, hot.blocked_max_age);
  }
}

std::shared_ptr<const ReadPlan> EngineCore::Plan(const std::vector<Span>& spans,
                                                 std::optional<int64_t> open, Instant now) const {
  thread_local PlanCache cache;
  CoverOptions cover = options.cover;
  cover.changing_from = ToUnix(now) - settle_margin().count();
  if (cache.engine != id || cache.open != open ||
      cache.cover.changing_from != cover.changing_from || cache.spans != spans) {
    cache.plan = std::make_shared<const ReadPlan>(PlanReads(options.ladder, spans, open, cover));
    cache.engine = id;
    cache.spans = spans;
    cache.open = open;
    cache.cover = cover;
  }
  return cache.plan;
}

}  // namespace internal

Result<Engine> Engine::Create(Store& store, const Clock& clock, EngineOptions options) {
  Result<KeyCodec> codec = KeyCodec::Create(options.name_space);
  if (!codec.ok()) return codec.error();
  if (Status s = CheckOptions(options); !s.ok()) return s.error();
  return Engine(std::make_shared<const internal::EngineCore>(store, clock, std::move(options),
                                                             std::move(*codec)));
}

const EngineOptions& Engine::options() const { return core_->options; }
const KeySpace& Engine::keys() const { return core_->keys; }

std::vector<Window> Engine::DefaultWindows() const {
  const Seconds retention = core_->options.retention;
  std::vector<Window> windows;
  for (const Seconds length : {Seconds{1}, Seconds{60}, Seconds{3600}, Seconds{86400}}) {
    if (length <= retention) windows.push_back(*Window::Sliding(length));
  }
  if (retention < Seconds{86400} && windows.back().length() != retention) {
    windows.push_back(*Window::Sliding(retention));
  }
  return windows;
}

Result<std::string> Engine::GroupKeyFor(std::string_view event, std::string_view feature) const {
  if (event.empty()) return InvalidArgument("event must not be empty");
  for (const auto& [what, field] : {std::pair{"event", event}, std::pair{"feature", feature}}) {
    if (field.size() > kMaxFieldBytes) {
      return InvalidArgument(
          fmt::format("{} of {} bytes: at most {} bytes", what, field.size(), kMaxFieldBytes));
    }
  }
  return core_->keys.GroupKey(event, feature);
}

Status Engine::CheckWindows(std::span<const Window> windows) const {
  const Seconds retention = core_->options.retention;
  for (const Window& window : windows) {
    if (window.length() > retention) {
      return InvalidArgument(fmt::format(
          "window {} is longer than the engine's retention ({}): its buckets would expire; "
          "raise the retention",
          window.ToString(), FormatDuration(retention)));
    }
  }
  return {};
}

Result<Cost> Engine::Record(std::string_view event, std::string_view feature, uint64_t hits,
                            std::optional<Instant> at) const {
  Result<std::string> group = GroupKeyFor(event, feature);
  if (!group.ok()) return group.error();
  if (Status s = CheckHits(hits); !s.ok()) return s.error();
  const Instant now = core_->clock->Now();
  if (Status s = CheckInstant(at.value_or(now)); !s.ok()) return s.error();
  const int64_t t = ToUnix(at.value_or(now));
  // Nothing read back: the store's answer to the batch confirms (or refuses) the increments.
  Batch batch{*group, core_->keys.HitIncrements(*group, t, static_cast<int64_t>(hits)), {}};
  core_->AnnounceIfSettled(batch, t, now);
  Result<std::vector<uint64_t>> applied = core_->store->Apply(batch);
  core_->ForgetCachedIfSettled(*group, t, now);  // a replay writes into settled buckets
  if (!applied.ok()) return applied.error();
  return Cost{batch.increments.size(), 0, 1};
}

Result<Cost> Engine::Unrecord(std::string_view event, std::string_view feature, uint64_t hits,
                              Instant at) const {
  Result<std::string> group = GroupKeyFor(event, feature);
  if (!group.ok()) return group.error();
  if (Status s = CheckHits(hits); !s.ok()) return s.error();
  if (Status s = CheckInstant(at); !s.ok()) return s.error();
  const int64_t t = ToUnix(at);
  Batch undo{*group, core_->keys.HitIncrements(*group, t, -static_cast<int64_t>(hits)), {}};
  const Instant now = core_->clock->Now();
  core_->AnnounceIfSettled(undo, t, now);
  Status sent = core_->store->Send({&undo, 1}).front();
  core_->ForgetCachedIfSettled(*group, t, now);
  if (!sent.ok()) return sent.error();
  return Cost{undo.increments.size(), 0, 0};
}

Result<Engine::Settlement> Engine::Settle(std::string_view event, std::string_view feature,
                                          Instant at, uint64_t cost, uint64_t actual,
                                          const std::optional<Once>& once) const {
  Result<std::string> group = GroupKeyFor(event, feature);
  if (!group.ok()) return group.error();
  if (Status s = CheckInstant(at); !s.ok()) return s.error();
  const Instant now = core_->clock->Now();
  const EngineOptions& o = core_->options;
  // Another service's clock may run ahead of this one's by up to the settle margin.
  if (at > now + o.settle_margin || at <= now - o.retention) {
    return InvalidArgument(
        fmt::format("\"at\" {} is not the instant of a decision whose hits are still kept: it "
                    "must lie within the last {} (now is {})",
                    ToUnix(at), FormatDuration(o.retention), ToUnix(now)));
  }
  const int64_t delta = static_cast<int64_t>(actual) - static_cast<int64_t>(cost);
  if (delta != 0) {
    if (Status s = CheckHits(static_cast<uint64_t>(delta > 0 ? delta : -delta)); !s.ok()) {
      return s.error();
    }
  }
  Cost spent;
  if (once) {
    // The mark first: a failure after it leaves the charge as it was, never counted twice.
    Result<bool> first = MarkSettled(*core_->store, *group, *once);
    if (!first.ok()) return first.error();
    spent = Cost{1, 1, 1};
    if (!*first) return Settlement{0, true, spent};
  }
  if (delta == 0) return Settlement{0, false, spent};
  const int64_t t = ToUnix(at);
  Batch batch{*group, core_->keys.HitIncrements(*group, t, delta), {}};
  core_->AnnounceIfSettled(batch, t, now);
  // Applied and answered, not sent and forgotten: a settlement the caller was told of is what
  // every service counts next (a read on another connection could overtake a sent write).
  Result<std::vector<uint64_t>> applied = core_->store->Apply(batch);
  core_->ForgetCachedIfSettled(*group, t, now);
  if (!applied.ok()) return applied.error();
  spent += Cost{batch.increments.size(), 0, 1};
  return Settlement{delta, false, spent};
}

Result<Counts> Engine::Count(std::string_view event, std::string_view feature,
                             std::span<const Window> windows, std::optional<Instant> at) const {
  Result<std::string> group = GroupKeyFor(event, feature);
  if (!group.ok()) return group.error();
  if (Status s = CheckWindows(windows); !s.ok()) return s.error();
  const Instant now = core_->clock->Now();
  const Instant t = at.value_or(now);
  if (Status s = CheckInstant(t); !s.ok()) return s.error();
  std::vector<Span> spans;
  for (const Window& window : windows) spans.push_back(window.SpanAt(t));
  const std::optional<int64_t> open = t == now ? std::optional(ToUnix(t)) : std::nullopt;
  const std::shared_ptr<const ReadPlan> plan = core_->Plan(spans, open, now);
  // A live count holding all of today compares today's buckets with the day ledger.
  std::optional<KeySpace::LedgerKeys> ledger;
  int64_t today = 0;
  if (const auto day =
          open ? internal::ComparedDay(core_->keys, core_->settle_margin(), *open, spans)
               : std::nullopt) {
    today = *day;
    ledger = KeySpace::Ledger(*group, today / KeySpace::kLedgerSpan.count());
  }
  const bool compared = ledger.has_value();
  Result<internal::BucketRead> read =
      core_->Reader().Read(*group, plan->reads, {}, now, std::move(ledger));
  if (!read.ok()) return read.error();
  Counts counts{t, {}, read->cost};
  if (compared) counts.missing = MissingToday(*plan, spans, *read, today);
  const std::optional<StoreLoss> loss = core_->LossBefore(*group, spans);
  for (size_t i = 0; i < windows.size(); ++i) {
    uint64_t count = plan->Total(i, read->values);
    // The missing hits lie in today: in every window holding all of it.
    if (counts.missing > 0 && spans[i].first <= today) count = SaturatingAdd(count, counts.missing);
    const bool lost = loss && spans[i].first < ToUnix(loss->at);
    counts.windows.push_back(WindowCount{windows[i], count, lost});
  }
  counts.loss = loss;
  return counts;
}

Result<std::string> Engine::ValidateCheck(const CheckRequest& check, Instant now) const {
  const auto named = [&](const Error& e) {
    if (check.label.empty()) return e;
    return Error(e.code(), fmt::format("{}: {}", check.label, e.message()));
  };
  if (check.policy == nullptr) return named(InvalidArgument("no policy given"));
  Result<std::string> group = GroupKeyFor(check.event, check.feature);
  if (!group.ok()) return named(group.error());
  if (Status s = CheckHits(check.hits); !s.ok()) return named(s.error());
  if (Status s = ValidateLimits(check.policy->limits, core_->options.retention); !s.ok()) {
    return named(s.error());
  }
  if (Status s = CheckBlockFor(check.policy->block_for, true); !s.ok()) return named(s.error());
  if (Status s = CheckInstant(check.at.value_or(now)); !s.ok()) return named(s.error());
  return group;
}

Engine::WriteBack Engine::WriteBackLocal(size_t max_groups) const {
  WriteBack out;
  StoreFallback* fallback = core_->options.fallback;
  if (fallback == nullptr || !fallback->AnyPending()) return out;
  const std::vector<std::string> groups = fallback->PendingGroups(max_groups);
  std::vector<std::optional<Error>> failed =
      internal::WriteBackGroups(*core_, groups, core_->clock->Now(), &out.hits, &out.features);
  for (std::optional<Error>& error : failed) {
    if (!error) continue;
    ++out.failed;
    if (!out.error) out.error = std::move(error);
  }
  return out;
}

Result<Decision> Engine::Check(std::string_view event, std::string_view feature,
                               const Policy& policy, uint64_t hits,
                               std::optional<Instant> at) const {
  const Instant now = core_->clock->Now();
  Result<std::string> group = ValidateCheck(OneCheck(event, feature, policy, hits, at, true), now);
  if (!group.ok()) return group.error();
  internal::CheckRun run(*core_, std::move(*group), policy, hits, at.value_or(now), now);
  run.AnswerBlocked();
  return internal::RequestRuns::DecideAlone(*core_, run, now);
}

Result<Decision> Engine::Peek(std::string_view event, std::string_view feature,
                              const Policy& policy, uint64_t hits,
                              std::optional<Instant> at) const {
  const Instant now = core_->clock->Now();
  Result<std::string> group = ValidateCheck(OneCheck(event, feature, policy, hits, at, false), now);
  if (!group.ok()) return group.error();
  internal::CheckRun run(*core_, std::move(*group), policy, hits, at.value_or(now), now, false);
  return internal::RequestRuns::DecideAlone(*core_, run, now);
}

std::optional<Decision> Engine::CheckIfBlocked(std::string_view event, std::string_view feature,
                                               const Policy& policy, uint64_t hits) const {
  if (core_->blocked == nullptr) return std::nullopt;
  const Instant now = core_->clock->Now();
  const CheckRequest check = OneCheck(event, feature, policy, hits, std::nullopt, true);
  Result<std::string> group = ValidateCheck(check, now);
  if (!group.ok()) return std::nullopt;
  return DecideIfBlocked(*core_, check, std::move(*group), now);
}

std::vector<Result<Decision>> Engine::CheckMany(std::span<const CheckRequest> checks) const {
  std::vector<std::span<const CheckRequest>> requests;
  requests.reserve(checks.size());
  for (const CheckRequest& check : checks) requests.emplace_back(&check, 1);
  std::vector<Result<RequestDecision>> decided = CheckAllMany(requests);
  std::vector<Result<Decision>> out;
  out.reserve(checks.size());
  for (Result<RequestDecision>& d : decided) {
    if (d.ok()) {
      out.push_back(std::move(d->decisions.front()));
    } else {
      out.push_back(d.error());
    }
  }
  return out;
}

Result<Engine::RequestDecision> Engine::CheckAll(std::span<const CheckRequest> checks) const {
  return std::move(CheckAllMany({&checks, 1}).front());
}

std::vector<Result<Engine::RequestDecision>> Engine::CheckAllMany(
    std::span<const std::span<const CheckRequest>> requests) const {
  const Instant now = core_->clock->Now();
  std::vector<std::optional<Result<RequestDecision>>> results(requests.size());
  std::vector<size_t> valid;  // the requests every check of which is valid, in order
  internal::RequestRuns runs(*core_, now);
  for (size_t r = 0; r < requests.size(); ++r) {
    if (requests[r].empty()) {
      results[r] = RequestDecision{true, {}};
      continue;
    }
    std::vector<std::string> groups;
    for (const CheckRequest& check : requests[r]) {
      Result<std::string> group = ValidateCheck(check, now);
      if (!group.ok()) {
        results[r] = group.error();
        break;
      }
      groups.push_back(std::move(*group));
    }
    if (results[r]) continue;
    runs.Add(requests[r], std::move(groups));
    valid.push_back(r);
  }
  std::vector<std::optional<RequestDecision>> decided = runs.Decide();
  for (size_t k = 0; k < valid.size(); ++k) results[valid[k]] = std::move(*decided[k]);
  std::vector<Result<RequestDecision>> out;
  out.reserve(results.size());
  for (std::optional<Result<RequestDecision>>& result : results) out.push_back(std::move(*result));
  return out;
}

std::optional<Engine::RequestDecision> Engine::CheckAllIfBlocked(
    std::span<const CheckRequest> checks, LocalScope scope) const {
  if (core_->blocked == nullptr || checks.empty()) return std::nullopt;
  const Instant now = core_->clock->Now();
  std::vector<std::string> groups;
  for (const CheckRequest& check : checks) {
    if (check.at && *check.at != now) return std::nullopt;
    Result<std::string> group = ValidateCheck(check, now);
    if (!group.ok()) return std::nullopt;
    groups.push_back(std::move(*group));
  }
  if (checks.size() == 1) {
    // One check is answerable exactly when it is blocked, whatever the scope: decided alone,
    // without a request's bookkeeping.
    std::optional<Decision> decision =
        DecideIfBlocked(*core_, checks.front(), std::move(groups.front()), now);
    if (!decision) return std::nullopt;
    RequestDecision out{decision->allowed || !checks.front().binding, {}};
    out.decisions.push_back(std::move(*decision));
    return out;
  }
  internal::RequestRuns runs(*core_, now);
  runs.Add(checks, std::move(groups));
  return std::move(runs.Decide(scope == LocalScope::kEveryCheck
                                   ? internal::RequestRuns::Local::kEveryCheck
                                   : internal::RequestRuns::Local::kAnyBindingDenial)
                       .front());
}

Result<Engine::ResetOutcome> Engine::Reset(std::string_view event, std::string_view feature,
                                           std::optional<Instant> around, Seconds block_for) const {
  Result<std::string> group = GroupKeyFor(event, feature);
  if (!group.ok()) return group.error();
  const Instant t = around.value_or(core_->clock->Now());
  if (Status s = CheckInstant(t); !s.ok()) return s.error();
  if (Status s = CheckBlockFor(block_for, true); !s.ok()) return s.error();
  uint64_t deleted = 0;
  // This process's denials of the feature go at once; other processes' within blocked_max_age.
  // Forgotten again once the store is reset: a decision that read the store before then (its
  // epoch older than this) is not cached after it.
  if (core_->blocked) core_->blocked->Forget(*group);
  Result<Cost> cost = internal::ResetGroup(*core_, *group, ToUnix(t), block_for, deleted);
  if (core_->blocked) core_->blocked->Forget(*group);
  if (!cost.ok()) return cost.error();
  return ResetOutcome{deleted, *cost};
}

Result<std::optional<Instant>> Engine::BlockedUntil(std::string_view event,
                                                    std::string_view feature, Seconds block_for,
                                                    std::optional<Instant> at) const {
  Result<std::string> group = GroupKeyFor(event, feature);
  if (!group.ok()) return group.error();
  if (Status s = CheckBlockFor(block_for, false); !s.ok()) return s.error();
  const Instant t = at.value_or(core_->clock->Now());
  if (Status s = CheckInstant(t); !s.ok()) return s.error();
  KeySpace::PenaltyKeys keys = KeySpace::Penalty(*group, block_for, ToUnix(t));
  Batch batch{*group, {}, {std::move(keys.previous), std::move(keys.current)}};
  Result<std::vector<uint64_t>> values = core_->store->Apply(batch);
  if (!values.ok()) return values.error();
  return KeySpace::BlockedUntil(block_for, ToUnix(t), (*values)[0], (*values)[1]);
}

Result<Engine::BucketValues> Engine::ReadBuckets(std::string_view event, std::string_view feature,
                                                 std::span<const Bucket> buckets) const {
  Result<std::string> group = GroupKeyFor(event, feature);
  if (!group.ok()) return group.error();
  Batch batch{*group, {}, {}};
  for (const Bucket& bucket : buckets) {
    if (bucket.level >= core_->keys.ladder().levels()) {
      return InvalidArgument(fmt::format("bucket level {} is not in the ladder {}", bucket.level,
                                         core_->keys.ladder().ToString()));
    }
    batch.reads.push_back(core_->keys.BucketKey(*group, bucket));
  }
  if (batch.reads.empty()) return BucketValues{};
  Result<std::vector<uint64_t>> values = core_->store->Apply(batch);
  if (!values.ok()) return values.error();
  return BucketValues{std::move(*values), Cost{0, batch.reads.size(), 1}};
}

}  // namespace hourglass
