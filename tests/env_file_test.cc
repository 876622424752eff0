// The host's environment file as the CLI reads it: the package's own file parses, quotes and
// comments as systemd and a shell take them, a bad line is named by file and line, and
// HOURGLASS_SERVE_ARGS splits into words as the unit's command line does.
#include "env_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace hourglass::cli {
namespace {

using Assignments = std::vector<std::pair<std::string, std::string>>;

TEST(EnvFile, ThePackagesFileParses) {
  std::ifstream in(std::string(HOURGLASS_SOURCE_DIR) + "/packaging/default");
  std::stringstream text;
  text << in.rdbuf();
  Result<EnvFile> file = ParseEnvFile(text.str(), "/etc/default/hourglass");
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  EXPECT_EQ(file->assignments, (Assignments{{"HOURGLASS_SERVERS", "127.0.0.1:11211"},
                                            {"HOURGLASS_POLICY", "/etc/hourglass/policy.yaml"},
                                            {"HOURGLASS_SERVE_ARGS", "--listen 127.0.0.1:8080"}}));
}

TEST(EnvFile, QuotesCommentsAndExportAreAsAShellTakesThem) {
  Result<EnvFile> file = ParseEnvFile(
      "# a comment\n\n  A=plain  \nexport B=\"two words\"\nC='it''s'\nD=\"a \\\"q\\\" \\\\\"\nE=\n"
      "F=x=y\n",
      "f");
  ASSERT_FALSE(file.ok()) << "C's quotes: 'it' then 's' is no one value";
  file = ParseEnvFile("A=plain  \nexport B=\"two words\"\nD=\"a \\\"q\\\" \\\\\"\nE=\nF=x=y", "f");
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  EXPECT_EQ(file->assignments,
            (Assignments{
                {"A", "plain"}, {"B", "two words"}, {"D", "a \"q\" \\"}, {"E", ""}, {"F", "x=y"}}));
}

TEST(EnvFile, ABadLineIsNamedByFileAndLine) {
  for (const std::string text : {"A=1\nnot an assignment\n", "A=1\n2B=x\n", "A=1\nB=\"open\n"}) {
    Result<EnvFile> file = ParseEnvFile(text, "/etc/default/hourglass");
    ASSERT_FALSE(file.ok()) << text;
    EXPECT_EQ(file.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(file.error().message().rfind("/etc/default/hourglass:2: expected NAME=VALUE", 0), 0u)
        << file.error().message();
  }
}

TEST(EnvFile, AMissingFileIsNotFound) {
  Result<EnvFile> file = ReadEnvFile("/nonexistent/hourglass-env");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().code(), ErrorCode::kNotFound);
}

TEST(EnvFile, ServeArgsSplitIntoWordsAsAShellDoes) {
  EXPECT_EQ(*SplitArgs("  --listen 0.0.0.0:8080   --log-format json "),
            (std::vector<std::string>{"--listen", "0.0.0.0:8080", "--log-format", "json"}));
  EXPECT_EQ(*SplitArgs("--admin-token-file '/etc/my dir/token' --x=\"a b\""),
            (std::vector<std::string>{"--admin-token-file", "/etc/my dir/token", "--x=a b"}));
  EXPECT_TRUE(SplitArgs("").value().empty());
  EXPECT_FALSE(SplitArgs("--listen 'open").ok());
}

TEST(EnvFile, TheFlagThenTheEnvironmentThenTheDefaultChooseTheFile) {
  const std::string flag = "/tmp/a";
  EXPECT_EQ(ChooseEnvFile(&flag, "/tmp/b").path, "/tmp/a");
  EXPECT_TRUE(ChooseEnvFile(&flag, nullptr).explicitly);
  EXPECT_EQ(ChooseEnvFile(nullptr, "/tmp/b").path, "/tmp/b");
  EXPECT_EQ(ChooseEnvFile(nullptr, "").path, "") << "HOURGLASS_ENV_FILE= turns it off";
  const EnvFileChoice fallback = ChooseEnvFile(nullptr, nullptr);
  EXPECT_EQ(fallback.path, "/etc/default/hourglass");
  EXPECT_FALSE(fallback.explicitly);
}

}  // namespace
}  // namespace hourglass::cli
