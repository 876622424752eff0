#include "hourglass/top_state.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace hourglass {
namespace {

using nlohmann::json;

constexpr int kVersion = 1;

json EntriesJson(const std::vector<SpaceSaving::Entry>& entries) {
  json out = json::array();
  for (const SpaceSaving::Entry& e : entries) {
    out.push_back({e.key, e.count, e.error, e.last.allowed, ToUnix(e.last.at)});
  }
  return out;
}

std::vector<SpaceSaving::Entry> EntriesOf(const json& j) {
  std::vector<SpaceSaving::Entry> entries;
  for (const json& e : j) {
    entries.push_back({e.at(0).get<std::string>(), e.at(1).get<uint64_t>(), e.at(2).get<uint64_t>(),
                       LastDecision{e.at(3).get<bool>(), FromUnix(e.at(4).get<int64_t>())}});
  }
  return entries;
}

}  // namespace

Status SaveTopState(const RecentTop& top, const std::string& path) {
  json events = json::object();
  for (const auto& [event, minutes] : top.Save()) {
    json list = json::array();
    for (const RecentTop::MinuteState& m : minutes) {
      list.push_back({{"minute", m.minute},
                      {"hits_total", m.hits_total},
                      {"denied_total", m.denied_total},
                      {"hits", EntriesJson(m.hits)},
                      {"denied", EntriesJson(m.denied)}});
    }
    events[event] = std::move(list);
  }
  // Features are any bytes: kept as JSON strings only when valid UTF-8, else replaced.
  const std::string text = json{{"version", kVersion}, {"events", events}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
      return InvalidArgument(
          fmt::format("top state {}: cannot write it ({})", temporary, std::strerror(errno)));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return InvalidArgument(
        fmt::format("top state {}: cannot replace it ({})", path, std::strerror(errno)));
  }
  return {};
}

Status LoadTopState(RecentTop& top, const std::string& path, Instant now) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Error(ErrorCode::kNotFound, "top state " + path + ": no such file");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const json j = json::parse(text.str());
    if (j.at("version").get<int>() != kVersion) {
      return InvalidArgument(fmt::format("top state {}: version {} is not {}", path,
                                         j.at("version").dump(), kVersion));
    }
    RecentTop::State state;
    for (const auto& [event, minutes] : j.at("events").items()) {
      for (const json& m : minutes) {
        state[event].push_back({m.at("minute").get<int64_t>(), EntriesOf(m.at("hits")),
                                EntriesOf(m.at("denied")), m.at("hits_total").get<uint64_t>(),
                                m.at("denied_total").get<uint64_t>()});
      }
    }
    top.Restore(state, now);
    return {};
  } catch (const json::exception& e) {
    return InvalidArgument(
        fmt::format("top state {}: not a file hourglass wrote ({}); delete it "
                    "to start /v1/top afresh",
                    path, e.what()));
  }
}

}  // namespace hourglass
