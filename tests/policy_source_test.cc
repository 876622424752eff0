// Policy resolution: inline limits or a file's entry, with a counting mode over either.
#include "hourglass/policy_source.h"

#include <gtest/gtest.h>

namespace hourglass {
namespace {

const std::string kExample = std::string(HOURGLASS_SOURCE_DIR) + "/policies/example.yaml";

TEST(PolicySource, NoLimitsIsEmpty) {
  EXPECT_TRUE(PolicySource().empty());
  EXPECT_TRUE(PolicySource::FromLimits({})->empty());
}

TEST(PolicySource, InlineLimitsApplyToEveryEventInOrder) {
  const std::vector<std::string> specs = {"2/s, 5/m", "100/d"};
  Result<PolicySource> source = PolicySource::FromLimits(specs);
  ASSERT_TRUE(source.ok()) << source.error().message();
  Result<Policy> policy = source->For("any_event", "any feature");
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ(policy->limits, *ParseLimits("2/s, 5/m, 100/d"));
  EXPECT_EQ(policy->mode, CountingMode::kAdmitted);
}

TEST(PolicySource, FileEntriesAndOverridesWithTheModeOverridden) {
  Result<PolicySource> source = PolicySource::FromFile(kExample, CountingMode::kAttempts);
  ASSERT_TRUE(source.ok()) << source.error().message();
  EXPECT_FALSE(source->empty());
  EXPECT_EQ(source->For("url_shorten", "1.2.3.4")->limits, *ParseLimits("2/s, 5/m, 10/h, 100/d"));
  EXPECT_EQ(source->For("url_shorten", "1.2.3.4")->mode, CountingMode::kAttempts);
  EXPECT_EQ(source->For("url_shorten", "203.0.113.66")->limits[0].max_hits, 0u) << "banned";
  Result<Policy> unknown = source->For("nope", "x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(unknown.error().message().find("url_shorten"), std::string::npos);
}

TEST(PolicySource, BadInputNamesWhatIsWrong) {
  const std::vector<std::string> bad = {"5/fortnight"};
  Result<PolicySource> limits = PolicySource::FromLimits(bad);
  ASSERT_FALSE(limits.ok());
  EXPECT_EQ(limits.error().code(), ErrorCode::kInvalidArgument);
  Result<PolicySource> file = PolicySource::FromFile("/nonexistent/policy.yaml");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message().find("/nonexistent/policy.yaml"), std::string::npos);
}

}  // namespace
}  // namespace hourglass
