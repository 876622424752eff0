// The operator's page (GET /ui) in a real browser: headless Chromium loads it from a real
// `hourglass serve` on a real memcached after real traffic, runs its script, and the page shows
// who is limited per event and until when (a penalty, a ban, a window freeing), a feature's
// timeline, the store and the policy; a hostile feature shows as text. A screenshot is saved
// (build/operator-page.png; HOURGLASS_SCREENSHOTS=DIR saves it there too, e.g. docs/).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "memcached_server.h"
#include "run_process.h"
#include "serve_process.h"

namespace hourglass {
namespace {

using nlohmann::json;
using testing::HttpClient;
using testing::ServeProcess;

// The browser profile of this test process's Chromium.
std::string ProfileDir() {
  return std::filesystem::temp_directory_path().string() + "/hourglass-chromium-" +
         std::to_string(getpid());
}

// Chromium, headless, as root needs no sandbox; its script given up to 10 s of virtual time.
testing::ProcessResult Chromium(const std::vector<std::string>& args, const std::string& url) {
  std::vector<std::string> argv = {"/usr/bin/chromium",
                                   "--headless=new",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-dev-shm-usage",
                                   "--virtual-time-budget=10000",
                                   "--user-data-dir=" + ProfileDir()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(url);
  return testing::RunProcess(argv);
}

class OperatorPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromium"))
        << "chromium is missing: apt-get install chromium (scripts/install-deps.sh)";
    ASSERT_TRUE(memcached_.running()) << memcached_.error();
    std::ofstream(policy_) << "events:\n  signup:\n    limits: [3/h, 10/d]\n    mode: attempts\n"
                              "  login:\n    limits: [2/m]\n    block_for: 10m\n"
                              "    overrides:\n      mallory: {deny: true}\n";
  }
  void TearDown() override {
    std::remove(policy_.c_str());
    std::error_code ignored;
    std::filesystem::remove_all(ProfileDir(), ignored);
  }
  std::unique_ptr<ServeProcess> Serve(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--policy",         policy_, "--servers", memcached_.address(),
                                     "--stats-interval", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto serve = std::make_unique<ServeProcess>(HOURGLASS_CLI, args);
    EXPECT_TRUE(serve->ready()) << serve->log();
    return serve;
  }

  testing::MemcachedServer memcached_;
  const std::string policy_ = "/tmp/hourglass-page-test-" + std::to_string(getpid()) + ".yaml";
};

TEST_F(OperatorPageTest, ShowsWhoIsLimitedUntilWhenTheTimelineTheStoreAndThePolicy) {
  auto serve = Serve();
  HttpClient client(serve->port());
  const auto check = [&](const std::string& event, const std::string& feature) {
    return client.Post("/v1/check", json{{"event", event}, {"feature", feature}}.dump()).status;
  };
  for (int i = 0; i < 4; ++i) check("signup", "zoe@example.com");
  for (int i = 0; i < 3; ++i) check("login", "carol");
  const std::string hostile = "<img src=x onerror=alert(1)>";
  for (int i = 0; i < 3; ++i) check("login", hostile);
  ASSERT_EQ(check("login", "mallory"), 429);
  const testing::HttpReply page = client.Get("/ui");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.Header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.Header("content-security-policy").find("default-src 'none'"), std::string::npos);

  const std::string url = "http://127.0.0.1:" + std::to_string(serve->port()) +
                          "/ui#event=signup&feature=zoe%40example.com";
  const testing::ProcessResult dom = Chromium({"--dump-dom"}, url);
  ASSERT_EQ(dom.code, 0) << dom.err;
  const std::string& html = dom.out;
  EXPECT_NE(html.find("data-ready=\"true\""), std::string::npos) << "the script ran to its end";
  for (const std::string& shown : std::vector<std::string>{
           "version " HOURGLASS_TEST_VERSION, "login (", "signup (", ">carol<", ">mallory<",
           ">banned<", ">blocked to ", ">free at ", "a hit now: free at ", "(3/h binds)",
           "per hour, last day", memcached_.address(), "file: " + policy_, "3/h, 10/d", ">ready<",
           "0 hits to write back", "services sharing the store: "}) {
    EXPECT_NE(html.find(shown), std::string::npos) << shown << " not shown:\n" << html;
  }
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos)
      << "the hostile feature as text";
  EXPECT_EQ(html.find("<img src=\"x\""), std::string::npos) << "never as markup";

  const std::string shot = std::string(HOURGLASS_BINARY_DIR) + "/operator-page.png";
  const testing::ProcessResult png =
      Chromium({"--window-size=1280,1700", "--screenshot=" + shot}, url);
  ASSERT_EQ(png.code, 0) << png.err;
  EXPECT_GT(std::filesystem::file_size(shot), 10000u);
  if (const char* dir = std::getenv("HOURGLASS_SCREENSHOTS"); dir != nullptr && *dir != '\0') {
    std::filesystem::copy_file(shot, std::string(dir) + "/operator-page.png",
                               std::filesystem::copy_options::overwrite_existing);
  }
}

// The page's data come from the admin calls: with a token, a browser without it is told so and
// sees no data; with the admin calls off, there is no page.
TEST_F(OperatorPageTest, ItsDataStayBehindTheAdminToken) {
  const std::string token = policy_ + ".token";
  std::ofstream(token) << "s3cret\n";
  auto guarded = Serve({"--admin-token-file", token});
  const testing::ProcessResult dom =
      Chromium({"--dump-dom"}, "http://127.0.0.1:" + std::to_string(guarded->port()) + "/ui");
  ASSERT_EQ(dom.code, 0) << dom.err;
  EXPECT_NE(dom.out.find("/v1/policy: 401"), std::string::npos) << dom.out;
  EXPECT_EQ(dom.out.find("<form id=\"login\" hidden"), std::string::npos) << "the token form shown";
  EXPECT_EQ(dom.out.find(">signup<"), std::string::npos) << "no policy shown";
  auto off = Serve({"--no-admin"});
  EXPECT_EQ(HttpClient(off->port()).Get("/ui").status, 403);
  std::remove(token.c_str());
}

}  // namespace
}  // namespace hourglass
