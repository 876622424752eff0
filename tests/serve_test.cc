// `hourglass serve` as an operator meets it: the real binary on a free port in front of a real
// memcached, driven by a real HTTP client. What only the process can show: its options and exit
// codes, signals (reload, drain), its log's format, the open file limit and connection floods,
// a host clock that lags (libfaketime), penalties seen by the CLI, and the other stores behind
// it. The API's behaviour on a controlled clock is tested in process (service_test.cc).
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "api_requests.h"
#include "hourglass/engine.h"
#include "memcached_server.h"
#include "prometheus_sample.h"
#include "redis_server.h"
#include "run_process.h"
#include "serve_process.h"
#include "silent_connections.h"

namespace hourglass {
namespace {

using nlohmann::json;
using testing::HttpClient;
using testing::HttpReply;
using testing::Sample;
using testing::SampleSum;
using testing::ServeProcess;
using testing::UrlEncode;

using testing::CheckBody;
using testing::CountOf;
using testing::ParseSfList;

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(memcached_.running()) << memcached_.error(); }

  // Writes `yaml` to a policy file of this test and returns its path.
  std::string WritePolicy(const std::string& yaml) {
    std::ofstream(policy_path_) << yaml;
    return policy_path_;
  }
  std::unique_ptr<ServeProcess> Serve(const std::string& yaml,
                                      std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--policy", WritePolicy(yaml), "--servers",
                                     memcached_.address()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto serve = std::make_unique<ServeProcess>(HOURGLASS_CLI, args);
    EXPECT_TRUE(serve->ready()) << serve->log();
    return serve;
  }
  // A service (signup 10/d closed on data loss, browse 10/d open) that saw ann use her 10/d
  // and then memcached restart: its log told the loss.
  std::unique_ptr<ServeProcess> ServeThroughARestart() {
    auto serve = Serve(
        "events:\n  signup:\n    limits: [10/d]\n    on_data_loss: closed\n"
        "  browse:\n    limits: [10/d]\n",
        {"--stats-interval", "1"});
    HttpClient client(serve->port());
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "ann")).status, 200);
    }
    EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "ann")).status, 429);
    memcached_.Stop();
    EXPECT_TRUE(memcached_.Start());
    EXPECT_TRUE(serve->WaitForLog("memcached " + memcached_.address() + " restarted at "))
        << serve->log();
    return serve;
  }
  testing::MemcachedServer memcached_;
  std::string policy_path_ = "/tmp/hourglass-serve-test-" + std::to_string(getpid()) + ".yaml";
};

// The log's lines as JSON objects; a line that is not one fails the test.
std::vector<json> JsonLines(const std::string& log) {
  std::vector<json> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(json::parse(line, nullptr, false));
    EXPECT_TRUE(lines.back().is_object()) << "not a JSON line: " << line;
  }
  return lines;
}

// Whether a line of `lines` has `level` and a message containing `text`.
bool Logged(const std::vector<json>& lines, const std::string& level, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const json& line) {
    return line.is_object() && line.value("level", "") == level &&
           line.value("message", "").find(text) != std::string::npos;
  });
}

TEST_F(ServeTest, SighupReloadsAGoodPolicyAndKeepsTheOldOneForABadFile) {
  auto serve = Serve("events:\n  signup:\n    limits: [1/m]\n", {"--log-format", "json"});
  HttpClient client(serve->port());
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "a")).status, 200);
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "a")).status, 429);
  WritePolicy("events:\n  signup:\n    limits: [5/m]\n  login:\n    limits: [3/s]\n");
  serve->Signal(SIGHUP);
  ASSERT_TRUE(serve->WaitForLog("reloaded")) << serve->log();
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "a")).status, 200);
  WritePolicy("events:\n  signup:\n    limits: [5/x]\n");
  serve->Signal(SIGHUP);
  ASSERT_TRUE(serve->WaitForLog("reload failed")) << serve->log();
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "a")).status, 200);  // 5/m still

  // Every line a JSON object; the start says where it listens, on what, with which limits; a
  // reload says what changed; nothing is logged per request.
  const std::vector<json> lines = JsonLines(serve->log());
  EXPECT_TRUE(Logged(lines, "info", "listening on 127.0.0.1:" + std::to_string(serve->port())));
  EXPECT_TRUE(Logged(lines, "info", "store memcached " + memcached_.address()));
  EXPECT_TRUE(Logged(lines, "info", "event signup: 1/m (admitted, fail open)"));
  EXPECT_TRUE(Logged(lines, "info", "reloaded " + policy_path_ + ": 2 events changed"));
  EXPECT_TRUE(Logged(lines, "info", "changed signup: 1/m (admitted, fail open) -> 5/m"));
  EXPECT_TRUE(Logged(lines, "info", "added login: 3/s (admitted, fail open)"));
  EXPECT_TRUE(Logged(lines, "error", "reload failed, keeping the configuration in force"));
  EXPECT_LE(lines.size(), 12u) << serve->log();
}

