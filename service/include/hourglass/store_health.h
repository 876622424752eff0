// Which store servers refuse writes for want of room (a memcached run with -M, a Redis without
// eviction, a full LMDB map), as the errors checks meet tell: one log line when a server fills,
// one when it has refused nothing for a quiet period, and readiness names the full ones
// meanwhile. A full store answers every check per its failure mode, so without this it would be
// quiet.
//
//   StoreHealth health(clock, std::chrono::seconds{10}, log);
//   health.Observe(error);                          // every store error a check met
//   if (auto why = health.Why()) { /* unready */ }  // also tells the servers that recovered
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "hourglass/clock.h"
#include "hourglass/service_protocol.h"
#include "hourglass/status.h"

namespace hourglass {

class StoreHealth {
 public:
  // `clock` must outlive the health; `log` is called from any thread.
  StoreHealth(const Clock& clock, std::chrono::seconds quiet, ServiceLog log)
      : clock_(clock), quiet_(quiet), log_(std::move(log)) {}

  // A store error: kStoreFull marks the server it names full (logged when it was not); others
  // change nothing.
  void Observe(const Error& error);
  // While a server is full: why, naming it, since when and its last refusal. A server that
  // refused nothing for the quiet period is first logged as writable again and forgotten.
  std::optional<std::string> Why();

 private:
  struct Full {
    Instant since;  // when it was first refused, by the wall clock
    MonoTime last;  // its last refusal
    std::string error;
  };
  void ForgetQuiet(MonoTime now);  // with mu_ held

  const Clock& clock_;
  const std::chrono::seconds quiet_;
  ServiceLog log_;
  std::mutex mu_;
  std::map<std::string, Full> full_;  // by the server the error names; guarded by mu_
};

}  // namespace hourglass
