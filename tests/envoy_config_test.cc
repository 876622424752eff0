// envoyproxy/ratelimit configuration files: the reference README's examples loaded unchanged and
// matched as that service describes, the windows hourglass gives each unit, and bad files refused
// with file and line.
#include "hourglass/envoy_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "temp_path.h"

namespace hourglass {
namespace {

EnvoyConfig Parse(const std::string& yaml) {
  Result<EnvoyConfig> config = EnvoyConfig::Parse(yaml, "test.yaml");
  EXPECT_TRUE(config.ok()) << config.error().ToString();
  return config.ok() ? std::move(*config) : *EnvoyConfig::Parse("domain: empty\n", "empty");
}

std::optional<EnvoyMatch> Match(const EnvoyConfig& config, std::string_view domain,
                                std::vector<EnvoyEntry> entries) {
  return config.Match(domain, entries);
}

// Example 1 of the reference README, verbatim.
TEST(EnvoyConfig, Example1TwoValuesOfOneKey) {
  const EnvoyConfig config = Parse(R"(domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
)");
  std::optional<EnvoyMatch> users = Match(config, "mongo_cps", {{"database", "users"}});
  ASSERT_TRUE(users);
  EXPECT_EQ(users->rate_limit->unit, EnvoyUnit::kSecond);
  EXPECT_EQ(users->rate_limit->requests_per_unit, 500u);
  EXPECT_EQ(users->rate_limit->limit->ToString(), "500/s");
  EXPECT_EQ(users->event, "mongo_cps.database_users");
  std::optional<EnvoyMatch> other = Match(config, "mongo_cps", {{"database", "default"}});
  ASSERT_TRUE(other);
  EXPECT_NE(other->event, users->event) << "two descriptors, two counters";
  EXPECT_FALSE(Match(config, "mongo_cps", {{"database", "orders"}})) << "no limit: OK";
  EXPECT_FALSE(Match(config, "unknown_domain", {{"database", "users"}}));
}

// Example 2: a nested key without a value counts each value apart; two descriptors of one
// request match two limits.
TEST(EnvoyConfig, Example2NestedKeysWithoutValues) {
  const EnvoyConfig config = Parse(R"(domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
)");
  std::optional<EnvoyMatch> a =
      Match(config, "messaging", {{"message_type", "marketing"}, {"to_number", "2061111111"}});
  std::optional<EnvoyMatch> b =
      Match(config, "messaging", {{"message_type", "marketing"}, {"to_number", "2062222222"}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->rate_limit->requests_per_unit, 5u);
  EXPECT_EQ(a->event, "messaging.message_type_marketing.to_number");
  EXPECT_EQ(a->event, b->event);
  EXPECT_NE(a->feature, b->feature) << "each number gets its own 5 a day";
  std::optional<EnvoyMatch> any = Match(config, "messaging", {{"to_number", "2061111111"}});
  ASSERT_TRUE(any);
  EXPECT_EQ(any->rate_limit->requests_per_unit, 100u);
  EXPECT_EQ(any->rate_limit->limit->window.length(), Seconds{86400});
  EXPECT_FALSE(Match(config, "messaging", {{"message_type", "marketing"}}))
      << "the placeholder level has no limit";
}

// Example 3: key and value are tried before the key alone.
TEST(EnvoyConfig, Example3TheMostSpecificMatchWins) {
  const EnvoyConfig config = Parse(R"(domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
)");
  std::optional<EnvoyMatch> any =
      Match(config, "edge_proxy_per_ip", {{"remote_address", "50.0.0.1"}});
  std::optional<EnvoyMatch> banned =
      Match(config, "edge_proxy_per_ip", {{"remote_address", "50.0.0.5"}});
  ASSERT_TRUE(any && banned);
  EXPECT_EQ(any->rate_limit->requests_per_unit, 10u);
  EXPECT_EQ(banned->rate_limit->requests_per_unit, 0u);
  EXPECT_EQ(banned->rate_limit->limit->max_hits, 0u);
}

// Example 4: the request's depth must reach the descriptor with the limit.
TEST(EnvoyConfig, Example4DepthsMustAgree) {
  const EnvoyConfig shallow = Parse(R"(domain: example4
descriptors:
  - key: key
    value: value
    rate_limit:
      requests_per_unit: 300
      unit: second
)");
  EXPECT_FALSE(Match(shallow, "example4", {{"key", "value"}, {"subkey", "subvalue"}}));
  EXPECT_TRUE(Match(shallow, "example4", {{"key", "value"}}));
  const EnvoyConfig deep = Parse(R"(domain: example4
descriptors:
  - key: key
    value: value
    descriptors:
      - key: subkey
        rate_limit:
          requests_per_unit: 300
          unit: second
)");
  EXPECT_TRUE(Match(deep, "example4", {{"key", "value"}, {"subkey", "subvalue"}}));
}

// Examples 5 to 8: unlimited, shadow mode, replaces, detailed_metric (accepted, ignored).
TEST(EnvoyConfig, Examples5To8UnlimitedShadowReplacesDetailedMetric) {
  const EnvoyConfig internal = Parse(R"(domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
)");
  std::optional<EnvoyMatch> ldap = Match(internal, "internal", {{"ldap", "x"}});
  ASSERT_TRUE(ldap);
  EXPECT_TRUE(ldap->rate_limit->unlimited);
  EXPECT_FALSE(ldap->rate_limit->limit);
  const EnvoyConfig shadow = Parse(R"(domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
)");
  std::optional<EnvoyMatch> a =
      Match(shadow, "example6", {{"service", "auth-service"}, {"user", "user-a"}});
  std::optional<EnvoyMatch> b =
      Match(shadow, "example6", {{"service", "auth-service"}, {"user", "user-b"}});
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->shadow_mode);
  EXPECT_FALSE(b->shadow_mode);
  EXPECT_EQ(b->rate_limit->requests_per_unit, 20u);
  const EnvoyConfig replaces = Parse(R"(domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
)");
  std::optional<EnvoyMatch> named =
      Match(replaces, "example7", {{"key_1", "value_1"}, {"user", "bkthomps"}});
  std::optional<EnvoyMatch> replacing =
      Match(replaces, "example7", {{"key_2", "value_2"}, {"user", "bkthomps"}});
  ASSERT_TRUE(named && replacing);
  EXPECT_EQ(named->rate_limit->name, "specific_limit");
  EXPECT_EQ(replacing->rate_limit->replaces, std::vector<std::string>{"specific_limit"});
  const EnvoyConfig detailed = Parse(R"(domain: example8
descriptors:
  - key: key1
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: key1
    value: value1
    rate_limit:
      unit: minute
      requests_per_unit: 20
)");
  EXPECT_EQ(Match(detailed, "example8", {{"key1", "other"}})->rate_limit->requests_per_unit, 10u);
  EXPECT_EQ(Match(detailed, "example8", {{"key1", "value1"}})->rate_limit->requests_per_unit, 20u);
}

// Examples 9 and 11: wildcards anywhere in a value; share_threshold makes their values share one
// counter.
TEST(EnvoyConfig, Examples9And11WildcardsAndSharedThresholds) {
  const EnvoyConfig middle = Parse(R"(domain: example9
descriptors:
  - key: path
    value: /api/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 20
  - key: route
    value: /api/*/resource/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 20
)");
  EXPECT_TRUE(Match(middle, "example9", {{"path", "/api/123/action"}}));
  EXPECT_TRUE(Match(middle, "example9", {{"path", "/api//action"}}));
  EXPECT_FALSE(Match(middle, "example9", {{"path", "/api/123/other"}}));
  EXPECT_TRUE(Match(middle, "example9", {{"route", "/api/v1/resource/123/action"}}));
  EXPECT_FALSE(Match(middle, "example9", {{"route", "/api/v1/resource/123/other"}}));
  const EnvoyConfig shared = Parse(R"(domain: example11
descriptors:
  # With share_threshold: true, all files/* matches share the same threshold
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 10

  # Without share_threshold, each files_no_share/* match has its own isolated threshold
  - key: files_no_share
    value: files_no_share/*
    share_threshold: false
    rate_limit:
      unit: hour
      requests_per_unit: 10
)");
  std::optional<EnvoyMatch> a = Match(shared, "example11", {{"files", "files/a.pdf"}});
  std::optional<EnvoyMatch> b = Match(shared, "example11", {{"files", "files/b.csv"}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->feature, b->feature) << "shared: one counter";
  std::optional<EnvoyMatch> c =
      Match(shared, "example11", {{"files_no_share", "files_no_share/a"}});
  std::optional<EnvoyMatch> d =
      Match(shared, "example11", {{"files_no_share", "files_no_share/b"}});
  ASSERT_TRUE(c && d);
  EXPECT_NE(c->feature, d->feature) << "not shared: a counter per value";
}

TEST(EnvoyConfig, UnitsAreSlidingWindowsUnlessFixedIsAsked) {
  const EnvoyConfig config = Parse(R"(domain: units
descriptors:
  - {key: s, rate_limit: {unit: SECOND, requests_per_unit: 1}}
  - {key: m, rate_limit: {unit: Minute, requests_per_unit: 2}}
  - {key: h, rate_limit: {unit: hour, requests_per_unit: 3}}
  - {key: d, rate_limit: {unit: day, requests_per_unit: 4}}
  - {key: w, rate_limit: {unit: week, requests_per_unit: 5}}
  - {key: f, rate_limit: {unit: minute, requests_per_unit: 6, window: fixed}}
  - {key: mo, rate_limit: {unit: month, requests_per_unit: 7}}
  - {key: y, rate_limit: {unit: YEAR, requests_per_unit: 8}}
  - {key: bm, rate_limit: {unit: MONTH, requests_per_unit: 9, time_zone: Europe/Berlin}}
)");
  // time_zone: the calendar month on that zone's clock.
  EXPECT_EQ(Match(config, "units", {{"bm", "v"}})->rate_limit->limit,
            (Limit{Window::Calendar(CalendarUnit::kMonth, *TimeZone::Named("Europe/Berlin")), 9}));
  // A MONTH and a YEAR are the calendar month and year in UTC; their lengths are the longest.
  EXPECT_EQ(Match(config, "units", {{"mo", "v"}})->rate_limit->limit,
            (Limit{*Window::Calendar(CalendarUnit::kMonth), 7}));
  EXPECT_EQ(Match(config, "units", {{"mo", "v"}})->rate_limit->unit, EnvoyUnit::kMonth);
  EXPECT_EQ(Match(config, "units", {{"y", "v"}})->rate_limit->limit,
            (Limit{*Window::Calendar(CalendarUnit::kYear), 8}));
  const std::vector<std::pair<std::string, int64_t>> lengths = {
      {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 604800}, {"f", 60}};
  for (const auto& [key, seconds] : lengths) {
    std::optional<EnvoyMatch> m = Match(config, "units", {{key, "v"}});
    ASSERT_TRUE(m) << key;
    EXPECT_EQ(m->rate_limit->limit->window.length(), Seconds{seconds}) << key;
    EXPECT_EQ(m->rate_limit->limit->window.kind(),
              key == "f" ? WindowKind::kFixed : WindowKind::kSliding)
        << key;
  }
  EXPECT_EQ(Match(config, "units", {{"w", "v"}})->rate_limit->unit, EnvoyUnit::kWeek);
}

// hourglass's `feature: ip` on a descriptor: its values are client addresses counted by network,
// an IPv6 client by its /64 (or the prefix given), as policy files count them; a value that is
// not an address counts as itself.
TEST(EnvoyConfig, ClientAddressesCountByNetwork) {
  const EnvoyConfig config = Parse(R"(domain: edge
descriptors:
  - key: remote_address
    feature: ip
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: subnet
    feature: ip
    ip_prefix: {ipv4: 24, ipv6: 48}
    rate_limit: {unit: second, requests_per_unit: 10}
)");
  const auto feature = [&](const std::string& key, const std::string& value) {
    std::optional<EnvoyMatch> m = Match(config, "edge", {{key, value}});
    EXPECT_TRUE(m) << key << " " << value;
    return m ? m->feature : std::string();
  };
  EXPECT_EQ(feature("remote_address", "2001:db8:1:2:aaaa::1"),
            feature("remote_address", "2001:db8:1:2:bbbb::2"));
  EXPECT_NE(feature("remote_address", "2001:db8:1:2::1"),
            feature("remote_address", "2001:db8:1:3::1"));
  EXPECT_NE(feature("remote_address", "192.0.2.7"), feature("remote_address", "192.0.2.8"));
  EXPECT_EQ(feature("remote_address", "::ffff:192.0.2.7"), feature("remote_address", "192.0.2.7"));
  EXPECT_NE(feature("remote_address", "2001:db8:1:2::1").find("2001:db8:1:2::/64"),
            std::string::npos);
  EXPECT_EQ(feature("subnet", "192.0.2.7"), feature("subnet", "192.0.2.200"));
  EXPECT_EQ(feature("subnet", "2001:db8:1:2::1"), feature("subnet", "2001:db8:1:ff::1"));
  EXPECT_NE(feature("remote_address", "not-an-address").find("not-an-address"), std::string::npos);
  for (const auto& [yaml, says] : std::vector<std::pair<std::string, std::string>>{
           {"    ip_prefix: {ipv4: 24}\n", "ip_prefix needs feature: ip"},
           {"    feature: blob\n", "feature is text (the default) or ip"},
           {"    feature: ip\n    ip_prefix: {ipv6: 129}\n", "ip_prefix ipv6 is 1 to 128"}}) {
    Result<EnvoyConfig> r =
        EnvoyConfig::Parse("domain: d\ndescriptors:\n  - key: k\n" + yaml +
                               "    rate_limit: {unit: second, requests_per_unit: 1}\n",
                           "test.yaml");
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  }
}

TEST(EnvoyConfig, DistinctEntriesAreDistinctFeatures) {
  const EnvoyConfig config = Parse(R"(domain: d
descriptors:
  - key: a
    descriptors:
      - key: b
        rate_limit: {unit: second, requests_per_unit: 1}
)");
  // Values that would run together if the entries were only concatenated.
  std::optional<EnvoyMatch> x = Match(config, "d", {{"a", "1:b"}, {"b", "2"}});
  std::optional<EnvoyMatch> y = Match(config, "d", {{"a", "1"}, {"b", "b2"}});
  ASSERT_TRUE(x && y);
  EXPECT_NE(x->feature, y->feature);
  std::optional<EnvoyMatch> bytes =
      Match(config, "d", {{"a", std::string("\0\n\xff", 3)}, {"b", ""}});
  ASSERT_TRUE(bytes) << "any bytes are a value";
}

// hourglass's `rate_limits`: several limits on one descriptor, beside or instead of the
// reference's `rate_limit`; the match carries them all, `rate_limit` first.
TEST(EnvoyConfig, SeveralLimitsOnOneDescriptor) {
  const EnvoyConfig config = Parse(R"(domain: api
descriptors:
  - key: client
    rate_limit: {unit: second, requests_per_unit: 10, name: burst}
    rate_limits:
      - {unit: day, requests_per_unit: 10000, name: daily}
      - {unit: hour, requests_per_unit: 1000, window: fixed}
  - key: tenant
    rate_limits:
      - {unit: minute, requests_per_unit: 100}
)");
  std::optional<EnvoyMatch> client = Match(config, "api", {{"client", "a"}});
  ASSERT_TRUE(client);
  ASSERT_EQ(client->rate_limits.size(), 3u);
  EXPECT_EQ(client->rate_limit, &client->rate_limits[0]);
  EXPECT_EQ(client->rate_limits[0].name, "burst");
  EXPECT_EQ(client->rate_limits[1].limit->ToString(), "10000/d");
  EXPECT_EQ(client->rate_limits[1].origin, "test.yaml:6");
  EXPECT_EQ(client->rate_limits[2].limit->window.kind(), WindowKind::kFixed);
  std::optional<EnvoyMatch> tenant = Match(config, "api", {{"tenant", "t"}});
  ASSERT_TRUE(tenant);
  ASSERT_EQ(tenant->rate_limits.size(), 1u);
  EXPECT_EQ(tenant->rate_limit->requests_per_unit, 100u);
  EXPECT_TRUE(config.CheckWindows(Seconds{86400}).ok());
  Status week = config.CheckWindows(Seconds{3600});
  ASSERT_FALSE(week.ok());
  EXPECT_NE(week.error().message().find("test.yaml:6: descriptor \"api.client\": limit 10000/d"),
            std::string::npos)
      << week.error().message();

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"    rate_limits: {unit: day, requests_per_unit: 1}\n",
       "test.yaml:4:18: \"rate_limits\" must be a non-empty list of rate limits"},
      {"    rate_limits: []\n", "must be a non-empty list"},
      {"    rate_limit: {unlimited: true}\n    rate_limits: [{unit: day, requests_per_unit: 1}]\n",
       "test.yaml:4:17: an unlimited rate limit stands alone"},
      {"    rate_limits:\n      - {unit: day, requests_per_unit: 1}\n      - {unit: DAY, "
       "requests_per_unit: 2}\n",
       "test.yaml:6:9: two limits of one descriptor over the same window (the first at "
       "test.yaml:5)"},
      {"    rate_limits: [{unit: month, requests_per_unit: 1, window: fixed}]\n",
       "a MONTH or YEAR is the calendar month or year in UTC: give it no window"},
      {"    rate_limits: [{unit: day, requests_per_unit: 1, time_zone: UTC}]\n",
       "test.yaml:4:64: time_zone belongs to a MONTH or YEAR"},
      {"    rate_limits: [{unit: month, requests_per_unit: 1, time_zone: Mars/Olympus}]\n",
       "unknown time zone \"Mars/Olympus\""},
      {"    rate_limits: [{unit: day, requests_per_unit: 1, burst: 2}]\n",
       "unknown key \"burst\" in rate_limit"},
      {"    block_for: 10m\n", "block_for needs a rate limit on the same descriptor"},
      {"    block_for: soon\n    rate_limit: {unit: day, requests_per_unit: 1}\n", "block_for: "},
      {"    rate_limit: {unlimited: true}\n    block_for: 1m\n", "block_for needs a rate limit"},
  };
  for (const auto& [yaml, says] : bad) {
    Result<EnvoyConfig> r =
        EnvoyConfig::Parse("domain: d\ndescriptors:\n  - key: k\n" + yaml, "test.yaml");
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  }
}

TEST(EnvoyConfig, BadFilesAreRefusedNamingFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"domain: d\ndescriptors:\n  - key: a\n    colour: red\n",
       "test.yaml:4:5: unknown key \"colour\" in a descriptor"},
      {"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n",
       "test.yaml:5:13: invalid rate limit unit \"fortnight\""},
      {"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: year\n      "
       "requests_per_unit: 1\n      window: sliding\n",
       "test.yaml:7:15: a MONTH or YEAR is the calendar month or year in UTC"},
      {"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      requests_per_unit: 5\n",
       "test.yaml:5:7: rate_limit needs a unit"},
      {"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: "
       "second\n",
       "test.yaml:6:13: an unlimited rate_limit takes no unit"},
      {"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      "
       "requests_per_unit: -1\n",
       "test.yaml:6:26: \"requests_per_unit\" must be a whole number"},
      {"domain: d\ndescriptors:\n  - key: a\n    value: x\n  - key: a\n    value: x\n",
       "test.yaml:5:5: duplicate descriptor key \"a\" value \"x\" (first at line 3)"},
      {"domain: d\ndescriptors:\n  - value: x\n",
       "test.yaml:3:5: a descriptor needs a non-empty key"},
      {"descriptors: []\n", "test.yaml:1:1: the file needs a non-empty \"domain\""},
      {"domain: d\ndescriptors:\n  - key: a\n    value: x\n    share_threshold: true\n",
       "test.yaml:5:22: share_threshold needs a wildcard value"},
      {"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      name: n\n"
       "      replaces:\n        - name: n\n",
       "test.yaml:8:11: \"n\" cannot replace itself"},
      {"domain: d\ndescriptors:\n  - key: a_b\n  - key: a\n    value: b\n",
       "test.yaml:4:5: descriptor \"d.a_b\" counts under the same name as line 3"},
      {"domain: d\ndescriptors: [\n", "test.yaml:3:1: not YAML"},
      {"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      window: "
       "rolling\n",
       "test.yaml:6:15: window \"rolling\": use sliding or fixed"},
  };
  for (const auto& [yaml, expected] : cases) {
    Result<EnvoyConfig> config = EnvoyConfig::Parse(yaml, "test.yaml");
    ASSERT_FALSE(config.ok()) << yaml;
    EXPECT_EQ(config.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(config.error().message().find(expected), std::string::npos)
        << "got: " << config.error().message() << "\nexpected: " << expected;
  }
}

TEST(EnvoyConfig, LoadsFoldersOfFilesAndRefusesADomainTwice) {
  const std::filesystem::path dir = std::filesystem::path(testing::UniqueTempPath("envoy_config"));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.yaml") << "domain: one\ndescriptors:\n  - key: k\n    rate_limit: "
                                   "{unit: second, requests_per_unit: 1}\n";
  std::ofstream(dir / "b.yml") << "domain: two\n";
  std::ofstream(dir / "notes.txt") << "not a config";
  const std::vector<std::string> paths = {dir.string()};
  Result<EnvoyConfig> config = EnvoyConfig::Load(paths);
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  EXPECT_EQ(config->domains(), (std::vector<std::string>{"one", "two"}));
  std::ofstream(dir / "c.yaml") << "domain: one\n";
  Result<EnvoyConfig> twice = EnvoyConfig::Load(paths);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("c.yaml:1:9: domain \"one\" is already loaded"),
            std::string::npos)
      << twice.error().message();
  const std::vector<std::string> missing = {(dir / "none.yaml").string()};
  EXPECT_NE(EnvoyConfig::Load(missing).error().message().find("cannot read"), std::string::npos);
}

// A unit the engine's retention cannot answer refuses the configuration where it is loaded,
// naming the file, line and descriptor, instead of failing every request later.
TEST(EnvoyConfigWindows, AUnitLongerThanTheRetentionIsRefusedNamingItsLine) {
  Result<EnvoyConfig> config = EnvoyConfig::Parse(
      "domain: shop\n"
      "descriptors:\n"
      "  - key: client\n"
      "    rate_limit: {unit: minute, requests_per_unit: 5}\n"
      "  - key: account\n"
      "    rate_limit: {unit: week, requests_per_unit: 500}\n",
      "shop.yaml");
  ASSERT_TRUE(config.ok()) << config.error().message();
  Status day = config->CheckWindows(Seconds{86400});
  ASSERT_FALSE(day.ok());
  EXPECT_EQ(day.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(day.error().message().find("shop.yaml:5: descriptor \"shop.account\": limit 500/w is "
                                       "longer than the retention (1d)"),
            std::string::npos)
      << day.error().message();
  EXPECT_TRUE(config->CheckWindows(Seconds{7 * 86400}).ok());
}

}  // namespace
}  // namespace hourglass
