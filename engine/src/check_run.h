// Internal to the engine: one check, step by step. Every store call it needs is a batch it hands
// to its caller, so that the checks of many requests share their sends (Store::ApplyMany):
//
//   CheckRun run(core, group, policy, hits, t, now);
//   run.AnswerBlocked();          // a client denied moments ago: no read
//   while (Batch* batch = run.NextBatch()) {
//     run.TakeAnswer(...);        // Store::Apply; a write-only batch through Store::Send
//   }
//   if (std::optional<TakeBackIntent> undo = run.TakeBack(false)) {
//     run.TookBack(*undo, /* Store::Send(undo->batch) ok */);
//   }
//   Decision d = run.Finish();
//
// RequestRuns::DecideAlone is exactly that loop; RequestRuns drives many runs at once.
//
// The steps: the hit's increments with the coarse bounds of every window (or the exact cover) in
// one batch; the exact cover when the bounds do not settle it (and the re-read of cached buckets a
// reset elsewhere made stale); on a denial, the retry time made exact (optional, one read per
// ladder level); for a client answered from the blocked-client cache in attempts mode, its hit.
// In admitted mode a client denied at its last check in this process is checked read-first: the
// bounds (or, without them, the exact cover) without the hit; unless they deny it, the exact
// cover with the hit (two round trips). So its clear denials create nothing in the store. The
// take-back of the hit (admitted mode) is left to the caller, who knows whether the request the
// check belongs to stands: a denied check's hit, or an admitted one whose request was denied.
//
// Atomic checks: on a store that evaluates a batch atomically (Store::conditional_batches), a live
// admitted-mode check sends its hit with a guard per window (EngineOptions::atomic_checks): with
// the bounds, each window's upper bound plus the hit within its limit; with the exact cover, its
// count. The store writes the hit only if every guard holds. A hit the bounds' guards hold back
// and the lower bounds do not deny goes again with the exact cover's guards (a second round trip,
// as the bounds' would take). A hit held back is a denial that wrote nothing: no take-back, no
// read-first probe, and no client racing for the last unit is denied for another's hit that is
// then taken back. Should the reads say it fits after all (a reset elsewhere made cached buckets
// stale), the check goes the increment-first way.
//
// Penalties: a live check of a policy with block_for reads the feature's penalty keys with its
// first read (KeySpace::Penalty); a blocked feature is denied without a further read. A check its
// own limits deny strikes (KeySpace::Strike) with its take-back, or alone in attempts mode.
//
// Lost data: a live check whose windows hold all of today also reads the feature's ledger of the
// day (KeySpace::Ledger), in the same batch. When the buckets it read hold fewer of today's hits
// than the ledger (which, read as it is, never counts more than they hold), the store lost them
// (memcached evicted buckets): the decision is degraded with a kDataLoss error, windows that hold
// all of today count the missing hits, and the other windows (which may or may not hold them)
// follow the policy's FailureMode: fail closed counts them too.
//
// A store failure stops the run: its decision is degraded, per the policy's FailureMode; with
// local (and EngineOptions::fallback), decided by the fallback against its share of each limit,
// recording the hit there unless the store already holds it.
//
// Thread-safety: one CheckRun per check, on one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine_core.h"
#include "retry_refiner.h"
#include "window_tally.h"

namespace hourglass::internal {

// What a run's take-back batch does (CheckRun::TakeBack), for CheckRun::TookBack.
struct TakeBackIntent {
  Batch batch;              // fire-and-forget: the caller sends it (and may move from it)
  bool undoes_hit = false;  // it holds the hit's increments, negated
  bool strikes = false;     // it holds a penalty's strike
};

class CheckRun {
 public:
  // `t` is the instant checked, `now` the clock's; `core` and `policy` must outlive the run. With
  // `record` false the run decides as it would with it, but writes nothing (a peek): the exact
  // cover is read without the hit, which is added to the counts only to judge.
  CheckRun(const EngineCore& core, std::string group, const Policy& policy, uint64_t hits,
           Instant t, Instant now, bool record = true);

  // Whether the client was denied moments ago and certainly still is: then it is answered without
  // a read (in attempts mode its hit is still the next batch). Never for a peek.
  bool AnswerBlocked();

  // The batch the run needs answered next (the caller may move from it), or null when it has all
  // it needs or a read failed.
  Batch* NextBatch();
  // The store's answer to the batch NextBatch gave.
  void TakeAnswer(Result<std::vector<uint64_t>> answer);

