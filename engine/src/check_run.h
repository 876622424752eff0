// Internal to the engine: one Check, step by step.
//
//   CheckRun run(core, group, policy, hits, t, now);
//   if (std::optional<Decision> d = run.AnswerBlocked()) return *d;  // no read
//   return run.Decide();
//
// Or in steps, for a caller that sends several runs' batches together (Store::ApplyMany):
//   while (Batch* batch = run.NextBatch()) run.TakeAnswer(store.Apply(*batch));
//   return run.Finish();
//
// Decide: the hit's increments with the coarse bounds of every window (or the exact cover) in
// one batch; the exact cover in a second batch when the bounds do not settle it; then, on a
// denial, the retry time made exact (optional), the take-back (admitted mode) and the client
// remembered as blocked.
//
// Thread-safety: one CheckRun per call, on one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine_core.h"
#include "window_tally.h"

namespace hourglass::internal {

class CheckRun {
 public:
  // `t` is the instant checked, `now` the clock's; `core` must outlive the run. With `record`
  // false the run decides as it would with it, but writes nothing (a peek): the exact cover is
  // read without the hit, which is added to the counts only to judge.
  CheckRun(const EngineCore& core, std::string group, const Policy& policy, uint64_t hits,
           Instant t, Instant now, bool record = true);

  // The answer for a client denied moments ago, if it is certainly still denied; in attempts
  // mode its hit is still sent (fire-and-forget). Never for a peek.
  std::optional<Decision> AnswerBlocked();
  Decision Decide();

  // The batch the run needs answered next (the caller may move from it), or null when it has
  // read all it needs or a read failed.
  Batch* NextBatch();
  // The store's answer to the batch NextBatch gave.
  void TakeAnswer(Result<std::vector<uint64_t>> answer);
  // The decision, once NextBatch gives null.
  Decision Finish();

 private:
  bool live() const { return t_ == now_; }
  // A check at a settled instant writes into buckets that caches treat as immutable: it reads
  // without the cache, and the feature's cached buckets are dropped (see the constructor).
  bool settled_instant() const { return core_.IsSettled(second_, now_); }
  BucketReader Reader() const { return core_.Reader(!settled_instant()); }
  std::vector<Increment> HitIncrements(int64_t sign) const;
  // The policy's answer when the store failed; `cost` is what was spent before.
  Decision Degraded(const Error& error, const Cost& cost) const;

  // The reads, in order: the increments with every window's coarse bounds (settled_ when they
  // decide the check), or with the exact cover; the exact cover after bounds that did not.
  enum class Step { kBounds, kExactWithHit, kExact, kDone };
  // Prepares the current step's read in pending_.
  void Prepare();
  // Takes a completed read into the tally and moves to the next step.
  void Absorb(Result<BucketRead> read);
  // Per limit, the outcome from the tally; decision_.allowed.
  void Judge();
  // Reads inside the pieces that free the room, so retry_after is exact to the second.
  void RefineRetry();
  // Admitted mode: the denied hit's increments taken back, fire-and-forget.
  void TakeBack();
  // Per limit and overall, retry_after; returns EarliestRetry over the limits (nullopt: never).
  std::optional<Seconds> FillRetryAfter();
  void RememberBlocked(std::optional<Seconds> earliest);

  const EngineCore& core_;
  const std::string group_;
  const Policy& policy_;
  const uint64_t hits_;
  const bool record_;
  const Instant t_, now_;
  const int64_t second_;  // t_ as Unix seconds
  std::vector<Span> spans_;
  Step step_;
  std::optional<PendingRead> pending_;
  std::vector<Bound> bounds_;             // kBounds: per window
  std::vector<Bucket> reads_;             // the buckets the pending read asks for
  std::shared_ptr<const ReadPlan> plan_;  // kExact*: the plan read
  std::optional<Error> failed_;           // a read failed: the decision is degraded
  WindowTally tally_;
  bool settled_ = false;
  Decision decision_;
  std::string blocked_key_;
};

}  // namespace hourglass::internal
