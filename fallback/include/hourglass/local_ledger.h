// The hits a process decided on its own while its store failed, per event+feature and second:
// the StoreFallback an engine decides `on_store_failure: local` checks with.
//
//   LocalLedger ledger({.services = 3, .keep = Seconds{86400}});
//   EngineOptions options{.fallback = &ledger};
//   ...                                   // and, every second or so:
//   engine.WriteBackLocal();              // hits of features not checked since the store returned
//   ledger.Sweep(clock.Now());            // drops what has aged out
//
// Bounded: it holds at most `max_seconds` (event+feature, second) entries. A check that would
// need another is denied (Verdict::full) until write-backs and age make room. Hits stay after
// their write-back, for local decisions to count them should the store fail again, until they
// are older than `keep` (the engine's retention: no window reaches them): a feature's decisions
// and Sweep drop them. Pending hits older than `keep` are dropped unwritten: no window counts them
// any more (Stats::expired).
//
// Thread-safety: every member may be called from many threads at once (one mutex).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/store_fallback.h"

namespace hourglass {

struct LocalLedgerOptions {
  // How many processes share the store: a policy without local_share admits 1/services of each
  // limit here while its store fails, so that all of them together admit at most the limit.
  // 0: not known until SetServices (a count in the store): until then such a policy admits
  // nothing locally, since no share keeps the processes together within the limit.
  uint64_t services = 1;
  Seconds keep{86400};             // how long a second's hits are held: the engine's retention
  size_t max_seconds = 1'000'000;  // entries held at most (about 140 bytes each)
};

class LocalLedger : public StoreFallback {
 public:
  // Figures for metrics. Monotonic totals except pending_*, held and features.
  struct Stats {
    uint64_t pending_hits = 0;      // decided locally, not yet written back (claimed included)
    uint64_t pending_features = 0;  // event+features with hits to write back
    uint64_t held_seconds = 0;      // entries held (of max_seconds)
    uint64_t decided = 0;           // checks decided locally
    uint64_t admitted = 0;          // of which admitted
    uint64_t full = 0;              // of which denied for want of room
    uint64_t written_back = 0;      // hits written back
    uint64_t expired = 0;           // pending hits dropped unwritten, older than keep
    // Hits whose store outcome is unknown (Ask::sent, Landed::kUnknown): should the server
    // apply them, or not, its windows count them once more, or once less.
    uint64_t uncertain = 0;
    uint64_t services = 1;  // the processes sharing the store, as last set (0: not known yet)
  };

  explicit LocalLedger(LocalLedgerOptions options);

  // 1/services, or none while the services are not known.
  Share default_share() const override {
    const uint64_t services = services_.load();
    return services == 0 ? Share{0, 1} : Share{1, services};
  }
  // How many processes share the store now (at least 1): a count of them (ServicePresence).
  void SetServices(uint64_t services) { services_.store(std::max<uint64_t>(services, 1)); }
  uint64_t services() const { return services_.load(); }
  Verdict Decide(const std::string& group, std::span<const Span> spans,
                 std::span<const uint64_t> maxes, const Ask& ask) override;
  void TakeBack(const std::string& group, int64_t t, uint64_t hits) override;
  bool AnyPending() const override { return pending_features_.load() > 0; }
  std::vector<std::string> PendingGroups(size_t max) const override;
  std::vector<SecondHits> Claim(const std::string& group) override;
  void Release(const std::string& group, std::span<const SecondHits> claimed,
               Landed landed) override;

  // Drops every entry older than `keep` before `now`; returns how many.
  size_t Sweep(Instant now);
  Stats stats() const;

 private:
  // One second's hits of a feature.
  struct Entry {
    int64_t pending = 0;   // to write back (negative: taken back after a claim)
    int64_t claimed = 0;   // being written back
    uint64_t written = 0;  // written back, held for local counting
    int64_t counted() const { return pending + claimed + static_cast<int64_t>(written); }
  };
  struct Feature {
    std::map<int64_t, Entry> seconds;
    size_t pending_entries = 0;  // entries with pending != 0: the feature is in pending_
  };
  // Adds `delta` to `entry`'s pending hits, keeping `feature`'s count of such entries.
  static void AddPending(Feature& feature, Entry& entry, int64_t delta);

  // Whether `hits` more fit every span of `feature` under `maxes`; per span, the pieces counted.
  static bool Count(const Feature& feature, std::span<const Span> spans,
                    std::span<const uint64_t> maxes, uint64_t hits,
                    std::vector<std::vector<CountedSpan>>& pieces);
  // Holds `ask`'s hits (pending, or written when sent), or says the ledger is full.
  void Hold(Feature& feature, std::span<const Span> spans, const Ask& ask, Verdict& verdict);
  // Drops `feature`'s entries older than `keep` before `t` (not those being written back);
  // pending hits among them expire.
  void Prune(Feature& feature, int64_t t);
  // Drops `entry` of `feature` when it holds nothing.
  void DropIfEmpty(Feature& feature, std::map<int64_t, Entry>::iterator entry);
  // Keeps pending_ in step with whether `feature` has hits to write back, and drops it when it
  // holds nothing.
  void Update(const std::string& group, Feature& feature);

  const LocalLedgerOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Feature> features_;  // guarded by mu_
  std::set<std::string> pending_;                      // groups with pending hits; guarded by mu_
  Stats stats_;  // guarded by mu_ (its pending figures are computed)
  std::atomic<uint64_t> pending_features_{0};
  std::atomic<uint64_t> services_;
};

}  // namespace hourglass