  // The store failed before the run sent anything (the write-back of its feature's local hits):
  // it is decided as when its own batch fails. Not a run the blocked-client cache answered.
  void FailBeforeStore(const Error& error) {
    if (mode_ != Mode::kBlocked) Fail(error, false);
  }
  const std::string& group() const { return group_; }
  // Answered from the blocked-client cache (AnswerBlocked): it reads nothing.
  bool blocked() const { return mode_ == Mode::kBlocked; }

  // Its denial is not to be remembered in the blocked-client cache: its reads include hits of
  // checks before it that may yet be taken back (a repeated event+feature in one request).
  void DoNotRememberBlocked() { rememberable_ = false; }

  // Once NextBatch gives null: whether the check fits (per its policy when the store failed).
  bool allowed() const;
  // Once NextBatch gives null: what must still be written, if anything: the undoing of this
  // check's hit when it stays counted and must not (admitted mode, written, and denied, or
  // `request_denied`); with it (or alone) the strike of a penalty, when a limit of a policy with
  // block_for denied the check. Given at most once per run.
  std::optional<TakeBackIntent> TakeBack(bool request_denied);
  // Whether that intent's batch was sent.
  void TookBack(const TakeBackIntent& intent, bool sent);
  // The decision, once NextBatch gives null (and the take-back, if any, was sent).
  Decision Finish();

 private:
  // How the check treats its hit: set at the start, changed only by what its reads show.
  enum class Mode {
    kPeek,      // nothing is written; the hit is added to the counts only to judge
    kPlain,     // increment first: the hit goes with the first batch (and is taken back, in
                // admitted mode, when the check or its request is denied)
    kProbing,   // admitted mode, a client denied at its last check in this process: the reads go
                // without the hit, which is written (kPlain) only unless they deny it
    kAtomic,    // decided on the store: the hit goes guarded by every window's room
    kHeldBack,  // atomic, and a guard kept the hit out: nothing was written
    kBlocked,   // answered from the blocked-client cache, without a read
  };
  // The steps, in order: the increments with every window's coarse bounds (enough when they
  // decide the check), or with the exact cover; the exact cover after bounds that did not; the
  // retry time refined on a denial; a blocked client's attempt (written, nothing read). Then the
  // decision is taken (kDecided), and its take-back given (kTakenBack).
  enum class Step { kBounds, kExactWithHit, kExact, kRefine, kAttempt, kDecided, kTakenBack };
  // A client answered from the blocked-client cache.
  struct BlockedAnswer {
    std::shared_ptr<const BlockedCache::Entry> entry;  // the decision that blocked it
    bool attempt_recorded = false;                     // kAttempt: this check's hit was written
  };

  // A new run's mode and first step: a live admitted-mode check on a store that takes guarded
  // batches is atomic; the bounds go first where the hot path has them and the check is live.
  static Mode FirstMode(const EngineCore& core, const Policy& policy, bool live, bool record);
  static Step FirstStep(const EngineCore& core, bool live, bool record);
  bool live() const { return t_ == now_; }
  bool deciding() const { return !failed_ && step_ < Step::kDecided; }
  // A check at a settled instant writes into buckets that caches treat as immutable: it reads
  // without the cache, and the feature's cached buckets are dropped (see the constructor).
  bool settled_instant() const { return core_.IsSettled(second_, now_); }
  BucketReader Reader() const { return core_.Reader(!settled_instant()); }
  std::vector<Increment> HitIncrements(int64_t sign) const;
  // The store failed: the run stops, and a policy that says local is decided by the fallback.
  // `hit_sent`: the failed batch carried the hit's increments.
  void Fail(const Error& error, bool hit_sent);
  // The policy's answer when the store failed; `cost` is what was spent before.
  Decision Degraded(const Error& error, const Cost& cost) const;
  // The fallback's decision (local_) as a Decision.
  Decision DecidedLocally(const Error& error, const Cost& cost) const;
  // Limit i's outcome in it: the hits decided locally against the limit scaled by `share`.
  LimitOutcome LocalOutcome(size_t i, const Share& share, bool allowed) const;
  // The share of each limit the fallback decides against, and the limits so scaled.
  Share LocalShare() const;
  // Whether the hit is in the store now (or will be, once the pending batch is applied).
  bool HitWritten() const { return mode_ == Mode::kPlain || mode_ == Mode::kAtomic; }
  // Whether the current step's batch carries the hit's increments.
  bool StepWritesHit() const {
    return step_ == Step::kExactWithHit || (step_ == Step::kBounds && HitWritten());
  }

