// The hourglass binary against a real memcached: every command, every exit code, the JSON
// shapes of the contract, bad inputs of every kind, an unreachable store, and a replay followed
// by `count --at` queries checked against a brute-force count.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "hourglass/display_text.h"
#include "loopback_port.h"
#include "memcached_server.h"
#include "redis_server.h"
#include "run_process.h"
#include "sliding_log.h"
#include "temp_path.h"

namespace hourglass {
namespace {

using nlohmann::json;
using testing::ProcessResult;

constexpr int64_t kAt = 1'431'857'103;  // 2015-05-17T10:05:03Z

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.running()) << server_.error(); }

  // Runs hourglass against this test's server and namespace.
  ProcessResult Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {HOURGLASS_CLI, "--servers", server_.address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProcess(argv);
  }
  static ProcessResult RunBare(std::vector<std::string> args) {
    args.insert(args.begin(), HOURGLASS_CLI);
    return testing::RunProcess(args);
  }
  static json Json(const ProcessResult& r) {
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out << r.err;
    return j;
  }
  std::string TempFile(const std::string& name, const std::string& content) {
    const std::string path = testing::UniqueTempPath(name);
    std::ofstream(path) << content;
    return path;
  }
  static std::string Policy() {
    return std::string(HOURGLASS_SOURCE_DIR) + "/policies/example.yaml";
  }

  testing::MemcachedServer server_;
};

