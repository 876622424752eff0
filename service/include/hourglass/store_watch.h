// Watches the store's servers through their own figures (Store::Stats, memcached's `stats`):
// exports them as metrics and warns when a server evicts. memcached evicts live items by LRU when
// it is full, without telling its clients; an evicted bucket reads 0, so the limits of its
// feature over-admit until the bucket's windows pass. A server that restarted (another process,
// or its uptime went back) or was flushed lost every count it held: the watch records the loss
// (StoreLosses, which checks consult), dated at the poll that saw it, counts it and warns once.
// A server that evicted lost counts last used before an instant: memcached tells, per slab class,
// how long the latest item it evicted had gone unused (`evicted_time`), so the loss is dated
// that long before the poll, plus the minute memcached may wait to note a use (kUseLag); Redis
// tells no age, so its evictions are dated at the poll. Each poll that sees evictions records
// one such loss and warns once (EvictionWarning).
// Losses are seen from the second poll on, within one interval of happening. The watch keeps
// each server's latest loss in a note on the server itself (Store::WriteNote), so that a process
// started after it (or a CLI command) learns of it, and a note that vanishes from a server that
// kept its process tells of a flush its figures do not (Redis FLUSHALL). A loss before the first
// poll of every watch, on a server without a note, is not told.
//
//   StoreWatch watch(store, metrics, [](const std::string& line) { Log(line); });
//   watch.Start(std::chrono::seconds{10});  // polls on its own thread until destroyed
//
// Thread-safety: Poll runs on one thread at a time (Start's, or the caller's when not started).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/clock_follower.h"
#include "hourglass/periodic.h"
#include "hourglass/service_metrics.h"
#include "hourglass/store.h"
#include "hourglass/store_losses.h"

namespace hourglass {

// The warning for a server's `stats` when its evictions rose by `rise` since the last look (or,
// `first`, before the first): what was lost, how full it is, and the fix for its kind; with
// `loss`, the windows it makes inexact.
std::string EvictionWarning(const ServerStats& stats, uint64_t rise, bool first,
                            const std::optional<StoreLoss>& loss = std::nullopt);

// The evictions a server's `stats` show since an earlier look at the same process (its
// `evictions` then, and its slab classes' figures), if any, as a loss seen at `now`: dated by the
// youngest class's `evicted_time` less StoreWatch::kUseLag, or at `now` when no class tells.
std::optional<StoreLoss> EvictionLoss(uint64_t evictions_before,
                                      std::span<const ServerStats::ClassEvictions> classes_before,
                                      const ServerStats& stats, Instant now);

// The warning for a loss the watch saw.
std::string LossWarning(const StoreLoss& loss);

class StoreWatch {
 public:
  // How long memcached may take to note that an item was used: it updates an item's last use at
  // most once a minute (ITEM_UPDATE_INTERVAL), plus a second for its coarse clock.
  static constexpr Seconds kUseLag{61};
  using Warn = std::function<void(const std::string& line)>;
  // `store` and `metrics` must outlive the watch.
  StoreWatch(Store& store, ServiceMetrics& metrics, Warn warn)
      : store_(store), metrics_(metrics), warn_(std::move(warn)) {}
  ~StoreWatch() = default;  // stops the polling thread
  StoreWatch(const StoreWatch&) = delete;
  StoreWatch& operator=(const StoreWatch&) = delete;

  // From now on each poll also compares `local` (this host's clock) with every server's, and
  // sets `follow`'s offset so that it follows the servers' clock (ClockFollower). Call before
  // Start; both clocks must outlive the watch.
  void FollowClock(const Clock& local, OffsetClock& follow) {
    local_ = &local;
    follow_ = &follow;
  }
  // From now on each poll records the losses it sees into `losses`, dated by `clock` where the
  // server gives no better time. Call before Start; both must outlive the watch.
  void RecordLosses(StoreLosses& losses, const Clock& clock) {
    losses_ = &losses;
    loss_clock_ = &clock;
  }
  // Reads every server's figures once: metrics set; one warning per server whose evictions rose
  // since the last poll (or that had evicted before the first); a server that cannot answer
  // counts as a store error; clocks compared (FollowClock).
  void Poll();
  // Polls once on this thread, then every `interval` on a thread of its own.
  void Start(std::chrono::milliseconds interval);

 private:
  Store& store_;
  ServiceMetrics& metrics_;
  Warn warn_;
  // A server as last read. Poll's thread only.
  struct Seen {
    uint64_t pid = 0, evictions = 0, flushes = 0;
    int64_t started = 0;  // its process's start, Unix seconds by its clock (0: not told)
    int64_t polled = 0;   // when this look was, Unix seconds by the loss clock
    std::vector<ServerStats::ClassEvictions> classes;
    bool noted = false;  // its loss note was there (or written) at the last look, same process
    bool fresh = false;  // its figures answered this poll; PollNotes clears it
    bool lost = false;   // this poll saw a loss in its figures
  };
  // One server's figures against its last look: its losses recorded and told, metrics set.
  void Look(const ServerStats& stats, Instant now);
  // Reads every server's loss note (Store::Notes): a loss another process saw is recorded and
  // told; a note gone while its server stayed the same process is a flush; a note that differs
  // from the server's latest loss known here is written again.
  void PollNotes(Instant now);
  // The loss `stats` show against what was `seen` before, if any, dated `now`: a restart or a
  // flush.
  static std::optional<StoreLoss> LossOf(const Seen& seen, const ServerStats& stats, Instant now);

  std::map<std::string, Seen> seen_;
  std::set<std::string> told_;  // data-loss errors already warned of. Poll's thread only.
  StoreLosses* losses_ = nullptr;
  const Clock* loss_clock_ = nullptr;
  const Clock* local_ = nullptr;
  OffsetClock* follow_ = nullptr;
  ClockFollower follower_;         // Poll's thread only
  std::optional<Periodic> polls_;  // last: destroyed first, before what Poll uses
};

}  // namespace hourglass
