// Policy files: every field parses, overrides apply per feature, bad files name file and line.
#include "hourglass/policy_file.h"

#include <gtest/gtest.h>

#include <fstream>

namespace hourglass {
namespace {

TEST(PolicyFile, TheShippedExampleIsValid) {
  Result<PolicyFile> file =
      PolicyFile::Load(std::string(HOURGLASS_SOURCE_DIR) + "/policies/example.yaml");
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->events().size(), 3u);
  Result<Policy> url = file->For("url_shorten", "1.2.3.4");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(DescribeLimits(url->limits), "2/s, 5/m, 10/h, 100/d");
  EXPECT_EQ(url->mode, CountingMode::kAdmitted);
  EXPECT_EQ(url->on_store_failure, FailureMode::kFailOpen);
  EXPECT_EQ(DescribeLimits(file->For("url_shorten", "198.51.100.10")->limits),
            "20/s, 100/m, 1000/h, 10000/d");
  EXPECT_EQ(DescribeLimits(file->For("url_shorten", "203.0.113.66")->limits), "deny all");
  Result<Policy> signup = file->For("signup", "ann@example.com");
  ASSERT_TRUE(signup.ok());
  EXPECT_EQ(signup->mode, CountingMode::kAttempts);
  EXPECT_EQ(signup->on_store_failure, FailureMode::kFailClosed);
  EXPECT_EQ(signup->limits[2].window.kind(), WindowKind::kCalendar);
}

// on_data_loss is the event's own choice; unset, a loss is treated as on_store_failure says.
TEST(PolicyFile, OnDataLossIsGivenOrFollowsOnStoreFailure) {
  Result<PolicyFile> file = PolicyFile::Parse(
      "events:\n  login: {limits: [5/m], on_data_loss: closed}\n"
      "  browse: {limits: [5/m], on_store_failure: closed}\n  feed: {limits: [5/m]}\n");
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(DataLossMode(*file->For("login", "ann")), FailureMode::kFailClosed);
  EXPECT_EQ(file->For("login", "ann")->on_store_failure, FailureMode::kFailOpen);
  EXPECT_EQ(file->For("browse", "ann")->on_data_loss, std::nullopt);
  EXPECT_EQ(DataLossMode(*file->For("browse", "ann")), FailureMode::kFailClosed);
  EXPECT_EQ(DataLossMode(*file->For("feed", "ann")), FailureMode::kFailOpen);
  EXPECT_NE(file->Explain().find("login: 5/m (admitted mode: denied hits are not counted; store "
                                 "unreachable: fail open; data lost: closed)"),
            std::string::npos)
      << file->Explain();
}

// local: decided in process against a share while the store fails, the share given or not.
TEST(PolicyFile, OnStoreFailureLocalTakesAShare) {
  Result<PolicyFile> file = PolicyFile::Parse(
      "events:\n  api: {limits: [9/m], on_store_failure: local, local_share: 1/3}\n"
      "  feed: {limits: [5/m], on_store_failure: local}\n");
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->For("api", "ann")->on_store_failure, FailureMode::kLocal);
  EXPECT_EQ(file->For("api", "ann")->local_share, (Share{1, 3}));
  EXPECT_EQ(file->For("feed", "ann")->local_share, std::nullopt);
  EXPECT_EQ(DataLossMode(*file->For("feed", "ann")), FailureMode::kFailOpen);
  EXPECT_NE(file->Explain().find("store unreachable: decided here against 1/3 of each limit, then "
                                 "written back; data lost: open"),
            std::string::npos)
      << file->Explain();
}

