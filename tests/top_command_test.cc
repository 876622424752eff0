// `hourglass top` against two real `hourglass serve` processes sharing a real memcached: skewed
// traffic sent over HTTP to both, then the merged ranking checked against the truth the clients
// saw (every row within its error, every feature above the bound listed, the heaviest first),
// with each row's exact counts read from memcached; and the /v1/top answer of one service.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "hourglass/display_text.h"
#include "memcached_server.h"
#include "run_process.h"
#include "serve_process.h"

namespace hourglass {
namespace {

using nlohmann::json;
using testing::HttpClient;
using testing::ServeProcess;

std::string Services(int a, int b) {
  return "http://127.0.0.1:" + std::to_string(a) + ",http://127.0.0.1:" + std::to_string(b);
}

class TopCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(memcached_.running()) << memcached_.error();
    std::ofstream(policy_) << "events:\n  signup:\n    limits: [5/m, 20/h]\n";
    std::ofstream(token_) << "s3cret\n";
  }
  void TearDown() override {
    std::remove(policy_.c_str());
    std::remove(token_.c_str());
  }
  std::unique_ptr<ServeProcess> Serve() {
    auto serve = std::make_unique<ServeProcess>(
        HOURGLASS_CLI, std::vector<std::string>{
                           "--policy", policy_, "--servers", memcached_.address(), "--namespace",
                           ns_, "--top-capacity", "16", "--admin-token-file", token_});
    EXPECT_TRUE(serve->ready()) << serve->log();
    return serve;
  }
  // `hourglass [--json] top ARGS...` with the test's store and token.
  testing::ProcessResult Top(const std::vector<std::string>& args, bool as_json = false) {
    std::vector<std::string> argv = {HOURGLASS_CLI, "--servers", memcached_.address(),
                                     "--namespace", ns_};
    if (as_json) argv.push_back("--json");
    for (const char* arg : {"top", "--admin-token-file"}) argv.push_back(arg);
    argv.push_back(token_);
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProcess(argv);
  }

  testing::MemcachedServer memcached_;
  const std::string policy_ = "/tmp/hourglass-top-test-" + std::to_string(getpid()) + ".yaml";
  const std::string token_ = "/tmp/hourglass-top-test-" + std::to_string(getpid()) + ".token";
  const std::string ns_ = "top" + std::to_string(getpid());
};

TEST_F(TopCommandTest, MergedRankingOfTwoServicesBracketsTheTruthWithExactCounts) {
  auto a = Serve();
  auto b = Serve();
  HttpClient to_a(a->port()), to_b(b->port());
  std::mt19937 rng(7);
  std::vector<double> weights;
  for (int r = 1; r <= 150; ++r) weights.push_back(1.0 / std::pow(r, 1.2));
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  std::map<std::string, uint64_t> denied, admitted;
  uint64_t all_denied = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string feature = "user" + std::to_string(pick(rng)) + "@example.com";
    HttpClient& client = rng() % 2 == 0 ? to_a : to_b;
    const auto r = client.Post("/v1/check", json{{"event", "signup"}, {"feature", feature}}.dump());
    ASSERT_TRUE(r.status == 200 || r.status == 429) << r.status << " " << r.body;
    (r.status == 429 ? denied : admitted)[feature] += 1;
    all_denied += r.status == 429;
  }
  const testing::ProcessResult top = Top(
      {"--service", Services(a->port(), b->port()), "--event", "signup", "--once", "-n", "1000"});
  ASSERT_EQ(top.code, 0) << top.err;
  EXPECT_NE(top.out.find("2 of 2 services answered"), std::string::npos) << top.out;
  // The take-backs of denied checks are fire-and-forget: the exact counts converge to the
  // admitted hits once the last ones are applied.
  const auto converged = [&](const json& answer) {
    for (const json& row : answer["features"]) {
      if (!row["counts"].is_array() || row["counts"][1]["count"] != admitted[row["feature"]]) {
        return false;
      }
    }
    return true;
  };
  json j;
  for (int attempt = 0; attempt < 20 && (attempt == 0 || !converged(j)); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds{100});
    const testing::ProcessResult top_json = Top(
        {"--service", Services(a->port(), b->port()), "--event", "signup", "--once", "-n", "1000"},
        /*json=*/true);
    ASSERT_EQ(top_json.code, 0) << top_json.err;
    j = json::parse(top_json.out);
  }
  EXPECT_EQ(j["total"], all_denied);
  EXPECT_EQ(j["answered"], 2);
  const uint64_t bound = j["bound"];
  std::map<std::string, json> rows;
  for (const json& row : j["features"]) {
    const std::string f = row["feature"];
    rows[f] = row;
    const uint64_t truth = denied.contains(f) ? denied[f] : 0;
    EXPECT_LE(truth, row["estimate"].get<uint64_t>()) << f;
    EXPECT_GE(truth, row["estimate"].get<uint64_t>() - row["error"].get<uint64_t>()) << f;
    // Exact counts from memcached: admitted mode counts the admitted hits, all within the hour.
    ASSERT_TRUE(row["counts"].is_array()) << row;
    EXPECT_EQ(row["counts"][1]["window"], 3600);
    EXPECT_EQ(row["counts"][1]["count"], admitted[f]) << f;
    EXPECT_FALSE(row["last_decision"]["allowed"].get<bool>() && truth == 0) << f;
  }
  for (const auto& [f, count] : denied) {
    if (count <= bound) continue;
    EXPECT_TRUE(rows.contains(f)) << f << " was denied " << count << " > bound " << bound;
  }
  const auto heaviest = std::max_element(denied.begin(), denied.end(),
                                         [](auto& x, auto& y) { return x.second < y.second; });
  EXPECT_EQ(j["features"][0]["feature"], heaviest->first) << top.out;
  EXPECT_NE(top.out.find(heaviest->first), std::string::npos) << top.out;
}

