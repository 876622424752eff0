// The engine: exact hit counting and limit checks for event+feature pairs over a Store.
//
//   SystemClock clock;
//   MemoryStore store(clock);  // or *MemcachedStore::Create(options)
//   Engine engine = *Engine::Create(store, clock, EngineOptions{});
//   Policy signup{.limits = *ParseLimits("3/h, 10/d")};
//   Result<Decision> d = engine.Check("signup", "ann@example.com", signup);
//   if (d.ok() && !d->allowed) { /* answer 429, Retry-After: d->retry_after */ }
//
// Every hit increments one bucket per ladder level (three keys by default). A count or check
// reads the buckets that cover its windows exactly (planner.h) in the same round trip as the
// increments: one round trip to one server per check, plus a fire-and-forget take-back when an
// admitted-mode check denies.
//
// Exactness: counts at "now" (no `at`, or `at` >= the clock) and at explicit past instants are
// exact, provided the buckets read are alive: a bucket lives ttl(level) from its creation, which
// covers `retention` plus the margins at the current time. Hits written for past instants
// (replays) live for their TTL from the moment they are written.
//
// Thread-safety: an Engine is immutable after Create and may be used from many threads; the
// Store and Clock it was given must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/decision.h"
#include "hourglass/ladder.h"
#include "hourglass/limit.h"
#include "hourglass/status.h"
#include "hourglass/store.h"
#include "hourglass/store_fallback.h"
#include "hourglass/store_losses.h"

namespace hourglass {

class KeySpace;
namespace internal {
struct EngineCore;
}

// The hot path: ways to read fewer keys per check while every decision stays exactly that of a
// perfect sliding-window limiter. The default suits a library user; the presets name the others.
struct HotPathOptions {
  // Every check reads its windows' exact cover: no bounds, no caches (for comparison).
  static HotPathOptions Off() { return {.bounds = false, .bucket_cache_features = 0}; }
  // One check or count per process (a CLI call): bounds only; nothing would be reused.
  static HotPathOptions OneShot() { return {.bucket_cache_features = 0}; }
  // A long-running process (a service, a replay, a load driver): bounds, and both caches sized
  // for `features` event+features.
  static HotPathOptions LongRunning(size_t features = 100000) {
    return {.bucket_cache_features = features, .blocked_cache_entries = features};
  }

