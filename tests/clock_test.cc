// The clocks: a manual clock moves wall and monotonic time together, never monotonic time back.
#include "hourglass/clock.h"

#include <gtest/gtest.h>

namespace hourglass {
namespace {

TEST(ManualClock, AdvanceMovesWallAndMonotonicTime) {
  ManualClock clock(FromUnix(1'700'000'000));
  const MonoTime start = clock.Monotonic();
  clock.Advance(Seconds{5});
  EXPECT_EQ(clock.Now(), FromUnix(1'700'000'005));
  EXPECT_EQ(clock.Monotonic() - start, Seconds{5});
}

TEST(ManualClock, SettingWallTimeBackNeverMovesMonotonicTimeBack) {
  ManualClock clock(FromUnix(1'700'000'000));
  clock.Set(FromUnix(1'700'000'010));
  const MonoTime later = clock.Monotonic();
  clock.Set(FromUnix(1'600'000'000));
  EXPECT_EQ(clock.Now(), FromUnix(1'600'000'000));
  EXPECT_EQ(clock.Monotonic(), later);
}

TEST(ManualClock, MonotonicTimeAloneMovesForTimeouts) {
  ManualClock clock(FromUnix(1'700'000'000));
  const MonoTime start = clock.Monotonic();
  clock.AdvanceMonotonic(std::chrono::milliseconds{250});
  EXPECT_EQ(clock.Now(), FromUnix(1'700'000'000));
  EXPECT_EQ(clock.Monotonic() - start, std::chrono::milliseconds{250});
}

TEST(SystemClock, MonotonicTimeNeverGoesBack) {
  const SystemClock& clock = SystemClock::Get();
  const MonoTime a = clock.Monotonic();
  EXPECT_LE(a, clock.Monotonic());
  EXPECT_GT(ToUnix(clock.Now()), 1'700'000'000);
}

}  // namespace
}  // namespace hourglass
