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
