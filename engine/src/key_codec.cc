#include "hourglass/key_codec.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace hourglass {
namespace {

bool PassesRaw(unsigned char c) { return c > 0x20 && c < 0x7f && c != '%' && c != ':' && c != '#'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lower case is never produced, so it is not accepted either (one form per input)
}

constexpr char kHex[] = "0123456789ABCDEF";

// The length of EncodeField(raw).
size_t EncodedSize(std::string_view raw) {
  size_t n = raw.size();
  for (unsigned char c : raw) n += PassesRaw(c) ? 0 : 2;
  return n;
}

// Appends EncodeField(raw) to `out`.
void AppendEncoded(std::string_view raw, std::string& out) {
  for (unsigned char c : raw) {
    if (PassesRaw(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
}

}  // namespace

Result<KeyCodec> KeyCodec::Create(std::string name_space) {
  if (name_space.empty() || name_space.size() > kMaxNamespaceLength) {
    return InvalidArgument(fmt::format("namespace \"{}\": must be 1 to {} characters", name_space,
                                       kMaxNamespaceLength));
  }
  for (unsigned char c : name_space) {
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-')) {
      return InvalidArgument(fmt::format(
          "namespace \"{}\": only letters, digits, '.', '_' and '-' are allowed", name_space));
    }
  }
  return KeyCodec(std::move(name_space));
}

std::string KeyCodec::EncodeField(std::string_view raw) {
  std::string out;
  out.reserve(EncodedSize(raw));
  AppendEncoded(raw, out);
  return out;
}

std::optional<std::string> KeyCodec::DecodeField(std::string_view encoded) {
  std::string out;
  for (size_t i = 0; i < encoded.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(encoded[i]);
    if (c == '%') {
      if (i + 2 >= encoded.size()) return std::nullopt;
      const int hi = HexValue(encoded[i + 1]);
      const int lo = HexValue(encoded[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      const auto byte = static_cast<unsigned char>(hi * 16 + lo);
      if (PassesRaw(byte)) return std::nullopt;  // not the canonical form
      out += static_cast<char>(byte);
      i += 2;
    } else if (PassesRaw(c)) {
      out += static_cast<char>(c);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::string KeyCodec::HashField(std::string_view raw) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(raw.data()), raw.size(), digest);
  std::string out = "#";
  for (unsigned char b : digest) {
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

Status KeyCodec::CheckKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyLength) {
    return InvalidArgument(
        fmt::format("key of {} bytes: must be 1 to {}", key.size(), kMaxKeyLength));
  }
  for (unsigned char c : key) {
    if (c <= 0x20 || c >= 0x7f) {
      return InvalidArgument(
          fmt::format("key with byte 0x{:02x}: keys must be printable ASCII", c));
    }
  }
  return {};
}

std::string KeyCodec::GroupKey(std::string_view event, std::string_view feature) const {
  // On the hot path (one per check): the usual key, short enough whole, in one allocation.
  if (const size_t length = ns_.size() + 1 + EncodedSize(event) + 1 + EncodedSize(feature);
      length <= kMaxGroupLength) {
    std::string key;
    key.reserve(length);
    key += ns_;
    key += ':';
    AppendEncoded(event, key);
    key += ':';
    AppendEncoded(feature, key);
    return key;
  }
  std::string ev = EncodeField(event);
  std::string ft = EncodeField(feature);
  const auto length = [&] { return ns_.size() + 1 + ev.size() + 1 + ft.size(); };
  if (length() > kMaxGroupLength) ft = HashField(feature);
  if (length() > kMaxGroupLength) ev = HashField(event);
  return fmt::format("{}:{}:{}", ns_, ev, ft);
}

std::string KeyCodec::BucketKey(std::string_view group, Seconds width, int64_t index) {
  // On the hot path (one per bucket read): to_chars into one allocation.
  std::string key;
  key.resize(group.size() + 2 + 2 * 20);
  char* p = std::copy(group.begin(), group.end(), key.data());
  *p++ = ':';
  p = std::to_chars(p, key.data() + key.size(), width.count()).ptr;
  *p++ = ':';
  p = std::to_chars(p, key.data() + key.size(), index).ptr;
  key.resize(static_cast<size_t>(p - key.data()));
  return key;
}

}  // namespace hourglass