// A request whose first bytes arrived before SIGTERM is answered, with Connection: close; then
// the server exits 0.
TEST_F(ServeTest, SigtermDrainsARequestInFlightThenExitsZero) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(serve->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string body = CheckBody("signup", "late");
  const std::string head =
      "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n";
  ASSERT_EQ(write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  serve->Signal(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  const std::string rest = "\r\n" + body;
  ASSERT_EQ(write(fd, rest.data(), rest.size()), static_cast<ssize_t>(rest.size()));
  std::string answer;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) answer.append(buffer, static_cast<size_t>(n));
  close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200 OK", 0), 0u) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_EQ(serve->Wait(), 0) << serve->log();
  EXPECT_NE(serve->log().find("stopped"), std::string::npos) << serve->log();
}

// A penalty struck on one service blocks the feature on every service sharing the store: denied
// with Retry-After until the block ends, shown by count, inspect, the CLI and /v1/top, and lifted
// by a reset.
TEST_F(ServeTest, APenaltyBlocksTheFeatureOnEveryServiceUntilAResetLiftsIt) {
  const std::string yaml =
      "events:\n  login:\n    limits: [2/m]\n    block_for: 10m\n  plain:\n    limits: [2/m]\n";
  auto a = Serve(yaml);
  auto b = Serve(yaml);
  HttpClient ca(a->port()), cb(b->port());
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(ca.Post("/v1/check", CheckBody("login", "ann")).status, 200);
  HttpReply struck = ca.Post("/v1/check", CheckBody("login", "ann"));
  ASSERT_EQ(struck.status, 429) << struck.body;
  const json d = json::parse(struck.body);
  const int64_t until = d["blocked_until"].get<int64_t>();
  EXPECT_EQ(until, d["at"].get<int64_t>() + 600);
  EXPECT_EQ(struck.Header("retry-after"), "600");
  EXPECT_EQ(ca.Post("/v1/check", CheckBody("plain", "ann")).status, 200) << "per event";
  EXPECT_EQ(cb.Post("/v1/check", CheckBody("login", "bob")).status, 200) << "per feature";

  HttpReply other = cb.Post("/v1/check", CheckBody("login", "ann"));
  EXPECT_EQ(other.status, 429) << "the other service sees the block";
  EXPECT_EQ(json::parse(other.body)["blocked_until"], until);
  EXPECT_GE(std::stoi(other.Header("retry-after")), 598);
  EXPECT_EQ(CountOf(cb, "login", "ann", "1m"), 2u) << "the denials counted nothing";

  HttpReply count = cb.Get("/v1/count?event=login&feature=ann&window=1m");
  EXPECT_EQ(json::parse(count.body)["blocked_until"], until);
  EXPECT_TRUE(
      json::parse(cb.Get("/v1/count?event=login&feature=bob").body)["blocked_until"].is_null());
  EXPECT_EQ(json::parse(cb.Get("/v1/inspect?event=login&feature=ann").body)["blocked_until"],
            until);
  const json top = json::parse(cb.Get("/v1/top?event=login&by=denied").body);
  ASSERT_FALSE(top["features"].empty()) << top;
  EXPECT_EQ(top["features"][0]["feature"], "ann");
  testing::ProcessResult cli =
      testing::RunProcess({HOURGLASS_CLI, "count", "login", "ann", "--policy", policy_path_,
                           "--servers", memcached_.address(), "--json"});
  ASSERT_EQ(cli.code, 0) << cli.err;
  EXPECT_EQ(json::parse(cli.out)["blocked_until"], until);

  ASSERT_EQ(cb.Send("DELETE", "/v1/counters?event=login&feature=ann").status, 200);
  // At once on the resetting service; another forgets its local denial within 5 s (the hot
  // path's blocked_max_age).
  HttpReply lifted = cb.Post("/v1/check", CheckBody("login", "ann"));
  EXPECT_EQ(lifted.status, 200) << lifted.body;
  EXPECT_FALSE(json::parse(lifted.body).contains("blocked_until"));
}

TEST_F(ServeTest, APolicyLongerThanTheRetentionIsRefusedAtStartAndOnReload) {
  ServeProcess refused(HOURGLASS_CLI,
                       {"--policy", WritePolicy("events:\n  weekly:\n    limits: [500/w]\n"),
                        "--servers", memcached_.address()});
  EXPECT_FALSE(refused.ready());
  EXPECT_EQ(refused.Wait(), 2) << refused.log();
  EXPECT_NE(refused.log().find(policy_path_ + ":2: event \"weekly\": limit 500/w is longer than "
                                              "the retention (1d)"),
            std::string::npos)
      << refused.log();

  auto serve = Serve("events:\n  signup:\n    limits: [1/m]\n");
  HttpClient client(serve->port());
  WritePolicy("events:\n  signup:\n    limits: [500/w]\n");
  serve->Signal(SIGHUP);
  ASSERT_TRUE(serve->WaitForLog("reload failed")) << serve->log();
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "a")).status, 200);
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "a")).status, 429);  // 1/m still
}

