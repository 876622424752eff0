// The Prometheus metrics of `hourglass serve`, in the text exposition format at GET /metrics.
//
//   hourglass_checks_total{event,result}      result: allowed, denied, shadow_denied,
//                                             degraded_allowed, degraded_denied
//   hourglass_checks_near_limit_total{event}  decisions with a count >= 80% of a limit
//   hourglass_request_duration_seconds{endpoint}  histogram
//   hourglass_store_errors_total{server}      store failures, per server (memcached, Redis) or
//                                             LMDB directory
//   hourglass_data_loss_checks_total          checks that found hits of today missing from the
//                                             store (evicted, counted from the ledger), or whose
//                                             windows reach back before a server's loss
//   hourglass_store_losses_total{store,server,cause}
//                                             losses a server's figures told (cause: restarted,
//                                             flushed): every count it held before is gone
//   hourglass_keys_read_total, hourglass_round_trips_total, hourglass_local_denials_total
//                                             per check, as if each had gone alone
//   hourglass_failed_take_backs_total         denied checks (admitted mode) whose increments
//                                             could not be taken back: they stay counted until
//                                             their windows pass, so later checks read high
//   hourglass_store_unconfirmed_failures_total
//                                             fire-and-forget writes (blocked clients' attempts,
//                                             take-backs) the store refused, as learnt so far
//   hourglass_check_batches_total, hourglass_batched_checks_total
//                                             checks sent to the store together (their ratio is
//                                             the mean batch size)
//   hourglass_store_evictions_total{store,server}
//                                             keys the server evicted to make room (each a
//                                             lost count: limits then over-admit), from its stats;
//                                             store: memcached, redis or lmdb
//   hourglass_store_bytes{store,server}, hourglass_store_limit_bytes{store,server},
//   hourglass_store_items{store,server}       what the server holds, and may hold (memcached's
//                                             -m, Redis's maxmemory, LMDB's map size)
//   hourglass_memcached_evictions_total{server}, hourglass_memcached_bytes{server},
//   hourglass_memcached_limit_bytes{server}, hourglass_memcached_items{server}
//                                             the same for memcached servers under their 0.2
//                                             names
//   hourglass_clock_offset_seconds{server}    this host's clock minus the server's (+-1 s)
//   hourglass_clock_correction_seconds        added to this host's clock to follow the servers'
//   hourglass_policy_reloads_total{result}    result: ok, failed (both exported from the start)
//   hourglass_config_last_reload_successful   1 when the last load of the policy (at start, or a
//                                             reload) succeeded, else 0
//   hourglass_config_last_reload_success_timestamp_seconds
//                                             when the policy in force was loaded (Unix seconds)
//   hourglass_build_info{version}             1; the version this process runs
//   hourglass_settled_hits_total{event,direction}
//                                             hits settlements added (up) or took back (down)
//   hourglass_ratelimit_hits_total{domain,descriptor,result}
//                                             Envoy rate limit service hits (hits_addend summed):
//                                             result within_limit, over_limit, shadow_mode, or
//                                             degraded_within_limit / degraded_over_limit
//   hourglass_ratelimit_near_limit_total{domain,descriptor}
//                                             hits admitted at 80% or more of the limit
//   hourglass_fallback_decisions_total{result} checks decided in this process while the store
//                                             failed (on_store_failure local): allowed, denied,
//                                             full (denied: the ledger of local hits is full)
//   hourglass_fallback_services               services sharing the store (serve's --services, or
//                                             counted in the store): the default share is 1/this
//   hourglass_fallback_pending_hits           hits decided so, not yet written back to the store
//   hourglass_fallback_pending_features       event+features with hits to write back
//   hourglass_fallback_held_seconds           seconds of hits the ledger holds (its bound: serve's
//                                             --fallback-max-seconds)
//   hourglass_fallback_written_back_hits_total hits written back once the store answered
//   hourglass_fallback_expired_hits_total     hits never written back: older than the retention
//   hourglass_fallback_uncertain_hits_total   hits whose batch or write-back timed out: the
//                                             store's windows may count each once more or less
//
// Labels come from bounded sets (the policy's events, the endpoints, the servers): never one per
// feature. Events the policy lacks are answered 404 before anything is counted. Counters are
// exported at 0 before their first event (an alert on a rise needs a series): reloads by result,
// HTTP connection events, each event's checks by result, near-limit and settled hits, and per
// server (from its first figures) store errors and losses by cause.
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/connection_events.h"
#include "hourglass/decision.h"
#include "hourglass/instance_id.h"
#include "hourglass/local_ledger.h"
#include "hourglass/store.h"
#include "hourglass/store_losses.h"

namespace hourglass {

// The metrics of a family by their label values, found without building labels each time
// (prometheus::Family::Add copies a map of strings per call, and builds the metric before it
// finds the one it has): for the per-request metrics. Label values come from configuration
// (events, domains, descriptors, endpoints), never counted values. `args` are what Family::Add
// needs beside the labels (a histogram's bucket boundaries).
// Thread-safety: Get may be called from many threads at once.
template <typename Metric>
class MetricIndex {
 public:
  template <typename... Args>
  MetricIndex(prometheus::Family<Metric>& family, std::vector<std::string> names, Args... args)
      : names_(std::move(names)),
        add_([&family, args...](const prometheus::Labels& labels) -> Metric& {
          return family.Add(labels, args...);
        }) {}
  // The metric with these values of the names given at construction, in order. A thread that
  // found it before finds it again in a map of its own, taking no lock.
  Metric& Get(std::initializer_list<std::string_view> values) {
    // Built in a buffer each thread keeps, so that finding a metric allocates nothing; led by
    // this index's id, as one thread's map serves every index.
    thread_local std::string key;
    thread_local std::unordered_map<std::string, Metric*> seen;
    key.assign(reinterpret_cast<const char*>(&id_), sizeof id_);
    for (std::string_view v : values) {
      key.append(v);
      key.push_back('\x1f');
    }
    if (auto it = seen.find(key); it != seen.end()) return *it->second;
    Metric& metric = Shared(values, std::string_view(key).substr(sizeof id_));
    seen.emplace(key, &metric);
    return metric;
  }

 private:
  Metric& Shared(std::initializer_list<std::string_view> values, std::string_view key) {
    std::lock_guard lock(mu_);
    auto it = metrics_.find(std::string(key));
    if (it != metrics_.end()) return *it->second;
    prometheus::Labels labels;
    size_t i = 0;
    for (std::string_view v : values) labels.emplace(names_[i++], std::string(v));
    Metric& metric = add_(labels);
    metrics_.emplace(std::string(key), &metric);
    return metric;
  }

  // Unique among every index of the process (never reused), so that no thread's map can answer
  // for an index that is gone. The family never drops a metric an index added.
  const uint64_t id_ = NextInstanceId();
  const std::vector<std::string> names_;
  const std::function<Metric&(const prometheus::Labels&)> add_;
  std::mutex mu_;
  // By the values joined with '\x1f'; the family keeps the metrics. Guarded by mu_.
  std::unordered_map<std::string, Metric*> metrics_;
};
using CounterIndex = MetricIndex<prometheus::Counter>;

class ServiceMetrics {
 public:
  ServiceMetrics();

  // `shadow`: the event is in shadow mode, a denial counts as shadow_denied (it was allowed).
  void CountDecision(std::string_view event, const Decision& decision, bool shadow = false);
  void CountStoreError(const Error& error);
  // What the local fallback holds and has done (LocalLedger::stats(), totals since the start):
  // hourglass_fallback_* gauges, and counters advanced to the totals.
  void SetFallback(const LocalLedger::Stats& stats);
  // Also told of every store error counted (StoreHealth). Set before the metrics are shared.
  void OnStoreError(std::function<void(const Error&)> listener) {
    on_store_error_ = std::move(listener);
  }
  void CountStoreLoss(const StoreLoss& loss);
  // The store's running count of refused fire-and-forget writes (Store::unconfirmed_failures):
  // the counter rises to it; a lower value than seen before changes nothing.
  void SyncUnconfirmedFailures(uint64_t total);
  // A server's figures as just read: gauges set, evictions_total raised by `new_evictions`.
  void SetServerStats(const ServerStats& stats, uint64_t new_evictions);
  void SetClock(const std::string& server, int64_t offset_seconds);
  void SetClockCorrection(int64_t seconds);
  void ObserveRequest(std::string_view endpoint, std::chrono::duration<double> elapsed);
  // A load of the policy (`ok`: it is in force) at `at`.
  void CountReload(bool ok, Instant at);
  // The policy loaded at start, at `at`: in force, not counted as a reload.
  void PolicyLoaded(Instant at);
  // hourglass_build_info{version="<version>"} 1.
  void SetBuildInfo(std::string_view version);
  // Exports the per-event counters of `events` (the policy's) at 0 until their first event:
  // checks by result, near-limit decisions, settled hits.
  void PrimeEvents(const std::vector<std::string>& events);
  // A settlement of `event` that changed its decision's charge by `delta` hits (0: nothing).
  void CountSettlement(std::string_view event, int64_t delta);
  // A connection `listener` ("http", "grpc") closed to make room for, or refused.
  void CountConnection(std::string_view listener, ConnectionEvent event);
  // One descriptor of an Envoy rate limit request: `descriptor` names the configuration's
  // descriptor (never a counted value), `hits` the hits it asked to count (0 for a check only),
  // `shadow` whether its denial was let through.
  void CountRateLimit(std::string_view domain, std::string_view descriptor, uint64_t hits,
                      const Decision& decision, bool shadow);
  // `checks` checks were sent to the store together.
  void CountBatch(size_t checks);
  // The text exposition format.
  std::string Render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& checks_;
  prometheus::Family<prometheus::Counter>& near_limit_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Family<prometheus::Counter>& store_errors_;
  prometheus::Family<prometheus::Counter>& store_losses_;
  std::function<void(const Error&)> on_store_error_;
  prometheus::Counter& data_loss_checks_;
  prometheus::Counter& keys_read_;
  prometheus::Counter& round_trips_;
  prometheus::Counter& local_denials_;
  prometheus::Counter& failed_take_backs_;
  prometheus::Counter& unconfirmed_failures_;
  std::atomic<uint64_t> unconfirmed_seen_{0};
  prometheus::Counter& batches_;
  prometheus::Counter& batched_checks_;
  prometheus::Family<prometheus::Counter>& store_evictions_;
  prometheus::Family<prometheus::Gauge>& store_bytes_;
  prometheus::Family<prometheus::Gauge>& store_limit_bytes_;
  prometheus::Family<prometheus::Gauge>& store_items_;
  prometheus::Family<prometheus::Counter>& evictions_;
  prometheus::Family<prometheus::Gauge>& server_bytes_;
  prometheus::Family<prometheus::Gauge>& server_limit_bytes_;
  prometheus::Family<prometheus::Gauge>& server_items_;
  prometheus::Family<prometheus::Gauge>& clock_offset_;
  prometheus::Gauge& clock_correction_;
  prometheus::Family<prometheus::Counter>& reloads_;
  prometheus::Gauge& last_reload_ok_;
  prometheus::Gauge& last_reload_at_;
  prometheus::Family<prometheus::Gauge>& build_info_;
  prometheus::Family<prometheus::Counter>& settled_hits_;
  prometheus::Family<prometheus::Counter>& ratelimit_hits_;
  prometheus::Family<prometheus::Counter>& ratelimit_near_;
  prometheus::Family<prometheus::Counter>& connection_events_;
  prometheus::Gauge& fallback_services_;
  prometheus::Gauge& fallback_pending_hits_;
  prometheus::Gauge& fallback_pending_features_;
  prometheus::Gauge& fallback_held_seconds_;
  prometheus::Family<prometheus::Counter>& fallback_decisions_;
  prometheus::Counter& fallback_written_back_;
  prometheus::Counter& fallback_expired_;
  prometheus::Counter& fallback_uncertain_;
  LocalLedger::Stats fallback_seen_;  // the totals counted so far; guarded by fallback_mu_
  std::mutex fallback_mu_;
  CounterIndex checks_by_{checks_, {"event", "result"}};
  CounterIndex near_limit_by_{near_limit_, {"event"}};
  CounterIndex ratelimit_hits_by_{ratelimit_hits_, {"domain", "descriptor", "result"}};
  CounterIndex ratelimit_near_by_{ratelimit_near_, {"domain", "descriptor"}};
  // Request latency, in seconds.
  static inline const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};
  MetricIndex<prometheus::Histogram> latency_by_{latency_, {"endpoint"}, kLatencyBuckets};
  // The store work of a decision, into keys_read_, round_trips_, local_denials_,
  // failed_take_backs_, store_errors_, data_loss_checks_.
  void CountWork(const Decision& decision);
};

}  // namespace hourglass
