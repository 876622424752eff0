// Where the Redis store puts a group: Redis Cluster's hash slots (checked against the values
// Redis's documentation gives and against a real cluster's CLUSTER KEYSLOT), hash tags, the
// rendezvous choice among standalone servers, and CLUSTER SLOTS replies, malformed ones refused.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "placement.h"
#include "redis_server.h"

namespace hourglass::redis {
namespace {

TEST(HashSlot, MatchesRedisClusterSpecification) {
  // CRC16 of "123456789" is 0x31C3 (the specification's check value).
  EXPECT_EQ(HashSlot("123456789"), 0x31C3 % 16384);
  EXPECT_EQ(HashSlot("{user1000}.following"), HashSlot("{user1000}.followers"));
  // An empty tag ("{}") does not count: the whole key is hashed.
  EXPECT_NE(HashSlot("foo{}{bar}"), HashSlot("bar"));
  EXPECT_NE(HashSlot("foo{}{bar}"), HashSlot("foo{}{bar}!"));
  EXPECT_EQ(HashSlot("foo{{bar}}zap"), HashSlot("{bar"));
  EXPECT_EQ(HashSlot("foo{bar}{zap}"), HashSlot("bar"));
}

TEST(TaggedKey, EveryKeyOfAGroupSharesTheGroupsSlot) {
  for (const std::string group : {"hg:signup:ann", "hg:e:a{b", "hg:e:a}b", "hg:e:{x}", "hg:e:"}) {
    const uint16_t slot = HashSlot(TaggedKey(group, group));
    for (const std::string rest : {":1:1431856800", ":p:397738", ":g", ":d:16572"}) {
      EXPECT_EQ(HashSlot(TaggedKey(group, group + rest)), slot) << group << rest;
    }
  }
  EXPECT_EQ(TaggedKey("hg:e:f", "hg:e:f:60:2"), "{hg:e:f}:60:2");
}

TEST(HashSlot, AgreesWithARealClusterOnRandomTaggedKeys) {
  testing::RedisCluster cluster;
  ASSERT_TRUE(cluster.ready()) << cluster.error();
  std::mt19937_64 rng(3);
  for (int i = 0; i < 40; ++i) {
    std::string feature;
    for (int c = 0; c < 1 + static_cast<int>(rng() % 12); ++c) {
      feature += static_cast<char>('!' + rng() % 90);  // printable, braces included
    }
    const std::string group = "hg:e:" + feature;
    const std::string key = TaggedKey(group, group + ":1:1431856800");
    EXPECT_EQ(HashSlot(key), cluster.KeySlot(key)) << key;
  }
}

TEST(RendezvousShard, TheSameForAnyOrderAndFewMovesWhenAServerIsAdded) {
  const std::vector<std::string> two = {"a:6379", "b:6379"};
  const std::vector<std::string> reversed = {"b:6379", "a:6379"};
  const std::vector<std::string> three = {"a:6379", "b:6379", "c:6379"};
  int moved = 0, on_c = 0;
  std::map<std::string, int> load;
  for (int g = 0; g < 3000; ++g) {
    const std::string group = "hg:e:" + std::to_string(g);
    const std::string before = two[RendezvousShard(group, two)];
    EXPECT_EQ(before, reversed[RendezvousShard(group, reversed)]);
    const std::string after = three[RendezvousShard(group, three)];
    ++load[before];
    if (after != before) {
      ++moved;
      EXPECT_EQ(after, "c:6379") << "a group only ever moves to the new server";
    }
    on_c += after == "c:6379";
  }
  EXPECT_NEAR(load["a:6379"], 1500, 150);
  EXPECT_NEAR(moved, 1000, 120) << "about a third moves to the third server";
  EXPECT_EQ(moved, on_c);
}

Reply Int(long long v) { return Reply{Reply::Type::kInteger, v, "", {}}; }
Reply Str(std::string s) { return Reply{Reply::Type::kString, 0, std::move(s), {}}; }
Reply Arr(std::vector<Reply> e) { return Reply{Reply::Type::kArray, 0, "", std::move(e)}; }

TEST(ParseClusterSlots, MastersBySlotAndMalformedRepliesRefused) {
  const Reply reply = Arr({Arr({Int(0), Int(5460), Arr({Str("10.0.0.1"), Int(7000), Str("id1")}),
                                Arr({Str("10.0.0.4"), Int(7003), Str("replica")})}),
                           Arr({Int(5461), Int(16383), Arr({Str(""), Int(7001), Str("id2")})})});
  Result<SlotMap> map = ParseClusterSlots(reply, "10.0.0.9:7001");
  ASSERT_TRUE(map.ok()) << map.error().ToString();
  ASSERT_EQ(map->nodes, (std::vector<std::string>{"10.0.0.1:7000", "10.0.0.9:7001"}));
  EXPECT_EQ(map->owner[0], 0);
  EXPECT_EQ(map->owner[5460], 0);
  EXPECT_EQ(map->owner[5461], 1);
  EXPECT_EQ(map->owner[16383], 1);
  const Reply partial = Arr({Arr({Int(0), Int(99), Arr({Str("::1"), Int(7000)})})});
  map = ParseClusterSlots(partial, "[::1]:7000");
  ASSERT_TRUE(map.ok()) << map.error().ToString();
  EXPECT_EQ(map->nodes[0], "[::1]:7000");
  EXPECT_EQ(map->owner[100], -1) << "a slot no master serves";
  for (const Reply& bad :
       {Str("nope"), Arr({Str("x")}), Arr({Arr({Int(5), Int(1), Arr({Str("h"), Int(1)})})}),
        Arr({Arr({Int(0), Int(16384), Arr({Str("h"), Int(1)})})}),
        Arr({Arr({Int(0), Int(1), Arr({Int(1), Int(1)})})}),
        Arr({Arr({Int(0), Int(1), Arr({Str("bad host"), Int(1)})})})}) {
    Result<SlotMap> r = ParseClusterSlots(bad, "h:1");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kInternal);
  }
  Reply error{Reply::Type::kError, 0, "ERR This instance has cluster support disabled", {}};
  Result<SlotMap> r = ParseClusterSlots(error, "h:1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("redis://"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace hourglass::redis
