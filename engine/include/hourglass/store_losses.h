// What the store's servers lost, as their own figures tell: a server that restarted (another
// process: it starts empty) or was flushed lost every count it held before that instant; one
// that evicted lost some counts last used before an instant its figures bound. Checks
// and counts whose windows reach back before a loss on one of their servers say so
// (Engine::Check, Engine::Count); a watcher of the servers' figures records the losses.
//
//   StoreLosses losses;
//   losses.Record({"memcached", "10.0.0.1:11211", FromUnix(t), LossCause::kRestart});
//   options.losses = &losses;  // EngineOptions
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/status.h"

namespace hourglass {

enum class LossCause : uint8_t {
  kRestart,   // another process of the server: it started empty
  kFlush,     // every item flushed (memcached flush_all, Redis FLUSHALL/FLUSHDB)
  kEviction,  // items evicted to make room: some counts last used before the loss's instant
};
std::string_view LossCauseName(LossCause cause);  // "restarted", "flushed", "evicted"

struct StoreLoss {
  std::string kind;    // the store's kind: "memcached", "redis"
  std::string server;  // as ServerStats::server and Store::ServersOf name it
  Instant at;          // counts of hits before this instant are gone
  LossCause cause = LossCause::kRestart;
  // "memcached 10.0.0.1:11211 restarted at 2026-11-26T21:41:38Z"; an eviction: "... evicted
  // counts last used at 2026-11-26T21:41:38Z or before".
  std::string Describe() const;
};

// A server's note of its latest loss (Store::WriteNote), so that every client of the server
// learns of it, even one started after it or that never watches (a CLI command): "loss <Unix
// seconds> <cause>", or "loss none" from a watch that saw none (a note that then vanishes while
// the server's process stays the same tells of a flush).
std::string LossNote(const std::optional<StoreLoss>& loss);
// The loss a note tells, on `server` of `kind`; nullopt for "loss none". kInvalidArgument for
// text that is no loss note.
Result<std::optional<StoreLoss>> ParseLossNote(std::string_view text, std::string kind,
                                               std::string server);

// Told of a loss as a store sees it (e.g. a new connection finds another server process).
// Called from any thread using the store; must not call into the store.
using StoreLossHandler = std::function<void(const StoreLoss&)>;

class StoreLosses {
 public:
  // Records a loss; one at or before the server's latest recorded loss changes nothing.
  // Returns whether it was new.
  bool Record(StoreLoss loss);

  // The latest loss on one of `servers` later than `first` (Unix seconds): a window starting at
  // `first` may miss hits that server held before it. nullopt when there is none. With `copies`
  // (each server holds a whole copy: Store::servers_are_copies), a loss only when every one of
  // them lost later than `first`: the earliest of those, before which no copy holds a hit.
  std::optional<StoreLoss> Since(std::span<const std::string> servers, int64_t first,
                                 bool copies = false) const;

  // `server`'s latest recorded loss, if any.
  std::optional<StoreLoss> Latest(std::string_view server) const;

  // Whether any loss was ever recorded.
  bool any() const { return newest_.load(std::memory_order_acquire) != kNone; }
  // Whether a loss on any server is later than `first`: checks whose windows start after the
  // newest loss (every one, a retention after it) skip Since and its lock.
  bool AnyAfter(int64_t first) const { return newest_.load(std::memory_order_acquire) > first; }

 private:
  static constexpr int64_t kNone = INT64_MIN;
  std::atomic<int64_t> newest_{kNone};  // the latest loss's instant, Unix seconds
  mutable std::mutex mu_;
  // Per server, its latest loss (an earlier one is older than every window that reaches back
  // before the latest). Guarded by mu_.
  std::vector<StoreLoss> latest_;
};

}  // namespace hourglass
