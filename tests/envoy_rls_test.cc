// Envoy's rate limit service as Envoy meets it: the real `hourglass serve` with --envoy-config in
// front of a real memcached, asked by a gRPC client built from the upstream protocol definitions
// (not the project's .proto). The reference's README examples loaded unchanged, every field of
// the response, hits_addend and overrides, all-must-pass, fixed against sliding windows at a
// window edge, concurrency, the JSON endpoint, bad configuration files and a killed store.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "loopback_port.h"
#include "memcached_server.h"
#include "prometheus_sample.h"
#include "run_process.h"
#include "serve_process.h"
#include "silent_connections.h"
#include "temp_path.h"

namespace hourglass {
namespace {

namespace rls = envoy::service::ratelimit::v3;
namespace common = envoy::extensions::common::ratelimit::v3;
using nlohmann::json;
using Code = rls::RateLimitResponse::Code;
using Unit = rls::RateLimitResponse::RateLimit::Unit;
using testing::HttpClient;
using testing::Sample;
using testing::ServeProcess;

// The reference's README examples, byte for byte, one file each.
const char* kExample2 = R"(domain: messaging
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
)";
const char* kExample3 = R"(domain: edge_proxy_per_ip
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
)";
const char* kExample5 = R"(domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
)";
const char* kExample6 = R"(domain: example6
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
)";
const char* kExample7 = R"(domain: example7
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
)";
// hourglass's own: one limit as a sliding window (the default) and as the reference's fixed one.
const char* kWindows = R"(domain: shorten
descriptors:
  - key: client
    rate_limit:
      name: per_client
      unit: minute
      requests_per_unit: 5
  - key: fixed_client
    rate_limit:
      unit: minute
      requests_per_unit: 5
      window: fixed
  - key: account
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: burst_and_hour
    rate_limit: {unit: minute, requests_per_unit: 3, name: burst}
    rate_limits:
      - {unit: hour, requests_per_unit: 4, name: hourly}
  - key: tenant
    rate_limits:
      - {unit: second, requests_per_unit: 5}
      - {unit: day, requests_per_unit: 2, name: daily}
)";

using Entries = std::vector<std::pair<std::string, std::string>>;

rls::RateLimitRequest Request(const std::string& domain, const std::vector<Entries>& descriptors,
                              uint32_t hits_addend = 0) {
  rls::RateLimitRequest request;
  request.set_domain(domain);
  request.set_hits_addend(hits_addend);
  for (const Entries& entries : descriptors) {
    common::RateLimitDescriptor* d = request.add_descriptors();
    for (const auto& [key, value] : entries) {
      common::RateLimitDescriptor::Entry* e = d->add_entries();
      e->set_key(key);
      e->set_value(value);
    }
  }
  return request;
}

// The response's headers to add, by name.
std::map<std::string, std::string> HeadersOf(const rls::RateLimitResponse& response) {
  std::map<std::string, std::string> headers;
  for (const auto& h : response.response_headers_to_add()) headers[h.key()] = h.value();
  return headers;
}