  // Decide from coarse bounds when they settle it: the hits of a window lie between the sum of the
  // coarse buckets inside it and the sum of those overlapping it. Otherwise refine in a second
  // round trip. Applies to checks at the current time.
  bool bounds = true;
  // Cache the values of buckets whose span ended more than settle_margin ago (they never change),
  // for up to this many event+features in this process; 0 turns it off. A per-feature generation
  // key, read first in the same batch, drops them when any process resets the feature.
  size_t bucket_cache_features = 4096;
  // Buckets cached per event+feature at most; raised to twice the buckets a cover of the retention
  // takes (Ladder::CoverBucketsAtMost), so that no window longer than 512 buckets reads its past
  // buckets again at every check. A full feature drops the half that ends first.
  size_t bucket_cache_buckets_per_feature = 512;
  // Deny a client denied in admitted or attempts mode locally (no read; attempts are still counted,
  // fire-and-forget) until a time before which it certainly stays denied, for up to this many
  // clients; 0 (the default) turns it off. In admitted mode a client it still lists (denied at its
  // last check here) is then checked read-first: its hit is written only once a read shows it fits,
  // so that a hammering client's denials create nothing in the store (the check that fits again
  // costs two round trips).
  size_t blocked_cache_entries = 0;
  // A locally denied client is checked against the store again at least this often (so a reset
  // elsewhere takes effect within it).
  Seconds blocked_max_age{5};
};

struct EngineOptions {
  std::string name_space = "hg";  // first part of every key; [A-Za-z0-9._-]{1,64}
  Ladder ladder = Ladder::Default();
  // The longest window the engine answers; sets the buckets' TTLs. Default one day.
  Seconds retention{86400};
  // Allowance for clock skew between app servers, added to every TTL. Default 5s.
  Seconds settle_margin{5};
  CoverOptions cover;  // planner switches (for benchmarks); changing_from is set per call
  HotPathOptions hot_path;
  // On a denial, read inside the bucket whose hits leave first (at most one batch per ladder
  // level) so that retry_after is exact to the second. Off by default: a denial then costs no
  // extra round trip and retry_after is still never early, but may be late by up to the width of
  // a bucket (an hour for a day limit on the default ladder). On, a denial reads more keys
  // (bench/results/replay.md measures how many).
  bool exact_retry_after = false;
  // Where the store evaluates a batch atomically (Store::conditional_batches: Redis, LMDB), a live
  // admitted-mode check is decided on the store in one step: its hit is written only if every
  // window, as it stands at that moment, still has room for it. Nothing is taken back, so clients
  // racing for a limit's last units are never denied spuriously; the exact cover is read in the
  // same round trip (no bounds step). Off, or on other stores: increment, read, take back.
  bool atomic_checks = true;
  // A denied request's take-backs wait for the store's answer (Store::ApplyMany) instead of going
  // out fire-and-forget (Store::Send). A store that orders a client's writes only per connection
  // (memcached) may otherwise apply a later check of the feature, sent on another connection,
  // before them: that check reads the hit still counted and may be denied while there is room.
  // For a process whose checks of one feature follow each other closely (a service); costs a
  // round trip after the checks of a batch that takes back.
  bool confirm_take_backs = false;
  // The losses the store's servers told of (a restart, a flush), or null. A check or count whose
  // windows reach back before a loss on one of its feature's servers (Store::ServersOf) says so:
  // those windows are inexact, the decision degraded with kDataLoss naming the loss, and
  // Policy::on_data_loss decides. Must outlive the engine.
  const StoreLosses* losses = nullptr;
  // Where checks whose policy says on_store_failure local are decided while their store fails,
  // and their hits held until written back (store_fallback.h); null: such checks fail closed.
  // Must outlive the engine.
  StoreFallback* fallback = nullptr;
};

// The longest event or feature, in bytes. Longer ones are refused (kInvalidArgument) without
// being echoed back.
constexpr size_t kMaxFieldBytes = 65536;

// The most hits one Record or Check may count for. Far below what a 64-bit bucket holds, so no
// sequence of calls can make a bucket wrap within its life.
constexpr uint64_t kMaxHitsPerCall = 1'000'000'000;

struct WindowCount {
  Window window;
  uint64_t count = 0;
  // The window reaches back before Counts::loss: it counts only what its server kept.
  bool lost = false;
};

struct Counts {
  Instant at;
  std::vector<WindowCount> windows;
  Cost cost;
  // Today's hits the store lost (memcached evicted them, or clients of the other layout wrote
  // them), as the feature's day ledger tells; 0 when nothing is missing or the count could not
  // tell (see Engine::Count). Windows holding all of today include them.
  uint64_t missing = 0;
  // The latest loss on the feature's servers (EngineOptions::losses) that a window reaches back
  // before; nullopt when none does.
  std::optional<StoreLoss> loss{};
};

class Engine {
 public:
  static Result<Engine> Create(Store& store, const Clock& clock, EngineOptions options);

  // Records `hits` (1 to kMaxHitsPerCall) at `at` (default now). One round trip that reads
  // nothing: it waits for the store's answer, which confirms the increments landed (a write the
  // store refuses is an error). Recording more than settle_margin in the
  // past writes into buckets caches treat as immutable: it also bumps the feature's generation
  // (one more key written), so every process drops its cached buckets of the feature at its next
  // read, as after a reset.
  Result<Cost> Record(std::string_view event, std::string_view feature, uint64_t hits = 1,
                      std::optional<Instant> at = std::nullopt) const;

  // Takes back `hits` recorded at `at`: an admitted check a caller undoes (one check of several
  // that must all pass, when another was denied: pass Decision::at). Decrements are floored at 0.
  // Sent without waiting for the answer, like a denial's take-back; errors are for bad arguments
  // or a request that could not be sent. More than settle_margin in the past, as Record.
  Result<Cost> Unrecord(std::string_view event, std::string_view feature, uint64_t hits,
                        Instant at) const;

  // A decision at `at` was charged `cost` hits and its true cost is `actual` (a token budget's
  // estimate and the tokens spent): the difference is recorded at `at`, added or taken back
  // (floored at 0), and waited for, so that every process reading the store counts it once this
  // returns. `at` may run ahead of this clock by the settle margin (another host's decision) and
  // must lie within the retention: kInvalidArgument otherwise, naming the window. As Record, a
  // settlement more than settle_margin in the past bumps the feature's generation.
  //
  // With `once`, the settlement applies at most once however often it is sent, from any process:
  // its id is marked in the store (kept `once->keep`) before the difference is written; a marked
  // id is answered `replayed` and changes nothing. A failure after the mark leaves the decision
  // at its charge: never counted twice, at worst not settled.
  struct Once {
    std::string id;  // unique per decision: printable, 1 to 64 bytes
    Seconds keep{3600};
  };
  struct Settlement {
    int64_t delta = 0;      // actual - cost: the hits added at `at` (taken back, below 0)
    bool replayed = false;  // `once`'s id was settled before: nothing was written
    Cost cost;
  };
  Result<Settlement> Settle(std::string_view event, std::string_view feature, Instant at,
                            uint64_t cost, uint64_t actual,
                            const std::optional<Once>& once = std::nullopt) const;

