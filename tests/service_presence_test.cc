// Counting the services that share a store, in the store: each records itself once per slot, and
// the count is the larger of the last slot's and this one's so far.
#include "hourglass/service_presence.h"

#include <gtest/gtest.h>

#include "failing_store.h"
#include "hourglass/memory_store.h"

namespace hourglass {
namespace {

constexpr int64_t kSlotStart = 1'700'000'000;  // a multiple of 5

TEST(ServicePresence, CountsTheServicesOfThisSlotAndTheLastOne) {
  ManualClock clock(FromUnix(kSlotStart));
  MemoryStore store(clock);
  testing::FailingStore way(store);
  const Engine a = *Engine::Create(store, clock, EngineOptions{});
  const Engine b = *Engine::Create(way, clock, EngineOptions{});
  ServicePresence pa(a), pb(b);
  EXPECT_EQ(pa.Tick(clock.Now()), 1u);
  EXPECT_EQ(pb.Tick(clock.Now()), 2u);
  clock.Advance(Seconds{1});
  EXPECT_EQ(pa.Tick(clock.Now()), 2u) << "once per slot";
  // Next slot: b is gone, but was there in the last one.
  clock.Advance(Seconds{4});
  EXPECT_EQ(pa.Tick(clock.Now()), 2u);
  clock.Advance(Seconds{5});
  EXPECT_EQ(pa.Tick(clock.Now()), 1u);
  // b's store fails: it says nothing, and records itself once it answers.
  way.Fail(true);
  EXPECT_EQ(pb.Tick(clock.Now()), std::nullopt);
  way.Fail(false);
  EXPECT_EQ(pb.Tick(clock.Now()), 2u);
  EXPECT_EQ(pa.Tick(clock.Now()), 2u);
}

}  // namespace
}  // namespace hourglass