TEST_F(TopCommandTest, ServicesThatDoNotAnswerAreNamedAndNoneAnsweringIsExit3) {
  auto a = Serve();
  HttpClient(a->port()).Post("/v1/check", R"({"event":"signup","feature":"ann"})");
  const testing::ProcessResult partial =
      Top({"--service", Services(a->port(), 1), "--event", "signup", "--once"});
  EXPECT_EQ(partial.code, 0) << partial.err;
  EXPECT_NE(partial.out.find("1 of 2 services answered"), std::string::npos) << partial.out;
  EXPECT_NE(partial.out.find("not answering: http://127.0.0.1:1"), std::string::npos);
  const testing::ProcessResult none =
      Top({"--service", "http://127.0.0.1:1", "--event", "signup", "--once"});
  EXPECT_EQ(none.code, 3) << none.out;
  EXPECT_NE(none.err.find("no service answered"), std::string::npos) << none.err;
  const testing::ProcessResult unknown =
      Top({"--service", Services(a->port(), a->port()), "--event", "sigup", "--once"});
  EXPECT_EQ(unknown.code, 3);
  EXPECT_NE(unknown.err.find("unknown event \"sigup\""), std::string::npos) << unknown.err;
  EXPECT_EQ(Top({"--service", "ftp://x", "--event", "signup"}).code, 2);
}

