#include "check_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "day_ledger.h"
#include "hourglass/retry_after.h"
#include "hourglass/saturating.h"
#include "sorted_buckets.h"

namespace hourglass::internal {
namespace {

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
    append(static_cast<int64_t>(limit.window.time_zone().id()));
    append(static_cast<int64_t>(limit.max_hits));
  }
  append(policy.block_for.count());
  return key;
}

// The larger wait; nullopt (never) wins.
std::optional<Seconds> Later(std::optional<Seconds> a, std::optional<Seconds> b) {
  if (!a || !b) return std::nullopt;
  return std::max(*a, *b);
}

// Adds `hits` at second `t` to the last piece if it is that second, else a new piece.
void AddAttempt(std::vector<CountedSpan>& pieces, int64_t t, uint64_t hits) {
  if (!pieces.empty() && pieces.back().span == Span{t, t}) {
    pieces.back().hits = SaturatingAdd(pieces.back().hits, hits);  // one piece per second
  } else {
    pieces.push_back(CountedSpan{Span{t, t}, hits});
  }
}

}  // namespace

CheckRun::Mode CheckRun::FirstMode(const EngineCore& core, const Policy& policy, bool live,
                                   bool record) {
  if (!record) return Mode::kPeek;
  const bool atomic = live && policy.mode == CountingMode::kAdmitted &&
                      core.options.atomic_checks && core.store->conditional_batches();
  return atomic ? Mode::kAtomic : Mode::kPlain;
}

CheckRun::Step CheckRun::FirstStep(const EngineCore& core, bool live, bool record) {
  if (!record) return Step::kExact;  // a peek reads the exact cover, without the hit
  return core.options.hot_path.bounds && live ? Step::kBounds : Step::kExactWithHit;
}

CheckRun::CheckRun(const EngineCore& core, std::string group, const Policy& policy, uint64_t hits,
                   Instant t, Instant now, bool record)
    : core_(core),
      group_(std::move(group)),
      policy_(policy),
      hits_(hits),
      t_(t),
      now_(now),
      second_(ToUnix(t)),
      penalized_(policy.block_for > Seconds{0} && t == now),
      keeps_ledger_(internal::KeepsLedger(policy.limits)),
      mode_(FirstMode(core, policy, t == now, record)),
      step_(FirstStep(core, t == now, record)),
      tally_(policy.limits.size()) {
  spans_.reserve(policy.limits.size());
  for (const Limit& limit : policy.limits) spans_.push_back(limit.window.SpanAt(t));
  decision_.limits.reserve(policy.limits.size());
  decision_.recorded = record;
  decision_.at = t;
  if (record) core_.ForgetCachedIfSettled(group_, second_, now_);
  today_ = ComparedDay();
  if (penalized_) penalty_to_read_ = KeySpace::Penalty(group_, policy.block_for, second_);
}

std::optional<int64_t> CheckRun::ComparedDay() const {
  if (!live() || !keeps_ledger_) return std::nullopt;
  return internal::ComparedDay(core_.keys, core_.settle_margin(), second_, spans_);
}

std::vector<Increment> CheckRun::HitIncrements(int64_t sign) const {
  return core_.keys.HitIncrements(group_, second_, sign * static_cast<int64_t>(hits_),
                                  keeps_ledger_);
}

Share CheckRun::LocalShare() const {
  return policy_.local_share.value_or(core_.options.fallback->default_share());
}

void CheckRun::Fail(const Error& error, bool hit_sent) {
  failed_ = error;
  pending_.reset();
  StoreFallback* fallback = core_.options.fallback;
  if (policy_.on_store_failure != FailureMode::kLocal || fallback == nullptr ||
      mode_ == Mode::kBlocked) {
    return;
  }
  const Share share = LocalShare();
  std::vector<uint64_t> maxes;
  maxes.reserve(policy_.limits.size());
  for (const Limit& limit : policy_.limits) maxes.push_back(share.Of(limit.max_hits));
  // A hit the store already holds (its first batch landed) is decided, not held twice; one whose
  // batch timed out may yet land.
  hit_landed_ = answered_ && HitWritten();
  const bool sent = hit_sent && !hit_landed_ && error.code() == ErrorCode::kDeadlineExceeded;
  local_ = fallback->Decide(group_, spans_, maxes,
                            {.hits = hits_,
                             .t = second_,
                             .record = mode_ != Mode::kPeek && !hit_landed_,
                             .attempts = policy_.mode == CountingMode::kAttempts,
                             .sent = sent});
}

