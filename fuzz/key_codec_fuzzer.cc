// Fuzzes the key codec: any bytes split into an event and a feature give a group key and bucket
// keys memcached accepts (printable, no whitespace, at most 250 bytes); encoding is reversible;
// decoding arbitrary text never crashes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "hourglass/key_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The first byte says where the event ends; the event is never empty.
  const size_t split = size == 0 ? 0 : 1 + data[0] % size;
  const std::string_view event = size == 0 ? "e" : bytes.substr(0, split);
  const std::string_view feature = size == 0 ? "" : bytes.substr(split);

  static const KeyCodec codec = *KeyCodec::Create("hg");
  const std::string group = codec.GroupKey(event, feature);
  FUZZ_CHECK(group.size() <= KeyCodec::kMaxGroupLength);
  FUZZ_CHECK(KeyCodec::CheckKey(group).ok());
  const std::string key = KeyCodec::BucketKey(group, Seconds{3600}, INT64_MAX / 3600);
  FUZZ_CHECK(KeyCodec::CheckKey(key).ok());

  const std::string encoded = KeyCodec::EncodeField(bytes);
  std::optional<std::string> decoded = KeyCodec::DecodeField(encoded);
  FUZZ_CHECK(decoded.has_value() && *decoded == bytes);
  (void)KeyCodec::DecodeField(bytes);
  return 0;
}