// A feature is a client's own string: one that would forge a row and recolour the operator's
// terminal is shown spelled out, on its one row.
TEST_F(TopCommandTest, AFeaturesControlBytesAreSpelledOutNotWrittenToTheTerminal) {
  auto a = Serve();
  const std::string hostile = "line\r\nInjected: 1 \x1b[31mred\xe2\x80\xae\x00end";
  HttpClient client(a->port());
  for (int i = 0; i < 3; ++i) {
    client.Post("/v1/check", json{{"event", "signup"}, {"feature", hostile}}.dump());
  }
  const testing::ProcessResult r = Top(
      {"--service", Services(a->port(), a->port()), "--event", "signup", "--by", "hits", "--once"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* raw : {"\r", "\x1b", "\xe2\x80\xae"}) {
    EXPECT_EQ(r.out.find(raw), std::string::npos) << DisplayText(r.out);
  }
  EXPECT_NE(r.out.find("line\\r\\nInjected: 1 \\x1b[31mred..."), std::string::npos)
      << r.out << "cut at 40 bytes, never inside an escape";
  EXPECT_EQ(r.out.find("\nInjected"), std::string::npos) << "no forged row";
}

// Who is blocked, by what and until when: with the services' policy, each row tells the binding
// limit and where it stands (a penalty's end, a ban, the instant it is free); without --event,
// every event at once; windows of the same length shown once; a refused token named as such.
TEST_F(TopCommandTest, RowsTellTheBindingLimitAndUntilWhenForEveryEvent) {
  std::ofstream(policy_) << "events:\n  signup:\n    limits: [3/h, 10/d, {max: 20, window: day, "
                            "kind: calendar}]\n  login:\n    limits: [2/m]\n    block_for: 10m\n"
                            "    overrides:\n      mallory: {deny: true}\n";
  auto a = Serve();
  HttpClient client(a->port());
  const auto check = [&](const std::string& event, const std::string& feature) {
    return client.Post("/v1/check", json{{"event", event}, {"feature", feature}}.dump()).status;
  };
  for (int i = 0; i < 4; ++i) check("signup", "ann");
  for (int i = 0; i < 3; ++i) check("login", "carol");
  ASSERT_EQ(check("login", "mallory"), 429);
  const testing::ProcessResult r =
      Top({"--service", Services(a->port(), a->port()), "--policy", policy_, "--once"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("hourglass top: login by denied"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hourglass top: signup by denied"), std::string::npos) << r.out;
  const auto row = [&](const std::string& feature) {
    const size_t at = r.out.find("\n" + feature + " ");
    return at == std::string::npos ? std::string()
                                   : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(row("carol").find("2/m        blocked to "), std::string::npos) << r.out;
  EXPECT_NE(row("mallory").find("ban        banned"), std::string::npos) << r.out;
  EXPECT_NE(row("ann").find("3/h        free at "), std::string::npos) << r.out;
  const std::string header = r.out.substr(r.out.find("\nfeature", r.out.find("signup by")));
  EXPECT_EQ(header.find(" 1d"), header.rfind(" 1d")) << "10/d and a calendar day: one 1d column";

  const testing::ProcessResult j = Top({"--service", Services(a->port(), a->port()), "--policy",
                                        policy_, "--event", "login", "--once"},
                                       true);
  ASSERT_EQ(j.code, 0) << j.err;
  const json answer = json::parse(j.out);
  for (const json& f : answer["features"]) {
    if (f["feature"] == "carol") {
      EXPECT_EQ(f["binding"], "2/m");
    }
    if (f["feature"] == "mallory") {
      EXPECT_EQ(f["status"], "banned");
    }
  }

  const testing::ProcessResult refused = testing::RunProcess(
      {HOURGLASS_CLI, "--servers", memcached_.address(), "top", "--service",
       "http://127.0.0.1:" + std::to_string(a->port()), "--event", "login", "--once"});
  EXPECT_EQ(refused.code, 3);
  EXPECT_NE(refused.err.find("401 refused: the service wants its admin token"), std::string::npos)
      << refused.err;
}

// A restart of the service (an upgrade, a reload of the unit) forgets no one: the summaries are
// kept in --top-state (read at start, written at stop), so `hourglass top` still names who was
// limited before it.
TEST_F(TopCommandTest, WhoWasLimitedIsStillNamedAfterTheServiceRestarts) {
  const std::string state = policy_ + ".top.json";
  const std::vector<std::string> args = {
      "--policy",    policy_, "--servers",          memcached_.address(),
      "--namespace", ns_,     "--admin-token-file", token_,
      "--top-state", state};
  {
    ServeProcess before(HOURGLASS_CLI, args);
    ASSERT_TRUE(before.ready()) << before.log();
    HttpClient client(before.port());
    for (int i = 0; i < 8; ++i) client.Post("/v1/check", R"({"event":"signup","feature":"eve"})");
    before.Signal(SIGTERM);
    ASSERT_EQ(before.Wait(), 0) << before.log();
  }
  ServeProcess after(HOURGLASS_CLI, args);
  ASSERT_TRUE(after.ready()) << after.log();
  EXPECT_NE(after.log().find("/v1/top: the last minutes' summaries read from " + state),
            std::string::npos)
      << after.log();
  const testing::ProcessResult r =
      Top({"--service", "http://127.0.0.1:" + std::to_string(after.port()), "--event", "signup",
           "--once"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\neve "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 denied in all"), std::string::npos) << r.out;
  std::remove(state.c_str());
}

}  // namespace
}  // namespace hourglass
