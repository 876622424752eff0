// FitConnections: caps that fit are kept; caps that do not are lowered in proportion beside the
// store's connections, each with a warning naming the flag, the limit and the fix; a limit too
// low for the store itself is refused. RaiseOpenFileLimit raises the soft limit to the hard one.
#include "hourglass/descriptor_budget.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace hourglass {
namespace {

TEST(FitConnections, CapsThatFitAreKeptWithoutAWarning) {
  const DescriptorPlan plan = FitConnections(20000, {.store = 8, .http = 1024, .grpc = 1024});
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.http, 1024u);
  EXPECT_EQ(plan.grpc, 1024u);
  EXPECT_TRUE(plan.warnings.empty());
}

TEST(FitConnections, CapsOverTheLimitAreLoweredInProportionWithAWarningEach) {
  // systemd's default soft limit, default caps, one memcached server.
  const DescriptorPlan plan = FitConnections(1024, {.store = 8, .http = 1024, .grpc = 1024});
  ASSERT_TRUE(plan.fits);
  EXPECT_LE(8 + kDescriptorOverhead + plan.http + GrpcDescriptors(plan.grpc), 1024u);
  EXPECT_GT(plan.http, 250u) << "in proportion to the descriptors each cap needs";
  EXPECT_GT(plan.grpc, 250u);
  ASSERT_EQ(plan.warnings.size(), 2u);
  EXPECT_NE(plan.warnings[0].find("--max-connections lowered from 1024 to"), std::string::npos)
      << plan.warnings[0];
  EXPECT_NE(plan.warnings[0].find("ulimit -n"), std::string::npos) << plan.warnings[0];
  EXPECT_NE(plan.warnings[1].find("--grpc-max-connections"), std::string::npos) << plan.warnings[1];
}

// A gRPC connection takes one descriptor, and those closed to make room hold theirs until they are
// gone (at most an eighth of the cap): a cap is fitted so that all of them stay under the limit.
TEST(FitConnections, AGrpcConnectionCostsADescriptorAndThoseLeavingToo) {
  EXPECT_EQ(GrpcDescriptors(1024), 1024u + 128);
  EXPECT_EQ(GrpcDescriptors(16), 16u + 4);
  EXPECT_EQ(GrpcDescriptors(0), 0u);
  const DescriptorPlan plan = FitConnections(12000, {.store = 8, .http = 1024, .grpc = 10000});
  ASSERT_TRUE(plan.fits);
  EXPECT_LE(8 + kDescriptorOverhead + plan.http + GrpcDescriptors(plan.grpc), 12000u);
  EXPECT_LT(plan.grpc, 10000u);
  EXPECT_GT(plan.grpc, 9000u) << "no more lowered than the descriptors need";
  ASSERT_FALSE(plan.warnings.empty());
  EXPECT_NE(plan.warnings.back().find("--grpc-max-connections lowered from 10000"),
            std::string::npos)
      << plan.warnings.back();
}

TEST(FitConnections, WithoutGrpcHttpTakesTheWholeRoom) {
  const DescriptorPlan plan = FitConnections(256, {.store = 16, .http = 1024, .grpc = 0});
  ASSERT_TRUE(plan.fits);
  EXPECT_EQ(plan.http, 256u - 16 - kDescriptorOverhead);
  EXPECT_EQ(plan.grpc, 0u);
  EXPECT_EQ(plan.warnings.size(), 1u);
}

// Each I/O thread (HTTP's and gRPC's) holds three descriptors of its own for as long as it runs.
TEST(FitConnections, EveryIoThreadsEventDescriptorsAreKeptOutOfTheCaps) {
  const DescriptorPlan plan =
      FitConnections(256, {.store = 16, .http = 1024, .grpc = 0, .io_threads = 16});
  ASSERT_TRUE(plan.fits);
  EXPECT_EQ(plan.http, 256u - 16 - kDescriptorOverhead - 16 * kDescriptorsPerIoThread);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("the process 112 for itself"), std::string::npos)
      << plan.warnings[0];
  EXPECT_FALSE(FitConnections(128, {.store = 16, .http = 1024, .grpc = 0, .io_threads = 16}).fits);
}

TEST(FitConnections, ALimitBelowTheStoresOwnNeedsIsRefused) {
  const DescriptorPlan plan = FitConnections(60, {.store = 8, .http = 1024, .grpc = 0});
  EXPECT_FALSE(plan.fits);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("at least 1096"), std::string::npos) << plan.warnings[0];
}

TEST(RaiseOpenFileLimit, RaisesTheSoftLimitToTheHardOne) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_GE(saved.rlim_max, 256u);
  rlimit low = saved;
  low.rlim_cur = 128;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  const size_t raised = RaiseOpenFileLimit();
  rlimit now{};
  getrlimit(RLIMIT_NOFILE, &now);
  setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_EQ(now.rlim_cur, saved.rlim_max);
  EXPECT_EQ(raised, std::min<size_t>(saved.rlim_max, size_t{1} << 30));
}

}  // namespace
}  // namespace hourglass
