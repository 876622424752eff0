// Server lists as users write them: "host:port[,host:port...]", IPv6 in brackets.
#include <gtest/gtest.h>

#include "hourglass/memcached_store.h"
#include "hourglass/net/servers.h"

namespace hourglass {
namespace {

TEST(ParseServers, ListsKeepTheTextAsWrittenForTheRing) {
  Result<std::vector<std::string>> servers = ParseServers("10.0.0.1:11211,cache-2.internal:11212");
  ASSERT_TRUE(servers.ok()) << servers.error().message();
  EXPECT_EQ(*servers, (std::vector<std::string>{"10.0.0.1:11211", "cache-2.internal:11212"}));
  EXPECT_EQ(*ParseServers("[::1]:11211"), (std::vector<std::string>{"[::1]:11211"}));
  EXPECT_EQ(*ParseServers("a:1,,b:2,"), (std::vector<std::string>{"a:1", "b:2"})) << "empty items";
  EXPECT_TRUE(ParseServers("[fe80::1]:1,my_host.local:2,10.0.0.1:3").ok());
}

TEST(ParseServers, BadEntriesNameThemselvesAndTheExpectedForm) {
  for (const char* bad :
       {"localhost", "h:", "h:0", "h:65536", "h:99999", "h:12a", "::1:11211", "h p:1", "h:1,x"}) {
    Result<std::vector<std::string>> servers = ParseServers(bad);
    ASSERT_FALSE(servers.ok()) << bad;
    EXPECT_EQ(servers.error().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(servers.error().message().find("expected host:port"), std::string::npos) << bad;
  }
  Result<std::vector<std::string>> none = ParseServers(",");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("no memcached server"), std::string::npos);
}

TEST(ParseServer, SplitsHostAndPortWithoutBrackets) {
  Result<net::ServerAddress> v4 = net::ParseServer("127.0.0.1:11211");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, "11211");
  Result<net::ServerAddress> v6 = net::ParseServer("[::1]:11212");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, "11212");
  EXPECT_EQ(net::HostPort(*v6), "[::1]:11212");
  EXPECT_EQ(net::HostPort(*v4), "127.0.0.1:11211");
}

}  // namespace
}  // namespace hourglass
