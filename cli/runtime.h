// The store and engine a CLI command runs on, built from the global options.
//
// Thread-safety: single-threaded, like the CLI.
#pragma once

#include <memory>
#include <optional>

#include "app.h"
#include "hourglass/engine.h"
#include "hourglass/memcached_store.h"
#include "hourglass/store.h"
#include "hourglass/store_losses.h"

namespace hourglass::cli {

enum class EngineUse {
  kOneShot,           // one command, one feature: bounds only, nothing worth caching
  kOneShotExact,      // the same, with retry_after exact to the second (check)
  kLongRunning,       // many checks in one process (replay): both hot-path caches on
  kLongRunningExact,  // the same, with retry_after exact to the second (serve --exact-retry-after)
};

// The store URL the global options name: --store as a URL, or its kind with --servers (each
// kind's default server when none). Leaves with exit 2 for a bad combination.
std::string StoreUrl(const Globals& g);
// How many connections the store of `g` may open at once (0 for the memory store; a Redis
// Cluster counts the nodes named, not those it will find).
size_t StoreConnections(const Globals& g);

// The store the global options name, on `clock` when it runs on the engine's (the memory store),
// else on the real one. Leaves with exit 2 for bad options, 3 when it cannot be set up.
// `on_loss`, when set, is told of a memcached server found restarted by a new connection.
std::unique_ptr<Store> OpenCliStore(const Globals& g, const Clock& clock,
                                    ServerTransitionHandler on_transition,
                                    StoreLossHandler on_loss = nullptr);
// The engine options of the global options for a command of `use`.
EngineOptions EngineOptionsFor(const Globals& g, EngineUse use);

// Records into `losses` what the notes on `store`'s servers tell (Store::Notes, LossNote); warns
// on stderr of a note that is none.
void ReadLossNotes(Store& store, StoreLosses& losses);

class Runtime {
 public:
  // `clock` is the wall clock, or a manual one for replay; it must outlive the Runtime. The
  // engine and the memory store run on it; memcached always on the real clock.
  // Leaves with exit 2 for bad options, 3 when the store cannot be set up.
  // `on_transition` hears of memcached servers failing and answering again (MemcachedOptions).
  Runtime(const Globals& g, const Clock& clock, EngineUse use,
          ServerTransitionHandler on_transition = {});
  const Engine& engine() const { return *engine_; }
  const Store& store() const { return *store_; }
  Store& store() { return *store_; }
  // Reads the losses the store's servers' notes tell (StoreWatch writes them), so that the
  // engine's checks and counts say when their windows reach back before one. One round trip per
  // server; a server that cannot answer is left to fail the command's own exchange.
  void ReadLossNotes() { cli::ReadLossNotes(*store_, losses_); }
  // Waits for every fire-and-forget write to be answered; the writes the store refused.
  uint64_t Flush() { return store_->Flush(); }

 private:
  std::unique_ptr<Store> store_;
  StoreLosses losses_;
  std::optional<Engine> engine_;
};

}  // namespace hourglass::cli
