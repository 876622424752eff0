// The audit log: a line per check of each request, none for a check left unread, rotated by
// size into the files spdlog names, everything written by the time it is closed.
#include "hourglass/audit_log.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hourglass/audit_record.h"
#include "temp_path.h"

namespace hourglass {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(AuditLog, ALinePerCheckRotatedBySizeAllWrittenWhenClosed) {
  const std::string dir = testing::UniqueTempPath("audit-log");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const Policy policy{*ParseLimits("5/m")};
  Decision allowed;
  allowed.allowed = allowed.recorded = true;
  allowed.at = FromUnix(1'795'737'600);
  allowed.limits = {LimitOutcome{policy.limits[0], 1, 4}};
  Decision unread;
  unread.unread = true;
  std::vector<Engine::CheckRequest> checks = {{"signup", "ann", policy}, {"signup", "bob", policy}};
  {
    Result<std::unique_ptr<AuditLog>> log = AuditLog::Open(dir + "/audit.log", 4096, 3);
    ASSERT_TRUE(log.ok()) << log.error().ToString();
    // Answered 2 s after its instant: each line says when (done).
    const Instant answered = FromUnix(1'795'737'602);
    for (int i = 0; i < 100; ++i) (*log)->Write(checks, {true, {allowed, unread}}, answered);
  }
  const std::vector<std::string> current = Lines(dir + "/audit.log");
  const std::vector<std::string> older = Lines(dir + "/audit.1.log");
  ASSERT_FALSE(current.empty());
  ASSERT_FALSE(older.empty());
  EXPECT_TRUE(std::filesystem::exists(dir + "/audit.2.log"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/audit.3.log")) << "3 files kept";
  EXPECT_LE(std::filesystem::file_size(dir + "/audit.1.log"), 4096u);
  for (const std::string& line : current) {
    Result<AuditRecord> r = ParseAuditLine(line);
    ASSERT_TRUE(r.ok()) << line;
    EXPECT_EQ(r->feature, "ann") << "the unread check has no line";
    EXPECT_EQ(r->limits[0].count, 1u);
    EXPECT_EQ(r->at, 1'795'737'600);
    EXPECT_EQ(r->done, 1'795'737'602);
  }
  // A file where its folder should be: refused (a missing folder is made).
  Result<std::unique_ptr<AuditLog>> refused = AuditLog::Open(dir + "/audit.log/x.log", 4096, 3);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("audit.log/x.log"), std::string::npos);
  EXPECT_FALSE(AuditLog::Open(dir + "/zero.log", 0, 3).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hourglass