TEST(PolicyFile, ParsesEveryLimitForm) {
  Result<PolicyFile> file = PolicyFile::Parse(R"(
events:
  api:
    limits:
      - 5/m
      - {max: 10, window: 1h}
      - {max: 100, window: 1d, kind: fixed}
      - {max: 1000, window: month, kind: calendar, utc_offset: "-05:30"}
      - {max: 20, window: hour, kind: calendar}
      - {max: 10000, window: month, kind: calendar, time_zone: Europe/Berlin}
      - {max: 500, window: week, kind: calendar}
      - {max: 50000, window: year, kind: calendar, time_zone: America/New_York}
)");
  ASSERT_TRUE(file.ok()) << file.error().message();
  const Policy p = *file->For("api", "k");
  ASSERT_EQ(p.limits.size(), 8u);
  EXPECT_EQ(
      p.limits[5],
      (Limit{Window::Calendar(CalendarUnit::kMonth, *TimeZone::Named("Europe/Berlin")), 10000}));
  EXPECT_EQ(p.limits[5].window.ToString(), "calendar month Europe/Berlin");
  EXPECT_EQ(p.limits[6], (Limit{*Window::Calendar(CalendarUnit::kWeek), 500}));
  EXPECT_EQ(p.limits[7].window.ToString(), "calendar year America/New_York");
  EXPECT_EQ(p.limits[1], (Limit{*Window::Sliding(Seconds{3600}), 10}));
  EXPECT_EQ(p.limits[2], (Limit{*Window::Fixed(Seconds{86400}), 100}));
  EXPECT_EQ(p.limits[3],
            (Limit{*Window::Calendar(CalendarUnit::kMonth, Seconds{-(5 * 3600 + 1800)}), 1000}));
  EXPECT_EQ(p.limits[4], (Limit{*Window::Calendar(CalendarUnit::kHour), 20}));
  EXPECT_EQ(p.mode, CountingMode::kAdmitted);  // defaults
  EXPECT_EQ(p.on_store_failure, FailureMode::kFailOpen);
  EXPECT_NE(file->Explain().find("api: 5/m"), std::string::npos);
}

TEST(PolicyFile, UnknownEventNamesTheKnownOnes) {
  Result<PolicyFile> file =
      PolicyFile::Parse("events:\n  a: {limits: [1/s]}\n  b: {limits: [1/s]}\n");
  ASSERT_TRUE(file.ok());
  Result<Policy> p = file->For("c", "x");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(p.error().message().find("unknown event \"c\""), std::string::npos);
  EXPECT_NE(p.error().message().find("a, b"), std::string::npos);
}

