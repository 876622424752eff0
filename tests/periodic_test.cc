// Periodic: runs its task on its own thread until destroyed, never after.
#include "hourglass/periodic.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace hourglass {
namespace {

TEST(Periodic, RunsUntilDestroyedAndNeverAfter) {
  std::atomic<int> runs{0};
  {
    Periodic periodic(std::chrono::milliseconds{1}, [&] { ++runs; });
    while (runs.load() < 3) std::this_thread::yield();
  }
  const int at_destruction = runs.load();
  std::this_thread::sleep_for(std::chrono::milliseconds{5});
  EXPECT_EQ(runs.load(), at_destruction);
}

TEST(Periodic, DestructionDoesNotWaitForTheInterval) {
  const auto start = std::chrono::steady_clock::now();
  {
    Periodic periodic(std::chrono::hours{1}, [] {});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::minutes{1})
      << "woken at once, not after an hour";
}

}  // namespace
}  // namespace hourglass
