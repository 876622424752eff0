// The decision service, assembled: what `hourglass serve` runs, and what tests build in process
// on a clock they control.
//
//   ManualClock base(FromUnix(1'700'000'000));            // or SystemClock::Get()
//   OffsetClock clock(base);                              // follows the store's when told to
//   std::unique_ptr<Store> store = ...;                   // on `clock`
//   ServiceOptions options;
//   options.policy_path = "policies/example.yaml";
//   options.http.port = 0;                                // a free port: see http_port()
//   Result<std::unique_ptr<Service>> service = Service::Create(options, *store, clock, log);
//   std::thread serving([&] { (*service)->Run(); });      // until Stop()
//   ... HTTP on (*service)->http_port() ...
//   (*service)->Stop();
//
// Create loads the policy (a limit beyond the engine's retention refuses the file), makes the
// engine over `store` on `clock`, the metrics, the recent-top summaries, the check front end that
// every protocol shares and the decision API, makes the protocols served beside HTTP
// (ServiceOptions::protocols: Envoy's), starts watching the store (StoreWatch: its figures into
// the metrics, evictions warned about, and `clock` made to follow the servers' clock when this
// host's is off) and binds the HTTP listener. Run serves until Stop: the HTTP server drains its
// requests, the protocols stop, and the store's fire-and-forget writes are settled. Reload reads
// the policy and every protocol's configuration again; a bad one keeps them all in force.
//
// Thread-safety: Stop and Reload may be called from any thread while Run runs on another.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hourglass/check_front_end.h"
#include "hourglass/clock.h"
#include "hourglass/decision_api.h"
#include "hourglass/engine.h"
#include "hourglass/http_server.h"
#include "hourglass/local_ledger.h"
#include "hourglass/policy_source.h"
#include "hourglass/server_transition.h"
#include "hourglass/service_metrics.h"
#include "hourglass/service_protocol.h"
#include "hourglass/store.h"

namespace hourglass {

struct ServiceOptions {
  std::string policy_path;  // the /v1 API's policy file (YAML); empty: none (a protocol alone)
  EngineOptions engine;     // retention, settle margin, hot path (a long-running process's)
  HttpServerOptions http;   // where to listen (port 0: a free one), threads, caps, timeouts
  // Feature header, trusted proxies, the admin calls and their token; the service sets the
  // metrics, store, clock, top, denial log, policy path and front end itself.
  DecisionApiOptions api;
  // How often the store's own figures are read (evictions, memory, its clock); 0: never, and
  // the clock follows nobody.
  std::chrono::seconds stats_interval{10};
  size_t top_capacity = 256;  // counters per event and minute behind /v1/top; 0: no /v1/top
  // Where /v1/top's summaries are kept across restarts (TopState): read at start, written every
  // minute and when Run returns. Empty: kept in memory only.
  std::string top_state_path;
  // Where the losses the store's servers told of are kept (the store's own handler may record
  // into it too: LossLog); must outlive the service. Null: the service keeps its own.
  StoreLosses* losses = nullptr;
  // Sampled denial lines (at most one per event and second, the rest of a burst within a second).
  bool log_denials = true;
  std::vector<ProtocolFactory> protocols;  // served beside HTTP, in this order
  // Hears of every decided request of every protocol (an audit log); null: none.
  DecisionSink on_decided;
  // The ledger checks of policies that say on_store_failure local are decided with while the
  // store fails (`keep` is the engine's retention): written back every second once it answers.
  LocalLedgerOptions fallback;
  // Count the services sharing the store in it (ServicePresence) for the fallback's default
  // share, rather than fallback.services.
  bool count_services = false;
};

// Logs a store server (memcached, Redis) that stops answering, and answers again, through `log`:
// the handler to open the service's store with (StoreOptions' on_transition).
ServerTransitionHandler TransitionLog(ServiceLog log);

// Records a loss a store saw into `losses` and logs it once (a warning, as StoreWatch's): the
// handler to open the service's store with (MemcachedOptions' on_loss). `losses` must outlive it.
StoreLossHandler LossLog(StoreLosses& losses, ServiceLog log);

class Service {
 public:
  // `store` and `clock` (the engine's, and the store's too: StoreWatch sets its offset when this
  // host's clock is off the servers') must outlive the service; `log` is called from any thread.
  // Errors: kInvalidArgument for a bad policy file or option (naming it), a protocol's error, or
  // kUnavailable when the HTTP address cannot be bound.
  static Result<std::unique_ptr<Service>> Create(ServiceOptions options, Store& store,
                                                 OffsetClock& clock, ServiceLog log);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // The HTTP port listened on (the one asked for, or the free one found).
  uint16_t http_port() const;
  const Engine& engine() const;
  ServiceMetrics& metrics();
  // The policy in force.
  std::shared_ptr<const PolicySource> policies() const;

  // Serves on the HTTP server's threads (this one among them) until Stop(), then stops the
  // protocols and waits for every fire-and-forget write to be answered. Returns the writes the
  // store refused.
  uint64_t Run();
  // Stops accepting and drains what is in flight; Run then returns.
  void Stop();
  // Reads the policy and every protocol's configuration again and puts them in force, logging
  // what changed; a bad one is logged and keeps them all as they were. Counted in the metrics.
  bool Reload();

 private:
  struct Impl;
  explicit Service(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass
