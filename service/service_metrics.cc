#include "hourglass/service_metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

namespace hourglass {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// Which server an error names ("memcached HOST:PORT: ...", "redis HOST:PORT: ...",
// "lmdb DIR: ..."), or "store".
std::string ServerOf(const Error& error) {
  const std::string& m = error.message();
  for (std::string_view kind : {"memcached ", "redis ", "lmdb "}) {
    if (!m.starts_with(kind)) continue;
    const size_t end = m.find(": ", kind.size());
    return end == std::string::npos ? "store" : m.substr(kind.size(), end - kind.size());
  }
  return "store";
}

}  // namespace

ServiceMetrics::ServiceMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      checks_(BuildCounter()
                  .Name("hourglass_checks_total")
                  .Help("Checks decided, by event and result")
                  .Register(*registry_)),
      near_limit_(BuildCounter()
                      .Name("hourglass_checks_near_limit_total")
                      .Help("Decisions with a count at 80% or more of one of their limits")
                      .Register(*registry_)),
      latency_(BuildHistogram()
                   .Name("hourglass_request_duration_seconds")
                   .Help("Time to answer a request, by endpoint")
                   .Register(*registry_)),
      store_errors_(BuildCounter()
                        .Name("hourglass_store_errors_total")
                        .Help("Store failures, by server")
                        .Register(*registry_)),
      store_losses_(BuildCounter()
                        .Name("hourglass_store_losses_total")
                        .Help("Losses of counts a server held (a restart, a flush: every "
                              "count; an eviction: those last used before a date), as its "
                              "figures told")
                        .Register(*registry_)),
      data_loss_checks_(BuildCounter()
                            .Name("hourglass_data_loss_checks_total")
                            .Help("Checks that found hits of today missing from the store "
                                  "(evicted), counted from the day ledger")
                            .Register(*registry_)
                            .Add({})),
      keys_read_(BuildCounter()
                     .Name("hourglass_keys_read_total")
                     .Help("Bucket keys read from the store by checks")
                     .Register(*registry_)
                     .Add({})),
      round_trips_(BuildCounter()
                       .Name("hourglass_round_trips_total")
                       .Help("Waits for the store's answer by checks")
                       .Register(*registry_)
                       .Add({})),
      local_denials_(BuildCounter()
                         .Name("hourglass_local_denials_total")
                         .Help("Checks denied by the blocked-client cache without a read")
                         .Register(*registry_)
                         .Add({})),
      failed_take_backs_(BuildCounter()
                             .Name("hourglass_failed_take_backs_total")
                             .Help("Denied checks whose increments could not be taken back; "
                                   "they stay counted until their windows pass")
                             .Register(*registry_)
                             .Add({})),
      unconfirmed_failures_(BuildCounter()
                                .Name("hourglass_store_unconfirmed_failures_total")
                                .Help("Fire-and-forget writes (blocked clients' attempts, "
                                      "take-backs) the store refused, as learnt so far")
                                .Register(*registry_)
                                .Add({})),
      batches_(BuildCounter()
                   .Name("hourglass_check_batches_total")
                   .Help("Batches of checks sent to the store together")
                   .Register(*registry_)
                   .Add({})),
      batched_checks_(BuildCounter()
                          .Name("hourglass_batched_checks_total")
                          .Help("Checks sent to the store in batches")
                          .Register(*registry_)
                          .Add({})),
      store_evictions_(BuildCounter()
                           .Name("hourglass_store_evictions_total")
                           .Help("Keys the store's server evicted to make room, by store kind and "
                                 "server: each a lost count, so limits over-admit; give it more "
                                 "memory")
                           .Register(*registry_)),
      store_bytes_(BuildGauge()
                       .Name("hourglass_store_bytes")
                       .Help("Bytes the store's server uses for its data, by store kind and server")
                       .Register(*registry_)),
      store_limit_bytes_(BuildGauge()
                             .Name("hourglass_store_limit_bytes")
                             .Help("Bytes the store's server may use (memcached -m, Redis "
                                   "maxmemory, 0 for none; LMDB's map size)")
                             .Register(*registry_)),
      store_items_(BuildGauge()
                       .Name("hourglass_store_items")
                       .Help("Keys the store's server holds, by store kind and server")
                       .Register(*registry_)),
      evictions_(BuildCounter()
                     .Name("hourglass_memcached_evictions_total")
                     .Help("Items the memcached server evicted to make room, by server: each a "
                           "lost count, so limits over-admit; give it more memory")
                     .Register(*registry_)),
      server_bytes_(BuildGauge()
                        .Name("hourglass_memcached_bytes")
                        .Help("Bytes the memcached server's items take, by server")
                        .Register(*registry_)),
      server_limit_bytes_(BuildGauge()
                              .Name("hourglass_memcached_limit_bytes")
                              .Help("Bytes the memcached server may use for items (-m), by server")
                              .Register(*registry_)),
      server_items_(BuildGauge()
                        .Name("hourglass_memcached_items")
                        .Help("Items the memcached server holds, by server")
                        .Register(*registry_)),
      clock_offset_(BuildGauge()
                        .Name("hourglass_clock_offset_seconds")
                        .Help("This host's clock minus the store server's (to about 1 s)")
                        .Register(*registry_)),
      clock_correction_(BuildGauge()
                            .Name("hourglass_clock_correction_seconds")
                            .Help("Seconds added to this host's clock to follow the store's")
                            .Register(*registry_)
                            .Add({})),
      reloads_(BuildCounter()
                   .Name("hourglass_policy_reloads_total")
                   .Help("Policy file reloads, by result")
                   .Register(*registry_)),
      last_reload_ok_(BuildGauge()
                          .Name("hourglass_config_last_reload_successful")
                          .Help("1 when the last load of the policy succeeded, else 0")
                          .Register(*registry_)
                          .Add({})),
      last_reload_at_(BuildGauge()
                          .Name("hourglass_config_last_reload_success_timestamp_seconds")
                          .Help("When the policy in force was loaded, Unix seconds")
                          .Register(*registry_)
                          .Add({})),
      build_info_(BuildGauge()
                      .Name("hourglass_build_info")
                      .Help("1, labelled with the version this process runs")
                      .Register(*registry_)),
      settled_hits_(BuildCounter()
                        .Name("hourglass_settled_hits_total")
                        .Help("Hits added (direction up) or taken back (down) by settlements of "
                              "decisions after the fact, by event")
                        .Register(*registry_)),
      ratelimit_hits_(BuildCounter()
                          .Name("hourglass_ratelimit_hits_total")
                          .Help("Envoy rate limit service hits, by domain, descriptor and result")
                          .Register(*registry_)),
      ratelimit_near_(BuildCounter()
                          .Name("hourglass_ratelimit_near_limit_total")
                          .Help("Envoy rate limit service hits admitted at 80% or more of the "
                                "limit, by domain and descriptor")
                          .Register(*registry_)),
      connection_events_(BuildCounter()
                             .Name("hourglass_connection_events_total")
                             .Help("Connections a listener closed to make room for a new one "
                                   "(made_room) or refused (refused_busy: every connection busy "
                                   "at the cap; refused_descriptors: out of file descriptors)")
                             .Register(*registry_)),
      fallback_services_(BuildGauge()
                             .Name("hourglass_fallback_services")
                             .Help("Services sharing the store (--services, or counted in the "
                                   "store): on_store_failure local admits 1/this of each limit")
                             .Register(*registry_)
                             .Add({})),
      fallback_pending_hits_(BuildGauge()
                                 .Name("hourglass_fallback_pending_hits")
                                 .Help("Hits decided in this process while the store failed "
                                       "(on_store_failure local), not yet written back to it")
                                 .Register(*registry_)
                                 .Add({})),
      fallback_pending_features_(BuildGauge()
                                     .Name("hourglass_fallback_pending_features")
                                     .Help("Event+features with hits to write back to the store")
                                     .Register(*registry_)
                                     .Add({})),
      fallback_held_seconds_(BuildGauge()
                                 .Name("hourglass_fallback_held_seconds")
                                 .Help("Seconds of hits the ledger of local decisions holds (at "
                                       "most --fallback-max-seconds)")
                                 .Register(*registry_)
                                 .Add({})),
      fallback_decisions_(BuildCounter()
                              .Name("hourglass_fallback_decisions_total")
                              .Help("Checks decided in this process while the store failed "
                                    "(on_store_failure local), by result: allowed, denied, full "
                                    "(denied for want of room in the ledger)")
                              .Register(*registry_)),
      fallback_written_back_(BuildCounter()
                                 .Name("hourglass_fallback_written_back_hits_total")
                                 .Help("Hits decided locally and written back to the store")
                                 .Register(*registry_)
                                 .Add({})),
      fallback_expired_(BuildCounter()
                            .Name("hourglass_fallback_expired_hits_total")
                            .Help("Hits decided locally never written back: the store failed "
                                  "longer than the retention")
                            .Register(*registry_)
                            .Add({})),
      fallback_uncertain_(BuildCounter()
                              .Name("hourglass_fallback_uncertain_hits_total")
                              .Help("Hits whose batch or write-back timed out, so the server may "
                                    "or may not apply them: taken as landed, never sent again; "
                                    "the store's windows may count each once more or less")
                              .Register(*registry_)
                              .Add({})) {
  for (const char* result : {"allowed", "denied", "full"}) {
    fallback_decisions_.Add({{"result", result}});
  }
  // At 0 from the start: an alert on a rise needs a series before the first event.
  for (const char* result : {"ok", "failed"}) reloads_.Add({{"result", result}});
  for (ConnectionEvent e : {ConnectionEvent::kMadeRoom, ConnectionEvent::kRefusedBusy,
                            ConnectionEvent::kRefusedDescriptors}) {
    connection_events_.Add({{"listener", "http"}, {"event", std::string(ConnectionEventName(e))}});
  }
}