// A token file whose line has surrounding spaces works: HTTP strips them from the header too.
TEST_F(ServeTest, AnAdminTokenWithSurroundingSpacesIsTrimmedAsHttpTrimsIt) {
  const std::string token_path = policy_path_ + ".token";
  std::ofstream(token_path) << "  s3cret \r\n";
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n", {"--admin-token-file", token_path});
  HttpClient client(serve->port());
  const std::map<std::string, std::string> auth = {{"Authorization", "Bearer s3cret"}};
  EXPECT_EQ(client.Send("POST", "/v1/hit", CheckBody("signup", "bob"), auth).status, 200);
  unlink(token_path.c_str());
}

// An address in use is exit 4, not 3 (the store): the message names the address.
TEST_F(ServeTest, AnAddressInUseExitsWithItsOwnCode) {
  auto first = Serve("events:\n  signup:\n    limits: [3/m]\n");
  const std::string taken = "127.0.0.1:" + std::to_string(first->port());
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    execl(HOURGLASS_CLI, HOURGLASS_CLI, "serve", "--policy", policy_path_.c_str(), "--servers",
          memcached_.address().c_str(), "--listen", taken.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4);
}

// More connections that send nothing than --max-connections no longer lock real clients out:
// each new connection takes the place of the one idle longest.
TEST_F(ServeTest, AFloodOfIdleConnectionsLocksNoClientOut) {
  auto serve = Serve("events:\n  signup:\n    limits: [5/m]\n", {"--max-connections", "64"});
  testing::SilentConnections flood(serve->port(), 300);
  ASSERT_EQ(flood.opened(), 300u);
  int answered = 0;
  for (int i = 0; i < 40; ++i) {
    HttpClient client(serve->port());
    answered += client.Post("/v1/check", CheckBody("signup", std::to_string(i))).status == 200;
  }
  EXPECT_EQ(answered, 40) << "real clients were refused while idle connections held the cap";
  EXPECT_GE(flood.ClosedByPeerWithin(300 - 64, std::chrono::seconds{10}), 300u - 64);
  // The flood shows in the metrics: every place made for a new connection is counted.
  const std::string metrics = HttpClient(serve->port()).Get("/metrics").body;
  EXPECT_GE(
      Sample(metrics, "hourglass_connection_events_total{event=\"made_room\",listener=\"http\"}"),
      300 - 64)
      << metrics;
}

// Under systemd's usual open file limit, the default caps shrink (with a warning) so that a flood
// cannot take the descriptors memcached needs: checks stay exact, none degraded.
TEST_F(ServeTest, UnderALowOpenFileLimitTheCapsShrinkAndAFloodLeavesTheStoreItsConnections) {
  ServeProcess serve(HOURGLASS_CLI,
                     {"--policy", WritePolicy("events:\n  signup:\n    limits: [5/m]\n"),
                      "--servers", memcached_.address()},
                     256);
  ASSERT_TRUE(serve.ready()) << serve.log();
  EXPECT_TRUE(serve.WaitForLog("--max-connections lowered from 1024 to")) << serve.log();
  testing::SilentConnections flood(serve.port(), 600);
  int allowed = 0, degraded = 0;
  for (int i = 0; i < 10; ++i) {
    HttpClient client(serve.port());
    HttpReply r = client.Post("/v1/check", CheckBody("signup", "ann"));
    ASSERT_TRUE(r.status == 200 || r.status == 429) << r.status << " " << r.body;
    const json body = json::parse(r.body);
    allowed += body["allowed"].get<bool>() ? 1 : 0;
    degraded += body["degraded"].get<bool>() ? 1 : 0;
  }
  EXPECT_EQ(allowed, 5);
  EXPECT_EQ(degraded, 0);
}