Decision CheckRun::DecidedLocally(const Error& error, const Cost& cost) const {
  const Share share = LocalShare();
  Decision decision;
  decision.allowed = local_->allowed;
  // Held here, or in the store already (unless taken back since: TookBack).
  decision.recorded = local_->recorded || (hit_landed_ && decision_.recorded);
  decision.degraded = true;
  decision.local = true;
  const std::string against =
      share.num == 0 ? "none of each limit: how many services share the store is not known yet "
                       "(they count each other once it answers, or --services N)"
                     : share.ToString() + " of each limit";
  decision.store_error = Error(
      error.code(), fmt::format("{}; decided in this process against {} (on_store_failure local){}",
                                error.message(), against,
                                local_->full ? ": denied, its ledger of local hits is full" : ""));
  decision.at = t_;
  decision.cost = cost;
  for (size_t i = 0; i < policy_.limits.size(); ++i) {
    decision.limits.push_back(LocalOutcome(i, share, decision.allowed));
    decision.retry_after = Later(decision.retry_after, decision.limits.back().retry_after);
  }
  if (!decision.allowed && local_->full) {  // no count says when: ask again in a second
    decision.retry_after = Later(decision.retry_after, Seconds{1});
  }
  return decision;
}

LimitOutcome CheckRun::LocalOutcome(size_t i, const Share& share, bool allowed) const {
  const Limit scaled{policy_.limits[i].window, share.Of(policy_.limits[i].max_hits)};
  uint64_t count = 0;
  for (const CountedSpan& piece : local_->pieces[i]) count = SaturatingAdd(count, piece.hits);
  const uint64_t with_hit = local_->recorded ? count : SaturatingAdd(count, hits_);
  LimitOutcome o{policy_.limits[i], count, 0, with_hit > scaled.max_hits, Seconds{0}, false, 0};
  o.remaining = count < scaled.max_hits ? scaled.max_hits - count : 0;
  if (!allowed) o.retry_after = RetryAfter(scaled, t_, hits_, local_->pieces[i]);
  return o;
}

Decision CheckRun::Degraded(const Error& error, const Cost& cost) const {
  if (local_) return DecidedLocally(error, cost);
  Decision decision;
  decision.allowed = policy_.on_store_failure == FailureMode::kFailOpen;
  decision.degraded = true;
  decision.store_error = error;
  decision.at = t_;
  decision.retry_after = decision.allowed ? Seconds{0} : Seconds{1};
  decision.cost = cost;
  return decision;
}

bool CheckRun::AnswerBlocked() {
  if (core_.blocked == nullptr || !live() || mode_ == Mode::kPeek) return false;
  blocked_key_ = BlockedKey(group_, policy_);
  blocked_epoch_ = core_.blocked->Epoch(blocked_key_);  // before any read of the store
  std::shared_ptr<const BlockedCache::Entry> entry = core_.blocked->Get(blocked_key_, t_, hits_);
  // A loss in the second of the decision that blocked the client, or after it.
  if (entry && core_.LossSince(group_, ToUnix(entry->decided_at) - 1)) {
    core_.blocked->Erase(blocked_key_);  // the counts that blocked the client may be gone
    entry.reset();
  }
  if (!entry) {
    // Denied at its last check, perhaps still: in admitted mode, read first and write only once
    // it fits, so that denied attempts leave nothing in the store.
    if (mode_ == Mode::kPlain && policy_.mode == CountingMode::kAdmitted &&
        core_.blocked->Known(blocked_key_)) {
      mode_ = Mode::kProbing;
      if (step_ == Step::kExactWithHit) step_ = Step::kExact;
    }
    return false;
  }
  mode_ = Mode::kBlocked;
  blocked_ = BlockedAnswer{std::move(entry)};
  decision_.cost.blocked_hits = 1;
  // Every attempt counts: its increments are the next batch, with no read.
  step_ = policy_.mode == CountingMode::kAttempts ? Step::kAttempt : Step::kDecided;
  return true;
}