namespace {

// Whether an outcome's count is at 80% or more of its limit.
bool NearLimit(const LimitOutcome& o) {
  return static_cast<double>(o.count) >= 0.8 * static_cast<double>(o.limit.max_hits);
}

}  // namespace

void ServiceMetrics::CountDecision(std::string_view event, const Decision& d, bool shadow) {
  std::string_view result = d.degraded ? (d.allowed ? "degraded_allowed"
                                          : shadow  ? "degraded_shadow_denied"
                                                    : "degraded_denied")
                                       : (d.allowed ? "allowed"
                                          : shadow  ? "shadow_denied"
                                                    : "denied");
  checks_by_.Get({event, result}).Increment();
  if (std::any_of(d.limits.begin(), d.limits.end(), NearLimit)) {
    near_limit_by_.Get({event}).Increment();
  }
  CountWork(d);
}

void ServiceMetrics::CountRateLimit(std::string_view domain, std::string_view descriptor,
                                    uint64_t hits, const Decision& d, bool shadow) {
  std::string_view result = d.degraded ? (d.allowed ? "degraded_within_limit"
                                          : shadow  ? "degraded_shadow_mode"
                                                    : "degraded_over_limit")
                                       : (d.allowed ? "within_limit"
                                          : shadow  ? "shadow_mode"
                                                    : "over_limit");
  if (d.unread) result = "unread";
  ratelimit_hits_by_.Get({domain, descriptor, result}).Increment(static_cast<double>(hits));
  if (d.allowed && std::any_of(d.limits.begin(), d.limits.end(), NearLimit)) {
    ratelimit_near_by_.Get({domain, descriptor}).Increment(static_cast<double>(hits));
  }
  CountWork(d);
}