// A network store that does not answer at start does not stop the service: it starts, says so in
// the log, answers per each event's failure mode and is unready until the store answers; then it
// counts. (Exit 3 is for a store that cannot be opened at all.)
TEST_F(ServeTest, AStoreDownAtStartIsServedUnreadyUntilItAnswers) {
  memcached_.Kill();
  auto serve = Serve("events:\n  signup:\n    limits: [3/m]\n    on_store_failure: closed\n",
                     {"--timeout-ms", "300"});
  HttpClient client(serve->port());
  EXPECT_EQ(client.Get("/healthz").status, 200);
  EXPECT_EQ(client.Get("/readyz").status, 503);
  HttpReply closed = client.Post("/v1/check", CheckBody("signup", "ann"));
  EXPECT_EQ(closed.status, 429) << closed.body;
  EXPECT_NE(closed.Header("hourglass-degraded"), "");
  EXPECT_TRUE(serve->WaitForLog(" error memcached " + memcached_.address() + " unreachable ("))
      << serve->log();
  ASSERT_TRUE(memcached_.Start());
  bool ready = false;
  for (int i = 0; i < 100 && !ready; ++i) {  // after the store's fail-fast interval
    ready = client.Get("/readyz").status == 200;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  ASSERT_TRUE(ready) << serve->log();
  HttpReply counted = client.Post("/v1/check", CheckBody("signup", "ann"));
  EXPECT_EQ(counted.status, 200) << counted.body;
  EXPECT_EQ(json::parse(counted.body)["limits"][0]["count"], 1)
      << "the refused check counted nothing";
}

// An operator restarts memcached (an upgrade, an OOM kill): it comes back empty. The service sees
// the new process at its next look at the server's figures, logs the loss, and every check whose
// windows reach back before it says so: closed (a signup limit) denies until the loss has left
// its windows, open decides on what is left. Before, the client that had used its 10/d was
// admitted again at once, exact and unflagged.
TEST_F(ServeTest, AMemcachedRestartIsToldAndAClosedLimitHolds) {
  auto serve = ServeThroughARestart();
  ASSERT_FALSE(HasFailure());
  HttpClient client(serve->port());

  HttpReply closed = client.Post("/v1/check", CheckBody("signup", "ann"));
  EXPECT_EQ(closed.status, 429) << closed.body;
  EXPECT_NE(closed.Header("hourglass-degraded").find("restarted"), std::string::npos)
      << closed.Header("hourglass-degraded");
  const json decision = json::parse(closed.body);
  EXPECT_TRUE(decision["degraded"].get<bool>());
  EXPECT_FALSE(decision["limits"][0]["exact"].get<bool>());
  HttpReply open = client.Post("/v1/check", CheckBody("browse", "ann"));
  EXPECT_EQ(open.status, 200) << open.body;
  EXPECT_NE(open.Header("hourglass-degraded"), "");

  const json count = json::parse(client.Get("/v1/count?event=signup&feature=ann&window=1d").body);
  EXPECT_TRUE(count["windows"][0]["lost"].get<bool>());
  EXPECT_EQ(count["loss"]["cause"], "restarted");
  // The store's new connection may have told the restart first: the watch counts it at its next
  // look (every second here).
  const std::string losses = "hourglass_store_losses_total{cause=\"restarted\",server=\"" +
                             memcached_.address() + "\",store=\"memcached\"}";
  double counted = 0;
  for (int i = 0; i < 50 && (counted = Sample(client.Get("/metrics").body, losses)) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  EXPECT_EQ(counted, 1);
}

// A one-shot CLI command cannot see a restart itself (a first look at a young server tells no
// past), nor can a service started after it: the service that saw it leaves a note on the
// server, which they read. `count` and `check` then say so, closed holds the limit, and a
// service started later tells it at start.
TEST_F(ServeTest, ALossAServiceSawIsToldToTheCliAndToAServiceStartedAfterIt) {
  auto serve = ServeThroughARestart();
  ASSERT_FALSE(HasFailure());
  // The note follows the log line in the same look at the server.
  std::string note;
  for (int i = 0; i < 200 && note.find("restarted") == std::string::npos; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds{50});
    note = memcached_.Raw("get hourglass::note\r\n");
  }
  ASSERT_NE(note.find("restarted"), std::string::npos) << note;

  const std::vector<std::string> store = {"--policy", policy_path_, "--servers",
                                          memcached_.address()};
  const auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin(), HOURGLASS_CLI);
    args.insert(args.end(), store.begin(), store.end());
    return testing::RunProcess(args, {"HOURGLASS_ENV_FILE="});
  };
  testing::ProcessResult count = cli({"count", "signup", "ann"});
  ASSERT_EQ(count.code, 0) << count.err;
  EXPECT_NE(count.out.find("memcached " + memcached_.address() + " restarted at "),
            std::string::npos)
      << count.out;
  EXPECT_NE(count.out.find("policy is closed on data loss"), std::string::npos) << count.out;
  testing::ProcessResult closed = cli({"check", "signup", "ann"});
  EXPECT_EQ(closed.code, 1) << "denied: " << closed.out << closed.err;
  EXPECT_NE(closed.err.find("restarted at"), std::string::npos) << closed.err;
  testing::ProcessResult open = cli({"--json", "check", "browse", "ann"});
  EXPECT_EQ(open.code, 0) << open.out << open.err;
  EXPECT_TRUE(json::parse(open.out)["degraded"].get<bool>()) << open.out;

  ServeProcess later(HOURGLASS_CLI, {"--policy", policy_path_, "--servers", memcached_.address(),
                                     "--stats-interval", "1"});
  ASSERT_TRUE(later.ready()) << later.log();
  EXPECT_TRUE(later.WaitForLog("restarted at ")) << later.log();
  EXPECT_NE(later.log().find("told by the note"), std::string::npos) << later.log();
  HttpReply held = HttpClient(later.port()).Post("/v1/check", CheckBody("signup", "ann"));
  EXPECT_EQ(held.status, 429) << held.body;
}

