// The store factory: URLs name the store; bad ones are the caller's error, naming the URL.
#include "hourglass/store_factory.h"

#include <gtest/gtest.h>

#include "memcached_server.h"

namespace hourglass {
namespace {

TEST(StoreFactory, MemoryUrlGivesTheInMemoryStore) {
  ManualClock clock(FromUnix(1'700'000'000));
  Result<std::unique_ptr<Store>> store = OpenStore("memory://", clock);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  EXPECT_EQ((*store)->Describe(), "memory");
  Batch batch{"g", {{"g:k", 2, Seconds{60}}}, {"g:k"}};
  EXPECT_EQ(*(*store)->Apply(batch), std::vector<uint64_t>{2});
  EXPECT_EQ((*store)->Flush(), 0u);
}

TEST(StoreFactory, MemcachedUrlReachesARealServer) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  Result<std::unique_ptr<Store>> store =
      OpenStore("memcached://" + server.address(), SystemClock::Get());
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  EXPECT_EQ((*store)->Describe(), "memcached " + server.address());
  Batch batch{"g", {{"g:k", 3, Seconds{60}}}, {"g:k"}};
  EXPECT_EQ(*(*store)->Apply(batch), std::vector<uint64_t>{3});
}

TEST(StoreFactory, BadUrlsAreInvalidArguments) {
  const SystemClock& clock = SystemClock::Get();
  for (const char* url : {"", "memory", "memcached://", "memcached://host-without-port",
                          "memcached://h:99999", "redis://", "redis://h", "redis://h:1/x",
                          "redis+cluster://h:1/2", "redis://:%zz@h:1", "rediss://h:1"}) {
    Result<std::unique_ptr<Store>> store = OpenStore(url, clock);
    ASSERT_FALSE(store.ok()) << url;
    EXPECT_EQ(store.error().code(), ErrorCode::kInvalidArgument) << url;
  }
  EXPECT_NE(OpenStore("redis://x", clock).error().message().find("redis://x"), std::string::npos);
  EXPECT_NE(OpenStore("mysql://x:1", clock).error().message().find("redis://HOST:PORT"),
            std::string::npos)
      << "the refusal lists the schemes there are";
}

}  // namespace
}  // namespace hourglass

namespace hourglass {
namespace {

TEST(StoreFactory, ReplicasKeepCopiesOnAsManyServers) {
  testing::MemcachedServer one, two;
  const std::string list = one.address() + "," + two.address();
  Result<std::unique_ptr<Store>> store =
      OpenStore("memcached://" + list + "?replicas=2", SystemClock::Get());
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  EXPECT_NE((*store)->Describe().find("2 copies of each count"), std::string::npos);
  StoreOptions options;
  options.replicas = 2;
  options.network.layout = MemcachedLayout::kCounters;  // a bucket is an item of its own
  store = OpenStore("memcached://" + list, SystemClock::Get(), options);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE((*store)->servers_are_copies());
  Batch hit{"hg:e:f", {{"hg:e:f:1:7", 1, Seconds{60}}}, {"hg:e:f:1:7"}};
  ASSERT_EQ((*store)->Apply(hit).value(), std::vector<uint64_t>{1});
  EXPECT_EQ(one.Raw("get hg:e:f:1:7\r\n").find("VALUE hg:e:f:1:7"), 0u) << "a copy on each";
  EXPECT_EQ(two.Raw("get hg:e:f:1:7\r\n").find("VALUE hg:e:f:1:7"), 0u);

  for (const auto& [url, error] : std::vector<std::pair<std::string, std::string>>{
           {"memcached://" + one.address() + "?replicas=2", "needs at least that many"},
           {"memcached://" + list + "?replicas=x", "replicas=N"},
           {"memcached://" + list + "?copies=2", "replicas=N"}}) {
    Result<std::unique_ptr<Store>> bad = OpenStore(url, SystemClock::Get());
    ASSERT_FALSE(bad.ok()) << url;
    EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(bad.error().message().find(error), std::string::npos) << bad.error().message();
  }
  Result<std::unique_ptr<Store>> redis =
      OpenStore("redis://127.0.0.1:1", SystemClock::Get(), options);
  ASSERT_FALSE(redis.ok());
  EXPECT_NE(redis.error().message().find("replicas belong to a memcached store"),
            std::string::npos);
}

TEST(StoreFactory, ReplicasAndPreviousServersMakeATransitionBetweenCopies) {
  testing::MemcachedServer one, two, three;
  const std::string list = one.address() + "," + two.address() + "," + three.address();
  StoreOptions options;
  options.replicas = 2;
  options.previous_servers = one.address() + "," + two.address();
  Result<std::unique_ptr<Store>> store =
      OpenStore("memcached://" + list, SystemClock::Get(), options);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  EXPECT_TRUE((*store)->servers_are_copies());
  EXPECT_NE((*store)->Describe().find("previous memcached"), std::string::npos);
  EXPECT_NE((*store)->Describe().find("2 copies"), (*store)->Describe().rfind("2 copies"))
      << "both lists keep 2 copies: " << (*store)->Describe();

  // A scale-out from one server: it kept one copy.
  options.previous_servers = one.address();
  store = OpenStore("memcached://" + list + "?replicas=2", SystemClock::Get(), options);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  // Said outright, and refused when it cannot be.
  options.previous_servers = one.address() + "," + two.address() + "?replicas=1";
  ASSERT_TRUE(OpenStore("memcached://" + list, SystemClock::Get(), options).ok());
  options.previous_servers = one.address() + "?replicas=2";
  Result<std::unique_ptr<Store>> bad =
      OpenStore("memcached://" + list, SystemClock::Get(), options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("previous servers: --replicas 2 needs"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace hourglass