Decision CheckRun::FinishBlocked() {
  const BlockedCache::Entry& entry = *blocked_->entry;
  Decision decision = entry.decision;
  decision.at = t_;  // this hit's instant, not that of the decision that blocked the client
  decision.cost = Cost{};
  decision.cost.blocked_hits = 1;
  decision.recorded = blocked_->attempt_recorded;
  // The pieces as cached; with this attempt recorded, a copy that holds it too.
  std::vector<std::vector<CountedSpan>> with_attempt;
  if (decision.recorded) {
    decision.cost.keys_written = core_.keys.KeysPerHit(keeps_ledger_);
    with_attempt = entry.pieces;
    for (auto& pieces : with_attempt) AddAttempt(pieces, second_, hits_);
  }
  const std::vector<std::vector<CountedSpan>>& pieces =
      decision.recorded ? with_attempt : entry.pieces;
  // The cached pieces, for the cost they were planned for: each wait is known already.
  const bool planned = !decision.recorded && hits_ == entry.hits &&
                       entry.retry_plans.size() == decision.limits.size();
  // Counts are those of the decision that blocked the client, plus the attempts recorded since:
  // an upper bound now (hits may have left the windows since).
  decision.retry_after = Seconds{0};
  for (size_t i = 0; i < decision.limits.size(); ++i) {
    LimitOutcome& o = decision.limits[i];
    if (decision.recorded) o.count = SaturatingAdd(o.count, hits_);
    o.count_min = 0;
    o.exact = false;
    o.remaining = o.count < o.limit.max_hits ? o.limit.max_hits - o.count : 0;
    o.retry_after =
        planned ? entry.retry_plans[i].At(o.limit, t_) : RetryAfter(o.limit, t_, hits_, pieces[i]);
    decision.retry_after = Later(decision.retry_after, o.retry_after);
  }
  if (decision.blocked_until && *decision.blocked_until > t_) {
    decision.retry_after = Later(decision.retry_after, *decision.blocked_until - t_);
  } else {
    decision.blocked_until.reset();
  }
  if (decision.recorded) {
    BlockedCache::Entry updated{entry.decided_at,        entry.until, entry.hits, decision,
                                std::move(with_attempt), {}};
    updated.decision.cost = Cost{};
    core_.blocked->Put(blocked_key_, std::move(updated), *blocked_epoch_);
  }
  return decision;
}

Batch* CheckRun::NextBatch() {
  while (deciding()) {
    if (!pending_ && !Prepare()) continue;
    if (pending_->needs_store) return &pending_->batch;
    TakeAnswer(std::vector<uint64_t>{});  // every bucket came from the cache
  }
  return nullptr;
}