TEST_F(CliTest, HelpWithExamplesOnEveryCommand) {
  ProcessResult r = RunBare({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
  for (std::vector<std::string> cmd :
       std::vector<std::vector<std::string>>{{"hit"},
                                             {"count"},
                                             {"check"},
                                             {"inspect"},
                                             {"reset"},
                                             {"replay"},
                                             {"policy", "validate"}}) {
    cmd.push_back("--help");
    r = RunBare(cmd);
    EXPECT_EQ(r.code, 0) << cmd[0];
    EXPECT_NE(r.out.find("Examples:"), std::string::npos) << cmd[0];
    EXPECT_NE(r.out.find("Example"), std::string::npos) << cmd[0];
  }
  r = RunBare({});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--help"), std::string::npos);
  EXPECT_TRUE(r.out.empty());
}

TEST_F(CliTest, HitAndCountWithTheContractJson) {
  const std::string at = std::to_string(kAt);
  ProcessResult r = Run({"hit", "signup", "ann@example.com", "--cost", "2", "--at", at, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = Json(r);
  EXPECT_EQ(j["event"], "signup");
  EXPECT_EQ(j["at"], kAt);
  EXPECT_EQ(j["cost"], 2);
  EXPECT_EQ(j["round_trips"], 1);
  // ISO 8601 with any offset names the same second (kAt - 30 = 2015-05-17T10:04:33Z).
  ASSERT_EQ(Run({"hit", "signup", "ann@example.com", "--at", "2015-05-17T12:04:33+02:00"}).code, 0);
  r = Run({"count", "signup", "ann@example.com", "--at", "2015-05-17T10:05:03Z", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["at"], kAt);
  EXPECT_EQ(Json(r)["windows"][1]["count"], 3) << "both hits in the minute";
  r = Run({"count", "signup", "ann@example.com", "--at", at, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  j = Json(r);
  EXPECT_EQ(j["event"], "signup");
  EXPECT_EQ(j["feature"], "ann@example.com");
  EXPECT_EQ(j["at"], kAt);
  ASSERT_EQ(j["windows"].size(), 4u);
  const std::vector<std::pair<int, int>> expected = {{1, 2}, {60, 3}, {3600, 3}, {86400, 3}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(j["windows"][i]["window"], expected[i].first);
    EXPECT_EQ(j["windows"][i]["count"], expected[i].second);
  }
  EXPECT_GT(j["keys_read"].get<int>(), 0);
  EXPECT_EQ(j["round_trips"], 1);
  r = Run({"count", "signup", "ann@example.com", "--at", at, "--window", "10s", "--window", "1m"});
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("10s"), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << "nothing but results: " << r.err;
}

// A month of counts: with days on the ladder a 30-day window is read in a fraction of the keys
// the default ladder reads (an hour bucket for each of its 720 hours); both count the same hits.
TEST_F(CliTest, ALadderWithDaysReadsAMonthInFewerKeys) {
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  std::map<std::string, int> keys;
  for (const std::string ladder : {"1s,1m,1h,1d", "1s,1m,1h"}) {
    const std::vector<std::string> globals = {"--ladder",    ladder,
                                              "--retention", "31d",
                                              "--namespace", "l" + std::to_string(ladder.size())};
    for (int64_t ago : {20 * 86400, 10 * 86400, 3600}) {
      std::vector<std::string> args = globals;
      args.insert(args.end(), {"hit", "api", "key", "--at", std::to_string(now - ago)});
      ASSERT_EQ(Run(args).code, 0) << ladder;
    }
    std::vector<std::string> args = globals;
    args.insert(args.end(), {"count", "api", "key", "--window", "30d", "--json"});
    ProcessResult r = Run(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(Json(r)["windows"][0]["count"], 3) << ladder;
    keys[ladder] = Json(r)["keys_read"].get<int>();
  }
  EXPECT_GT(keys["1s,1m,1h"], 720);
  EXPECT_LT(keys["1s,1m,1h,1d"] * 2, keys["1s,1m,1h"]);
  ProcessResult bad = Run({"--ladder", "2s,1m", "count", "api", "key"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--ladder"), std::string::npos) << bad.err;
}

TEST_F(CliTest, CheckExitCodesAndJson) {
  const std::string at = std::to_string(kAt);
  for (int i = 0; i < 2; ++i) {
    ProcessResult r =
        Run({"check", "url_shorten", "1.2.3.4", "--limit", "2/m", "--at", at, "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    json j = Json(r);
    EXPECT_EQ(j["allowed"], true);
    EXPECT_EQ(j["degraded"], false);
    ASSERT_EQ(j["limits"].size(), 1u);
    EXPECT_EQ(j["limits"][0]["window"], 60);
    EXPECT_EQ(j["limits"][0]["limit"], 2);
    EXPECT_EQ(j["limits"][0]["count"], i + 1) << "includes this hit";
    EXPECT_EQ(j["limits"][0]["remaining"], 1 - i);
    EXPECT_EQ(j["limits"][0]["retry_after"], 0);
  }
  ProcessResult r =
      Run({"check", "url_shorten", "1.2.3.4", "--limit", "2/m", "--at", at, "--json"});
  ASSERT_EQ(r.code, 1);
  json j = Json(r);
  EXPECT_EQ(j["allowed"], false);
  EXPECT_EQ(j["limits"][0]["count"], 2) << "admitted mode: the denied hit is not recorded";
  EXPECT_EQ(j["limits"][0]["retry_after"], 60) << "both hits at kAt leave the minute at kAt + 60";
  // Attempts mode counts the denied attempt.
  r = Run({"check", "url_shorten", "1.2.3.4", "--limit", "2/m", "--mode", "attempts", "--at", at,
           "--json"});
  ASSERT_EQ(r.code, 1);
  EXPECT_EQ(Json(r)["limits"][0]["count"], 3);
  // Text output names the verdict.
  r = Run({"check", "url_shorten", "5.6.7.8", "--limit", "2/s", "--limit", "5/m"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("allowed url_shorten 5.6.7.8", 0), 0u) << r.out;
}

TEST_F(CliTest, CheckWithThePolicyFileAndItsOverrides) {
  ProcessResult r = Run({"check", "url_shorten", "203.0.113.66", "--policy", Policy(), "--json"});
  EXPECT_EQ(r.code, 1) << "banned";
  EXPECT_TRUE(Json(r)["retry_after"].is_null()) << "a ban never lets through";
  for (int i = 0; i < 3; ++i) {  // the partner's limit is 20/s, not 2/s
    r = Run({"check", "url_shorten", "198.51.100.10", "--policy", Policy(), "--at",
             std::to_string(kAt)});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
  }
  for (int i = 0; i < 3; ++i) {
    r = Run({"check", "url_shorten", "198.51.100.11", "--policy", Policy(), "--at",
             std::to_string(kAt)});
    EXPECT_EQ(r.code, i < 2 ? 0 : 1);
  }
  r = Run({"check", "nosuchevent", "x", "--policy", Policy()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown event \"nosuchevent\""), std::string::npos) << r.err;
}

TEST_F(CliTest, InspectShowsTimelinesAndTotals) {
  for (int64_t s : {kAt - 2, kAt - 2, kAt - 1, kAt - 600, kAt - 7200}) {
    ASSERT_EQ(Run({"hit", "url_shorten", "9.9.9.9", "--at", std::to_string(s)}).code, 0);
  }
  ProcessResult r =
      Run({"inspect", "url_shorten", "9.9.9.9", "--at", std::to_string(kAt), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = Json(r);
  ASSERT_EQ(j["seconds"].size(), 60u);
  ASSERT_EQ(j["minutes"].size(), 60u);
  ASSERT_EQ(j["hours"].size(), 24u);
  EXPECT_EQ(j["seconds"][57], 2);  // kAt - 2
  EXPECT_EQ(j["seconds"][58], 1);
  EXPECT_EQ(j["seconds"][59], 0);
  EXPECT_EQ(j["minutes"][59], 3);
  EXPECT_EQ(j["minutes"][49], 1);  // kAt - 600
  EXPECT_EQ(j["hours"][21], 1);    // kAt - 7200
  EXPECT_EQ(j["windows"][3]["count"], 5);
  EXPECT_GT(j["keys_read"].get<int>(), 144);
  r = Run({"inspect", "url_shorten", "9.9.9.9", "--at", std::to_string(kAt)});
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("per second"), std::string::npos);
  EXPECT_NE(r.out.find("█"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("keys read"), std::string::npos);
  EXPECT_NE(r.out.find("hourglass top --service URL --event url_shorten"), std::string::npos)
      << "says where denied attempts are: " << r.out;
}

TEST_F(CliTest, ResetMakesEveryWindowReadZero) {
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Run({"hit", "signup", "bob"}).code, 0);
  ASSERT_EQ(Run({"hit", "signup", "carol"}).code, 0);
  ProcessResult r = Run({"reset", "signup", "bob", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GE(Json(r)["deleted"].get<int>(), 3);
  r = Run({"count", "signup", "bob", "--json"});
  const json counts = Json(r);  // the loop below must not range over a temporary's member
  for (const json& w : counts["windows"]) EXPECT_EQ(w["count"], 0);
  EXPECT_EQ(Json(Run({"count", "signup", "carol", "--json"}))["windows"][3]["count"], 1);
}

// Five hits in one second live in three buckets (second, minute, hour): reset deletes exactly
// those; the generation it bumps is not a deleted bucket.
TEST_F(CliTest, ResetReportsTheBucketsItDeleted) {
  const std::string at = std::to_string(kAt);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(Run({"hit", "signup", "dave", "--at", at}).code, 0);
  ProcessResult r = Run({"reset", "signup", "dave", "--at", at, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["deleted"], 3);
  r = Run({"reset", "signup", "dave", "--at", at});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("deleted 0 buckets"), std::string::npos) << r.out;
}

// --help says to put "--" before a feature that starts with '-': that must work after repeated
// options too (they take one value each).
TEST_F(CliTest, AFeatureStartingWithADashFollowsDoubleDash) {
  ProcessResult r =
      Run({"check", "ev", "--limit", "5/m", "--limit", "10/h", "--json", "--", "-bob@example.com"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["limits"][0]["count"], 1);
  r = Run({"hit", "ev", "--cost", "2", "--", "-bob@example.com"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run({"count", "ev", "--window", "1m", "--window", "1h", "--json", "--", "-bob@example.com"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["feature"], "-bob@example.com");
  EXPECT_EQ(Json(r)["windows"][1]["count"], 3);
}

// Bucket values written by another client can be as large as memcached's counters: their sum
// must saturate, never wrap to a small count (which would admit) or read as negative.
TEST_F(CliTest, HugeBucketValuesNeverWrapIntoASmallCount) {
  // Counters hold what another client sets (packs saturate their own sums: packed_layout_test).
  const std::string half = "9223372036854775808";  // 2^63: two of them wrap a 64-bit sum to 0
  for (int64_t s : {kAt - 1, kAt}) {
    const std::string key = "hg:signup:zed:1:" + std::to_string(s);
    ASSERT_EQ(
        server_.Raw("set " + key + " 0 0 " + std::to_string(half.size()) + "\r\n" + half + "\r\n"),
        "STORED\r\n");
  }
  ProcessResult r = Run({"--layout", "counters", "count", "signup", "zed", "--window", "10s",
                         "--at", std::to_string(kAt), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["windows"][0]["count"].get<uint64_t>(), 18446744073709551615u);
  r = Run({"--layout", "counters", "check", "signup", "zed", "--limit", "100/m", "--at",
           std::to_string(kAt)});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
}

// Instants outside 1970..9999 are refused with exit 2 before anything is written: at the top of
// int64 the arithmetic overflowed (every check admitted with count 0), and past the year 9999
// printing the time aborted after the hit was recorded.
TEST_F(CliTest, InstantsOutsideTheRangeAreRefusedBeforeAnyWrite) {
  const std::string far = TempFile("far.tsv", "1431857103\te\tf\n67768036191676800\te\tf\n");
  const long long items = server_.Stat("curr_items");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"check", "e", "f", "--limit", "5/m", "--at", "9223372036854775807"},
           {"hit", "e", "f", "--at", "67768036191676800"},
           {"hit", "e", "f", "--at", "253402300800"},
           {"count", "e", "f", "--at", "-1"},
           {"reset", "e", "f", "--at", "9223372036854775807"},
           {"replay", far},
       }) {
    ProcessResult r = Run(args);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("253402300799"), std::string::npos) << r.err;
  }
  EXPECT_EQ(server_.Stat("curr_items"), items) << "nothing was written";
  ProcessResult last = Run({"hit", "e", "f", "--at", "253402300799"});
  EXPECT_EQ(last.code, 0) << last.err;
  EXPECT_NE(last.out.find("9999-12-31T23:59:59Z"), std::string::npos) << last.out;
}

// A value that is not a counter under a bucket key (another client's set) must not lock the
// feature out until it expires: the error names the keys and the fix, and reset deletes it.
TEST_F(CliTest, ResetClearsABucketAnotherClientCorrupted) {
  // A counter another client overwrote (a pack that is not one: packed_layout_test).
  const std::string at = std::to_string(kAt);
  ASSERT_EQ(Run({"--layout", "counters", "hit", "signup", "eve", "--at", at}).code, 0);
  const std::string minute = "hg:signup:eve:60:" + std::to_string(kAt / 60);
  ASSERT_EQ(server_.Raw("set " + minute + " 0 0 3\r\nabc\r\n"), "STORED\r\n");
  ProcessResult r =
      Run({"--layout", "counters", "check", "signup", "eve", "--limit", "5/m", "--at", at});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find(minute), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reset"), std::string::npos) << r.err;
  r = Run({"--layout", "counters", "reset", "signup", "eve", "--at", at, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["deleted"], 3);
  r = Run(
      {"--layout", "counters", "check", "signup", "eve", "--limit", "5/m", "--at", at, "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["limits"][0]["count"], 1);
}

// The form the docs and errors give for IPv6 works end to end.
TEST_F(CliTest, Ipv6ServersInBrackets) {
  testing::MemcachedServer v6("::1");
  ASSERT_TRUE(v6.running()) << v6.error();
  ProcessResult r = RunBare({"--servers", v6.address(), "hit", "signup", "ann"});
  ASSERT_EQ(r.code, 0) << r.err;
  r = RunBare({"--servers", v6.address(), "--json", "count", "signup", "ann", "--window", "1m"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["windows"][0]["count"], 1);
}

TEST_F(CliTest, HostileFeatureIsCountedAsItselfAndTouchesNothingElse) {
  ASSERT_EQ(Run({"hit", "signup", "plain"}).code, 0);
  const std::string hostile = "x\r\nflush_all\r\n";
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Run({"hit", "signup", hostile}).code, 0);
  ASSERT_EQ(Run({"hit", "signup", "a b"}).code, 0);
  EXPECT_EQ(Json(Run({"count", "signup", hostile, "--json"}))["windows"][3]["count"], 3);
  EXPECT_EQ(Json(Run({"count", "signup", "plain", "--json"}))["windows"][3]["count"], 1);
  EXPECT_EQ(Json(Run({"count", "signup", "a b", "--json"}))["windows"][3]["count"], 1);
  EXPECT_EQ(Json(Run({"count", "signup", "x", "--json"}))["windows"][3]["count"], 0);
}

// A feature or a policy file may hold bytes that rewrite or recolour a terminal: every text output
// and message shows them spelled out, never raw.
TEST_F(CliTest, TextOutputSpellsOutBytesThatWouldRewriteTheTerminal) {
  const std::string hostile = "x\r\nInjected: 1 \x1b[31mred\xe2\x80\xae";
  const std::string shown = "x\\r\\nInjected: 1 \\x1b[31mred\\u{202e}";
  const std::string overrides = TempFile("overrides.yaml",
                                         "events:\n  signup:\n    limits: [5/m]\n    overrides:\n  "
                                         "    \"x\\r\\n\\e[31m\\u202e\": {limits: [9/m]}\n");
  const std::string broken = TempFile("broken.yaml", "events:\n  \x1b[2J\x1b[31m: [\n");
  const std::vector<std::pair<std::string, ProcessResult>> runs = {
      {"hit", Run({"hit", "signup", hostile})},
      {"count", Run({"count", "signup", hostile})},
      {"check", Run({"check", "signup", hostile, "--limit", "5/m"})},
      {"inspect", Run({"inspect", "signup", hostile})},
      {"reset", Run({"reset", "signup", hostile})},
      {"policy validate", RunBare({"policy", "validate", overrides})},
      {"a broken policy", RunBare({"policy", "validate", broken})},
      {"an unknown event", Run({"check", hostile, "ann", "--policy", overrides})}};
  for (const auto& [what, r] : runs) {
    for (const std::string& text : {r.out, r.err}) {
      for (const char* raw : {"\r", "\x1b", "\xe2\x80\xae"}) {
        EXPECT_EQ(text.find(raw), std::string::npos) << what << ": " << DisplayText(text);
      }
    }
  }
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_NE(runs[i].second.out.find(shown), std::string::npos)
        << runs[i].first << ": " << runs[i].second.out << runs[i].second.err;
  }
  EXPECT_NE(runs[5].second.out.find("override \"x\\r\\n\\x1b[31m\\u{202e}\""), std::string::npos)
      << runs[5].second.out;
  EXPECT_EQ(runs[6].second.code, 2);
  EXPECT_EQ(runs[7].second.code, 2);
  EXPECT_NE(runs[7].second.err.find(shown), std::string::npos) << runs[7].second.err;
}

// Replay, then count at past instants: a trace replayed into memcached, then `count --at` at random
// instants equals the brute-force count.
TEST_F(CliTest, ReplayThenCountAtEqualsTheBruteForceCount) {
  std::mt19937_64 rng(3);
  const std::vector<std::string> features = {"10.0.0.1", "10.0.0.2", "Ann Smith <ann@x>"};
  std::vector<testing::SlidingLog> logs(features.size());
  std::string trace = "# a generated trace\n";
  int64_t t = kAt;
  for (int i = 0; i < 3000; ++i) {
    t += static_cast<int64_t>(rng() % 60);
    const size_t f = rng() % features.size();
    const uint64_t cost = 1 + rng() % 2;
    trace += std::to_string(t) + "\tsignup\t" + features[f] + "\t" + std::to_string(cost) + "\n";
    logs[f].Add(t, cost);
  }
  ProcessResult r = Run({"replay", TempFile("trace.tsv", trace), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json summary = Json(r);
  EXPECT_EQ(summary["lines"], 3000);
  EXPECT_EQ(summary["checked"], false);
  for (int q = 0; q < 30; ++q) {
    const int64_t at = kAt + static_cast<int64_t>(rng() % static_cast<uint64_t>(t - kAt + 100));
    const size_t f = rng() % features.size();
    r = Run({"count", "signup", features[f], "--at", std::to_string(at), "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    json j = Json(r);
    for (const json& w : j["windows"]) {
      ASSERT_EQ(w["count"].get<uint64_t>(), logs[f].Window(at, w["window"].get<int64_t>()))
          << features[f] << " at " << at << " window " << w["window"];
    }
  }
}

// --settle-margin widens every bucket's TTL (and the engine's wait before caching a bucket) by
// what the clients' clocks may differ; out of range it is refused naming the option.
TEST_F(CliTest, SettleMarginIsAnOptionAndLengthensTheBucketsLife) {
  // A second's own TTL: a counter of the counters layout (a pack lives its longest bucket's).
  const std::string at = std::to_string(kAt);
  ASSERT_EQ(
      Run({"--layout", "counters", "hit", "signup", "skewed", "--at", at, "--settle-margin", "10m"})
          .code,
      0);
  ASSERT_EQ(Run({"--layout", "counters", "hit", "signup", "plain", "--at", at}).code, 0);
  const auto ttl = [&](const std::string& feature) {
    const std::string answer = server_.Raw("mg hg:signup:" + feature + ":1:" + at + " t\r\n");
    return answer.starts_with("HD t") ? std::stoll(answer.substr(4)) : -1;
  };
  // A second's TTL: the retention, the next width, the margin.
  EXPECT_GE(ttl("skewed"), 86400 + 60 + 600 - 2);
  EXPECT_LE(ttl("skewed"), 86400 + 60 + 600);
  EXPECT_GE(ttl("plain"), 86400 + 60 + 5 - 2);
  EXPECT_LE(ttl("plain"), 86400 + 60 + 5);
  for (const char* bad : {"2h", "soon", "-5s"}) {
    ProcessResult r =
        Run({"--layout", "counters", "count", "signup", "plain", "--settle-margin", bad});
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("--settle-margin"), std::string::npos) << r.err;
  }
  EXPECT_EQ(Run({"--layout", "counters", "count", "signup", "plain", "--settle-margin", "0"}).code,
            0);
}

// The packed layout through the command: a replay written packed counts exactly (against a
// brute-force log) packed, and through the counters layout reading both; reset empties it; a bad
// layout is refused naming the choices.
TEST_F(CliTest, ThePackedLayoutCountsExactlyAndAClientReadingBothSeesTheSame) {
  std::mt19937_64 rng(5);
  testing::SlidingLog log;
  std::string trace;
  int64_t t = kAt;
  for (int i = 0; i < 2000; ++i) {
    t += static_cast<int64_t>(rng() % 40);
    trace += std::to_string(t) + "\tsignup\tann\t1\n";
    log.Add(t, 1);
  }
  ProcessResult r = Run({"--layout", "packed", "replay", TempFile("packed.tsv", trace), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (int q = 0; q < 12; ++q) {
    const int64_t at = kAt + static_cast<int64_t>(rng() % static_cast<uint64_t>(t - kAt + 100));
    for (const std::vector<std::string>& layout :
         {std::vector<std::string>{"--layout", "packed"},
          std::vector<std::string>{"--layout", "counters", "--read-both-layouts"}}) {
      std::vector<std::string> args = layout;
      for (const char* a : {"count", "signup", "ann", "--json", "--at"}) args.push_back(a);
      args.push_back(std::to_string(at));
      r = Run(args);
      ASSERT_EQ(r.code, 0) << r.err;
      const json j = Json(r);
      for (const json& w : j["windows"]) {
        ASSERT_EQ(w["count"].get<uint64_t>(), log.Window(at, w["window"].get<int64_t>()))
            << layout[1] << " at " << at << " window " << w["window"];
      }
    }
  }
  const std::string at = std::to_string(t);
  ASSERT_EQ(Run({"--layout", "packed", "reset", "signup", "ann", "--at", at}).code, 0);
  r = Run({"--layout", "packed", "count", "signup", "ann", "--at", at, "--json"});
  const json counts = Json(r);
  for (const json& w : counts["windows"]) EXPECT_EQ(w["count"], 0);
  r = Run({"--layout", "dense", "count", "signup", "ann"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--layout"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("packed"), std::string::npos) << r.err;
}

// memcached lives in real time while a replay drives the engine with the trace's: with a retention
// over 30 days the buckets' TTLs are absolute times, which must come from the real clock, or the
// replayed hits (from 2015) would expire as they are written.
// Adding a third memcached server moves about a third of the features to it: without
// --previous-servers they start again from zero and clients at their limit are admitted again;
// with it, no count is lost.
// A client of 0.1 (whose default layout was counters) beside one started as before on 0.2 (packed):
// each tells the split through the shared day ledger; with --read-both-layouts both count every
// hit, which is the documented upgrade path.
TEST_F(CliTest, UpgradingFromCountersDefaultIsToldAndReadingBothLayoutsCountsEveryHit) {
  // The ledger is not compared in an hour's last seconds, and a day's hits stay in their day.
  const int64_t into_hour = std::time(nullptr) % 3600;
  if (into_hour > 3590) std::this_thread::sleep_for(std::chrono::seconds(3602 - into_hour));
  const std::vector<std::string> old_client = {"--layout", "counters", "--json"};
  const auto check = [&](std::vector<std::string> client) {
    for (const char* a : {"check", "signup", "ann@example.com", "--limit", "10/d"}) {
      client.push_back(a);
    }
    ProcessResult r = Run(client);
    EXPECT_EQ(r.code, 0) << r.err;
    return Json(r);
  };
  for (int i = 0; i < 3; ++i) check(old_client);

  const json told = check({"--json"});
  EXPECT_EQ(told["degraded"], true) << told;
  EXPECT_NE(told["error"].get<std::string>().find("data loss"), std::string::npos) << told;
  EXPECT_EQ(told["limits"][0]["count"], 4) << "the day still counts the other layout's hits";
  const json old_told = check(old_client);
  EXPECT_EQ(old_told["degraded"], true) << "the 0.1 client is told too: " << old_told;
  EXPECT_EQ(old_told["limits"][0]["count"], 5) << old_told;

  for (const std::vector<std::string>& both :
       {std::vector<std::string>{"--json", "--read-both-layouts"},
        std::vector<std::string>{"--layout", "counters", "--read-both-layouts", "--json"}}) {
    const json exact = check(both);
    EXPECT_EQ(exact["degraded"], false) << exact;
  }
  ProcessResult count = Run(
      {"--read-both-layouts", "--json", "count", "signup", "ann@example.com", "--window", "1d"});
  ASSERT_EQ(count.code, 0) << count.err;
  EXPECT_EQ(Json(count)["windows"][0]["count"], 7) << "every hit, whichever layout wrote it";
}

TEST_F(CliTest, PreviousServersKeepTheCountsOfFeaturesThatMovedToANewServer) {
  testing::MemcachedServer b, c;
  ASSERT_TRUE(b.running() && c.running());
  const std::string before = server_.address() + "," + b.address();
  const std::string after = before + "," + c.address();
  const int64_t now = std::time(nullptr);
  std::string first, second;
  for (int i = 0; i < 300; ++i) {
    for (int k = 0; k < 3; ++k) {
      const std::string feature = "\tsignup\tuser" + std::to_string(i) + "@example.com\n";
      first += std::to_string(now - 120) + feature;
      second += std::to_string(now - 60) + feature;
    }
  }
  const std::string first_trace = TempFile("first.tsv", first);
  const std::string second_trace = TempFile("second.tsv", second);
  const auto replay = [&](const std::string& ns, std::vector<std::string> servers,
                          const std::string& trace) {
    std::vector<std::string> args = {"--namespace", ns};
    args.insert(args.end(), servers.begin(), servers.end());
    for (const char* a : {"--json", "replay", "--limit", "3/h"}) args.push_back(a);
    args.push_back(trace);
    ProcessResult r = RunBare(args);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? Json(r) : json();
  };
  for (const bool transition : {false, true}) {
    const std::string ns = transition ? "with" : "without";
    const json at_limit = replay(ns, {"--servers", before}, first_trace);
    EXPECT_EQ(at_limit["admitted"], 900) << at_limit;
    std::vector<std::string> servers = {"--servers", after};
    if (transition) servers.insert(servers.end(), {"--previous-servers", before});
    const json again = replay(ns, servers, second_trace);
    if (transition) {
      EXPECT_EQ(again["admitted"], 0) << "no count lost: " << again;
    } else {
      EXPECT_GT(again["admitted"].get<int>(), 150) << "about a third moved: " << again;
    }
  }
  ProcessResult bad =
      RunBare({"--servers", after, "--previous-servers", "nope", "count", "e", "f"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--previous-servers: "), std::string::npos) << bad.err;
}

TEST_F(CliTest, ReplayWithALongRetentionKeepsItsBucketsInMemcached) {
  std::string trace;
  for (int i = 0; i < 5; ++i) trace += std::to_string(kAt + i) + "\tsignup\tann@example.com\n";
  ProcessResult r = Run({"--retention", "40d", "replay", TempFile("long.tsv", trace)});
  ASSERT_EQ(r.code, 0) << r.err;
  r = Run({"--retention", "40d", "count", "signup", "ann@example.com", "--window", "1d", "--at",
           std::to_string(kAt + 10), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["windows"][0]["count"], 5);
}

// A blocked client's attempts are sent without waiting; if memcached refuses them, replay says
// so instead of losing them silently.
TEST_F(CliTest, ReplayReportsWritesMemcachedRefused) {
  // memcached refuses an increment of a counter that is not a number (the counters layout).
  std::string trace;
  for (int64_t t : {kAt, kAt, kAt + 1, kAt + 1, kAt + 1}) {
    trace += std::to_string(t) + "\tlogin\tmallory\t1\n";
  }
  const std::string file = TempFile("refused.tsv", trace);
  // Poison the per-second bucket the blocked attempts at kAt + 1 go to.
  const std::string key = "hg:login:mallory:1:" + std::to_string(kAt + 1);
  ASSERT_EQ(server_.Raw("set " + key + " 0 600 1\r\nx\r\n"), "STORED\r\n");
  ProcessResult r = Run(
      {"--layout", "counters", "--json", "replay", file, "--limit", "1/m", "--mode", "attempts"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = Json(r);
  EXPECT_EQ(j["admitted"], 1);
  EXPECT_EQ(j["blocked_hits"], 3) << "the attempts at kAt + 1 were answered locally";
  EXPECT_EQ(j["unconfirmed_failures"], 3);
  ASSERT_TRUE(server_.Raw("flush_all\r\n").starts_with("OK"));
  ASSERT_EQ(server_.Raw("set " + key + " 0 600 1\r\nx\r\n"), "STORED\r\n");
  r = Run({"--layout", "counters", "replay", file, "--limit", "1/m", "--mode", "attempts"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("warning: the store refused 3 fire-and-forget writes"), std::string::npos)
      << r.out;
  // Unpoisoned, nothing is reported.
  ASSERT_TRUE(server_.Raw("flush_all\r\n").starts_with("OK"));
  r = Run(
      {"--layout", "counters", "--json", "replay", file, "--limit", "1/m", "--mode", "attempts"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["unconfirmed_failures"], 0);
}

// --decisions: one JSON line per hit, each exactly the decision of a perfect limiter.
TEST_F(CliTest, ReplayDecisionsEqualAPerfectSlidingWindowLimiter) {
  std::mt19937_64 rng(4);
  std::string trace;
  std::vector<int64_t> times;
  int64_t t = kAt;
  for (int i = 0; i < 400; ++i) {
    t += static_cast<int64_t>(rng() % 4 == 0 ? rng() % 200 : rng() % 3);
    times.push_back(t);
    trace += std::to_string(t) + "\turl_shorten\t203.0.113.7\n";
  }
  ProcessResult r = Run({"--store", "memory", "replay", TempFile("burst.tsv", trace), "--limit",
                         "2/s", "--limit", "5/m", "--limit", "10/h", "--decisions"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("admitted"), std::string::npos) << "the summary goes to stderr";
  testing::SlidingLog admitted;
  std::istringstream lines(r.out);
  std::string line;
  size_t n = 0;
  while (std::getline(lines, line)) {
    const json d = json::parse(line);
    const int64_t at = times[n++];
    ASSERT_EQ(d["at"], at);
    ASSERT_EQ(d["line"], static_cast<int64_t>(n)) << "the trace is in time order: line = hit";
    const bool expect =
        admitted.Window(at, 1) < 2 && admitted.Window(at, 60) < 5 && admitted.Window(at, 3600) < 10;
    ASSERT_EQ(d["allowed"], expect) << "hit " << n << " at " << at;
    if (expect) admitted.Add(at);
  }
  EXPECT_EQ(n, times.size());
}

TEST_F(CliTest, ReplayTheRealApacheLog) {
  const std::string log =
      std::string(HOURGLASS_SOURCE_DIR) + "/../shared/data/apache_access_2015.log";
  ASSERT_TRUE(std::ifstream(log).good()) << log << ": the shared data must sit beside the checkout";
  ProcessResult r = Run(
      {"--store", "memory", "replay", log, "--format", "apache", "--policy", Policy(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = Json(r);
  EXPECT_EQ(j["lines"], 10000);
  EXPECT_EQ(j["admitted"].get<int>() + j["denied"].get<int>(), 10000);
  EXPECT_GT(j["denied"].get<int>(), 0);
  EXPECT_EQ(j["features"], 1753);
  EXPECT_EQ(j["busiest"]["feature"], "66.249.73.135");
  EXPECT_EQ(j["top"].size(), 10u);
  // The most denied client, with its first and last hit and denial, as the decisions say.
  const json& most = j["most_denied"];
  EXPECT_EQ(most["feature"], j["top"][0]["feature"]);
  EXPECT_EQ(most["denied"], j["top"][0]["denied"]);
  ProcessResult lines = Run({"--store", "memory", "replay", log, "--format", "apache", "--policy",
                             Policy(), "--decisions"});
  ASSERT_EQ(lines.code, 0) << lines.err;
  int64_t first = 0, last = 0, first_denied = 0, last_denied = 0;
  std::istringstream decisions(lines.out);
  for (std::string line; std::getline(decisions, line);) {
    const json d = json::parse(line);
    if (d["feature"] != most["feature"]) continue;
    const int64_t at = d["at"];
    if (first == 0) first = at;
    last = at;
    if (d["allowed"].get<bool>()) continue;
    if (first_denied == 0) first_denied = at;
    last_denied = at;
  }
  EXPECT_EQ(most["first_at"], first);
  EXPECT_EQ(most["last_at"], last);
  EXPECT_EQ(most["first_denied_at"], first_denied);
  EXPECT_EQ(most["last_denied_at"], last_denied);
  EXPECT_NE(lines.err.find("most denied: request " + most["feature"].get<std::string>()),
            std::string::npos)
      << lines.err;
  // The hot path: mostly one round trip, some two, none for blocked clients; few keys read.
  EXPECT_LE(j["round_trips"].get<int>(), 2 * 10000);
  EXPECT_GT(j["blocked_hits"].get<int>(), 0);
  EXPECT_GT(j["cache_hits"].get<int>(), 0);
  EXPECT_LE(j["keys_read_p50"].get<int>(), 8);
  EXPECT_LE(j["keys_read_p99"].get<int>(), 40);
  // The same decisions without the hot path.
  ProcessResult exact = Run({"--exact-cover", "--store", "memory", "replay", log, "--format",
                             "apache", "--policy", Policy(), "--json"});
  ASSERT_EQ(exact.code, 0) << exact.err;
  const json e = Json(exact);
  EXPECT_EQ(e["admitted"], j["admitted"]);
  EXPECT_EQ(e["denied"], j["denied"]);
  EXPECT_EQ(e["top"], j["top"]);
  EXPECT_EQ(e["round_trips"], 10000);
  EXPECT_EQ(e["cache_hits"], 0);
}

// Hits of one second are checked in batches (one CheckMany each); every decision, byte for byte,
// is the one a check at a time gives, into real memcached.
TEST_F(CliTest, ReplayInBatchesDecidesAsOneAtATime) {
  const std::string log =
      std::string(HOURGLASS_SOURCE_DIR) + "/../shared/data/apache_access_2015.log";
  const std::vector<std::string> replay = {"replay",   log,      "--format",   "apache",
                                           "--policy", Policy(), "--decisions"};
  std::vector<std::string> batched = {"--namespace", "batched"}, alone = {"--namespace", "alone"};
  batched.insert(batched.end(), replay.begin(), replay.end());
  alone.insert(alone.end(), replay.begin(), replay.end());
  alone.insert(alone.end(), {"--batch", "1"});
  ProcessResult a = Run(batched), b = Run(alone);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const auto decisions = [](const std::string& out) {
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  // Costs too: each decision's is its own check's, as if alone.
  const std::vector<std::string> x = decisions(a.out), y = decisions(b.out);
  ASSERT_EQ(x.size(), 10000u);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << "hit " << i + 1;
  std::vector<std::string> summary = {"--namespace", "summary", "--json",   "replay", log,
                                      "--format",    "apache",  "--policy", Policy()};
  ProcessResult s = Run(summary);
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(Json(s)["batches"], 4362) << "one per second the log has hits in";
}

TEST_F(CliTest, PolicyValidate) {
  ProcessResult r = RunBare({"policy", "validate", Policy()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid"), std::string::npos);
  EXPECT_NE(r.out.find("url_shorten: 2/s, 5/m, 10/h, 100/d"), std::string::npos) << r.out;
  r = RunBare({"policy", "validate", Policy(), "--json"});
  EXPECT_EQ(Json(r)["valid"], true);
  const std::string bad = TempFile("bad.yaml", "events:\n  a:\n    limits: [5/m, 7/q]\n");
  r = RunBare({"policy", "validate", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(bad + ":3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("7/q"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// A policy that check would refuse under the retention in force does not validate either.
TEST_F(CliTest, PolicyValidateChecksWindowsAgainstTheRetention) {
  const std::string file = TempFile(
      "long.yaml", "events:\n  a:\n    limits: [5/m]\n    overrides: {x: {limits: [5/2d]}}\n");
  ProcessResult r = RunBare({"policy", "validate", file});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("override \"x\": limit 5/2d is longer than the retention (1d)"),
            std::string::npos)
      << r.err;
  r = RunBare({"--retention", "2d", "policy", "validate", file});
  EXPECT_EQ(r.code, 0) << r.err;
}

// Limits that never bind or are given twice are valid but pointed out.
TEST_F(CliTest, PolicyValidateNotesLimitsThatNeverBindOrRepeat) {
  const std::string file =
      TempFile("doubtful.yaml", "events:\n  a:\n    limits: [10/m, 5/h, 5/h]\n");
  ProcessResult r = RunBare({"policy", "validate", file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("note: " + file + ":2: event \"a\": limit 5/h is given twice"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("limit 10/m never binds: 5/h allows no more hits"), std::string::npos)
      << r.out;
  EXPECT_EQ(Json(RunBare({"policy", "validate", file, "--json"}))["remarks"].size(), 2u);
}

// The default windows stop at the retention: count and inspect work with --retention 1h.
TEST_F(CliTest, CountAndInspectWithAShortRetention) {
  ASSERT_EQ(Run({"--retention", "1h", "hit", "e", "f"}).code, 0);
  ProcessResult r = Run({"--retention", "1h", "count", "e", "f", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json windows = Json(r)["windows"];
  ASSERT_EQ(windows.size(), 3u) << r.out;
  EXPECT_EQ(windows[2]["window"], 3600);
  EXPECT_EQ(windows[2]["count"], 1);
  r = Run({"--retention", "1h", "inspect", "e", "f"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = Run({"--retention", "90m", "count", "e", "f", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json(r)["windows"].back()["window"], 5400) << "the retention itself, last";
}

// Typos are caught: an unknown command or option suggests the closest, an event missing from
// --policy is a warning, and --version answers.
TEST_F(CliTest, TyposAreNamedWithTheirClosestMatch) {
  ProcessResult r = RunBare({"chek", "a", "b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown command or argument \"chek\" (did you mean \"check\"?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("serve"), std::string::npos) << "every command is listed: " << r.err;
  r = RunBare({"--store", "memory", "check", "a", "b", "--limt", "5/m"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown option \"--limt\" (did you mean \"--limit\"?)"), std::string::npos)
      << r.err;
  r = Run({"reset", "sigup", "ann", "--policy", Policy()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: unknown event \"sigup\""), std::string::npos) << r.err;
  r = Run({"reset", "signup", "ann", "--policy", Policy()});
  EXPECT_EQ(r.err, "");
  r = RunBare({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("hourglass ", 0), 0u) << r.out;
}

// One memcached spelled two ways in one list is two servers to the ring: the CLI warns.
TEST_F(CliTest, WarnsWhenAListNamesOneServerTwice) {
  const std::string port = std::to_string(server_.port());
  ProcessResult r =
      RunBare({"--servers", "localhost:" + port + ",127.0.0.1:" + port, "count", "e", "f"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: servers \"localhost:" + port + "\" and \"127.0.0.1:" + port +
                       "\" are one memcached"),
            std::string::npos)
      << r.err;
  r = Run({"count", "e", "f"});
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

// A stalled server answers nothing, yet applies what it was sent when it resumes: the failure
// says the hit may have been recorded (at least once), and it was.
TEST_F(CliTest, AHitToAStalledServerSaysItMayHaveBeenRecorded) {
  ASSERT_TRUE(server_.Freeze());
  ProcessResult r = Run({"--timeout-ms", "200", "hit", "signup", "stalled"});
  server_.Thaw();
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("may have been applied"), std::string::npos) << r.err;
  ProcessResult count = Run({"--json", "count", "signup", "stalled", "--window", "1m"});
  ASSERT_EQ(count.code, 0) << count.err;
  EXPECT_EQ(Json(count)["windows"][0]["count"], 1) << "applied when the server resumed";
  // Refused before anything was sent: no such warning.
  const std::string dead = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  r = RunBare({"--servers", dead, "--timeout-ms", "200", "hit", "signup", "stalled"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.find("may have been applied"), std::string::npos) << r.err;
}

TEST_F(CliTest, BadInputsExitTwoWithAClearMessage) {
  const std::string malformed = TempFile("malformed.tsv", "1431857103\te\tf\nnot a line\n");
  const std::string huge_line =
      TempFile("huge.tsv", "1431857103\te\tf\n1431857104\te\t" + std::string(300000, 'x') + "\n");
  const std::string bad_apache =
      TempFile("bad.log", "1.2.3.4 - - [17/May/2015:10:05:03 +0000] x\ngarbage\n");
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {{"check", "e", "f", "--limit", "5/x"}, "limit \"5/x\""},
           {{"check", "e", "f", "--limit", "five/m"}, "bad count"},
           {{"check", "e", "f"}, "no limits"},
           {{"check", "e", "f", "--limit", "1/m", "--policy", Policy()}, "not both"},
           {{"check", "e", "f", "--limit", "1/m", "--mode", "sometimes"}, "--mode sometimes"},
           {{"check", "e", "f", "--limit", "1/m", "--cost", "0"}, "--cost 0"},
           {{"hit", "e", "f", "--cost", "4611686018427387904"}, "from 1 to 1000000000"},
           {{"check", "e", "f", "--limit", "1/m", "--cost", "1000000001"}, "from 1 to 1000000000"},
           {{"check", "e", "f", "--limit", "1/2d"}, "retention"},
           {{"check", "e", "f", "--policy", "/nonexistent.yaml"}, "cannot read"},
           {{"count", "e", "f", "--window", "10x"}, "unknown unit"},
           {{"count", "e", "f", "--at", "yesterday"}, "--at \"yesterday\""},
           {{"count", "e", "f", "--at", "2015-05-17T10:05:03"}, "ISO 8601 time with its offset"},
           {{"count", "e"}, "feature"},
           {{"count", "", "f"}, "event must not be empty"},
           {{"frobnicate"}, "frobnicate"},
           {{"replay", "/nonexistent.tsv"}, "/nonexistent.tsv: cannot read"},
           {{"replay", std::filesystem::path(malformed).parent_path().string()}, "is a directory"},
           {{"replay", huge_line}, "huge.tsv:2: a line longer than"},
           {{"hit", "e", std::string(70000, 'f')}, "feature of 70000 bytes"},
           {{"replay", malformed}, ":2: expected UNIX_SECONDS"},
           {{"replay", bad_apache, "--format", "apache"}, "bad.log:2:"},
           {{"replay", malformed, "--format", "csv"}, "--format csv"},
           {{"--servers", "localhost", "count", "e", "f"}, "host:port"},
           {{"--servers", "h:99999", "count", "e", "f"}, "host:port"},
           {{"--servers", "[]:1", "count", "e", "f"}, "host:port"},
           {{"--servers", "a[b]:1", "count", "e", "f"}, "host:port"},
           {{"--servers", "-bad:1", "count", "e", "f"}, "host:port"},
           {{"--namespace", "a b", "count", "e", "f"}, "namespace"},
           {{"--store", "mongodb", "count", "e", "f"}, "expected memcached, redis"},
           {{"--store", "redis://h:1", "--servers", "h:2", "count", "e", "f"}, "give one"},
           {{"--retention", "forever", "count", "e", "f"}, "--retention"},
       }) {
    std::vector<std::string> args = c.args;
    ProcessResult r = Run(args);
    EXPECT_EQ(r.code, 2) << args[0] << " " << (args.size() > 1 ? args[1] : "") << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos)
        << "expected \"" << c.says << "\" in: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_LT(r.err.size(), 1000u) << "bad input is named, never echoed whole";
  }
}

TEST_F(CliTest, UnreachableStoreExitsThreeNamingTheServer) {
  const std::string dead = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r = RunBare({"--servers", dead, "--timeout-ms", "200", "count", "e", "f"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds{5});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("memcached " + dead), std::string::npos) << r.err;
  for (const char* cmd : {"hit", "inspect", "reset"}) {
    r = RunBare({"--servers", dead, cmd, "e", "f"});
    EXPECT_EQ(r.code, 3) << cmd << ": " << r.err;
  }
  // check: exit 3, and the decision the policy asks for on stdout.
  r = RunBare(
      {"--servers", dead, "check", "url_shorten", "1.2.3.4", "--policy", Policy(), "--json"});
  EXPECT_EQ(r.code, 3);
  json j = Json(r);
  EXPECT_EQ(j["allowed"], true) << "url_shorten fails open";
  EXPECT_EQ(j["degraded"], true);
  r = RunBare({"--servers", dead, "check", "signup", "ann", "--policy", Policy(), "--json"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(Json(r)["allowed"], false) << "signup fails closed";
  const std::string trace = TempFile("one.tsv", "1431857103\te\tf\n");
  r = RunBare({"--servers", dead, "replay", trace});
  EXPECT_EQ(r.code, 3) << r.err;
}

TEST_F(CliTest, ServersComeFromTheEnvironment) {
  ProcessResult r = testing::RunProcess({HOURGLASS_CLI, "hit", "env", "f"},
                                        {"HOURGLASS_SERVERS=" + server_.address()});
  EXPECT_EQ(r.code, 0) << r.err;
  r = Run({"count", "env", "f", "--window", "1h", "--json"});  // not 1s: a slow start may cross it
  EXPECT_EQ(Json(r)["windows"][0]["count"], 1);
}

// HOURGLASS_REPLICAS is read as --replicas is: a value out of range or not a number is a usage
// error naming it, not one copy in silence.
TEST_F(CliTest, ReplicasFromTheEnvironmentAreCheckedAsTheOption) {
  for (const std::string value : {"abc", "0", "17"}) {
    ProcessResult r =
        testing::RunProcess({HOURGLASS_CLI, "count", "env", "f"}, {"HOURGLASS_REPLICAS=" + value});
    EXPECT_EQ(r.code, 2) << value << ": " << r.err;
    EXPECT_NE(r.err.find("--replicas"), std::string::npos) << r.err;
  }
}

// The same commands on Redis (--store redis, or a URL): a replayed trace counts exactly at any
// instant, check decides and exits by it, reset clears; a password comes from the URL or
// HOURGLASS_REDIS_PASSWORD, and a wrong one is named with its fix.
TEST(CliRedisTest, ReplayCountCheckAndResetOnRedis) {
  testing::RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.error();
  const auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {HOURGLASS_CLI, "--store", "redis", "--servers", redis.address()});
    return testing::RunProcess(args);
  };
  std::mt19937_64 rng(11);
  testing::SlidingLog log;
  std::string trace;
  int64_t t = kAt;
  for (int i = 0; i < 1500; ++i) {
    t += static_cast<int64_t>(rng() % 50);
    trace += std::to_string(t) + "\tsignup\tann\t1\n";
    log.Add(t, 1);
  }
  const std::string path = testing::UniqueTempPath("redis_trace.tsv");
  std::ofstream(path) << trace;
  ProcessResult r = run({"replay", path, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (int q = 0; q < 10; ++q) {
    const int64_t at = kAt + static_cast<int64_t>(rng() % static_cast<uint64_t>(t - kAt + 100));
    r = run({"count", "signup", "ann", "--json", "--at", std::to_string(at)});
    ASSERT_EQ(r.code, 0) << r.err;
    const json j = json::parse(r.out);
    for (const json& w : j["windows"]) {
      ASSERT_EQ(w["count"].get<uint64_t>(), log.Window(at, w["window"].get<int64_t>()))
          << "at " << at << " window " << w["window"];
    }
  }
  ASSERT_EQ(run({"reset", "signup", "ann", "--at", std::to_string(t)}).code, 0);
  r = run({"count", "signup", "ann", "--at", std::to_string(t), "--json"});
  const json reset = json::parse(r.out);
  for (const json& w : reset["windows"]) EXPECT_EQ(w["count"], 0);
  // Live checks, by URL this time: two fit, the third is denied (exit 1).
  const std::string url = "redis://" + redis.address();
  for (int expected : {0, 0, 1}) {
    r = testing::RunProcess(
        {HOURGLASS_CLI, "--store", url, "check", "signup", "bob", "--limit", "2/h"});
    EXPECT_EQ(r.code, expected) << r.err;
  }
  r = testing::RunProcess({HOURGLASS_CLI, "--store", "redis-cluster", "count", "e", "f"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--servers"), std::string::npos) << r.err;
}

TEST(CliRedisTest, APasswordComesFromTheUrlOrTheEnvironmentAndAWrongOneIsNamed) {
  testing::RedisServer redis({.password = "s3cret:%"});
  ASSERT_TRUE(redis.running()) << redis.error();
  ProcessResult r = testing::RunProcess(
      {HOURGLASS_CLI, "--store", "redis://:s3cret%3A%25@" + redis.address(), "hit", "e", "f"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = testing::RunProcess({HOURGLASS_CLI, "--store", "redis", "--servers", redis.address(), "count",
                           "e", "f", "--window", "1m", "--json"},
                          {"HOURGLASS_REDIS_PASSWORD=s3cret:%"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["windows"][0]["count"], 1);
  r = testing::RunProcess(
      {HOURGLASS_CLI, "--store", "redis", "--servers", redis.address(), "count", "e", "f"},
      {"HOURGLASS_REDIS_PASSWORD=wrong"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("HOURGLASS_REDIS_PASSWORD"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("s3cret"), std::string::npos) << "a password is never echoed";
  r = testing::RunProcess(
      {HOURGLASS_CLI, "--store", "redis", "--servers", redis.address(), "count", "e", "f"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("password"), std::string::npos) << r.err;
}

// On a host with the package, the CLI reads the service's environment file: `count` finds the
// service's store with no flags; the environment and the options win over the file; a file named
// but missing or malformed is refused naming it; `--help` says which file was read.
TEST_F(CliTest, TheHostsEnvironmentFileNamesTheStore) {
  const std::string env =
      TempFile("hourglass.env",
               "# as /etc/default/hourglass\nHOURGLASS_SERVERS=" + server_.address() + "\n");
  ASSERT_EQ(
      testing::RunProcess({HOURGLASS_CLI, "--env-file", env, "hit", "signup", "ann", "--cost", "3"})
          .code,
      0);
  ProcessResult counted =
      testing::RunProcess({HOURGLASS_CLI, "count", "signup", "ann", "--window", "1h", "--json"},
                          {"HOURGLASS_ENV_FILE=" + env});
  ASSERT_EQ(counted.code, 0) << counted.err;
  EXPECT_EQ(Json(counted)["windows"][0]["count"], 3);
  ProcessResult env_wins = testing::RunProcess(
      {HOURGLASS_CLI, "count", "signup", "ann", "--window", "1h", "--timeout-ms", "200"},
      {"HOURGLASS_ENV_FILE=" + env, "HOURGLASS_SERVERS=127.0.0.1:1"});
  EXPECT_EQ(env_wins.code, 3) << "the environment's server, unreachable: " << env_wins.out;
  ProcessResult help = testing::RunProcess({HOURGLASS_CLI, "--env-file", env, "--help"});
  EXPECT_NE(help.out.find("Environment file: " + env +
                          " (read; set HOURGLASS_SERVERS=" + server_.address() + ")"),
            std::string::npos)
      << help.out;

  ProcessResult missing = RunBare({"--env-file", "/nonexistent/hourglass.env", "count", "a", "b"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/hourglass.env: no such file"), std::string::npos)
      << missing.err;
  ProcessResult bad =
      RunBare({"--env-file", TempFile("bad.env", "HOURGLASS_SERVERS\n"), "count", "a", "b"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find(":1: expected NAME=VALUE"), std::string::npos) << bad.err;
}

// "Who is blocked, and until when": with the event's policy (--policy or HOURGLASS_POLICY),
// count and inspect tell each limit's count of its maximum, the limit that binds and when the
// client is free; check --peek tells the same and records nothing.
TEST_F(CliTest, CountInspectAndPeekTellUntilWhenAClientIsLimited) {
  const std::string policy = TempFile("until.yaml", "events:\n  login:\n    limits: [2/m, 9/h]\n");
  const std::string at = std::to_string(kAt);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(Run({"hit", "login", "ann", "--at", at}).code, 0);
  }
  const std::string later = std::to_string(kAt + 10);
  ProcessResult inspected = Run({"inspect", "login", "ann", "--policy", policy, "--at", later});
  ASSERT_EQ(inspected.code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("a hit now: denied until 2015-05-17T10:06:03Z (in 50s): 2/m binds\n"
                               "  2/m        2 of 2         free at 2015-05-17T10:06:03Z  binds\n"
                               "  9/h        2 of 9\n"),
            std::string::npos)
      << inspected.out;
  ProcessResult counted = testing::RunProcess({HOURGLASS_CLI, "--servers", server_.address(),
                                               "count", "login", "ann", "--at", later, "--json"},
                                              {"HOURGLASS_POLICY=" + policy});
  ASSERT_EQ(counted.code, 0) << counted.err;
  EXPECT_EQ(Json(counted)["until"]["binding"], "2/m");
  EXPECT_EQ(Json(counted)["until"]["free_at"], kAt + 60);

  ProcessResult peek = Run({"check", "login", "ann", "--policy", policy, "--at", later, "--peek"});
  EXPECT_EQ(peek.code, 1) << "denied: " << peek.out << peek.err;
  EXPECT_NE(peek.out.find("(a peek: nothing recorded)"), std::string::npos) << peek.out;
  ProcessResult bob = Run({"check", "login", "bob", "--policy", policy, "--peek", "--json"});
  EXPECT_EQ(bob.code, 0);
  EXPECT_EQ(Json(bob)["binding"], "2/m");
  EXPECT_EQ(Json(bob)["recorded"], false);
  ProcessResult after = Run({"count", "login", "ann", "--at", later, "--window", "1m", "--json"});
  EXPECT_EQ(Json(after)["windows"][0]["count"], 2) << "the peek recorded nothing";
}

}  // namespace
}  // namespace hourglass