// A small memcached flooded by other items evicts a feature's counts whole: the next look at its
// figures (`stats items`: how long the latest evicted item went unused) finds counts used within
// the day gone, logs it, and every check reaching back before then says so; closed holds the
// limit. Before, the feature was admitted again, exact and unflagged.
TEST_F(ServeTest, AnEvictionIsToldAndAClosedLimitHolds) {
  testing::MemcachedServer small("127.0.0.1", 8);
  ASSERT_TRUE(small.running()) << small.error();
  ServeProcess serve(HOURGLASS_CLI,
                     {"--policy",
                      WritePolicy("events:\n  signup:\n    limits: [10/d]\n    on_data_loss: "
                                  "closed\n  browse:\n    limits: [10/d]\n"),
                      "--servers", small.address(), "--stats-interval", "1"});
  ASSERT_TRUE(serve.ready()) << serve.log();
  HttpClient client(serve.port());
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(client.Post("/v1/check", CheckBody("signup", "ann")).status, 200);
  }
  ASSERT_EQ(client.Post("/v1/check", CheckBody("signup", "ann")).status, 429);
  ASSERT_TRUE(small.EvictKeysContaining("ann"));
  ASSERT_GT(small.Stat("evictions"), 0) << "the feature's items went by eviction";
  // The next look at the server's figures (every second) sees it; a busy machine may delay
  // that look by seconds, which changes nothing it finds.
  const std::string told = "memcached " + small.address() + " evicted ";
  ASSERT_TRUE(serve.WaitForLog(told, std::chrono::seconds{20})) << serve.log();
  const std::string log = serve.log();
  ASSERT_NE(log.find("are degraded (data loss)", log.find(told)), std::string::npos) << log;

  HttpReply closed = client.Post("/v1/check", CheckBody("signup", "ann"));
  EXPECT_EQ(closed.status, 429) << closed.body;
  EXPECT_NE(closed.Header("hourglass-degraded").find("evicted"), std::string::npos)
      << closed.Header("hourglass-degraded");
  EXPECT_FALSE(json::parse(closed.body)["limits"][0]["exact"].get<bool>());
  HttpReply open = client.Post("/v1/check", CheckBody("browse", "ann"));
  EXPECT_EQ(open.status, 200) << open.body;
  EXPECT_NE(open.Header("hourglass-degraded"), "");
  const json count = json::parse(client.Get("/v1/count?event=signup&feature=ann&window=1d").body);
  EXPECT_TRUE(count["windows"][0]["lost"].get<bool>());
  EXPECT_EQ(count["loss"]["cause"], "evicted");
  EXPECT_GE(Sample(client.Get("/metrics").body,
                   "hourglass_store_losses_total{cause=\"evicted\",server=\"" + small.address() +
                       "\",store=\"memcached\"}"),
            1);
}