bool CheckRun::Prepare() {
  if (step_ == Step::kAttempt) {
    pending_.emplace();
    pending_->batch = Batch{group_, HitIncrements(+1), {}};
    return true;
  }
  if (step_ == Step::kRefine) {
    reads_ = refiner_->NextReads();
    if (reads_.empty()) {  // refined to the second wherever it matters
      tally_.lower_pieces = tally_.upper_pieces;
      step_ = Step::kDecided;
      return false;
    }
    pending_ = Reader().Prepare(group_, reads_, {}, now_);
    return true;
  }
  std::vector<Increment> increments;
  if (StepWritesHit()) increments = HitIncrements(+1);
  if (step_ == Step::kBounds) {
    bounds_.clear();
    reads_.clear();
    for (const Span& span : spans_) {
      bounds_.push_back(BoundFor(core_.keys.ladder(), span));
      reads_.insert(reads_.end(), bounds_.back().buckets.begin(), bounds_.back().buckets.end());
    }
    SortUnique(reads_);
  } else {
    // With the hit, a live check's open second; after the bounds, the hit was sent already.
    const std::optional<int64_t> open =
        step_ == Step::kExact || live() ? std::optional(second_) : std::nullopt;
    plan_ = core_.Plan(spans_, open, now_);
    reads_ = plan_->reads;
  }
  std::vector<std::string> extras;
  if (penalty_to_read_) extras = {penalty_to_read_->previous, penalty_to_read_->current};
  const std::vector<WindowGuard> guards =
      mode_ == Mode::kAtomic && !increments.empty() ? Guards() : std::vector<WindowGuard>{};
  pending_ = Reader().Prepare(group_, reads_, std::move(increments), now_, Ledger(),
                              std::move(extras), guards);
  return true;
}

std::vector<WindowGuard> CheckRun::Guards() const {
  std::vector<WindowGuard> guards(spans_.size());
  for (size_t i = 0; i < spans_.size(); ++i) {
    const uint64_t max = policy_.limits[i].max_hits;
    guards[i].max =
        max < hits_ ? -1 : static_cast<int64_t>(std::min<uint64_t>(max - hits_, 1ull << 62));
    if (step_ == Step::kBounds) {  // the upper bound: every bucket overlapping the window
      for (const Bucket& b : bounds_[i].buckets) guards[i].terms.push_back({IndexOf(reads_, b), 1});
      continue;
    }
    for (uint32_t p = plan_->window_begin[i]; p < plan_->window_begin[i + 1]; ++p) {
      const ReadPlan::IndexedPiece& piece = plan_->pieces[p];
      for (uint32_t t = piece.first_term; t < piece.first_term + piece.term_count; ++t) {
        guards[i].terms.push_back({plan_->terms[t].read, plan_->terms[t].sign});
      }
    }
  }
  return guards;
}

void CheckRun::ReadAgainWithHit() {
  if (mode_ == Mode::kProbing) core_.blocked->Erase(blocked_key_);
  mode_ = Mode::kPlain;
  tally_ = WindowTally(policy_.limits.size());
  missing_ = 0;
  step_ = Step::kExactWithHit;
}

std::optional<KeySpace::LedgerKeys> CheckRun::Ledger() const {
  if (!today_) return std::nullopt;
  return KeySpace::Ledger(group_, *today_ / KeySpace::kLedgerSpan.count());
}

void CheckRun::TakeAnswer(Result<std::vector<uint64_t>> answer) {
  if (step_ == Step::kAttempt) {
    pending_.reset();
    step_ = Step::kDecided;
    if (answer.ok()) {
      blocked_->attempt_recorded = true;
    } else {
      Fail(answer.error(), false);
    }
    return;
  }
  std::optional<Result<BucketRead>> read =
      Reader().Advance(group_, reads_, *pending_, std::move(answer));
  if (read) Absorb(std::move(*read));  // otherwise a re-read is pending
}

void CheckRun::Absorb(Result<BucketRead> read) {
  pending_.reset();
  if (!read.ok()) {
    if (step_ == Step::kRefine) {  // keep the coarser retry: it is never early
      step_ = Step::kDecided;
      return;
    }
    Fail(read.error(), StepWritesHit());
    return;
  }
  answered_ = true;
  decision_.cost += read->cost;
  if (read->applied && !*read->applied) mode_ = Mode::kHeldBack;
  if (step_ == Step::kRefine) {
    refiner_->Split(read->values);
    return;
  }
  for (size_t i = 0; i < spans_.size(); ++i) {
    if (step_ == Step::kBounds) {
      SetBounds(tally_, i, core_.keys.ladder(), bounds_[i], reads_, read->values, second_);
    } else {
      tally_.SetExact(i, plan_->Pieces(i, read->values));
    }
  }
  missing_ = read->ledger ? MissingHits(*read->ledger) : 0;
  for (size_t i = 0; i < spans_.size(); ++i) CountMissing(i);
  if (read->extras.size() == 2) {
    blocked_until_ =
        KeySpace::BlockedUntil(policy_.block_for, second_, read->extras[0], read->extras[1]);
    penalty_to_read_.reset();
  }
  if (blocked_until_) return AfterPenalty();
  if (step_ == Step::kBounds) return AfterBounds();
  AfterExact();
}

