// Key codec: any byte string maps to a valid memcached key, distinct inputs to distinct keys,
// nothing raw on the wire.
#include "hourglass/key_codec.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace hourglass {
namespace {

// What memcached accepts: 1..250 bytes, printable, no whitespace or control characters.
bool IsValidMemcachedKey(const std::string& key) {
  if (key.empty() || key.size() > 250) return false;
  for (unsigned char c : key) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

const KeyCodec& Codec() {
  static const KeyCodec codec = *KeyCodec::Create("hg");
  return codec;
}

std::string FullKey(std::string_view event, std::string_view feature) {
  return KeyCodec::BucketKey(Codec().GroupKey(event, feature), Seconds{3600},
                             std::numeric_limits<int64_t>::max());
}

TEST(KeyCodec, ReadableForOrdinaryInput) {
  EXPECT_EQ(Codec().GroupKey("signup", "ann@example.com"), "hg:signup:ann@example.com");
  EXPECT_EQ(Codec().GroupKey("url_shorten", "192.168.0.1"), "hg:url_shorten:192.168.0.1");
  EXPECT_EQ(Codec().GroupKey("url_shorten", "::1"), "hg:url_shorten:%3A%3A1");
  EXPECT_EQ(KeyCodec::BucketKey("hg:a:b", Seconds{60}, 28333333), "hg:a:b:60:28333333");
}

TEST(KeyCodec, HostileInputNeverReachesTheKeyRaw) {
  const std::string injection = "x\r\nflush_all\r\n";
  const std::string key = FullKey("signup", injection);
  EXPECT_TRUE(IsValidMemcachedKey(key)) << key;
  EXPECT_EQ(key.find('\r'), std::string::npos);
  EXPECT_EQ(key.find(' '), std::string::npos);
  EXPECT_EQ(Codec().GroupKey("e", injection), "hg:e:x%0D%0Aflush_all%0D%0A");
  for (const std::string& hostile :
       {std::string("a b"), std::string("\0\0", 2), std::string("caf\xc3\xa9"), std::string(":"),
        std::string("%41"), std::string("#"), std::string(10 * 1024, 'z'),
        std::string(10 * 1024, '\n'), std::string(""), std::string("\x7f\xff")}) {
    EXPECT_TRUE(IsValidMemcachedKey(FullKey("e", hostile))) << FullKey("e", hostile);
    EXPECT_TRUE(IsValidMemcachedKey(FullKey(hostile.empty() ? "e" : hostile, hostile)));
  }
}

TEST(KeyCodec, EncodingIsReversible) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    std::string raw(rng() % 40, '\0');
    for (char& c : raw) c = static_cast<char>(rng() % 256);
    const std::string encoded = KeyCodec::EncodeField(raw);
    ASSERT_EQ(KeyCodec::DecodeField(encoded), raw);
  }
  EXPECT_FALSE(KeyCodec::DecodeField("%4").has_value());
  EXPECT_FALSE(KeyCodec::DecodeField("%41").has_value());  // 'A' is never escaped
  EXPECT_FALSE(KeyCodec::DecodeField("%0a").has_value());  // lower case is not canonical
  EXPECT_FALSE(KeyCodec::DecodeField("#ABC").has_value());
}

TEST(KeyCodec, DistinctInputsGiveDistinctKeys) {
  // Near-collisions: separators, escapes, the hash marker, lengths around the hashing threshold.
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"a", "b:c"}, {"a:b", "c"}, {"a", "b%3Ac"}, {"a", "%"},  {"a", "%25"},
      {"a", "#"},   {"a", ""},    {"a", " "},     {"a", "\n"}, {"a", std::string(1, '\0')}};
  for (size_t n = 150; n < 260; ++n) {
    inputs.emplace_back("e", std::string(n, 'f'));
    inputs.emplace_back("e", std::string(n / 3, '\n'));
  }
  inputs.emplace_back("e",
                      KeyCodec::HashField(std::string(300, 'f')));  // a feature that looks hashed
  std::mt19937_64 rng(2);
  for (int i = 0; i < 3000; ++i) {
    std::string raw(rng() % 300, '\0');
    for (char& c : raw) c = static_cast<char>(rng() % 256);
    inputs.emplace_back("e", raw);
  }
  std::set<std::pair<std::string, std::string>> distinct_inputs(inputs.begin(), inputs.end());
  std::set<std::string> keys;
  for (const auto& [event, feature] : distinct_inputs) {
    const std::string key = FullKey(event, feature);
    ASSERT_TRUE(IsValidMemcachedKey(key)) << key;
    keys.insert(key);
  }
  EXPECT_EQ(keys.size(), distinct_inputs.size());
}

TEST(KeyCodec, HashesOnlyWhenTheKeyWouldBeTooLong) {
  const std::string shortish(100, 'a');
  EXPECT_EQ(Codec().GroupKey("e", shortish), "hg:e:" + shortish);
  const std::string group = Codec().GroupKey("e", std::string(10 * 1024, 'a'));
  EXPECT_EQ(group, "hg:e:" + KeyCodec::HashField(std::string(10 * 1024, 'a')));
  EXPECT_EQ(group.size(), std::string("hg:e:").size() + 65);
  // A long event is hashed too when hashing the feature is not enough.
  const std::string both = Codec().GroupKey(std::string(500, 'e'), std::string(500, 'f'));
  EXPECT_EQ(both.rfind("hg:#", 0), 0u);
  EXPECT_LE(both.size(), KeyCodec::kMaxGroupLength);
}

TEST(KeyCodec, NamespaceIsValidated) {
  EXPECT_TRUE(KeyCodec::Create("prod-eu.1_a").ok());
  EXPECT_EQ(KeyCodec::Create("").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(KeyCodec::Create("a:b").ok());
  EXPECT_FALSE(KeyCodec::Create("a b").ok());
  EXPECT_FALSE(KeyCodec::Create(std::string(65, 'n')).ok());
}

}  // namespace
}  // namespace hourglass
