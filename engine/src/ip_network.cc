#include "hourglass/ip_network.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace hourglass {
namespace {

constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

Error NotAnAddress(std::string_view text) {
  return InvalidArgument(
      fmt::format("\"{}\" is not an IP address (e.g. 192.0.2.7 or 2001:db8::1)",
                  text.size() > 64 ? std::string(text.substr(0, 64)) + "..." : std::string(text)));
}

}  // namespace

Result<IpNetwork> IpNetwork::ParseAddress(std::string_view text) {
  // inet_pton needs a terminated string; no address is longer than 45 characters.
  if (text.empty() || text.size() > 45 || text.find('\0') != std::string_view::npos) {
    return NotAnAddress(text);
  }
  const std::string terminated(text);
  IpNetwork n;
  if (inet_pton(AF_INET, terminated.c_str(), n.bytes_.data()) == 1) {
    n.length_ = 32;
    return n;
  }
  if (inet_pton(AF_INET6, terminated.c_str(), n.bytes_.data()) != 1) return NotAnAddress(text);
  if (std::memcmp(n.bytes_.data(), kMappedPrefix, sizeof kMappedPrefix) == 0) {
    std::memmove(n.bytes_.data(), n.bytes_.data() + 12, 4);
    std::memset(n.bytes_.data() + 4, 0, 12);
    n.length_ = 32;
    return n;
  }
  n.v6_ = true;
  n.length_ = 128;
  return n;
}

Result<IpNetwork> IpNetwork::ParseRange(std::string_view text) {
  const size_t slash = text.find('/');
  Result<IpNetwork> address = ParseAddress(text.substr(0, slash));
  if (!address.ok()) {
    return InvalidArgument(
        fmt::format("\"{}\" is not an IP address or range (e.g. 10.0.0.0/8 or "
                    "2001:db8::/32)",
                    text.substr(0, 64)));
  }
  if (slash == std::string_view::npos) return address;
  const std::string_view digits = text.substr(slash + 1);
  int length = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
  if (ec != std::errc() || end != digits.data() + digits.size() || length < 0 ||
      length > address->bits() || digits.empty()) {
    return InvalidArgument(fmt::format("\"{}\": the prefix length must be 0 to {}",
                                       text.substr(0, 64), address->bits()));
  }
  const IpNetwork range = address->Truncated(length);
  if (range.bytes_ != address->bytes_) {
    return InvalidArgument(fmt::format("\"{}\" has bits set past its /{}: did you mean {}?",
                                       text.substr(0, 64), length, range.ToString()));
  }
  return range;
}

IpNetwork IpNetwork::Truncated(int length) const {
  IpNetwork n = *this;
  n.length_ = std::clamp(length, 0, length_);
  for (int bit = n.length_; bit < bits(); ++bit) {
    n.bytes_[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  }
  return n;
}

bool IpNetwork::Contains(const IpNetwork& other) const {
  return v6_ == other.v6_ && other.length_ >= length_ && other.Truncated(length_) == *this;
}

std::string IpNetwork::ToString() const {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6_ ? AF_INET6 : AF_INET, bytes_.data(), text, sizeof text);
  return length_ == bits() ? std::string(text) : fmt::format("{}/{}", text, length_);
}

}  // namespace hourglass
