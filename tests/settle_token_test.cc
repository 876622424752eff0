// Settlement tokens: what a service issued verifies (any bytes of a feature included) on every
// service sharing the key, and nothing else does: another key's, an altered or truncated token,
// an expired one, random text.
#include "hourglass/settle_token.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>

#include "temp_path.h"

namespace hourglass {
namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";
constexpr int64_t kAt = 1'764'000'000;

SettleClaim Claim(std::string feature = "t1") {
  return SettleClaim{"llm", std::move(feature), FromUnix(kAt), 1200, FromUnix(kAt + 3600), ""};
}

TEST(SettleTokens, WhatOneServiceIssuesAnotherWithTheKeyVerifies) {
  const SettleTokens issuer = *SettleTokens::WithKey(kKey);
  const SettleTokens other = *SettleTokens::WithKey(kKey);
  const std::string hostile("a\0b\r\n\xff.\"{}", 10);
  const std::string token = issuer.Issue(Claim(hostile));
  EXPECT_EQ(
      token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."),
      std::string::npos)
      << token;
  Result<SettleClaim> claim = other.Verify(token, FromUnix(kAt + 5));
  ASSERT_TRUE(claim.ok()) << claim.error().message();
  EXPECT_EQ(claim->event, "llm");
  EXPECT_EQ(claim->feature, hostile);
  EXPECT_EQ(claim->at, FromUnix(kAt));
  EXPECT_EQ(claim->cost, 1200u);
  EXPECT_EQ(claim->expires, FromUnix(kAt + 3600));
  EXPECT_EQ(claim->id.size(), 32u);
  EXPECT_TRUE(other.Verify(token, FromUnix(kAt + 3600)).ok()) << "the expiry itself is in time";
}

TEST(SettleTokens, EachDecisionsTokenHasItsOwnId) {
  const SettleTokens tokens = *SettleTokens::WithKey(kKey);
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    ids.insert(tokens.Verify(tokens.Issue(Claim()), FromUnix(kAt))->id);  // the same decision
  }
  EXPECT_EQ(ids.size(), 100u);
}

TEST(SettleTokens, ForgedAlteredExpiredAndMalformedTokensAreRefused) {
  const SettleTokens tokens = *SettleTokens::WithKey(kKey);
  const std::string token = tokens.Issue(Claim());
  const auto refused = [&](const std::string& t, Instant now, const std::string& says) {
    Result<SettleClaim> r = tokens.Verify(t, now);
    ASSERT_FALSE(r.ok()) << t;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  };
  const Instant now = FromUnix(kAt + 1);
  refused(SettleTokens::WithKey(std::string(32, 'k'))->Issue(Claim()), now, "was not signed");
  refused(SettleTokens::WithRandomKey().Issue(Claim()), now, "was not signed");
  for (size_t i = 0; i < token.size(); ++i) {  // every character, to every other one
    if (token[i] == '.') continue;
    for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")) {
      if (c == token[i]) continue;
      std::string altered = token;
      altered[i] = c;
      ASSERT_FALSE(tokens.Verify(altered, now).ok()) << "position " << i << " as " << c;
    }
  }
  refused(token, FromUnix(kAt + 3601), "expired at 1764003600");
  refused("", now, "is not a settlement token");
  refused("abc", now, "is not a settlement token");
  refused(token.substr(0, token.size() - 1), now, "");
  refused(token + "A", now, "");
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 120, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 256);
    if (i % 2 == 0) junk = token.substr(0, rng() % token.size()) + junk;
    EXPECT_FALSE(tokens.Verify(junk, now).ok());
  }
}

TEST(SettleTokens, AKeyFileOfTooFewBytesOrNoneIsNamed) {
  const std::string path = testing::UniqueTempPath("settle.key");
  std::ofstream(path) << "short\n";
  Result<SettleTokens> short_key = SettleTokens::FromKeyFile(path);
  ASSERT_FALSE(short_key.ok());
  EXPECT_NE(short_key.error().message().find(path + ": a settlement key needs at least 32 bytes"),
            std::string::npos)
      << short_key.error().message();
  EXPECT_FALSE(SettleTokens::FromKeyFile(path + ".missing").ok());
  std::ofstream(path) << kKey << "\n";
  Result<SettleTokens> good = SettleTokens::FromKeyFile(path);
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(SettleTokens::WithKey(kKey)->Verify(good->Issue(Claim()), FromUnix(kAt)).ok())
      << "the newline is not part of the key";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hourglass
