// IpNetwork: addresses and ranges parsed strictly, IPv4-mapped IPv6 as IPv4, truncation to a
// prefix, containment, and canonical text (one spelling per network, so one counter per network).
#include "hourglass/ip_network.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hourglass {
namespace {

std::string Group(const std::string& address, int length) {
  Result<IpNetwork> n = IpNetwork::ParseAddress(address);
  return n.ok() ? n->Truncated(length).ToString() : "error: " + n.error().message();
}

TEST(IpNetwork, AddressesPrintInOneCanonicalSpelling) {
  EXPECT_EQ(IpNetwork::ParseAddress("192.0.2.7")->ToString(), "192.0.2.7");
  EXPECT_EQ(IpNetwork::ParseAddress("2001:DB8:0:0::1")->ToString(), "2001:db8::1");
  EXPECT_EQ(IpNetwork::ParseAddress("2001:db8::1")->ToString(), "2001:db8::1");
  // A dual-stack socket's IPv4 client is the IPv4 address.
  EXPECT_EQ(IpNetwork::ParseAddress("::ffff:192.0.2.7")->ToString(), "192.0.2.7");
  EXPECT_FALSE(IpNetwork::ParseAddress("::ffff:192.0.2.7")->v6());
}

TEST(IpNetwork, EveryAddressOfAnIpv6Slash64IsOneGroup) {
  EXPECT_EQ(Group("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64), "2001:db8:1:2::/64");
  EXPECT_EQ(Group("2001:db8:1:2::1", 64), "2001:db8:1:2::/64");
  EXPECT_EQ(Group("2001:db8:1:3::1", 64), "2001:db8:1:3::/64");
  EXPECT_EQ(Group("2001:db8:1:2::1", 128), "2001:db8:1:2::1");
  EXPECT_EQ(Group("192.0.2.7", 32), "192.0.2.7");
  EXPECT_EQ(Group("192.0.2.7", 24), "192.0.2.0/24");
  EXPECT_EQ(Group("192.0.2.7", 0), "0.0.0.0/0");
}

TEST(IpNetwork, WhatIsNotAnAddressIsRefusedNamingIt) {
  for (const std::string& bad : std::vector<std::string>{
           "", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4 ", " 1.2.3.4", "2001:db8::g", "::1::2",
           "example.com", "1.2.3.4, 5.6.7.8", "10.0.0.0/8", std::string("1.2.3.4\0", 8)}) {
    Result<IpNetwork> n = IpNetwork::ParseAddress(bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_EQ(n.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(n.error().message().find("is not an IP address"), std::string::npos);
  }
}

TEST(IpNetwork, RangesAreStrictAndContainTheirAddresses) {
  const IpNetwork ten = *IpNetwork::ParseRange("10.0.0.0/8");
  EXPECT_EQ(ten.ToString(), "10.0.0.0/8");
  EXPECT_TRUE(ten.Contains(*IpNetwork::ParseAddress("10.255.0.1")));
  EXPECT_FALSE(ten.Contains(*IpNetwork::ParseAddress("11.0.0.1")));
  EXPECT_FALSE(ten.Contains(*IpNetwork::ParseAddress("::ffff:b00:1")));  // 11.0.0.1
  EXPECT_TRUE(ten.Contains(*IpNetwork::ParseAddress("::ffff:10.0.0.1")));
  EXPECT_FALSE(ten.Contains(*IpNetwork::ParseAddress("a00::1"))) << "IPv6 is never in IPv4";
  EXPECT_TRUE(ten.Contains(*IpNetwork::ParseRange("10.1.0.0/16")));
  EXPECT_FALSE(IpNetwork::ParseRange("10.1.0.0/16")->Contains(ten));
  EXPECT_TRUE(IpNetwork::ParseRange("2001:db8::/32")
                  ->Contains(*IpNetwork::ParseAddress("2001:db8:ffff::1")));
  EXPECT_EQ(IpNetwork::ParseRange("192.0.2.7")->length(), 32);
  EXPECT_EQ(IpNetwork::ParseRange("0.0.0.0/0")->ToString(), "0.0.0.0/0");
  Result<IpNetwork> typo = IpNetwork::ParseRange("10.0.0.1/8");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("did you mean 10.0.0.0/8?"), std::string::npos)
      << typo.error().message();
  for (const std::string& bad : std::vector<std::string>{"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/-1",
                                                         "10.0.0.0/8x", "2001:db8::/129", "x/8"}) {
    EXPECT_FALSE(IpNetwork::ParseRange(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace hourglass