  // Exact hits in each window ending at `at` (default now). One round trip. Lost data is told as
  // Check tells it: a count at the clock's instant with a window holding all of today reads the
  // day ledger too; hits the buckets lack are Counts::missing, and windows holding all of today
  // count them (shorter ones cannot place them: they count what was read).
  Result<Counts> Count(std::string_view event, std::string_view feature,
                       std::span<const Window> windows,
                       std::optional<Instant> at = std::nullopt) const;

  // Checks a request worth `hits` (1 to kMaxHitsPerCall) against every limit of `policy` and
  // records it per the policy's counting mode. One round trip, two when the bounds do not settle
  // it, none when the blocked-client cache does. A store failure gives a degraded decision per the
  // policy's FailureMode, not an error; errors are for bad arguments only.
  // Lost data is never silent where a check can tell: a live check whose windows hold all of
  // today compares the buckets it read with the feature's day ledger (KeySpace::Ledger). When the
  // store lost some of today's hits, the decision is degraded with a kDataLoss error, windows
  // holding all of today count the lost hits, and shorter ones count them only when the policy
  // fails closed (they may lie outside them).
  Result<Decision> Check(std::string_view event, std::string_view feature, const Policy& policy,
                         uint64_t hits = 1, std::optional<Instant> at = std::nullopt) const;

  // What Check would decide for a request worth `hits`, recording nothing (a dry run: "would it
  // fit?"). The counts are those read, without this request; `remaining` is how many hits still
  // fit. One round trip (the exact cover), and on a denial those that pin its retry time as
  // Check's; never answered by nor stored in the blocked-client cache. A store failure gives a
  // degraded decision per the policy's FailureMode.
  Result<Decision> Peek(std::string_view event, std::string_view feature, const Policy& policy,
                        uint64_t hits = 1, std::optional<Instant> at = std::nullopt) const;

  // Check's decision when it needs no store read: a client the blocked-client cache still knows
  // to be denied (HotPathOptions::blocked_cache_entries). Otherwise nullopt, and nothing was done
  // (bad arguments too): call Check or CheckMany. At the clock's current instant only.
  std::optional<Decision> CheckIfBlocked(std::string_view event, std::string_view feature,
                                         const Policy& policy, uint64_t hits = 1) const;

  // One check of CheckMany or CheckAll: Check's arguments.
  struct CheckRequest {
    CheckRequest() = default;
    CheckRequest(std::string_view e, std::string_view f, const Policy& p, uint64_t h = 1)
        : event(e), feature(f), policy(&p), hits(h) {}

    std::string_view event;
    std::string_view feature;
    const Policy* policy = nullptr;  // not null; must outlive the call
    uint64_t hits = 1;
    std::optional<Instant> at;
    bool record = true;  // false: Peek's decision instead of Check's
    // Whether its denial denies the request it belongs to (CheckAll); false for a check that is
    // only reported (shadow mode). Its own hit is still taken back when it is denied.
    bool binding = true;
    // How errors name the check ("checks[2]", "descriptor 3"); empty: not named.
    std::string_view label;
  };
  // Checks several requests at once. decisions[i] is exactly what Check (Peek, for a check not
  // recorded) would decide for checks[i] had the checks run one after another in order at one
  // instant of the clock, but the checks share their round trips (Store::ApplyMany: one write and
  // one read per memcached server for each step; most checks need one step, none more than two
  // before a denial's take-back, which is sent with every other check's in one Store::Send).
  // Checks of one event+feature cannot share a step: the later ones wait for the earlier ones. Each
  // decision's cost is its own check's, as if alone. Errors are per check, as Check's.
  std::vector<Result<Decision>> CheckMany(std::span<const CheckRequest> checks) const;

