// Policy resolution: inline limits or a file's entry, with a counting mode over either.
#include "hourglass/policy_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>

namespace hourglass {
namespace {

const std::string kExample = std::string(HOURGLASS_SOURCE_DIR) + "/policies/example.yaml";

// A source loaded from `yaml` written to a file of this test.
PolicySource FromYaml(const std::string& yaml) {
  const std::string path =
      "/tmp/hourglass-policy-source-test-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(path) << yaml;
  Result<PolicySource> source = PolicySource::FromFile(path);
  std::remove(path.c_str());
  EXPECT_TRUE(source.ok()) << source.error().message();
  return source.ok() ? std::move(*source) : PolicySource();
}

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

TEST(PolicySource, SummaryIsALinePerEventAndChangesNameWhatMoved) {
  const std::string before_yaml =
      "events:\n  signup:\n    limits: [3/h]\n    mode: attempts\n"
      "  api:\n    limits: [10/s]\n    overrides:\n      partner: {limits: [100/s]}\n"
      "  gone:\n    limits: [1/d]\n";
  const std::string after_yaml =
      "events:\n  signup:\n    limits: [3/h]\n    mode: attempts\n"
      "  api:\n    limits: [10/s]\n    overrides:\n      partner: {limits: [200/s]}\n"
      "  login:\n    limits: [5/m]\n    on_store_failure: closed\n    shadow: true\n";
  const PolicySource before = FromYaml(before_yaml);
  const PolicySource after = FromYaml(after_yaml);
  EXPECT_EQ(before.Summary(), (std::map<std::string, std::string>{
                                  {"api", "10/s (admitted, fail open; overrides: partner: 100/s)"},
                                  {"gone", "1/d (admitted, fail open)"},
                                  {"signup", "3/h (attempts, fail open)"}}));
  EXPECT_EQ(PolicyChanges(before, after),
            (std::vector<std::string>{
                "changed api: 10/s (admitted, fail open; overrides: partner: 100/s) -> 10/s "
                "(admitted, fail open; overrides: partner: 200/s)",
                "removed gone: 1/d (admitted, fail open)",
                "added login: 5/m (admitted, fail closed, shadow)"}));
  EXPECT_TRUE(PolicyChanges(after, after).empty());
  const std::string spec = "2/s, 5/m";
  EXPECT_EQ(PolicySource::FromLimits({&spec, 1}, CountingMode::kAttempts)->Summary(),
            (std::map<std::string, std::string>{{"*", "2/s, 5/m (attempts, fail open)"}}));
  EXPECT_TRUE(PolicySource().Summary().empty());
}

}  // namespace
}  // namespace hourglass