// A memcached run with -M that fills refuses new counts: checks answer per their failure mode,
// the log says once that the server is full, and /readyz is unready naming it. Once it has
// refused nothing for a quiet period (here --stats-interval, 1 s) it is writable again: logged,
// ready.
TEST_F(ServeTest, AFullStoreIsLoggedOnceAndUnreadyUntilItTakesCountsAgain) {
  testing::MemcachedServer full("127.0.0.1", 8, {"-M"});
  ASSERT_TRUE(full.running()) << full.error();
  ServeProcess serve(
      HOURGLASS_CLI,
      {"--policy", WritePolicy("events:\n  signup:\n    limits: [5/m]\n"), "--servers",
       full.address(), "--layout", "counters", "--stats-interval", "1"});
  ASSERT_TRUE(serve.ready()) << serve.log();
  HttpClient client(serve.port());
  ASSERT_EQ(client.Get("/readyz").status, 200);
  ASSERT_TRUE(full.Fill(300000, "tenant:"));
  for (int i = 0; i < 3; ++i) {
    HttpReply refused = client.Post("/v1/check", CheckBody("signup", "f" + std::to_string(i)));
    EXPECT_EQ(refused.status, 200) << "fail open: " << refused.body;
    EXPECT_NE(refused.Header("hourglass-degraded").find("full"), std::string::npos)
        << refused.Header("hourglass-degraded");
  }
  HttpReply unready = client.Get("/readyz");
  EXPECT_EQ(unready.status, 503);
  EXPECT_NE(unready.body.find("memcached " + full.address() + " is full since"), std::string::npos)
      << unready.body;
  EXPECT_TRUE(serve.WaitForLog("memcached " + full.address() + " is full and refuses new counts"))
      << serve.log();
  const std::string log = serve.log(), told = "is full and refuses new counts";
  size_t times = 0;
  for (size_t at = log.find(told); at != std::string::npos; at = log.find(told, at + 1)) ++times;
  EXPECT_EQ(times, 1u) << "told once";
  ASSERT_EQ(full.Raw("flush_all\r\n"), "OK\r\n");  // room again
  bool ready = false;
  for (int i = 0; i < 50 && !ready; ++i) {  // after a quiet second
    ready = client.Get("/readyz").status == 200;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  EXPECT_TRUE(ready);
  EXPECT_TRUE(serve.WaitForLog("taken as writable again")) << serve.log();
  HttpReply counted = client.Post("/v1/check", CheckBody("signup", "f0"));
  EXPECT_EQ(counted.status, 200);
  EXPECT_EQ(counted.Header("hourglass-degraded").find("is full"), std::string::npos)
      << "counted again (the flush that made room is told as a loss)";
}

// The first connection to a restarted memcached finds another process before it carries a
// batch: the loss is known to the very check that opened it, without waiting for a look at the
// server's figures (none here: --stats-interval 0). With --services 1 the service does not count
// itself in the store every second: such a write, landing while memcached is down, would have the
// server refused for a second, and the first check after the restart with it.
TEST_F(ServeTest, ARestartIsKnownToTheFirstCheckThatReachesTheNewProcess) {
  auto serve = Serve("events:\n  signup:\n    limits: [3/d]\n    on_data_loss: closed\n",
                     {"--stats-interval", "0", "--services", "1"});
  HttpClient client(serve->port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(client.Post("/v1/check", CheckBody("signup", "ann")).status, 200);
  }
  memcached_.Stop();
  ASSERT_TRUE(memcached_.Start());
  HttpReply first = client.Post("/v1/check", CheckBody("signup", "ann"));
  EXPECT_EQ(first.status, 429) << first.body;
  EXPECT_NE(first.Header("hourglass-degraded").find("restarted"), std::string::npos)
      << first.Header("hourglass-degraded");
  EXPECT_TRUE(serve->WaitForLog("memcached " + memcached_.address() + " restarted at "))
      << serve->log();
}

// Two services keep two copies of every count on three memcached servers. One server at a time
// is restarted, flushed, made to evict (8 MB, flooded), then killed: features at their limit
// before each fault stay at it through either service (no admission over the limit, counted by
// the clients), and no client sees an error or a degraded answer. The faults are one at a time:
// with --services 2 and --stats-interval 0 nothing but the checks reaches a server, so none is
// tried while server 0 is down (a refused connection leaves it skipped for a second, and the next
// fault would then be a second one at once).
TEST_F(ServeTest, TwoCopiesOnThreeServersLoseNoCountWhenOneRestartsIsFlushedEvictsOrDies) {
  testing::MemcachedServer servers[3] = {testing::MemcachedServer(), testing::MemcachedServer(),
                                         testing::MemcachedServer("127.0.0.1", 8)};
  std::string url = "memcached://";
  for (auto& server : servers) {
    ASSERT_TRUE(server.running()) << server.error();
    url += (&server == &servers[0] ? "" : ",") + server.address();
  }
  url += "?replicas=2";
  const std::string policy = WritePolicy("events:\n  signup:\n    limits: [5/m]\n");
  const std::vector<std::string> args = {"--policy",   policy, "--store",          url,
                                         "--services", "2",    "--stats-interval", "0"};
  ServeProcess a(HOURGLASS_CLI, args);
  ServeProcess b(HOURGLASS_CLI, args);
  ASSERT_TRUE(a.ready()) << a.log();
  ASSERT_TRUE(b.ready()) << b.log();
  HttpClient clients[] = {HttpClient(a.port()), HttpClient(b.port())};
  int over = 0, failed = 0, calls = 0;
  const auto check = [&](const std::string& feature, int expected) {
    HttpReply reply = clients[calls++ % 2].Post("/v1/check", CheckBody("signup", feature));
    if (reply.status == 200 && expected == 429) ++over;
    if (reply.status != expected && !(reply.status == 200 && expected == 429)) ++failed;
    if (!reply.Header("hourglass-degraded").empty()) ++failed;
  };
  for (int fault = 0; fault < 4; ++fault) {
    std::vector<std::string> features;
    for (int f = 0; f < 10; ++f) features.push_back(fmt::format("f{}-{}", fault, f));
    for (const std::string& feature : features) {
      for (int i = 0; i < 5; ++i) check(feature, 200);
    }
    if (fault == 0) {
      servers[0].Stop();
      ASSERT_TRUE(servers[0].Start());
    } else if (fault == 1) {
      ASSERT_EQ(servers[1].Raw("flush_all\r\n"), "OK\r\n");
    } else if (fault == 2) {
      ASSERT_TRUE(servers[2].EvictKeysContaining("f2-"));
    } else {
      servers[2].Kill();
    }
    for (const std::string& feature : features) {
      for (int i = 0; i < 3; ++i) check(feature, 429);
    }
  }
  EXPECT_EQ(over, 0) << "admitted over 5/m after a fault";
  EXPECT_EQ(failed, 0) << a.log() << b.log();
}

// A container's foreground command: `hourglass serve --env-file FILE` takes the store from the
// file and its HOURGLASS_SERVE_ARGS as options of serve, as the unit's command line does, with
// no shell or user switch in between: a SIGHUP reaches it and reloads, SIGTERM stops it with 0.
TEST_F(ServeTest, AnEnvironmentFileRunsTheUnitsCommandInTheForeground) {
  const std::string policy = WritePolicy("events:\n  signup:\n    limits: [2/m]\n");
  const std::string env = policy + ".env";
  std::ofstream(env) << "HOURGLASS_SERVERS=" << memcached_.address()
                     << "\nHOURGLASS_SERVE_ARGS=\"--policy " << policy << " --stats-interval 0\"\n";
  ServeProcess serve(HOURGLASS_CLI, {"--env-file", env});
  ASSERT_TRUE(serve.ready()) << serve.log();
  EXPECT_TRUE(serve.WaitForLog("store memcached " + memcached_.address())) << serve.log();
  HttpClient client(serve.port());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "ann")).status, 200);
  }
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "ann")).status, 429) << "its policy";
  serve.Signal(SIGHUP);
  EXPECT_TRUE(serve.WaitForLog("reloaded " + policy)) << serve.log();
  serve.Signal(SIGTERM);
  EXPECT_EQ(serve.Wait(), 0) << serve.log();
  std::remove(env.c_str());
}