  // The decision on several checks that stand or fall together.
  struct RequestDecision {
    bool allowed = false;             // every binding check was allowed
    std::vector<Decision> decisions;  // per check, in order
  };
  // Decides checks that stand or fall together: a request limited per address and per account,
  // or Envoy's descriptors. Every check is validated before anything is written: one invalid
  // check refuses the whole request (its error names the check by its label) and nothing is
  // counted. Otherwise each check is decided as CheckMany decides it, and when a binding check is
  // denied, nothing of the request stays counted in admitted mode: the admitted checks' hits are
  // taken back together with the denied ones' in one Store::Send (awaited, with
  // EngineOptions::confirm_take_backs), and their decisions say `recorded` false with counts that
  // leave their hit out (`allowed` still says whether the check itself fit). Attempts-mode checks
  // keep their hits; peeks and degraded checks count nothing that could be taken back. A take-back
  // that cannot be sent leaves that hit counted (its decision says `recorded`, and
  // cost.failed_take_backs).
  Result<RequestDecision> CheckAll(std::span<const CheckRequest> checks) const;
  // Several requests sharing their round trips: results[i] is exactly CheckAll(requests[i])'s had
  // the requests been decided one after another in order at one instant of the clock.
  std::vector<Result<RequestDecision>> CheckAllMany(
      std::span<const std::span<const CheckRequest>> requests) const;
  // Which requests CheckAllIfBlocked answers without the store.
  enum class LocalScope {
    // Those every check of which the blocked-client cache still knows to be denied: the
    // decision is CheckAll's, every check's counts included.
    kEveryCheck,
    // Also those one binding check of which it knows to be denied, when every other check
    // would record nothing in a denied request (admitted mode, or not recorded): the request
    // is denied and records what CheckAll's would, but those checks are `unread` (Decision)
    // rather than counted. For protocols that show only the denial (Envoy's).
    kAnyBindingDenial,
  };
  // CheckAll's decision when no check of the request needs a store read: every check's client
  // is one the blocked-client cache still knows to be denied (HotPathOptions::
  // blocked_cache_entries), or per `scope`, one binding check's; attempts-mode hits are still
  // sent, fire-and-forget. Otherwise nullopt, and nothing was done (bad arguments too): call
  // CheckAll. At the clock's current instant only.
  std::optional<RequestDecision> CheckAllIfBlocked(
      std::span<const CheckRequest> checks, LocalScope scope = LocalScope::kEveryCheck) const;

  // Deletes every bucket of event+feature that can still be alive for hits around `around`
  // (default now), so that all its windows read 0 there. Reads the ladder top-down and deletes
  // only buckets that hold hits: a few round trips. Then bumps the feature's generation, which
  // drops every process's cached buckets of it. This engine's blocked-client cache forgets the
  // feature at once; other processes' deny it locally for at most HotPathOptions::blocked_max_age.
  struct ResetOutcome {
    uint64_t deleted = 0;  // bucket keys deleted
    Cost cost;             // store work: the reads, the deletes and the generation write
  };
  // With `block_for` (a policy's penalty length), the feature's penalty is lifted too.
  Result<ResetOutcome> Reset(std::string_view event, std::string_view feature,
                             std::optional<Instant> around = std::nullopt,
                             Seconds block_for = Seconds{0}) const;

  // When the penalty of length `block_for` (Policy::block_for, 1s to kMaxBlockFor) that blocks
  // event+feature at `at` (default now) ends; nullopt when it is not blocked. One round trip.
  Result<std::optional<Instant>> BlockedUntil(std::string_view event, std::string_view feature,
                                              Seconds block_for,
                                              std::optional<Instant> at = std::nullopt) const;

  // The raw values of some buckets of event+feature (for inspection). One round trip.
  struct BucketValues {
    std::vector<uint64_t> values;  // values[i] is the value of buckets[i]; missing reads 0
    Cost cost;
  };
  Result<BucketValues> ReadBuckets(std::string_view event, std::string_view feature,
                                   std::span<const Bucket> buckets) const;

  // Writes back hits the fallback (EngineOptions::fallback) decided locally while the store
  // failed, at their own seconds, for up to `max_groups` event+features: one batch each, sent
  // together (Store::ApplyMany). Checks write a feature's back before they read the store; this
  // writes back those of features not checked since (a periodic task's call).
  struct WriteBack {
    uint64_t hits = 0;           // hits written back (net of hits taken back after their claim)
    uint64_t features = 0;       // event+features written back
    uint64_t failed = 0;         // event+features whose write-back failed: still pending
    std::optional<Error> error;  // the first failure's
  };
  WriteBack WriteBackLocal(size_t max_groups = 1024) const;

  // The windows count and inspect answer when none is named: 1s 1m 1h 1d, those within the
  // retention, and the retention itself when it is shorter than a day and none of them.
  std::vector<Window> DefaultWindows() const;

  const EngineOptions& options() const;
  // How this engine names buckets and sets their TTLs (include hourglass/key_space.h).
  const KeySpace& keys() const;

 private:
  explicit Engine(std::shared_ptr<const internal::EngineCore> core) : core_(std::move(core)) {}
  // The group key of event+feature; kInvalidArgument for an empty event.
  Result<std::string> GroupKeyFor(std::string_view event, std::string_view feature) const;
  Status CheckWindows(std::span<const Window> windows) const;
  // Check's argument checks; the group key of the check. Errors are prefixed with its label.
  Result<std::string> ValidateCheck(const CheckRequest& check, Instant now) const;

  std::shared_ptr<const internal::EngineCore> core_;
};

}  // namespace hourglass