bool CheckRun::AllFit() const {
  for (size_t i = 0; i < spans_.size(); ++i) {
    if (SaturatingAdd(tally_.upper[i], Unread()) > policy_.limits[i].max_hits) return false;
  }
  return true;
}

bool CheckRun::OneOver() const {
  for (size_t i = 0; i < spans_.size(); ++i) {
    if (SaturatingAdd(tally_.lower[i], Unread()) > policy_.limits[i].max_hits) return true;
  }
  return false;
}

void CheckRun::AfterBounds() {
  const bool all_fit = AllFit(), one_over = OneOver();
  // A probe the bounds do not deny writes its hit with the exact cover: two round trips.
  if (mode_ == Mode::kProbing && !one_over) return ReadAgainWithHit();
  if (mode_ == Mode::kHeldBack && all_fit) return ReadAgainWithHit();
  if (all_fit || one_over) return Judged();
  // The bounds do not settle it: the exact cover. The hit was sent; or it was held back, and
  // goes again guarded by the exact cover's counts.
  if (mode_ == Mode::kHeldBack) {
    mode_ = Mode::kAtomic;
    step_ = Step::kExactWithHit;
  } else {
    step_ = Step::kExact;
  }
}

void CheckRun::AfterPenalty() {
  // Denied whatever the counts; the figures still describe the windows: bounds that do not
  // settle a window are followed by its exact cover (the hit, if written, is taken back later).
  if (step_ == Step::kBounds && tally_.lower != tally_.upper) {
    step_ = Step::kExact;
    return;
  }
  Judged();
}

void CheckRun::AfterExact() {
  if ((mode_ == Mode::kProbing || mode_ == Mode::kHeldBack) && AllFit()) {
    return ReadAgainWithHit();
  }
  Judged();
}

uint64_t CheckRun::MissingHits(uint64_t ledger) const {
  const size_t i = internal::WindowHoldingDay(spans_, *today_);
  return internal::MissingHits(tally_.upper_pieces[i], *today_, ledger);
}

void CheckRun::CountMissing(size_t i) {
  if (missing_ == 0) return;
  const bool certain = spans_[i].first <= *today_;
  if (!certain && policy_.on_store_failure != FailureMode::kFailClosed) return;
  tally_.upper[i] = SaturatingAdd(tally_.upper[i], missing_);
  AddAttempt(tally_.upper_pieces[i], second_, missing_);
  if (!certain) return;
  tally_.lower[i] = SaturatingAdd(tally_.lower[i], missing_);
  AddAttempt(tally_.lower_pieces[i], second_, missing_);
}

void CheckRun::Judged() {
  Judge();
  step_ = Step::kDecided;
  // With lost hits, the retry time stays that of the pieces (refining reads them again).
  if (decision_.allowed || !core_.options.exact_retry_after || missing_ > 0) return;
  // Reads go before the take-back, so they include this hit; it is discounted as pending.
  const uint64_t pending = HitWritten() && policy_.mode == CountingMode::kAdmitted ? hits_ : 0;
  refiner_ = std::make_unique<RetryRefiner>(core_.keys.ladder(), policy_.limits, second_, hits_,
                                            pending, tally_.upper_pieces);
  step_ = Step::kRefine;
}

bool CheckRun::allowed() const {
  if (local_) return local_->allowed;
  if (failed_) return policy_.on_store_failure == FailureMode::kFailOpen;
  return mode_ != Mode::kBlocked && decision_.allowed;
}