TEST_F(ServeTest, AnOpenFileLimitTooLowForTheStoreIsRefusedAtStart) {
  ServeProcess serve(HOURGLASS_CLI,
                     {"--policy", WritePolicy("events:\n  signup:\n    limits: [5/m]\n"),
                      "--servers", memcached_.address()},
                     40);
  EXPECT_FALSE(serve.ready());
  EXPECT_EQ(serve.Wait(), 2) << serve.log();
  EXPECT_NE(serve.log().find("open file limit (40)"), std::string::npos) << serve.log();
}

TEST_F(ServeTest, ForwardedForWithoutTrustedProxiesIsRefusedAtStart) {
  ServeProcess serve(HOURGLASS_CLI,
                     {"--policy", WritePolicy("events:\n  a:\n    limits: [1/s]\n"), "--servers",
                      memcached_.address(), "--feature-header", "X-Forwarded-For"});
  EXPECT_FALSE(serve.ready());
  EXPECT_EQ(serve.Wait(), 2) << serve.log();
  EXPECT_NE(serve.log().find("needs --trusted-proxies N"), std::string::npos) << serve.log();
}

// Service B's host clock lags 10 s (libfaketime), A's is right; both check one feature under
// 5/20s through one memcached, alternately, for 12 s. B follows memcached's clock, so its hits
// land in the buckets A reads (and has cached as settled). memcached tells its time in whole
// seconds, ticked once a second, so the two may still differ by a second: then B does not read the
// second A is in, and one more may get through. Without following, 10 were admitted.
TEST_F(ServeTest, AServiceWhoseHostClockLagsFollowsMemcachedsAndTheLimitHolds) {
  ASSERT_STRNE(HOURGLASS_FAKETIME_LIB, "") << "libfaketime is missing: apt-get install faketime";
  const std::string policy = WritePolicy("events:\n  e:\n    limits: [5/20s]\n");
  ServeProcess a(HOURGLASS_CLI, {"--policy", policy, "--servers", memcached_.address()});
  ServeProcess b(HOURGLASS_CLI, {"--policy", policy, "--servers", memcached_.address()}, 0,
                 testing::FaketimeEnvironment(HOURGLASS_FAKETIME_LIB,
                                              {"FAKETIME=-10s", "FAKETIME_DONT_FAKE_MONOTONIC=1"}));
  ASSERT_TRUE(a.ready()) << a.log();
  ASSERT_TRUE(b.ready()) << b.log();
  EXPECT_TRUE(b.WaitForLog("s behind the store's: following the store's")) << b.log();
  HttpClient client_a(a.port()), client_b(b.port());
  const double correction =
      Sample(client_b.Get("/metrics").body, "hourglass_clock_correction_seconds");
  EXPECT_GE(correction, 9);
  EXPECT_LE(correction, 11);
  int admitted = 0;
  for (int i = 0; i < 48; ++i) {
    HttpClient& client = i % 2 == 0 ? client_a : client_b;
    admitted += client.Post("/v1/check", CheckBody("e", "shared")).status == 200 ? 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds{250});
  }
  EXPECT_GE(admitted, 5) << "48 checks within 12 s under 5/20s";
  EXPECT_LE(admitted, 6) << "48 checks within 12 s under 5/20s: more than the second's residual";
  EXPECT_EQ(CountOf(client_a, "e", "shared", "20s"), static_cast<uint64_t>(admitted));
}

