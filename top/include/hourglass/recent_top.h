// Who is hit and who is denied most, per event, over the last minutes, in bounded memory: for
// each event a Space-Saving summary per minute of hits and one of denied hits, the last
// kMinutes minutes kept. Nothing is kept per feature beyond `capacity` counters per summary (and
// per event, up to 512 decisions recorded but not yet added to the summaries).
//
// A query merges the summaries of its minutes. Each row's true weight lies in
// [estimate - error, estimate]; a feature in no row of an unbounded query (n large enough) has a
// true weight of at most `bound` (the sum of the minutes' least counters, at most total/capacity).
//
//   RecentTop top(256);
//   top.Record("signup", "ann@example.com", 1, /*allowed=*/false, now);
//   TopAnswer a = top.Query("signup", 5, TopBy::kDenied, 20, now);
//
// Thread-safety: Record and Query may be called from many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/adaptive_mutex.h"
#include "hourglass/clock.h"
#include "hourglass/space_saving.h"
#include "hourglass/status.h"

namespace hourglass {

enum class TopBy { kHits, kDenied };
// "hits" or "denied"; kInvalidArgument naming the choices.
Result<TopBy> ParseTopBy(std::string_view name);
std::string_view TopByName(TopBy by);

struct TopRow {
  std::string feature;  // as counted; longer than kMaxTopKey bytes: cut, with a hash (truncated)
  bool truncated = false;
  uint64_t estimate = 0;  // >= the true weight in the window
  uint64_t error = 0;     // estimate - error <= the true weight
  LastDecision last;      // the last decision this service gave the feature
};

struct TopAnswer {
  Instant from{};      // the start of the first minute merged
  Instant to{};        // now
  uint64_t total = 0;  // the exact weight of every hit (or denied hit) in the window
  uint64_t bound = 0;  // a feature not listed weighs at most this (when rows were not cut by n)
  size_t capacity = 0;
  std::vector<TopRow> rows;  // heaviest first
};

// One ranking to merge with others: a minute's summary, or one service's answer.
struct RankingPart {
  uint64_t total = 0;             // the exact weight of everything it counted
  uint64_t unlisted_at_most = 0;  // the most a feature not in `rows` weighs in it
  std::vector<TopRow> rows;       // any order, one per feature
};

struct Ranking {
  uint64_t total = 0;        // every part's total
  uint64_t bound = 0;        // a feature in no row of any part weighs at most this
  std::vector<TopRow> rows;  // heaviest first (then least error, then by feature), at most n
};

// Sums the parts feature by feature: a feature's estimate adds its row's estimate where a part
// lists it and that part's unlisted_at_most where not (still an upper bound); estimate - error
// adds each listed row's estimate - error (still a lower bound). Its last decision is the newest
// listed. The rule behind RecentTop::Query (minutes) and `hourglass top` (services).
Ranking MergeRankings(std::span<const RankingPart> parts, size_t n);

// Features longer than this are kept as their first bytes, "...#" and 16 hex digits of their
// SHA-256 (one byte longer than this: `truncated`).
constexpr size_t kMaxTopKey = 256;

class RecentTop {
 public:
  static constexpr int kMinutes = 15;  // the longest window a query can ask for

  // `capacity` >= 1 counters per summary.
  explicit RecentTop(size_t capacity = 256);

  // A decision on `feature` of `event` at `at`, weighing `cost` hits.
  void Record(std::string_view event, std::string_view feature, uint64_t cost, bool allowed,
              Instant at);
  // The `n` heaviest features of `event` in the current minute and the `minutes` - 1 before it
  // (1 to kMinutes), by hits or by denied hits. An event never recorded answers no rows.
  TopAnswer Query(std::string_view event, int minutes, TopBy by, size_t n, Instant now) const;
  // Whether `event` was ever recorded here (an event no policy file names: Envoy's descriptors).
  bool Knows(std::string_view event) const { return Find(event) != nullptr; }

  // What a process keeps for the next (TopState): every event's minutes as their summaries'
  // entries and totals.
  struct MinuteState {
    int64_t minute = 0;  // Unix minute
    std::vector<SpaceSaving::Entry> hits, denied;
    uint64_t hits_total = 0, denied_total = 0;
  };
  using State = std::map<std::string, std::vector<MinuteState>, std::less<>>;
  State Save() const;
  // Takes `state`'s minutes within the last kMinutes before `now` in place of this summary's
  // (a minute this one has already recorded into is kept as it is).
  void Restore(const State& state, Instant now);

 private:
  // Threads record into a buffer of their own (kBuffers per event; threads beyond that many share
  // them) and add a full buffer to the summaries in one go: the summaries and their lock move
  // between cores once a buffer rather than once a decision. Every read (Query, Save) adds the
  // buffers first, so it sees every decision recorded before it; one thread's decisions reach a
  // summary in its order.
  static constexpr size_t kBuffers = 8;
  static constexpr size_t kBufferedDecisions = 64;
  struct Minute {
    int64_t minute = -1;  // Unix minute it holds, -1: none yet
    SpaceSaving hits;
    SpaceSaving denied;
  };
  struct Pending {  // a decision recorded, not yet in its minute's summaries
    std::string key;
    size_t hash = 0;
    uint64_t cost = 0;
    bool allowed = true;
    Instant at{};
  };
  struct alignas(64) Buffer {
    AdaptiveMutex mu;
    std::vector<Pending> pending;  // [0, used) recorded; guarded by mu
    size_t used = 0;               // guarded by mu
  };
  struct EventTop {
    // Taken to add a buffer or to read; after a buffer's lock when both are held.
    mutable AdaptiveMutex mu;
    // By minute % kMinutes; guarded by mu. A read adds the buffers to them first: what they hold
    // together does not change.
    mutable std::vector<Minute> minutes;
    mutable std::array<Buffer, kBuffers> buffers;
  };
  EventTop& Of(std::string_view event);
  const EventTop* Find(std::string_view event) const;
  // Adds `buffer`'s decisions to `top`'s summaries and empties it; the caller holds buffer.mu.
  static void AddBuffered(const EventTop& top, Buffer& buffer);
  // Adds every buffer of `top` to its summaries.
  static void AddAllBuffered(const EventTop& top);
  // Adds one decision to `top`'s summaries; the caller holds top.mu.
  static void AddToMinute(const EventTop& top, const Pending& decision);

  size_t capacity_;
  const uint64_t id_;  // unique among every RecentTop of the process: keys threads' cached lookups
  mutable std::shared_mutex mu_;
  std::map<std::string, std::unique_ptr<EventTop>, std::less<>> events_;  // guarded by mu_
};

}  // namespace hourglass
