// Server affinity with two real memcached servers: every bucket of one event+feature lives on the
// server its group key hashes to, a check talks to that server only, and features spread over
// both.
#include <gtest/gtest.h>
#include <libmemcached-1.0/memcached.h>

#include <set>

#include "hourglass/engine.h"
#include "hourglass/key_space.h"
#include "hourglass/memcached_store.h"
#include "memcached_server.h"

namespace hourglass {
namespace {

struct Traffic {
  long long gets, incrs, total;
};

Traffic Snapshot(const testing::MemcachedServer& s) {
  const long long gets = s.Stat("cmd_get");
  // A meta increment counts as an incr hit, or creates an item (total_items) when it vivifies.
  const long long incrs = s.Stat("incr_hits") + s.Stat("incr_misses") + s.Stat("total_items");
  return Traffic{gets, incrs, s.Stat("cmd_get") + s.Stat("cmd_set") + incrs};
}

class CheckAffinityTest : public ::testing::TestWithParam<MemcachedLayout> {};

TEST_P(CheckAffinityTest, OneCheckIsOneRoundTripToOneServer) {
  testing::MemcachedServer a, b;
  ASSERT_TRUE(a.running() && b.running());
  MemcachedOptions options;
  options.servers = {a.address(), b.address()};
  options.layout = GetParam();
  const bool packed = GetParam() == MemcachedLayout::kPacked;
  std::unique_ptr<MemcachedStore> store = std::move(*MemcachedStore::Create(options));
  ManualClock clock(FromUnix(1'431'857'103));
  const Engine engine = *Engine::Create(*store, clock, EngineOptions{});
  const Policy policy{*ParseLimits("2/s, 5/m, 10/h, 100/d"), CountingMode::kAdmitted,
                      FailureMode::kFailOpen};
  std::set<std::string> used;
  for (int i = 0; i < 60; ++i) {
    const std::string feature = "10.0.0." + std::to_string(i);
    const std::string group = engine.keys().GroupKey("url_shorten", feature);
    Result<std::string> holder = store->ServerFor(group);
    ASSERT_TRUE(holder.ok());
    used.insert(*holder);
    const testing::MemcachedServer& mine = *holder == a.address() ? a : b;
    const testing::MemcachedServer& other = *holder == a.address() ? b : a;
    const Traffic mine_before = Snapshot(mine), other_before = Snapshot(other);
    clock.Advance(Seconds{7});
    Result<Decision> d = engine.Check("url_shorten", feature, policy);
    ASSERT_TRUE(d.ok() && !d->degraded);
    EXPECT_EQ(d->cost.round_trips, 1u);
    const Traffic mine_after = Snapshot(mine), other_after = Snapshot(other);
    EXPECT_EQ(other_after.total, other_before.total) << "the other server saw nothing";
    // Counters: three buckets and the day ledger's two; packed: the ledger's two, and the pack's
    // add and append (memcached counts each store, an append too, in total_items).
    EXPECT_EQ(mine_after.incrs - mine_before.incrs, packed ? 4 : 5);
    if (!packed) {
      // memcached counts every key fetched: the engine's cost report must match the server's
      // (packed fetches a pack once for all of its buckets the check reads).
      EXPECT_EQ(mine_after.gets - mine_before.gets, static_cast<long long>(d->cost.keys_read));
    }
    // The buckets are on the holder and nowhere else.
    const std::string key = packed ? group + ":p:" + std::to_string(ToUnix(clock.Now()) / 3600)
                                   : engine.keys().BucketKey(group, Bucket{0, ToUnix(clock.Now())});
    EXPECT_NE(mine.Raw("get " + key + "\r\n").find("VALUE " + key), std::string::npos);
    EXPECT_EQ(other.Raw("get " + key + "\r\n"), "END\r\n");
  }
  EXPECT_EQ(used.size(), 2u) << "features spread over both servers";
}

INSTANTIATE_TEST_SUITE_P(Layouts, CheckAffinityTest,
                         ::testing::Values(MemcachedLayout::kCounters, MemcachedLayout::kPacked),
                         [](const ::testing::TestParamInfo<MemcachedLayout>& p) {
                           return p.param == MemcachedLayout::kPacked ? "packed" : "counters";
                         });

// Other processes may use plain libmemcached with the same server list (consistent
// distribution): they must find a feature's keys on the server hourglass put them on.
TEST(AffinityTest, ServerChoiceMatchesAPlainLibmemcachedClient) {
  testing::MemcachedServer a, b, c;
  ASSERT_TRUE(a.running() && b.running() && c.running());
  MemcachedOptions options;
  options.servers = {a.address(), b.address(), c.address()};
  std::unique_ptr<MemcachedStore> store = std::move(*MemcachedStore::Create(options));
  const std::string config = "--SERVER=" + a.address() + " --SERVER=" + b.address() +
                             " --SERVER=" + c.address() + " --DISTRIBUTION=consistent";
  memcached_st* plain = memcached(config.data(), config.size());
  ASSERT_NE(plain, nullptr);
  std::set<std::string> used;
  for (int i = 0; i < 300; ++i) {
    const std::string group =
        "url_shorten:10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256);
    memcached_return_t rc;
    const memcached_instance_st* theirs =
        memcached_server_by_key(plain, group.data(), group.size(), &rc);
    ASSERT_NE(theirs, nullptr);
    const std::string expected = std::string(memcached_server_name(theirs)) + ":" +
                                 std::to_string(memcached_server_port(theirs));
    EXPECT_EQ(*store->ServerFor(group), expected) << group;
    used.insert(expected);
  }
  memcached_free(plain);
  EXPECT_EQ(used.size(), 3u);
}

}  // namespace
}  // namespace hourglass