bool CheckRun::UndoesHit(bool request_denied) const {
  if (!HitWritten() || policy_.mode != CountingMode::kAdmitted) return false;
  if (failed_) {  // only a hit the store holds, and its fallback denied
    return local_ && hit_landed_ && (!local_->allowed || request_denied);
  }
  return !decision_.allowed || request_denied;
}

bool CheckRun::Strikes() const {
  return penalized_ && !failed_ && mode_ != Mode::kPeek && mode_ != Mode::kBlocked &&
         !blocked_until_ && !decision_.allowed && !loss_denied_;
}

std::optional<TakeBackIntent> CheckRun::TakeBack(bool request_denied) {
  if (step_ == Step::kTakenBack) return std::nullopt;
  if (local_ && local_->recorded && request_denied && policy_.mode == CountingMode::kAdmitted) {
    core_.options.fallback->TakeBack(group_, second_, hits_);  // held here, not in the store
    local_->recorded = false;
    for (auto& pieces : local_->pieces) {
      for (CountedSpan& piece : pieces) {
        if (piece.span.Contains(second_)) piece.hits -= std::min(piece.hits, hits_);
      }
    }
  }
  TakeBackIntent intent{Batch{group_, {}, {}}, UndoesHit(request_denied), Strikes()};
  if (intent.undoes_hit) {
    intent.batch.increments = HitIncrements(-1);
    decision_.cost.keys_written += core_.keys.KeysPerTakeBack(keeps_ledger_);
  }
  if (intent.strikes) {
    intent.batch.increments.push_back(core_.keys.Strike(group_, policy_.block_for, second_));
    decision_.cost.keys_written += 1;
  }
  if (intent.batch.increments.empty()) return std::nullopt;
  step_ = Step::kTakenBack;
  return intent;
}

Decision CheckRun::Finish() {
  if (failed_) return Degraded(*failed_, decision_.cost);
  if (mode_ == Mode::kBlocked) return FinishBlocked();
  // Denied before anything was written.
  if (mode_ == Mode::kProbing || mode_ == Mode::kHeldBack) decision_.recorded = false;
  if (missing_ > 0) {
    decision_.degraded = true;
    decision_.store_error = Error(
        ErrorCode::kDataLoss,
        fmt::format("{} of today's hits of {} are missing from the store (its day ledger counts "
                    "them): memcached evicted them, or clients of the other --layout wrote them; "
                    "windows holding all of today count them, the others follow the policy (fail "
                    "{})",
                    missing_, group_, FailureModeName(policy_.on_store_failure)));
  }
  if (loss_ && !decision_.store_error) {
    decision_.degraded = true;
    decision_.store_error =
        Error(ErrorCode::kDataLoss,
              fmt::format("{}: the counts it held before are lost, so windows reaching back before "
                          "it count only what came after ({} on data loss)",
                          loss_->Describe(),
                          DataLossMode(policy_) == FailureMode::kFailClosed
                              ? "denied while they do: closed"
                              : "decided on what is left: open"));
  }
  const std::optional<Seconds> earliest = FillRetryAfter();
  if (!decision_.allowed && mode_ != Mode::kPeek) RememberBlocked(earliest);
  return std::move(decision_);
}

void CheckRun::Judge() {
  // Every window contains t and the reads followed the increments: counts include this hit
  // (a peek's do not: it is added to judge). With bounds, "exceeded" is certain only from the
  // lower bound; an allowed decision had every upper bound within its limit.
  bool fits = true;
  const uint64_t unread = Unread();
  for (size_t i = 0; i < spans_.size(); ++i) {
    const uint64_t max = policy_.limits[i].max_hits;
    const uint64_t upper = tally_.upper[i], lower = tally_.lower[i];
    const bool over = SaturatingAdd(lower, unread) > max || SaturatingAdd(upper, unread) > max;
    decision_.limits.push_back(
        LimitOutcome{policy_.limits[i], upper, 0, over, Seconds{0}, lower == upper, lower});
    fits = fits && SaturatingAdd(upper, unread) <= max;
  }
  decision_.allowed = fits && !blocked_until_;
  decision_.blocked_until = blocked_until_;
  JudgeLoss(fits);
}

