// ClientAddress: X-Forwarded-For believed only as far as the trusted proxies vouch (hops as
// express counts them, ranges as nginx's real_ip walks them); a spoofed left part never becomes
// the client; malformed entries are refused naming them.
#include "hourglass/client_address.h"

#include <gtest/gtest.h>

#include <string>

namespace hourglass {
namespace {

std::string Client(std::string_view peer, std::string_view xff, const TrustedProxies& trusted) {
  Result<std::string> c = ClientAddress(peer, xff, trusted);
  return c.ok() ? *c : "error: " + c.error().message();
}

TEST(ClientAddress, WithoutTrustedProxiesTheClientIsThePeer) {
  EXPECT_EQ(Client("203.0.113.7", "", {}), "203.0.113.7");
  EXPECT_EQ(Client("203.0.113.7", "6.6.6.6", {}), "203.0.113.7");
  EXPECT_EQ(Client("::ffff:203.0.113.7", "", {}), "203.0.113.7");
}

TEST(ClientAddress, HopsCountEntriesFromTheRightAndIgnoreWhatTheClientPrepended) {
  const TrustedProxies one{.hops = 1, .ranges = {}};
  // client -> nginx (appends the client's address) -> hourglass
  EXPECT_EQ(Client("10.0.0.2", "203.0.113.7", one), "203.0.113.7");
  // The client sent its own X-Forwarded-For: nginx appended the real address after it.
  EXPECT_EQ(Client("10.0.0.2", "6.6.6.6, 203.0.113.7", one), "203.0.113.7");
  EXPECT_EQ(Client("10.0.0.2", "1.1.1.1,2.2.2.2 ,  203.0.113.7", one), "203.0.113.7");
  const TrustedProxies two{.hops = 2, .ranges = {}};  // client -> CDN -> nginx -> hourglass
  EXPECT_EQ(Client("10.0.0.2", "6.6.6.6, 203.0.113.7, 198.51.100.1", two), "203.0.113.7");
  EXPECT_EQ(Client("10.0.0.2", "203.0.113.7", two), "203.0.113.7") << "fewer: the leftmost";
  EXPECT_EQ(Client("10.0.0.2", "", one), "10.0.0.2") << "no header: the peer";
  EXPECT_EQ(Client("10.0.0.2", "[2001:db8::7]", one), "2001:db8::7");
}

TEST(ClientAddress, RangesWalkFromTheRightPastTrustedProxies) {
  const TrustedProxies ranges{.hops = 0,
                              .ranges = {*IpNetwork::ParseRange("10.0.0.0/8"),
                                         *IpNetwork::ParseRange("2001:db8:ffff::/48")}};
  EXPECT_EQ(Client("10.0.0.2", "6.6.6.6, 203.0.113.7, 10.9.9.9", ranges), "203.0.113.7");
  EXPECT_EQ(Client("2001:db8:ffff::1", "2001:db8:1::5", ranges), "2001:db8:1::5");
  // A peer that is not a trusted proxy is the client, whatever it claims.
  EXPECT_EQ(Client("203.0.113.9", "6.6.6.6", ranges), "203.0.113.9");
  EXPECT_EQ(Client("10.0.0.2", "10.0.0.3", ranges), "10.0.0.3") << "all trusted: the leftmost";
}

TEST(ClientAddress, MalformedEntriesAreRefusedNamingThem) {
  const TrustedProxies one{.hops = 1, .ranges = {}};
  for (const char* bad : {"unknown", "203.0.113.7, ", ", 203.0.113.7", "203.0.113.7:8080",
                          "203.0.113.7 6.6.6.6", "10.0.0.0/8", "_hidden"}) {
    const std::string got = Client("10.0.0.2", bad, one);
    EXPECT_EQ(got.rfind("error: X-Forwarded-For: ", 0), 0u) << bad << " -> " << got;
  }
  std::string long_list;
  for (int i = 0; i < 100; ++i) long_list += "1.1.1.1,";
  long_list += "203.0.113.7";
  EXPECT_NE(Client("10.0.0.2", long_list, one).find("more than 64 entries"), std::string::npos);
}

}  // namespace
}  // namespace hourglass