// `hourglass serve` on the other stores: Redis (standalone, and a cluster by one seed node) and an
// LMDB file that two services on this host share. Limits hold across the two services, counts and
// resets work, the store's figures show in /metrics, and a Redis that evicts is named in a warning.
class ServeOnStoreTest : public ServeTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    ServeTest::SetUp();
    if (GetParam() == "redis") {
      redis_ = std::make_unique<testing::RedisServer>();
      ASSERT_TRUE(redis_->running()) << redis_->error();
      store_ = {"--store", "redis", "--servers", redis_->address()};
    } else if (GetParam() == "redis_cluster") {
      cluster_ = std::make_unique<testing::RedisCluster>();
      ASSERT_TRUE(cluster_->ready()) << cluster_->error();
      store_ = {"--store", "redis+cluster://" + cluster_->node(1).address()};
    } else {
      char dir[] = "/tmp/hourglass-serve-lmdb-XXXXXX";
      ASSERT_NE(mkdtemp(dir), nullptr);
      lmdb_dir_ = dir;
      store_ = {"--store", "lmdb://" + lmdb_dir_};
    }
  }
  void TearDown() override {
    std::error_code ignored;
    if (!lmdb_dir_.empty()) std::filesystem::remove_all(lmdb_dir_, ignored);
  }
  std::unique_ptr<ServeProcess> ServeOnStore(const std::string& yaml,
                                             std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--policy", WritePolicy(yaml)};
    args.insert(args.end(), store_.begin(), store_.end());
    args.insert(args.end(), extra.begin(), extra.end());
    auto serve = std::make_unique<ServeProcess>(HOURGLASS_CLI, args);
    EXPECT_TRUE(serve->ready()) << serve->log();
    return serve;
  }

  std::unique_ptr<testing::RedisServer> redis_;
  std::unique_ptr<testing::RedisCluster> cluster_;
  std::string lmdb_dir_;
  std::vector<std::string> store_;
};

TEST_P(ServeOnStoreTest, TwoServicesHoldTheLimitCountAndResetAndShowTheStore) {
  const std::string yaml = "events:\n  signup:\n    limits: [10/m, 100/d]\n";
  auto a = ServeOnStore(yaml, {"--stats-interval", "1"});
  auto b = ServeOnStore(yaml);
  std::atomic<int> admitted{0}, answered{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      HttpClient client((c % 2 == 0 ? a : b)->port());
      for (int i = c; i < 60; i += 8) {
        HttpReply r = client.Post("/v1/check", CheckBody("signup", "hot"));
        answered += r.status == 200 || r.status == 429;
        admitted += r.status == 200;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered.load(), 60);
  EXPECT_EQ(admitted.load(), 10) << "decided on the store: the limit, no more and no fewer";
  HttpClient client(a->port());
  EXPECT_EQ(CountOf(client, "signup", "hot", "1m"), 10u);
  EXPECT_EQ(client.Send("DELETE", "/v1/counters?event=signup&feature=hot").status, 200);
  EXPECT_EQ(CountOf(client, "signup", "hot", "1m"), 0u);
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "hot")).status, 200);
  const std::string kind = GetParam() == "lmdb" ? "lmdb" : "redis";
  double items = -1;
  for (int i = 0; i < 100 && items <= 0; ++i) {
    items =
        SampleSum(client.Get("/metrics").body, "hourglass_store_items", "store=\"" + kind + "\"");
    if (items <= 0) std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  EXPECT_GT(items, 0) << client.Get("/metrics").body;
  EXPECT_NE(a->log().find(kind == "lmdb" ? "store lmdb " + lmdb_dir_ : "store redis"),
            std::string::npos)
      << a->log();
}

INSTANTIATE_TEST_SUITE_P(Stores, ServeOnStoreTest,
                         ::testing::Values("redis", "redis_cluster", "lmdb"),
                         [](const auto& param_info) { return param_info.param; });

// A Redis that evicts (allkeys-lru, full) is watched as memcached is: the evictions in /metrics and
// a warning naming the server.
TEST_F(ServeTest, EvictionsOfAFullRedisShowInMetricsAndAWarning) {
  testing::RedisServer small({.maxmemory_mb = 2, .policy = "allkeys-lru"});
  ASSERT_TRUE(small.running()) << small.error();
  ServeProcess serve(HOURGLASS_CLI,
                     {"--policy", WritePolicy("events:\n  signup:\n    limits: [5/m]\n"), "--store",
                      "redis", "--servers", small.address(), "--stats-interval", "1"});
  ASSERT_TRUE(serve.ready()) << serve.log();
  HttpClient client(serve.port());
  EXPECT_EQ(client.Post("/v1/check", CheckBody("signup", "victim")).status, 200);
  (void)small.Command({"EVAL",
                       "for i = 1, 4000 do redis.call('SET', 'other:' .. i, string.rep('b', "
                       "2000)) end",
                       "0"});
  ASSERT_GT(small.Info("evicted_keys"), 0);
  EXPECT_TRUE(
      serve.WaitForLog("redis " + small.address() + " evicted", std::chrono::milliseconds{5000}))
      << serve.log();
  const std::string evictions =
      "hourglass_store_evictions_total{server=\"" + small.address() + "\",store=\"redis\"}";
  EXPECT_GT(Sample(client.Get("/metrics").body, evictions), 0) << client.Get("/metrics").body;
}

}  // namespace
}  // namespace hourglass
