// IP networks as features: an address, or a range of them (CIDR), IPv4 or IPv6. A per-IP limit
// counts a client by its network, since an IPv6 client owns at least a /64 and every address in
// it would otherwise be a fresh counter; a range in a policy's overrides matches every address in
// it.
//
//   Result<IpNetwork> client = IpNetwork::ParseAddress("2001:db8:1:2:aaaa::1");
//   client->Truncated(64).ToString();                        // "2001:db8:1:2::/64"
//   IpNetwork::ParseRange("10.0.0.0/8")->Contains(*IpNetwork::ParseAddress("10.1.2.3"));  // true
//
// Thread-safety: a value type.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "hourglass/status.h"

namespace hourglass {

class IpNetwork {
 public:
  // One address: "192.0.2.7", "2001:db8::1". An IPv4-mapped IPv6 address ("::ffff:192.0.2.7") is
  // the IPv4 address, as a dual-stack socket reports IPv4 clients. kInvalidArgument otherwise.
  static Result<IpNetwork> ParseAddress(std::string_view text);
  // "10.0.0.0/8", "2001:db8::/32", or one address (a /32 or /128). A range with bits set past its
  // prefix ("10.0.0.1/8") is refused: it is likely a typo for an address or another range.
  static Result<IpNetwork> ParseRange(std::string_view text);

  bool v6() const { return v6_; }
  int length() const { return length_; }  // the prefix length, 0..32 or 0..128
  int bits() const { return v6_ ? 128 : 32; }
  // The network of the first `length` bits (at most this one's length).
  IpNetwork Truncated(int length) const;
  // Whether `other` (an address or a range) lies within this range.
  bool Contains(const IpNetwork& other) const;
  // The canonical text: an address alone when the prefix is full ("192.0.2.7", "2001:db8::1"),
  // else "network/length" ("10.0.0.0/8", "2001:db8:1:2::/64").
  std::string ToString() const;

  friend bool operator==(const IpNetwork&, const IpNetwork&) = default;

 private:
  bool v6_ = false;
  int length_ = 0;
  std::array<uint8_t, 16> bytes_{};  // IPv4 in the first 4
};

// How features that are IP addresses are grouped into counters: by their first `ipv4` or `ipv6`
// bits.
struct IpGrouping {
  int ipv4 = 32;
  int ipv6 = 64;
  friend bool operator==(const IpGrouping&, const IpGrouping&) = default;
};

}  // namespace hourglass
