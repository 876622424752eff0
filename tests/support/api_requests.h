// What tests of the decision service's HTTP API send and read back, whether the service runs in
// this process (ServiceUnderTest) or as `hourglass serve` (ServeProcess): a check's body, a
// feature's count, refusals that must name their problem, and the RateLimit fields parsed as
// structured-field lists (draft-ietf-httpapi-ratelimit-headers-10).
//
// Thread-safety: pure functions; a client is used by one thread.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "serve_process.h"

namespace hourglass::testing {

// {"event":E,"feature":F,"cost":C}
inline std::string CheckBody(const std::string& event, const std::string& feature, int cost = 1) {
  return nlohmann::json{{"event", event}, {"feature", feature}, {"cost", cost}}.dump();
}

// The count of `feature` of `event` in `window` ("1m"), through GET /v1/count; ~0 if refused.
inline uint64_t CountOf(HttpClient& client, const std::string& event, const std::string& feature,
                        const std::string& window) {
  HttpReply r = client.Get("/v1/count?event=" + UrlEncode(event) +
                           "&feature=" + UrlEncode(feature) + "&window=" + window);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? nlohmann::json::parse(r.body)["windows"][0]["count"].get<uint64_t>()
                         : ~0ull;
}

// A request the server must refuse with `status` and an error naming `says`.
struct Refusal {
  std::string method, target, body;
  int status;
  std::string says;
};
inline void ExpectRefused(HttpClient& client, const std::vector<Refusal>& cases) {
  for (const Refusal& c : cases) {
    HttpReply r = client.Send(c.method, c.target, c.body);
    EXPECT_EQ(r.status, c.status) << c.method << " " << c.target << " " << c.body.substr(0, 60);
    if (r.status == 0) continue;
    const nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_TRUE(body.is_object() && body.contains("error")) << r.body.substr(0, 200);
    EXPECT_NE(body["error"].get<std::string>().find(c.says), std::string::npos)
        << c.target << ": " << body["error"];
  }
}

// A structured-field list of items with integer parameters: "name";q=5;w=60, ...
struct SfItem {
  std::string name;
  std::map<std::string, int64_t> params;
};
inline std::vector<SfItem> ParseSfList(const std::string& field) {
  std::vector<SfItem> items;
  std::stringstream in(field);
  std::string member;
  while (std::getline(in, member, ',')) {
    const size_t open = member.find('"'), close = member.find('"', open + 1);
    if (open == std::string::npos || close == std::string::npos) return {};
    SfItem item{member.substr(open + 1, close - open - 1), {}};
    std::stringstream params(member.substr(close + 1));
    std::string param;
    std::getline(params, param, ';');  // what precedes the first ';' is empty
    while (std::getline(params, param, ';')) {
      const size_t eq = param.find('=');
      if (eq == std::string::npos) return {};
      item.params[param.substr(0, eq)] = std::stoll(param.substr(eq + 1));
    }
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace hourglass::testing