void CheckRun::JudgeLoss(bool limits_fit) {
  loss_ = core_.LossBefore(group_, spans_);
  if (!loss_) return;
  const int64_t lost_before = ToUnix(loss_->at);
  for (size_t i = 0; i < spans_.size(); ++i) {
    if (spans_[i].first >= lost_before) continue;
    decision_.limits[i].exact = false;  // the count is what the server kept
    loss_wait_ = std::max(loss_wait_, Seconds{lost_before - spans_[i].first});
  }
  if (DataLossMode(policy_) == FailureMode::kFailClosed && decision_.allowed) {
    decision_.allowed = false;
    loss_denied_ = limits_fit;
  }
}

void CheckRun::TookBack(const TakeBackIntent& intent, bool sent) {
  if (intent.strikes && sent) decision_.blocked_until = t_ + policy_.block_for;
  if (!intent.undoes_hit) return;
  decision_.recorded = !sent;
  decision_.cost.failed_take_backs += sent ? 0 : 1;
  if (!sent) return;
  for (size_t i = 0; i < spans_.size(); ++i) {
    LimitOutcome& o = decision_.limits[i];
    o.count -= std::min(o.count, hits_);
    o.count_min -= std::min(o.count_min, hits_);
    for (auto* pieces : {&tally_.upper_pieces[i], &tally_.lower_pieces[i]}) {
      for (CountedSpan& piece : *pieces) {
        if (piece.span.Contains(second_)) piece.hits -= std::min(piece.hits, hits_);
      }
    }
  }
}

std::optional<Seconds> CheckRun::FillRetryAfter() {
  const bool fits = decision_.allowed;
  std::optional<Seconds> earliest = Seconds{0};
  for (size_t i = 0; i < decision_.limits.size(); ++i) {
    LimitOutcome& outcome = decision_.limits[i];
    const uint64_t max = outcome.limit.max_hits;
    outcome.remaining = outcome.count < max ? max - outcome.count : 0;
    outcome.retry_after =
        fits ? Seconds{0} : RetryAfter(outcome.limit, t_, hits_, tally_.upper_pieces[i]);
    decision_.retry_after = Later(decision_.retry_after, outcome.retry_after);
    if (!fits) {
      earliest = Later(earliest, EarliestRetry(outcome.limit, t_, hits_, tally_.lower_pieces[i]));
    }
  }
  if (loss_denied_) {  // until the loss has left every window: certain
    decision_.retry_after = Later(decision_.retry_after, loss_wait_);
    earliest = Later(earliest, loss_wait_);
  }
  if (decision_.blocked_until) {  // the block's end is certain, and never early
    const Seconds block = *decision_.blocked_until - t_;
    decision_.retry_after = Later(decision_.retry_after, block);
    earliest = Later(earliest, block);
  }
  return earliest;
}

void CheckRun::RememberBlocked(std::optional<Seconds> earliest) {
  // Without an epoch read before the store was (AnswerBlocked not asked), a reset meanwhile
  // could not be told: nothing is cached.
  if (core_.blocked == nullptr || !live() || !rememberable_ || !blocked_epoch_ || loss_ ||
      (earliest && *earliest <= Seconds{0})) {
    return;
  }
  // Never fits: re-check after blocked_max_age.
  const Instant until = earliest ? t_ + *earliest : t_ + core_.options.hot_path.blocked_max_age;
  BlockedCache::Entry entry{t_, until, hits_, decision_, tally_.upper_pieces, {}};
  for (size_t i = 0; i < entry.pieces.size() && i < decision_.limits.size(); ++i) {
    entry.retry_plans.emplace_back(decision_.limits[i].limit, hits_, entry.pieces[i]);
  }
  core_.blocked->Put(blocked_key_, std::move(entry), *blocked_epoch_);
}

}  // namespace hourglass::internal