  // Prepares the current step's batch in pending_; false when the step turned out to have
  // nothing to send and the run moved on.
  bool Prepare();
  // Takes a completed read into the tally and moves to the next step.
  void Absorb(Result<BucketRead> read);
  // The next step after the bounds were read, and after the exact cover was.
  void AfterBounds();
  void AfterExact();
  // The next step once a penalty is known to block the feature.
  void AfterPenalty();
  // After the counts are read: judges, and refines the retry time of a denial.
  void Judged();
  // Per limit, the outcome from the tally; decision_.allowed.
  void Judge();
  // Per limit, whether its window reaches back before a loss on the feature's servers (loss_);
  // a policy that fails closed on data loss denies.
  void JudgeLoss(bool limits_fit);
  // Whether every window fits its limit by its upper bound, and whether one is over it by its
  // lower bound, counting the hit where the reads left it out.
  bool AllFit() const;
  bool OneOver() const;
  // The first second of today when this check compares today's buckets with the ledger: a live
  // check whose windows hold all of today, away from a top-level bucket's end.
  std::optional<int64_t> ComparedDay() const;
  // The ledger to read with the counts, if any.
  std::optional<KeySpace::LedgerKeys> Ledger() const;
  // Today's hits the tally's pieces lack against `ledger`.
  uint64_t MissingHits(uint64_t ledger) const;
  // Adds the missing hits to window i's counts and pieces (at the check's second: the latest
  // they can be, so retry times stay never early).
  void CountMissing(size_t i);
  // Starts the reads again from nothing, with the hit (the exact cover): after a probe that did
  // not deny, or a hit held back although the reads say it fits (a reset elsewhere made cached
  // buckets stale), checked again the increment-first way.
  void ReadAgainWithHit();
  // Whether the take-back undoes the hit; whether it strikes a penalty.
  bool UndoesHit(bool request_denied) const;
  bool Strikes() const;
  // The hits the reads leave out: a peek's, a probe's or a held back hit's (nothing written).
  uint64_t Unread() const { return HitWritten() ? 0 : hits_; }
  // The guards of an atomic check: per window, its count plus the hit within its limit.
  std::vector<WindowGuard> Guards() const;
  // The blocked client's answer: the decision that blocked it, with the attempts since.
  Decision FinishBlocked();
  // Per limit and overall, retry_after; returns EarliestRetry over the limits (nullopt: never).
  std::optional<Seconds> FillRetryAfter();
  void RememberBlocked(std::optional<Seconds> earliest);

  const EngineCore& core_;
  const std::string group_;
  const Policy& policy_;
  const uint64_t hits_;
  const Instant t_, now_;
  const int64_t second_;  // t_ as Unix seconds
  // A live check under a penalty (Policy::block_for): its first read reads the feature's penalty
  // keys (penalty_to_read_, then reset), and a denial by its limits strikes.
  const bool penalized_;
  // Whether its policy keeps the day ledger (internal::KeepsLedger): its hit, the hit's take-back
  // and its comparison.
  const bool keeps_ledger_;
  std::vector<Span> spans_;
  Mode mode_;
  Step step_;
  std::optional<PendingRead> pending_;
  std::vector<Bound> bounds_;              // kBounds: per window
  std::vector<Bucket> reads_;              // the buckets the pending read asks for
  std::shared_ptr<const ReadPlan> plan_;   // kExact*: the plan read
  std::unique_ptr<RetryRefiner> refiner_;  // kRefine
  std::optional<Error> failed_;            // a read failed: the decision is degraded
  bool answered_ = false;                  // the store answered one of the run's batches
  bool hit_landed_ = false;  // failed_ after a batch with the hit was answered: the store has it
  std::optional<StoreFallback::Verdict> local_;  // failed_, and decided by the fallback
  WindowTally tally_;
  Decision decision_;
  std::string blocked_key_;
  std::optional<uint64_t> blocked_epoch_;  // the blocked cache's epoch before the store was read
  std::optional<BlockedAnswer> blocked_;   // kBlocked
  bool rememberable_ = true;
  // A live check whose windows hold all of today: that day's first second (the ledger is read).
  std::optional<int64_t> today_;
  uint64_t missing_ = 0;  // today's hits the store lost, as the last read saw (0: no ledger)
  std::optional<KeySpace::PenaltyKeys> penalty_to_read_;
  std::optional<Instant> blocked_until_;  // the penalty keys read block the check until then
  std::optional<StoreLoss> loss_;         // a loss some window reaches back before
  bool loss_denied_ = false;              // denied for it, not by a limit or a penalty
  Seconds loss_wait_{0};                  // until the loss has left every window it is in
};

}  // namespace hourglass::internal