TEST(PolicyFile, BadFilesNameTheLineAndTheBadPart) {
  struct Case {
    const char* yaml;
    const char* says;
  };
  for (
      const Case& c : {
          Case{"events:\n  a:\n    limits: [5/x]\n", "policy.yaml:3:14: limit \"5/x\""},
          Case{"events:\n  a:\n    limits: []\n", ":3:"},
          Case{"events:\n  a:\n    mode: sometimes\n    limits: [1/s]\n", "mode \"sometimes\""},
          Case{"events:\n  a:\n    limits: [1/s]\n    on_store_failure: maybe\n",
               "use open, closed or local"},
          Case{"events:\n  a:\n    limits: [1/s]\n    local_share: 1/2\n",
               "policy.yaml:4:18: local_share needs on_store_failure: local"},
          Case{
              "events:\n  a:\n    limits: [1/s]\n    on_store_failure: local\n    local_share: 2\n",
              "local_share: share \"2\""},
          Case{"events:\n  a:\n    limits: [1/s]\n    on_data_loss: local\n",
               "on_data_loss is open or closed"},
          Case{"events:\n  a:\n    limits: [1/s]\n    on_data_loss: later\n",
               "policy.yaml:4:19: on_data_loss"},
          Case{"events:\n  a:\n    limit: [1/s]\n", "unknown field \"limit\""},
          Case{"events:\n  a:\n    limits: [{max: 1}]\n", "needs max and window"},
          Case{"events:\n  a:\n    limits: [{max: x, window: 1m}]\n", "bad max \"x\""},
          Case{"events:\n  a:\n    limits: [{max: 1, window: 1m, kind: rolling}]\n",
               "unknown kind"},
          Case{"events:\n  a:\n    limits: [{max: 1, window: fortnight, kind: calendar}]\n",
               "use hour, day, week, month or year"},
          Case{"events:\n  a:\n    limits: [{max: 1, window: month, kind: calendar, time_zone: "
               "Europe/Atlantis}]\n",
               "policy.yaml:3:65: unknown time zone \"Europe/Atlantis\""},
          Case{"events:\n  a:\n    limits: [{max: 1, window: day, kind: calendar, time_zone: UTC, "
               "utc_offset: \"+01:00\"}]\n",
               "not both"},
          Case{"events:\n  a:\n    limits: [{max: 1, window: 1d, time_zone: Europe/Berlin}]\n",
               "time_zone belongs to calendar windows only"},
          Case{
              "events:\n  a:\n    limits: [{max: 1, window: day, kind: calendar, utc_offset: 2}]\n",
              "+HH:MM"},
          Case{"events:\n  a:\n    limits: [{max: 1, window: 1d, utc_offset: \"+02:00\"}]\n",
               "calendar windows only"},
          Case{"events:\n  a:\n    limits: [1/s]\n    overrides: {x: {deny: maybe}}\n",
               "deny is true or false"},
          Case{"events:\n  a:\n    limits: [1/s]\n    overrides: {x: {}}\n",
               "needs limits or deny"},
          Case{
              "events:\n  a:\n    limits: [1/s]\n    overrides: {x: {deny: true, limits: [1/s]}}\n",
              "not both"},
          Case{"events: {}\n", "no events"},
          Case{"limits: [1/s]\n", "events:"},
          Case{"events:\n  a: {limits: [1/s]}\nextra: 1\n", "unknown top-level field \"extra\""},
          Case{"events: [unclosed\n", "policy.yaml:"},
      }) {
    Result<PolicyFile> file = PolicyFile::Parse(c.yaml, "policy.yaml");
    ASSERT_FALSE(file.ok()) << c.yaml;
    EXPECT_EQ(file.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(file.error().message().find(c.says), std::string::npos)
        << c.yaml << "\n -> " << file.error().message();
    EXPECT_EQ(file.error().message().rfind("policy.yaml", 0), 0u) << file.error().message();
  }
}

// A repeated key must never let a later entry silently undo an earlier one: the ban on x below
// would be gone if the second entry won.
TEST(PolicyFile, RepeatedKeysAreErrorsNamingBothLines) {
  struct Case {
    const char* yaml;
    const char* says;
  };
  for (const Case& c : {
           Case{"events:\n  a:\n    limits: [5/m]\n    overrides:\n      \"x\": {deny: true}\n"
                "      \"x\": {limits: [1000/s]}\n",
                "policy.yaml:6:7: duplicate override \"x\" (first at line 5)"},
           Case{"events:\n  a:\n    limits: [5/m]\n  b:\n    limits: [1/s]\n  a:\n    limits: "
                "[9/m]\n",
                "policy.yaml:6:3: duplicate event \"a\" (first at line 2)"},
           Case{"events:\n  a:\n    limits: [5/m]\n    mode: attempts\n    mode: admitted\n",
                "policy.yaml:5:5: duplicate field \"mode\" (first at line 4)"},
           Case{"events:\n  a:\n    limits: [{max: 1, window: 1m, max: 100}]\n",
                "duplicate limit field \"max\""},
           Case{"events:\n  a:\n    limits: [1/s]\n    overrides: {x: {limits: [1/s], limits: "
                "[9/s]}}\n",
                "duplicate override field \"limits\""},
           Case{"events:\n  a: {limits: [1/s]}\nevents:\n  b: {limits: [1/s]}\n",
                "duplicate top-level field \"events\" (first at line 1)"},
       }) {
    Result<PolicyFile> file = PolicyFile::Parse(c.yaml, "policy.yaml");
    ASSERT_FALSE(file.ok()) << c.yaml;
    EXPECT_EQ(file.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(file.error().message().find(c.says), std::string::npos)
        << file.error().message() << " should say " << c.says;
  }
}

// A limit the engine's retention cannot answer is refused where the file is loaded, naming its
// line; limits given twice or that never bind are pointed out.
TEST(PolicyFile, WindowsBeyondTheRetentionAreRefusedAndDoubtfulLimitsNoted) {
  Result<PolicyFile> file = PolicyFile::Parse(
      "events:\n"
      "  signup:\n"
      "    limits: [3/h, 10/d, 3/h]\n"
      "  weekly:\n"
      "    limits: [10/m, 5/h]\n"
      "    overrides:\n"
      "      \"vip\": {limits: [500/w]}\n",
      "p.yaml");
  ASSERT_TRUE(file.ok()) << file.error().message();
  Status fits = file->CheckWindows(Seconds{86400});
  ASSERT_FALSE(fits.ok());
  EXPECT_EQ(fits.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fits.error().message(),
            "p.yaml:7: event \"weekly\" override \"vip\": limit 500/w is longer than the retention "
            "(1d): no check of it could be answered; shorten the window or raise the retention "
            "(--retention, the same on every client)");
  EXPECT_TRUE(file->CheckWindows(Seconds{7 * 86400}).ok());
  const std::vector<std::string> remarks = file->Remarks();
  ASSERT_EQ(remarks.size(), 2u) << ::testing::PrintToString(remarks);
  EXPECT_EQ(remarks[0], "p.yaml:2: event \"signup\": limit 3/h is given twice");
  EXPECT_EQ(remarks[1],
            "p.yaml:4: event \"weekly\": limit 10/m never binds: 5/h allows no more hits over a "
            "window at least as long");
}

TEST(PolicyFile, MissingFileIsAClearError) {
  Result<PolicyFile> file = PolicyFile::Load("/nonexistent/policy.yaml");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message().find("/nonexistent/policy.yaml: cannot read"),
            std::string::npos);
}

TEST(PolicyFile, ShadowIsPerEventTrueOrFalse) {
  Result<PolicyFile> file = PolicyFile::Parse(
      "events:\n  a: {limits: [1/s], shadow: true}\n  b: {limits: [1/s], shadow: false}\n"
      "  c: {limits: [1/s]}\n");
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_TRUE(file->events().at("a").shadow);
  EXPECT_FALSE(file->events().at("b").shadow);
  EXPECT_FALSE(file->events().at("c").shadow);
  EXPECT_NE(file->Explain().find("a: 1/s (admitted mode: denied hits are not counted; store "
                                 "unreachable: fail open; data lost: open; shadow"),
            std::string::npos)
      << file->Explain();
  Result<PolicyFile> bad = PolicyFile::Parse("events:\n  a: {limits: [1/s], shadow: maybe}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("shadow is true or false"), std::string::npos);
}

// A feature: ip event counts a client by its network (an IPv6 client owns a /64: every address
// in it is one counter), and its overrides are ranges, the longest holding the address winning.
TEST(PolicyFile, IpEventsCountByNetworkAndOverridesAreRangesLongestFirst) {
  Result<PolicyFile> file = PolicyFile::Parse(R"(
events:
  api:
    limits: [10/s]
    feature: ip
    overrides:
      "10.0.0.0/8": {limits: [100/s]}
      "10.1.2.3": {deny: true}
      "10.1.0.0/16": {limits: [1000/s]}
      "2001:db8::/32": {limits: [50/s]}
  wide:
    limits: [5/s]
    feature: ip
    ip_prefix: {ipv4: 24, ipv6: 48}
  text:
    limits: [1/s]
    feature: text
    overrides:
      "10.0.0.0/8": {deny: true}
)");
  ASSERT_TRUE(file.ok()) << file.error().message();
  const auto resolved = [&](const char* event, const std::string& feature) {
    Result<Resolved> r = file->Resolve(event, feature);
    return r.ok() ? r->feature + " " + DescribeLimits(r->policy.limits)
                  : "error: " + r.error().message();
  };
  EXPECT_EQ(resolved("api", "10.1.2.3"), "10.1.2.3 deny all");
  EXPECT_EQ(resolved("api", "::ffff:10.1.2.3"), "10.1.2.3 deny all");
  EXPECT_EQ(resolved("api", "10.1.9.9"), "10.1.9.9 1000/s");
  EXPECT_EQ(resolved("api", "10.9.9.9"), "10.9.9.9 100/s");
  EXPECT_EQ(resolved("api", "11.0.0.1"), "11.0.0.1 10/s");
  EXPECT_EQ(resolved("api", "2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64 50/s");
  EXPECT_EQ(resolved("api", "2001:DB8:1:2::ffff"), "2001:db8:1:2::/64 50/s");
  EXPECT_EQ(resolved("api", "2001:db8:1:2::/64"), "2001:db8:1:2::/64 50/s");
  EXPECT_EQ(resolved("api", "2001:db9::1"), "2001:db9::/64 10/s");
  EXPECT_EQ(resolved("wide", "192.0.2.77"), "192.0.2.0/24 5/s");
  EXPECT_EQ(resolved("wide", "2001:db8:1:2::1"), "2001:db8:1::/48 5/s");
  EXPECT_EQ(resolved("text", "10.1.2.3"), "10.1.2.3 1/s") << "text events match verbatim";
  EXPECT_EQ(resolved("text", "10.0.0.0/8"), "10.0.0.0/8 deny all");
  for (const std::string bad : {"not-an-ip", "1.2.3.4, 5.6.7.8", "", "10.0.0.0/8", "10.0.0.1/8"}) {
    Result<Resolved> r = file->Resolve("api", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(r.error().message().find("event \"api\" counts IP addresses"), std::string::npos)
        << r.error().message();
  }
  EXPECT_NE(file->Explain().find("counted per IPv4 /32 and IPv6 /64"), std::string::npos);
}

TEST(PolicyFile, BadIpSettingsNameTheLine) {
  struct Case {
    const char* yaml;
    const char* says;
  };
  for (const Case& c : {
           Case{"events:\n  a:\n    limits: [1/s]\n    feature: ipv4\n", ":4:"},
           Case{"events:\n  a:\n    limits: [1/s]\n    ip_prefix: {ipv6: 56}\n",
                "ip_prefix needs feature: ip"},
           Case{"events:\n  a:\n    limits: [1/s]\n    feature: ip\n    ip_prefix: {ipv6: 129}\n",
                "ip_prefix ipv6 is 1 to 128"},
           Case{"events:\n  a:\n    limits: [1/s]\n    feature: ip\n    ip_prefix: {v6: 56}\n",
                "v6"},
           Case{"events:\n  a:\n    limits: [1/s]\n    feature: ip\n    overrides:\n"
                "      example.com: {deny: true}\n",
                ":6:"},
           Case{"events:\n  a:\n    limits: [1/s]\n    feature: ip\n    overrides:\n"
                "      10.0.0.1/8: {deny: true}\n",
                "did you mean 10.0.0.0/8?"},
           Case{"events:\n  a:\n    limits: [1/s]\n    feature: ip\n    overrides:\n"
                "      \"::ffff:10.0.0.1\": {deny: true}\n      10.0.0.1: {deny: true}\n",
                "is the range of override"},
       }) {
    Result<PolicyFile> file = PolicyFile::Parse(c.yaml, "p.yaml");
    ASSERT_FALSE(file.ok()) << c.yaml;
    EXPECT_NE(file.error().message().find(c.says), std::string::npos) << c.yaml << "\n"
                                                                      << file.error().message();
  }
}

// An event that opts in lets a check carry its own limits within its bounds; a ban stays a ban;
// every other event, and every limit out of bounds, is refused naming the reason.
TEST(PolicyFile, RequestLimitsReplaceTheEventsWithinItsBoundsAndOnlyWhereAllowed) {
  Result<PolicyFile> file = PolicyFile::Parse(R"(events:
  llm:
    limits: [100/m]
    request_limits: {max_hits: 50000, max_window: 1h}
    settle: true
    overrides:
      banned: {deny: true}
  plain:
    limits: [5/m]
)");
  ASSERT_TRUE(file.ok()) << file.error().message();
  const EventPolicy& llm = file->events().at("llm");
  ASSERT_TRUE(llm.request_limits);
  EXPECT_EQ(llm.request_limits->max_hits, 50000u);
  EXPECT_EQ(llm.request_limits->max_window, Seconds{3600});
  EXPECT_TRUE(llm.settle);
  EXPECT_FALSE(file->events().at("plain").settle);
  EXPECT_FALSE(file->events().at("plain").request_limits);

  const std::vector<Limit> plan = *ParseLimits("20000/m, 50000/h");
  Result<Resolved> carried = file->Resolve("llm", "tenant-42", plan);
  ASSERT_TRUE(carried.ok()) << carried.error().message();
  EXPECT_EQ(DescribeLimits(carried->policy.limits), "20000/m, 50000/h");
  EXPECT_EQ(DescribeLimits(file->Resolve("llm", "tenant-42")->policy.limits), "100/m");
  EXPECT_EQ(DescribeLimits(file->Resolve("llm", "banned", plan)->policy.limits), "deny all");

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"plain", "takes no limits from a request: its policy needs request_limits"},
      {"llm:50001/m",
       "limit 50001/m is outside what event \"llm\" allows a request: at most "
       "50000 hits over at most 1h"},
      {"llm:10/2h", "limit 10/2h is outside"},
      {"llm:1/s,2/s,3/s,4/s,5/s,6/s,7/s,8/s,9/s", "9 limits in one check: at most 8"},
  };
  for (const auto& [spec, says] : refused) {
    const std::string event = spec.substr(0, spec.find(':'));
    const std::vector<Limit> limits =
        spec.find(':') == std::string::npos ? plan : *ParseLimits(spec.substr(spec.find(':') + 1));
    Result<Resolved> r = file->Resolve(event, "f", limits);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  }
}

TEST(PolicyFile, BadRequestLimitsAndSettleNameTheLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"request_limits: {max_window: 1h}",
       "f:4:21: request_limits is {max_hits: N, max_window: "
       "DUR}: max_hits is missing"},
      {"request_limits: {max_hits: 0}", "f:4:32: \"max_hits\" must be at least 1"},
      {"request_limits: {max_hits: lots}", "f:4:32: \"max_hits\" must be a whole number"},
      {"request_limits: {max_hits: 5, max_window: soon}", "f:4:47: max_window: "},
      {"request_limits: {max_hits: 5, burst: 2}", "unknown field \"burst\" in request_limits"},
      {"request_limits: 5", "request_limits is {max_hits: N, max_window: DUR}"},
      {"settle: maybe", "f:4:13: settle is true or false"},
  };
  for (const auto& [field, says] : cases) {
    Result<PolicyFile> file =
        PolicyFile::Parse("events:\n  e:\n    limits: [5/m]\n    " + field + "\n", "f");
    ASSERT_FALSE(file.ok()) << field;
    EXPECT_NE(file.error().message().find(says), std::string::npos) << file.error().message();
  }
  Result<PolicyFile> long_window = PolicyFile::Parse(
      "events:\n  e:\n    limits: [5/m]\n    request_limits: {max_hits: 5, max_window: 2d}\n", "f");
  ASSERT_TRUE(long_window.ok());
  Status s = long_window->CheckWindows(Seconds{86400});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("f:2: event \"e\": request_limits max_window 2d is longer "
                                     "than the retention 1d"),
            std::string::npos)
      << s.error().message();
}

