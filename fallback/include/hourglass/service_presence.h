// How many services share a store, counted in the store itself, for the share each admits while
// the store fails (LocalLedger::SetServices).
//
//   ServicePresence presence(engine);
//   // every second or so, on one thread:
//   if (std::optional<uint64_t> n = presence.Tick(clock.Now())) ledger.SetServices(*n);
//
// Each service records itself once per slot (a hit at the slot's first second, under the reserved
// event kEvent) and reads how many did in the slot before and in this one so far: the larger is
// the count. A service that just started or stopped is still counted: more services, a smaller
// share, the safe side. While the store fails, Tick says nothing and the last count stands.
//
// Thread-safety: one thread calls Tick.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "hourglass/engine.h"

namespace hourglass {

class ServicePresence {
 public:
  static constexpr std::string_view kEvent = "hourglass:services";
  static constexpr std::string_view kFeature = "live";

  // `engine` must outlive this; `slot` at least 2 s and within the engine's retention.
  explicit ServicePresence(const Engine& engine, Seconds slot = Seconds{5});

  // Records this service in the slot of `now` unless it did already; the count of services, or
  // nullopt when the store failed.
  std::optional<uint64_t> Tick(Instant now);

 private:
  const Engine& engine_;
  const Seconds slot_;
  std::optional<int64_t> recorded_;  // the slot this service last recorded itself in
};

}  // namespace hourglass