void ServiceMetrics::SetFallback(const LocalLedger::Stats& stats) {
  fallback_services_.Set(static_cast<double>(stats.services));
  fallback_pending_hits_.Set(static_cast<double>(stats.pending_hits));
  fallback_pending_features_.Set(static_cast<double>(stats.pending_features));
  fallback_held_seconds_.Set(static_cast<double>(stats.held_seconds));
  std::lock_guard lock(fallback_mu_);
  LocalLedger::Stats& seen = fallback_seen_;
  const auto advance = [](prometheus::Counter& counter, uint64_t& counted, uint64_t total) {
    if (total > counted) counter.Increment(static_cast<double>(total - counted));
    counted = std::max(counted, total);
  };
  const uint64_t denied = stats.decided - stats.admitted - stats.full;
  uint64_t seen_denied = seen.decided - seen.admitted - seen.full;
  advance(fallback_decisions_.Add({{"result", "allowed"}}), seen.admitted, stats.admitted);
  advance(fallback_decisions_.Add({{"result", "full"}}), seen.full, stats.full);
  advance(fallback_decisions_.Add({{"result", "denied"}}), seen_denied, denied);
  seen.decided = seen.admitted + seen.full + seen_denied;
  advance(fallback_written_back_, seen.written_back, stats.written_back);
  advance(fallback_expired_, seen.expired, stats.expired);
  advance(fallback_uncertain_, seen.uncertain, stats.uncertain);
}

void ServiceMetrics::CountWork(const Decision& d) {
  if (d.degraded && d.store_error) {
    if (d.store_error->code() == ErrorCode::kDataLoss) {
      data_loss_checks_.Increment();
    } else {
      CountStoreError(*d.store_error);
    }
  }
  // Each an atomic every thread writes: left alone when there is nothing to add.
  for (auto [counter, n] : {std::pair{&keys_read_, d.cost.keys_read},
                            {&round_trips_, d.cost.round_trips},
                            {&local_denials_, d.cost.blocked_hits},
                            {&failed_take_backs_, d.cost.failed_take_backs}}) {
    if (n != 0) counter->Increment(static_cast<double>(n));
  }
}