TEST(PolicyFile, BlockForIsAPenaltyEveryOverrideOfTheEventShares) {
  Result<PolicyFile> file = PolicyFile::Parse(
      "events:\n  login:\n    limits: [5/m]\n    block_for: 15m\n    overrides:\n      vip: "
      "{limits: [50/m]}\n  plain:\n    limits: [5/m]\n");
  ASSERT_TRUE(file.ok()) << file.error().message();
  EXPECT_EQ(file->For("login", "ann")->block_for, Seconds{900});
  EXPECT_EQ(file->For("login", "vip")->block_for, Seconds{900});
  EXPECT_EQ(file->For("plain", "ann")->block_for, Seconds{0});
  EXPECT_NE(file->Explain().find("a denial blocks the feature for 15m"), std::string::npos)
      << file->Explain();
  for (const auto& [value, says] : std::vector<std::pair<std::string, std::string>>{
           {"0s", "f:4:16: block_for: duration \"0s\" must be positive"},
           {"401d", "block_for is 1s to 400d"},
           {"soon", "f:4:16: block_for: "}}) {
    Result<PolicyFile> bad =
        PolicyFile::Parse("events:\n  e:\n    limits: [5/m]\n    block_for: " + value + "\n", "f");
    ASSERT_FALSE(bad.ok()) << value;
    EXPECT_NE(bad.error().message().find(says), std::string::npos) << bad.error().message();
  }
}

}  // namespace
}  // namespace hourglass