class RlsClient {
 public:
  explicit RlsClient(int port)
      : stub_(rls::RateLimitService::NewStub(grpc::CreateChannel(
            "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()))) {}

  grpc::Status Call(const rls::RateLimitRequest& request, rls::RateLimitResponse& response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    return stub_->ShouldRateLimit(&context, request, &response);
  }
  // The response to a request that must succeed.
  rls::RateLimitResponse Ask(const rls::RateLimitRequest& request) {
    rls::RateLimitResponse response;
    const grpc::Status status = Call(request, response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }
  Code Overall(const rls::RateLimitRequest& request) { return Ask(request).overall_code(); }

 private:
  std::unique_ptr<rls::RateLimitService::Stub> stub_;
};

class EnvoyRlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(memcached_.running()) << memcached_.error();
    dir_ = testing::UniqueTempPath(std::string("envoy_") +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/config");
    const std::vector<std::pair<std::string, const char*>> files = {
        {"example2.yaml", kExample2}, {"example3.yaml", kExample3}, {"example5.yaml", kExample5},
        {"example6.yaml", kExample6}, {"example7.yml", kExample7},  {"windows.yaml", kWindows}};
    for (const auto& [name, text] : files) Write("config/" + name, text);
    // The reference's examples again, every limit a fixed window (hourglass's extension key).
    std::filesystem::create_directories(dir_ + "/fixed");
    for (const auto& [name, text] : files) {
      if (name != "windows.yaml") Write("fixed/" + name, Fixed(text));
    }
  }

  // `yaml` with `window: fixed` after every `unit:` line, at its indentation.
  static std::string Fixed(const std::string& yaml) {
    std::stringstream in(yaml);
    std::string out;
    for (std::string line; std::getline(in, line);) {
      out += line + "\n";
      const size_t indent = line.find_first_not_of(' ');
      if (indent != std::string::npos && line.compare(indent, 5, "unit:") == 0) {
        out += std::string(indent, ' ') + "window: fixed\n";
      }
    }
    return out;
  }

  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ + "/" + name) << text;
  }

  // `hourglass serve` on the files of `config` (under the test's folder), with `env` added to its
  // environment.
  std::unique_ptr<ServeProcess> Serve(std::vector<std::string> extra = {},
                                      const std::string& config = "config",
                                      const std::vector<std::string>& env = {}) {
    grpc_port_ = testing::FreeLoopbackPort();
    std::vector<std::string> args = {"--envoy-config", dir_ + "/" + config,
                                     "--grpc-listen",  "127.0.0.1:" + std::to_string(grpc_port_),
                                     "--servers",      memcached_.address(),
                                     "--timeout-ms",   "300"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto serve = std::make_unique<ServeProcess>(HOURGLASS_CLI, args, 0, env);
    EXPECT_TRUE(serve->ready()) << serve->log();
    return serve;
  }

  testing::MemcachedServer memcached_;
  std::string dir_;
  int grpc_port_ = 0;
};

// The outcomes the reference's README describes for its examples (all within one window).
// `fixed`: every limit is a fixed window, whose reset is the window's end, never now.
void ExpectTheReadmeOutcomes(int grpc_port, int http_port, bool fixed) {
  RlsClient client(grpc_port);
  // Example 2: 5 marketing messages a day to a number, 100 messages a day to it in all; a
  // request with both descriptors is denied when either is.
  const auto both = Request("messaging", {{{"message_type", "marketing"}, {"to_number", "2061"}},
                                          {{"to_number", "2061"}}});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(client.Overall(both), rls::RateLimitResponse::OK) << i;
  rls::RateLimitResponse denied = client.Ask(both);
  EXPECT_EQ(denied.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  ASSERT_EQ(denied.statuses_size(), 2);
  EXPECT_EQ(denied.statuses(0).code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(denied.statuses(1).code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(denied.statuses(1).current_limit().requests_per_unit(), 100u);
  EXPECT_EQ(denied.statuses(1).limit_remaining(), 95u) << "the denied request counted nowhere";
  EXPECT_EQ(denied.statuses(1).duration_until_reset().seconds() > 0, fixed)
      << "a day window with room: a sliding one has room now, a fixed one resets at its end";
  EXPECT_EQ(client.Overall(
                Request("messaging", {{{"message_type", "marketing"}, {"to_number", "2062"}}})),
            rls::RateLimitResponse::OK)
      << "each number its own counter";
  // Example 3: the most specific match wins; 50.0.0.5 is banned, any other address 10/s.
  EXPECT_EQ(client.Overall(Request("edge_proxy_per_ip", {{{"remote_address", "50.0.0.5"}}})),
            rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(client.Overall(Request("edge_proxy_per_ip", {{{"remote_address", "50.0.0.1"}}})),
            rls::RateLimitResponse::OK);
  // Example 5: unlimited is OK with the most remaining, and nothing else.
  rls::RateLimitResponse ldap = client.Ask(Request("internal", {{{"ldap", "x"}}}));
  EXPECT_EQ(ldap.statuses(0).code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(ldap.statuses(0).limit_remaining(), UINT32_MAX);
  EXPECT_FALSE(ldap.statuses(0).has_current_limit());
  // Example 6: user-a in shadow mode is never limited but counted as shadow; user-b 20/s.
  const auto user_a = Request("example6", {{{"service", "auth"}, {"user", "user-a"}}});
  for (int i = 0; i < 25; ++i) EXPECT_EQ(client.Overall(user_a), rls::RateLimitResponse::OK);
  HttpClient http(http_port);
  const std::string metrics = http.Get("/metrics").body;
  EXPECT_GE(Sample(metrics,
                   "hourglass_ratelimit_hits_total{descriptor=\"example6.service.user_user-a\","
                   "domain=\"example6\",result=\"shadow_mode\"}"),
            1)
      << metrics;
  EXPECT_EQ(metrics.find("auth\""), std::string::npos) << "no label holds a counted value";
  // Example 7: (key_2, user) replaces the 5/s limit named specific_limit when both apply.
  const auto one = Request("example7", {{{"key_1", "value_1"}, {"user", "bkthomps"}}});
  const auto both7 = Request("example7", {{{"key_1", "value_1"}, {"user", "bkthomps"}},
                                          {{"key_2", "value_2"}, {"user", "bkthomps"}}});
  rls::RateLimitResponse replaced = client.Ask(both7);
  EXPECT_FALSE(replaced.statuses(0).has_current_limit()) << "replaced: as if it had no limit";
  EXPECT_EQ(replaced.statuses(1).current_limit().requests_per_unit(), 10u);
  EXPECT_EQ(client.Ask(one).statuses(0).current_limit().name(), "specific_limit");
  // An unknown domain, or descriptors no limit matches: OK.
  rls::RateLimitResponse unknown = client.Ask(Request("nobody", {{{"a", "b"}}}));
  EXPECT_EQ(unknown.overall_code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(unknown.statuses_size(), 1);
}

// The examples loaded unchanged decide as described, with sliding windows and, every limit made
// a fixed window, identically within one window.
TEST_F(EnvoyRlsTest, TheReferenceExamplesDecideAsItsReadmeSays) {
  {
    SCOPED_TRACE("sliding windows");
    auto serve = Serve();
    ExpectTheReadmeOutcomes(grpc_port_, serve->port(), false);
  }
  {
    SCOPED_TRACE("fixed windows");
    auto serve = Serve({"--namespace", "fixed"}, "fixed");
    ExpectTheReadmeOutcomes(grpc_port_, serve->port(), true);
  }
}

TEST_F(EnvoyRlsTest, EveryFieldOfTheResponse) {
  auto serve = Serve({"--envoy-response-headers"});
  RlsClient client(grpc_port_);
  const auto request = Request("shorten", {{{"client", "10.0.0.1"}}});
  for (uint32_t i = 0; i < 5; ++i) {
    rls::RateLimitResponse r = client.Ask(request);
    ASSERT_EQ(r.overall_code(), rls::RateLimitResponse::OK);
    ASSERT_EQ(r.statuses_size(), 1);
    const auto& s = r.statuses(0);
    EXPECT_EQ(s.code(), rls::RateLimitResponse::OK);
    EXPECT_EQ(s.current_limit().requests_per_unit(), 5u);
    EXPECT_EQ(s.current_limit().unit(), rls::RateLimitResponse::RateLimit::MINUTE);
    EXPECT_EQ(s.current_limit().name(), "per_client");
    EXPECT_EQ(s.limit_remaining(), 4 - i);
    // Sliding: the next hit fits now while room is left; after the last, once it has left.
    EXPECT_EQ(s.duration_until_reset().seconds(), i < 4 ? 0 : 60);
  }
  rls::RateLimitResponse denied = client.Ask(request);
  EXPECT_EQ(denied.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  const auto& s = denied.statuses(0);
  EXPECT_EQ(s.code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(s.limit_remaining(), 0u);
  // The five hits came within a second or two: the first leaves the window 59-60 s from now.
  EXPECT_GE(s.duration_until_reset().seconds(), 57);
  EXPECT_LE(s.duration_until_reset().seconds(), 60);
  std::map<std::string, std::string> headers = HeadersOf(denied);
  EXPECT_EQ(headers["RateLimit-Policy"], "\"5/m\";q=5;w=60");
  EXPECT_EQ(headers["RateLimit"].rfind("\"5/m\";r=0;t=", 0), 0u) << headers["RateLimit"];
  EXPECT_EQ(headers["Retry-After"], std::to_string(s.duration_until_reset().seconds()));
  // A fixed window resets at its end: at most a minute away, on the minute.
  rls::RateLimitResponse fixed = client.Ask(Request("shorten", {{{"fixed_client", "a"}}}));
  const int64_t until = fixed.statuses(0).duration_until_reset().seconds();
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_GE(until, 1);
  EXPECT_LE(until, 60);
  const int64_t past_the_minute = (now + until) % 60;  // now was read after the decision
  EXPECT_TRUE(past_the_minute <= 1 || past_the_minute == 59) << now << " + " << until;
}

// Several limits on one descriptor (`rate_limits`) are decided together: the request is over the
// limit when any is, its status names the most constraining one, and RateLimit-Policy lists all.
TEST_F(EnvoyRlsTest, SeveralLimitsOnOneDescriptorAreAllCheckedAndTheTightestIsReported) {
  auto serve = Serve({"--envoy-response-headers"});
  RlsClient client(grpc_port_);
  const auto burst = Request("shorten", {{{"burst_and_hour", "10.0.0.9"}}});
  for (uint32_t i = 0; i < 3; ++i) {
    rls::RateLimitResponse r = client.Ask(burst);
    ASSERT_EQ(r.overall_code(), rls::RateLimitResponse::OK) << i;
    EXPECT_EQ(r.statuses(0).current_limit().name(), "burst") << "the least remaining: 3/m";
    EXPECT_EQ(r.statuses(0).limit_remaining(), 2 - i);
    std::map<std::string, std::string> headers = HeadersOf(r);
    EXPECT_EQ(headers["RateLimit-Policy"], "\"3/m\";q=3;w=60, \"4/h\";q=4;w=3600");
  }
  rls::RateLimitResponse over = client.Ask(burst);
  EXPECT_EQ(over.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(over.statuses(0).current_limit().unit(), rls::RateLimitResponse::RateLimit::MINUTE);
  EXPECT_EQ(over.statuses(0).current_limit().requests_per_unit(), 3u);

  // The daily limit binds first: the status names it, with its reset a day away.
  const auto tenant = Request("shorten", {{{"tenant", "t-42"}}});
  for (uint32_t i = 0; i < 2; ++i) {
    rls::RateLimitResponse r = client.Ask(tenant);
    ASSERT_EQ(r.overall_code(), rls::RateLimitResponse::OK) << i;
    EXPECT_EQ(r.statuses(0).current_limit().name(), "daily");
    EXPECT_EQ(r.statuses(0).limit_remaining(), 1 - i);
  }
  rls::RateLimitResponse daily = client.Ask(tenant);
  EXPECT_EQ(daily.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  const auto& s = daily.statuses(0);
  EXPECT_EQ(s.current_limit().unit(), rls::RateLimitResponse::RateLimit::DAY);
  EXPECT_EQ(s.current_limit().requests_per_unit(), 2u);
  EXPECT_GE(s.duration_until_reset().seconds(), 86400 - 5);
  // Counted in the metrics under the descriptor, once.
  HttpClient http(serve->port());
  const std::string metrics = http.Get("/metrics").body;
  EXPECT_EQ(
      Sample(metrics,
             "hourglass_ratelimit_hits_total{descriptor=\"shorten.tenant\",domain=\"shorten\","
             "result=\"over_limit\"}"),
      1)
      << metrics;
}

// Who is limited on Envoy's protocol shows in /v1/top as it does for /v1/check: each descriptor
// ranked under its event (its entries as they are counted), denials and hits.
TEST_F(EnvoyRlsTest, DescriptorsAreRankedInTop) {
  auto serve = Serve();
  RlsClient client(grpc_port_);
  for (int i = 0; i < 8; ++i) client.Ask(Request("shorten", {{{"client", "noisy"}}}));
  client.Ask(Request("shorten", {{{"client", "quiet"}}}));
  HttpClient http(serve->port());
  const testing::HttpReply denied = http.Get("/v1/top?event=shorten.client&by=denied");
  ASSERT_EQ(denied.status, 200) << denied.body;
  const json top = json::parse(denied.body);
  ASSERT_EQ(top["features"].size(), 1u) << denied.body;
  EXPECT_EQ(top["features"][0]["feature"], "6:client5:noisy") << "the descriptor as it is counted";
  EXPECT_EQ(top["features"][0]["estimate"], 3) << "5/minute: 3 of 8 denied";
  const json hits = json::parse(http.Get("/v1/top?event=shorten.client&by=hits").body);
  EXPECT_EQ(hits["total"], 9);
  EXPECT_TRUE(json::parse(http.Get("/v1/top?event=shorten.account").body)["features"].empty());
}

TEST_F(EnvoyRlsTest, HitsAddendsAndLimitOverrides) {
  auto serve = Serve();
  RlsClient client(grpc_port_);
  // The request's hits_addend: 3 hits a request under 10/min.
  const auto three = Request("shorten", {{{"account", "ann"}}}, 3);
  for (uint32_t remaining : {7u, 4u, 1u}) {
    rls::RateLimitResponse r = client.Ask(three);
    EXPECT_EQ(r.overall_code(), rls::RateLimitResponse::OK);
    EXPECT_EQ(r.statuses(0).limit_remaining(), remaining);
  }
  EXPECT_EQ(client.Overall(three), rls::RateLimitResponse::OVER_LIMIT) << "3 more do not fit";
  // A descriptor's hits_addend 0 checks without counting: would one more hit fit?
  auto peek = Request("shorten", {{{"account", "ann"}}});
  peek.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  for (int i = 0; i < 5; ++i) {
    rls::RateLimitResponse r = client.Ask(peek);
    EXPECT_EQ(r.overall_code(), rls::RateLimitResponse::OK);
    EXPECT_EQ(r.statuses(0).limit_remaining(), 1u) << "peeks count nothing";
  }
  EXPECT_EQ(client.Overall(Request("shorten", {{{"account", "ann"}}})), rls::RateLimitResponse::OK);
  EXPECT_EQ(client.Overall(peek), rls::RateLimitResponse::OVER_LIMIT) << "full now";
  // A descriptor's own hits_addend wins over the request's.
  auto own = Request("shorten", {{{"account", "bob"}}}, 1);
  own.mutable_descriptors(0)->mutable_hits_addend()->set_value(10);
  EXPECT_EQ(client.Ask(own).statuses(0).limit_remaining(), 0u);
  // A limit override replaces the configuration's, for a known domain, under its own counter.
  auto overridden = Request("shorten", {{{"account", "carol"}}});
  overridden.mutable_descriptors(0)->mutable_limit()->set_requests_per_unit(2);
  overridden.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::MINUTE);
  EXPECT_EQ(client.Overall(overridden), rls::RateLimitResponse::OK);
  rls::RateLimitResponse second = client.Ask(overridden);
  EXPECT_EQ(second.statuses(0).current_limit().requests_per_unit(), 2u);
  EXPECT_EQ(second.statuses(0).limit_remaining(), 0u);
  EXPECT_EQ(client.Overall(overridden), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(client.Ask(Request("shorten", {{{"account", "carol"}}})).statuses(0).limit_remaining(),
            9u)
      << "the configuration's counter is another";
  // A calendar month needs a retention of 31 days, which this service lacks: the request is
  // refused, naming the descriptor.
  overridden.mutable_descriptors(0)->mutable_limit()->set_unit(envoy::type::v3::MONTH);
  rls::RateLimitResponse unused;
  const grpc::Status refused = client.Call(overridden, unused);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("descriptor 0"), std::string::npos);
}

TEST_F(EnvoyRlsTest, BadRequestsAreInvalidArgumentsAndHostileValuesCountAsThemselves) {
  auto serve = Serve();
  RlsClient client(grpc_port_);
  rls::RateLimitResponse unused;
  EXPECT_EQ(client.Call(Request("", {{{"a", "b"}}}), unused).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client.Call(Request("shorten", {}), unused).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  std::vector<Entries> many(65, Entries{{"client", "x"}});
  const grpc::Status too_many = client.Call(Request("shorten", many), unused);
  EXPECT_EQ(too_many.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(too_many.error_message().find("at most 64"), std::string::npos);
  // Values with NUL, CR/LF, spaces and 10 KB are counters of their own.
  const std::vector<std::string> values = {std::string("a\0b", 3), "a\r\nb", "a b",
                                           std::string(10 * 1024, 'v'), "a"};
  for (const std::string& v : values) {
    for (uint32_t i = 0; i < 5; ++i) {
      rls::RateLimitResponse r = client.Ask(Request("shorten", {{{"client", v}}}));
      ASSERT_EQ(r.statuses_size(), 1);
      EXPECT_EQ(r.statuses(0).limit_remaining(), 4 - i) << v.size();
    }
  }
}

// Concurrent requests in admitted mode: one that is denied counts against none of its
// descriptors, and many streams on one descriptor never admit more than the limit.
TEST_F(EnvoyRlsTest, ConcurrentRequestsNeverOverAdmitAndADeniedOneCountsNowhere) {
  auto serve = Serve();
  std::atomic<int> admitted{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      RlsClient client(grpc_port_);
      for (int i = 0; i < 25; ++i) {
        rls::RateLimitResponse r;
        // One descriptor shared by all (5/min), one per thread and call (10/min, never full).
        const auto request = Request(
            "shorten", {{{"client", "shared"}}, {{"account", std::to_string(t * 100 + i)}}});
        if (!client.Call(request, r).ok()) ++failed;
        if (r.overall_code() == rls::RateLimitResponse::OK) ++admitted;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed, 0);
  // Concurrent increments may deny a request the limit had room for (each takes its hit back),
  // never admit one over it.
  EXPECT_LE(admitted, 5) << "200 concurrent requests, a 5/min limit";
  EXPECT_GE(admitted, 1);
  // Every denied request's own account descriptor was taken back: each still has 10.
  RlsClient client(grpc_port_);
  int untouched = 0;
  for (int t = 0; t < 8; ++t) {
    for (int i = 0; i < 25; ++i) {
      auto peek = Request("shorten", {{{"account", std::to_string(t * 100 + i)}}});
      peek.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
      const uint32_t remaining = client.Ask(peek).statuses(0).limit_remaining();
      EXPECT_TRUE(remaining == 10u || remaining == 9u) << remaining;
      untouched += remaining == 10u;
    }
  }
  EXPECT_EQ(untouched, 200 - admitted) << "only the admitted requests' accounts were counted";
  // Attempts mode counts every request.
  auto attempts = Serve({"--envoy-counting", "attempts", "--namespace", "attempts"});
  RlsClient again(grpc_port_);
  for (int i = 0; i < 7; ++i) {
    again.Ask(Request("shorten", {{{"client", "c"}}, {{"account", "a"}}}));
  }
  auto peek = Request("shorten", {{{"account", "a"}}});
  peek.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  EXPECT_EQ(again.Ask(peek).statuses(0).limit_remaining(), 3u) << "7 attempts of 10";
}

// The reference's files express several limits as several descriptors. Once one of them holds a
// client denied moments ago, its next request is denied without memcached: the denying status is
// whole, the other is OK without a limit (not read), which Envoy's rate limit headers pass over,
// and nothing of the request is counted.
TEST_F(EnvoyRlsTest, ARequestOneDescriptorOfWhichIsKnownDeniedIsAnsweredWithoutTheStore) {
  auto serve = Serve({"--stats-interval", "0"});  // no look at the server's figures meanwhile
  RlsClient client(grpc_port_);
  const auto both = Request("messaging", {{{"message_type", "marketing"}, {"to_number", "3031"}},
                                          {{"to_number", "3031"}}});
  for (int i = 0; i < 5; ++i) ASSERT_EQ(client.Overall(both), rls::RateLimitResponse::OK) << i;
  rls::RateLimitResponse read = client.Ask(both);
  ASSERT_EQ(read.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(read.statuses(1).current_limit().requests_per_unit(), 100u) << "read from the store";

  const long long gets = memcached_.Stat("cmd_get");
  rls::RateLimitResponse local = client.Ask(both);
  EXPECT_EQ(memcached_.Stat("cmd_get"), gets) << "answered without reading memcached";
  EXPECT_EQ(local.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  ASSERT_EQ(local.statuses_size(), 2);
  EXPECT_EQ(local.statuses(0).code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(local.statuses(0).current_limit().requests_per_unit(), 5u);
  EXPECT_EQ(local.statuses(1).code(), rls::RateLimitResponse::OK);
  EXPECT_FALSE(local.statuses(1).has_current_limit()) << "not read: no limit to report";

  auto peek = Request("messaging", {{{"to_number", "3031"}}});
  peek.mutable_descriptors(0)->mutable_hits_addend()->set_value(0);
  EXPECT_EQ(client.Ask(peek).statuses(0).limit_remaining(), 95u) << "the denials counted nowhere";
  HttpClient http(serve->port());
  EXPECT_EQ(testing::SampleSum(http.Get("/metrics").body, "hourglass_ratelimit_hits_total",
                               "result=\"unread\""),
            1);
}

// A client that sends the limit just before a minute ends and again just after: the reference's
// fixed windows admit twice the limit within seconds; the sliding window admits the limit. The
// service's wall clock is libfaketime's, read from a file the test rewrites: the instant stands
// still until the test moves it (monotonic time, which timeouts use, is left alone; nothing
// follows the store's clock).
TEST_F(EnvoyRlsTest, AtAWindowEdgeFixedAdmitsTwiceTheLimitAndSlidingDoesNot) {
  ASSERT_STRNE(HOURGLASS_FAKETIME_LIB, "") << "libfaketime is missing: apt-get install faketime";
  const std::string clock_file = dir_ + "/clock";
  const auto set_clock = [&](const std::string& at) { std::ofstream(clock_file) << at << "\n"; };
  set_clock("2026-01-01 00:00:58");  // two seconds before a minute ends
  auto serve =
      Serve({"--stats-interval", "0"}, "config",
            testing::FaketimeEnvironment(
                HOURGLASS_FAKETIME_LIB, {"FAKETIME_TIMESTAMP_FILE=" + clock_file,
                                         "FAKETIME_NO_CACHE=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"}));
  RlsClient client(grpc_port_);
  const auto burst = [&](const std::string& key) {
    int ok = 0;
    for (int i = 0; i < 5; ++i) {
      ok += client.Overall(Request("shorten", {{{key, "attacker"}}})) == rls::RateLimitResponse::OK;
    }
    return ok;
  };
  // Within one window both agree.
  EXPECT_EQ(burst("fixed_client"), 5);
  EXPECT_EQ(burst("client"), 5);
  set_clock("2026-01-01 00:01:00");  // the next minute
  EXPECT_EQ(burst("fixed_client"), 5) << "a new fixed window: 10 in about 2 s";
  EXPECT_EQ(burst("client"), 0) << "the sliding minute still holds the 5";
}

TEST_F(EnvoyRlsTest, TheJsonEndpointTakesTheSameRequest) {
  auto serve = Serve();
  HttpClient http(serve->port());
  const std::string body =
      R"({"domain":"shorten","descriptors":[{"entries":[{"key":"fixed_client","value":"j"}]}]})";
  for (int i = 0; i < 5; ++i) {
    testing::HttpReply ok = http.Post("/json", body);
    ASSERT_EQ(ok.status, 200) << ok.body;
    const json j = json::parse(ok.body);
    EXPECT_EQ(j["overallCode"], "OK");
    EXPECT_EQ(j["statuses"][0]["currentLimit"]["requestsPerUnit"], 5);
    EXPECT_EQ(j["statuses"][0]["currentLimit"]["unit"], "MINUTE");
    // proto3 JSON leaves out a zero, so the last admitted answer has no limitRemaining.
    EXPECT_EQ(j["statuses"][0].value("limitRemaining", 0), 4 - i);
  }
  testing::HttpReply over = http.Post("/json", body);
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(json::parse(over.body)["overallCode"], "OVER_LIMIT");
  EXPECT_EQ(json::parse(over.body)["statuses"][0]["code"], "OVER_LIMIT");
  testing::HttpReply bad = http.Post("/json", R"({"domain":"shorten","descriptorz":[]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(json::parse(bad.body)["error"].get<std::string>().find("descriptorz"),
            std::string::npos)
      << bad.body;
  EXPECT_EQ(http.Post("/json", R"({"domain":""})").status, 400);
  EXPECT_EQ(http.Get("/json").status, 405);
}

TEST_F(EnvoyRlsTest, ABadConfigurationIsRefusedWithFileAndLineAndAReloadKeepsTheGoodOne) {
  std::filesystem::create_directories(dir_ + "/bad");
  Write("bad/oops.yaml",
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: "
        "second\n      requests_per_unit: 1\n      burst: 3\n");
  testing::ProcessResult r = testing::RunProcess(
      {HOURGLASS_CLI, "--store", "memory", "serve", "--envoy-config", dir_ + "/bad"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("oops.yaml:7:7: unknown key \"burst\""), std::string::npos) << r.err;
  // A unit the retention cannot answer is refused at start, not on every request.
  Write(
      "bad/oops.yaml",
      "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: week, requests_per_unit: 9}\n");
  r = testing::RunProcess(
      {HOURGLASS_CLI, "--store", "memory", "serve", "--envoy-config", dir_ + "/bad"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("oops.yaml:3: descriptor \"d.k\": limit 9/w is longer than the retention "
                       "(1d)"),
            std::string::npos)
      << r.err;
  // Running: a bad file on SIGHUP keeps what is in force; a good one takes over.
  auto serve = Serve();
  RlsClient client(grpc_port_);
  HttpClient http(serve->port());
  Write("config/windows.yaml", "domain: shorten\ndescriptors: [\n");
  serve->Signal(SIGHUP);
  EXPECT_TRUE(serve->WaitForLog("reload failed")) << serve->log();
  EXPECT_NE(serve->log().find("windows.yaml:"), std::string::npos) << serve->log();
  EXPECT_EQ(client.Ask(Request("shorten", {{{"client", "x"}}})).statuses(0).limit_remaining(), 4u);
  Write("config/windows.yaml",
        "domain: shorten\ndescriptors:\n  - key: client\n    rate_limit: {unit: hour, "
        "requests_per_unit: 50}\n");
  serve->Signal(SIGHUP);
  EXPECT_TRUE(serve->WaitForLog("reloaded")) << serve->log();
  rls::RateLimitResponse after = client.Ask(Request("shorten", {{{"client", "x"}}}));
  EXPECT_EQ(after.statuses(0).current_limit().requests_per_unit(), 50u);
  EXPECT_EQ(after.statuses(0).current_limit().unit(), rls::RateLimitResponse::RateLimit::HOUR);
}

TEST_F(EnvoyRlsTest, AKilledStoreAnswersPerTheFailureModeUntilItIsBack) {
  auto open = Serve();
  const int open_port = grpc_port_;
  auto closed = Serve({"--envoy-failure-mode", "closed"});
  RlsClient open_client(open_port), closed_client(grpc_port_);
  const auto request = Request("shorten", {{{"client", "k"}}});
  EXPECT_EQ(open_client.Ask(request).statuses(0).limit_remaining(), 4u);
  memcached_.Kill();
  EXPECT_EQ(open_client.Overall(request), rls::RateLimitResponse::OK) << "fails open";
  EXPECT_EQ(closed_client.Overall(request), rls::RateLimitResponse::OVER_LIMIT) << "fails closed";
  HttpClient http(open->port());
  const std::string metrics = http.Get("/metrics").body;
  EXPECT_GE(
      Sample(metrics,
             "hourglass_ratelimit_hits_total{descriptor=\"shorten.client\",domain=\"shorten\","
             "result=\"degraded_within_limit\"}"),
      1)
      << metrics;
  ASSERT_TRUE(memcached_.Start());
  bool counted = false;
  const auto fresh = Request("shorten", {{{"client", "after the restart"}}});
  for (int i = 0; i < 100 && !counted; ++i) {  // after the store's fail-fast interval
    rls::RateLimitResponse r = open_client.Ask(fresh);
    counted = r.statuses(0).limit_remaining() == 4u;  // degraded answers have no count
    if (!counted) std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  EXPECT_TRUE(counted);
}

// Descriptors open in process `pid` now.
size_t OpenDescriptors(pid_t pid) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++n;
  }
  return n;
}

// 2,000 TCP connections to the gRPC port that send nothing: kept, they would run the process out
// of descriptors; the gRPC server's cap holds the process's descriptors down,
// and Envoy's calls and HTTP clients are still answered during the flood.
TEST_F(EnvoyRlsTest, AConnectionFloodOnTheGrpcPortIsCappedAndEnvoyIsStillAnswered) {
  auto serve = Serve({"--grpc-max-connections", "64"});
  const size_t before = OpenDescriptors(serve->pid());
  testing::SilentConnections flood(grpc_port_, 2000);
  ASSERT_EQ(flood.opened(), 2000u);
  std::this_thread::sleep_for(std::chrono::milliseconds{1200});  // the flood falls silent
  RlsClient client(grpc_port_);
  rls::RateLimitResponse r;
  EXPECT_TRUE(client.Call(Request("shorten", {{{"client", "during-flood"}}}), r).ok());
  EXPECT_EQ(r.overall_code(), rls::RateLimitResponse::OK);
  HttpClient http(serve->port());
  EXPECT_EQ(http.Get("/healthz").status, 200);
  // Each kept connection costs a descriptor.
  EXPECT_LE(OpenDescriptors(serve->pid()), before + 64 + 16)
      << "the gRPC server kept connections beyond its cap";
  EXPECT_GE(flood.ClosedByPeerWithin(2000 - 64, std::chrono::seconds{10}), 2000u - 64);
}

}  // namespace
}  // namespace hourglass
