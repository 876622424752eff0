// Keys: `<namespace>:<event>:<feature>:<level width>:<bucket index>` (docs/design.md, "Keys").
//
// Events and features are arbitrary bytes (IPs, e-mail addresses, "a b\r\nflush_all", UTF-8,
// NUL, 10 KB). Each field is percent-encoded: printable ASCII other than '%', ':' and '#' stays as
// it is, every other byte becomes %XX. Distinct inputs give distinct keys, nothing raw reaches
// the wire, and every key is printable ASCII without whitespace, at most 250 bytes. When a key
// would be too long, the feature (then, if needed, the event) is replaced by '#' and the hex
// SHA-256 of its raw bytes; '#' never starts an encoded field, so hashed and encoded fields can
// not collide.
//
//   KeyCodec codec = *KeyCodec::Create("hg");
//   std::string group = codec.GroupKey("signup", "ann@example.com");  // hg:signup:ann@example.com
//   std::string key = codec.BucketKey(group, Seconds{60}, 28333333);  // ...:60:28333333
//
// Thread-safety: immutable value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hourglass/clock.h"
#include "hourglass/status.h"

namespace hourglass {

class KeyCodec {
 public:
  static constexpr size_t kMaxKeyLength = 250;
  static constexpr size_t kMaxNamespaceLength = 64;
  // Room kept after the group key for ":<width>:<index>".
  static constexpr size_t kSuffixReserve = 1 + 10 + 1 + 20;
  static constexpr size_t kMaxGroupLength = kMaxKeyLength - kSuffixReserve;

  // `name_space`: 1 to 64 characters from [A-Za-z0-9._-].
  static Result<KeyCodec> Create(std::string name_space);

  const std::string& name_space() const { return ns_; }
  // The server-affinity key of one event+feature; every bucket key starts with it.
  // `event` must not be empty (checked by the engine).
  std::string GroupKey(std::string_view event, std::string_view feature) const;
  // A bucket key inside `group`.
  static std::string BucketKey(std::string_view group, Seconds width, int64_t index);

  // Percent-encodes one field (reversible).
  static std::string EncodeField(std::string_view raw);
  // Inverse of EncodeField; nullopt for a hashed field ("#...") or malformed input.
  static std::optional<std::string> DecodeField(std::string_view encoded);
  // '#' + hex SHA-256 of `raw`.
  static std::string HashField(std::string_view raw);
  // What memcached accepts as a key: 1 to 250 bytes, printable ASCII, no whitespace. Stores check
  // every key with it before anything is sent.
  static Status CheckKey(std::string_view key);

 private:
  explicit KeyCodec(std::string ns) : ns_(std::move(ns)) {}
  std::string ns_;
};

}  // namespace hourglass