void ServiceMetrics::SyncUnconfirmedFailures(uint64_t total) {
  uint64_t seen = unconfirmed_seen_.load(std::memory_order_relaxed);
  while (total > seen && !unconfirmed_seen_.compare_exchange_weak(seen, total)) {
  }
  if (total > seen) unconfirmed_failures_.Increment(static_cast<double>(total - seen));
}

void ServiceMetrics::SetServerStats(const ServerStats& stats, uint64_t new_evictions) {
  const prometheus::Labels store = {{"store", stats.kind}, {"server", stats.server}};
  store_errors_.Add({{"server", stats.server}});  // at 0 until its first error
  for (LossCause cause : {LossCause::kRestart, LossCause::kFlush, LossCause::kEviction}) {
    prometheus::Labels loss = store;
    loss.emplace("cause", std::string(LossCauseName(cause)));
    store_losses_.Add(loss);
  }
  store_evictions_.Add(store).Increment(static_cast<double>(new_evictions));
  store_bytes_.Add(store).Set(static_cast<double>(stats.bytes));
  store_limit_bytes_.Add(store).Set(static_cast<double>(stats.limit_maxbytes));
  store_items_.Add(store).Set(static_cast<double>(stats.curr_items));
  if (stats.kind != "memcached") return;
  // The names of hourglass 0.2, for memcached servers, kept for the dashboards that use them.
  const prometheus::Labels server = {{"server", stats.server}};
  evictions_.Add(server).Increment(static_cast<double>(new_evictions));
  server_bytes_.Add(server).Set(static_cast<double>(stats.bytes));
  server_limit_bytes_.Add(server).Set(static_cast<double>(stats.limit_maxbytes));
  server_items_.Add(server).Set(static_cast<double>(stats.curr_items));
}

void ServiceMetrics::SetClock(const std::string& server, int64_t offset_seconds) {
  clock_offset_.Add({{"server", server}}).Set(static_cast<double>(offset_seconds));
}

void ServiceMetrics::SetClockCorrection(int64_t seconds) {
  clock_correction_.Set(static_cast<double>(seconds));
}

void ServiceMetrics::CountStoreLoss(const StoreLoss& loss) {
  store_losses_
      .Add({{"store", loss.kind},
            {"server", loss.server},
            {"cause", std::string(LossCauseName(loss.cause))}})
      .Increment();
}

void ServiceMetrics::CountStoreError(const Error& error) {
  store_errors_.Add({{"server", ServerOf(error)}}).Increment();
  if (on_store_error_) on_store_error_(error);
}

void ServiceMetrics::ObserveRequest(std::string_view endpoint,
                                    std::chrono::duration<double> elapsed) {
  latency_by_.Get({endpoint}).Observe(elapsed.count());
}

void ServiceMetrics::CountBatch(size_t checks) {
  batches_.Increment();
  batched_checks_.Increment(static_cast<double>(checks));
}

void ServiceMetrics::CountReload(bool ok, Instant at) {
  reloads_.Add({{"result", ok ? "ok" : "failed"}}).Increment();
  last_reload_ok_.Set(ok ? 1 : 0);
  if (ok) last_reload_at_.Set(static_cast<double>(ToUnix(at)));
}

void ServiceMetrics::PolicyLoaded(Instant at) {
  last_reload_ok_.Set(1);
  last_reload_at_.Set(static_cast<double>(ToUnix(at)));
}

void ServiceMetrics::PrimeEvents(const std::vector<std::string>& events) {
  for (const std::string& event : events) {
    for (const char* result :
         {"allowed", "denied", "shadow_denied", "degraded_allowed", "degraded_denied"}) {
      checks_by_.Get({event, result});
    }
    near_limit_by_.Get({event});
    for (const char* direction : {"up", "down"}) {
      settled_hits_.Add({{"event", event}, {"direction", direction}});
    }
  }
}

void ServiceMetrics::SetBuildInfo(std::string_view version) {
  build_info_.Add({{"version", std::string(version)}}).Set(1);
}

void ServiceMetrics::CountSettlement(std::string_view event, int64_t delta) {
  if (delta == 0) return;
  settled_hits_.Add({{"event", std::string(event)}, {"direction", delta > 0 ? "up" : "down"}})
      .Increment(static_cast<double>(delta > 0 ? delta : -delta));
}

void ServiceMetrics::CountConnection(std::string_view listener, ConnectionEvent event) {
  connection_events_
      .Add(
          {{"listener", std::string(listener)}, {"event", std::string(ConnectionEventName(event))}})
      .Increment();
}

std::string ServiceMetrics::Render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace hourglass
