#include "protocol.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <iterator>
#include <limits>

namespace hourglass::memcached {
namespace {

constexpr int64_t kMaxRelativeTtl = 30 * 86400;  // memcached reads larger values as Unix times

std::optional<uint64_t> ParseCounter(std::string_view data) {
  // Counter values are decimal; a decrement may leave trailing spaces.
  uint64_t value = 0;
  size_t i = 0;
  for (; i < data.size() && std::isdigit(static_cast<unsigned char>(data[i])); ++i) {
    value = value * 10 + static_cast<uint64_t>(data[i] - '0');
  }
  if (i == 0) return std::nullopt;
  for (; i < data.size(); ++i) {
    if (data[i] != ' ') return std::nullopt;
  }
  return value;
}

// The key and data length of "VALUE <key> <flags> <bytes>".
struct ValueHeader {
  std::string_view key;
  size_t bytes = 0;
  uint64_t cas = 0;  // from `gets`; 0 from `get`
};

std::optional<ValueHeader> ParseValueHeader(std::string_view line) {
  const std::string_view rest = line.substr(6);
  const size_t key_end = rest.find(' ');
  const size_t flags_end =
      key_end == std::string_view::npos ? key_end : rest.find(' ', key_end + 1);
  const std::string_view length =
      flags_end == std::string_view::npos ? std::string_view{} : rest.substr(flags_end + 1);
  ValueHeader header{rest.substr(0, key_end), 0};
  const char* end = length.data() + length.size();
  const auto [after, ec] = std::from_chars(length.data(), end, header.bytes);
  if (length.empty() || ec != std::errc{}) return std::nullopt;
  if (after != end && *after == ' ') std::from_chars(after + 1, end, header.cas);
  return header;
}

// Matches answered keys to requested ones. One server answers a get in the order of its keys,
// skipping missing ones: a cursor, and a search from the start only if an answer comes out of
// order.
class KeyMatcher {
 public:
  explicit KeyMatcher(std::span<const std::string> reads) : reads_(reads) {}
  std::optional<size_t> Find(std::string_view key) {
    for (size_t i = cursor_; i < reads_.size(); ++i) {
      if (reads_[i] == key) return cursor_ = i + 1, i;
    }
    for (size_t i = 0; i < cursor_ && i < reads_.size(); ++i) {
      if (reads_[i] == key) return i;
    }
    return std::nullopt;
  }

 private:
  std::span<const std::string> reads_;
  size_t cursor_ = 0;
};

// Answers of quiet commands that are no failure: a counter or pack created ("HD"), a decrement
// of a missing counter or a compaction of a missing pack ("NF"), a pack that already exists or
// is missing ("NS"), a compaction that lost to a concurrent append ("EX").
bool Harmless(std::string_view line) {
  return line == "HD" || line == "NF" || line == "NS" || line == "EX";
}

int64_t WireTtl(Seconds ttl, Instant now) {
  return ttl.count() > kMaxRelativeTtl ? ToUnix(now) + ttl.count() : ttl.count();
}

// The packed layout's appends: an add of the header where a pack may be created, then the records.
void AppendToPacks(std::span<const PackAppend> appends, Instant now, std::string& out) {
  for (const PackAppend& append : appends) {
    if (append.create_ttl.count() > 0) {
      fmt::format_to(std::back_inserter(out), FMT_COMPILE("ms {} {} ME T{} q\r\n"), append.key,
                     kPackHeaderBytes, WireTtl(append.create_ttl, now));
      out += PackHeader(now, append.create_ttl);
      out += "\r\n";
    }
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("ms {} {} MA q\r\n"), append.key,
                   append.records.size());
    out += append.records;
    out += "\r\n";
  }
}

}  // namespace

void BuildRequest(const Batch& batch, Instant now, std::string& out,
                  std::span<const PackAppend> appends, bool with_cas, size_t appends_at) {
  out.clear();
  const size_t split = std::min(appends_at, batch.increments.size());
  const auto counters = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      const Increment& inc = batch.increments[i];
      if (inc.delta > 0) {
        fmt::format_to(std::back_inserter(out), FMT_COMPILE("ma {} N{} J{} D{} q\r\n"), inc.key,
                       WireTtl(inc.ttl, now), inc.delta, inc.delta);
      } else {
        fmt::format_to(std::back_inserter(out), FMT_COMPILE("ma {} MD D{} q\r\n"), inc.key,
                       -inc.delta);
      }
    }
  };
  counters(0, split);
  AppendToPacks(appends, now, out);
  counters(split, batch.increments.size());
  if (batch.reads.empty()) {
    out += "mn\r\n";
    return;
  }
  out += with_cas ? "gets" : "get";
  for (const std::string& key : batch.reads) {
    out += ' ';
    out += key;
  }
  out += "\r\n";
}

void BuildCompactions(std::span<const PackCompaction> compactions, std::string& out) {
  out.clear();
  for (const PackCompaction& c : compactions) {
    if (c.WithBases()) continue;
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("ms {} {} C{} T{} q\r\n"), c.key,
                   c.value.size(), c.cas, c.expiry);
    out += c.value;
    out += "\r\n";
  }
  out += "mn\r\n";
}

std::string BuildDeleteRequest(std::span<const std::string> keys,
                               std::span<const PackAppend> appends, Instant now) {
  std::string request;
  for (const std::string& key : keys) request += fmt::format("md {} q\r\n", key);
  AppendToPacks(appends, now, request);
  request += "mn\r\n";
  return request;
}

Status ReadStats(std::string_view server, net::Connection& c, ServerStats& out) {
  const std::pair<std::string_view, uint64_t*> wanted[] = {{"evictions", &out.evictions},
                                                           {"bytes", &out.bytes},
                                                           {"limit_maxbytes", &out.limit_maxbytes},
                                                           {"curr_items", &out.curr_items},
                                                           {"pid", &out.pid},
                                                           {"time", &out.time},
                                                           {"uptime", &out.uptime},
                                                           {"cmd_flush", &out.flushes}};
  for (;;) {
    Result<std::string_view> line = c.ReadLine();
    if (!line.ok()) return line.error();
    if (*line == "END") return {};
    if (!line->starts_with("STAT ")) return LineError(server, *line);
    const std::string_view rest = line->substr(5);
    const size_t space = rest.find(' ');
    if (space == std::string_view::npos) return LineError(server, *line);
    const std::string_view name = rest.substr(0, space), value = rest.substr(space + 1);
    uint64_t number = 0;
    if (std::from_chars(value.data(), value.data() + value.size(), number).ec != std::errc{}) {
      continue;  // text figures (version, libevent): not ours
    }
    for (const auto& [field, into] : wanted) {
      if (name == field) *into = number;
    }
  }
}

Status ReadItemStats(std::string_view server, net::Connection& c, ServerStats& out) {
  for (;;) {
    Result<std::string_view> line = c.ReadLine();
    if (!line.ok()) return line.error();
    if (*line == "END") return {};
    // "STAT items:<class>:<figure> <value>"
    constexpr std::string_view kPrefix = "STAT items:";
    if (!line->starts_with(kPrefix)) return LineError(server, *line);
    const std::string_view rest = line->substr(kPrefix.size());
    const size_t colon = rest.find(':'), space = rest.find(' ');
    if (colon == std::string_view::npos || space == std::string_view::npos || space < colon) {
      return LineError(server, *line);
    }
    const std::string_view figure = rest.substr(colon + 1, space - colon - 1);
    if (figure != "evicted" && figure != "evicted_time") continue;
    uint32_t id = 0;
    uint64_t value = 0;
    const std::string_view id_text = rest.substr(0, colon), value_text = rest.substr(space + 1);
    if (std::from_chars(id_text.data(), id_text.data() + id_text.size(), id).ec != std::errc{} ||
        std::from_chars(value_text.data(), value_text.data() + value_text.size(), value).ec !=
            std::errc{}) {
      return LineError(server, *line);
    }
    if (out.classes.empty() || out.classes.back().id != id) out.classes.push_back({.id = id});
    (figure == "evicted" ? out.classes.back().evicted : out.classes.back().evicted_time) = value;
  }
}

bool IsOutOfMemory(std::string_view line) {
  // memcached 1.6 says "SERVER_ERROR Out of memory allocating new item" (an autovivified count)
  // or "SERVER_ERROR out of memory storing object" (a set).
  constexpr std::string_view kPrefix = "SERVER_ERROR ", kWhat = "out of memory";
  if (!line.starts_with(kPrefix) || line.size() < kPrefix.size() + kWhat.size()) return false;
  const std::string_view what = line.substr(kPrefix.size(), kWhat.size());
  return std::equal(what.begin(), what.end(), kWhat.begin(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
}

Error LineError(std::string_view server, std::string_view line) {
  if (line == "ERROR") {
    return Error(ErrorCode::kInternal,
                 fmt::format("{}: the server does not understand a meta command (ma/md/mn); "
                             "hourglass needs memcached >= 1.6",
                             server));
  }
  if (IsOutOfMemory(line)) {
    return Error(ErrorCode::kStoreFull,
                 fmt::format("{}: memcached is full and evicts nothing (-M), so it refused a new "
                             "count (\"{}\"); give it more memory (-m) or add servers; checks "
                             "answer per their failure mode meanwhile",
                             server, line.substr(0, std::min<size_t>(line.size(), 200))));
  }
  const ErrorCode code =
      line.starts_with("SERVER_ERROR") ? ErrorCode::kUnavailable : ErrorCode::kInternal;
  return Error(code, fmt::format("{}: unexpected answer \"{}\"", server,
                                 line.substr(0, std::min<size_t>(line.size(), 200))));
}

Error IncrementError(std::string_view server, std::string_view line,
                     std::span<const Increment> increments) {
  if (!line.starts_with("CLIENT_ERROR cannot increment or decrement non-numeric value") ||
      increments.empty()) {
    return LineError(server, line);
  }
  std::string keys;
  for (const Increment& inc : increments) {
    keys += fmt::format("{}\"{}\"", keys.empty() ? "" : ", ", inc.key);
  }
  return Error(ErrorCode::kInternal,
               fmt::format("{}: \"{}\": a value this batch increments is not a counter (another "
                           "client wrote one of {}); reset the feature to delete it",
                           server, line, keys));
}

Status ReadNoops(std::string_view server, net::Connection& c, int noops, bool own_last,
                 NoopAnswers& out) {
  while (out.read < noops) {
    Result<std::string_view> line = c.ReadLine();
    if (!line.ok()) return line.error();
    if (*line == "MN") {
      ++out.read;
    } else if (*line == "ERROR") {
      return LineError(server, *line);
    } else if (!Harmless(*line)) {
      if (own_last && out.read == noops - 1) {
        if (!out.own) out.own = LineError(server, *line);
      } else {
        ++out.failures;
      }
    }
  }
  return {};
}

Result<GetAnswer> ReadGetAnswer(std::string_view server, net::Connection& c, const Batch& batch,
                                std::span<const uint8_t> is_pack) {
  GetAnswer answer;
  answer.values.assign(batch.reads.size(), 0);
  if (!is_pack.empty()) answer.packs.resize(batch.reads.size());
  if (!is_pack.empty()) answer.pack_cas.resize(batch.reads.size());
  KeyMatcher matcher(batch.reads);
  while (true) {
    Result<std::string_view> line = c.ReadLine();
    if (!line.ok()) return line.error();
    if (*line == "END") return answer;
    if (Harmless(*line)) continue;
    if (*line == "ERROR") return LineError(server, *line);  // may be out of step
    if (!line->starts_with("VALUE ")) {
      if (!answer.error) answer.error = IncrementError(server, *line, batch.increments);
      continue;
    }
    const std::optional<ValueHeader> header = ParseValueHeader(*line);
    if (!header) {
      return Error(ErrorCode::kInternal,
                   fmt::format("{}: malformed answer \"{}\"", server,
                               line->substr(0, std::min<size_t>(line->size(), 200))));
    }
    // Matched before the block is read: reading may move the line the key points into.
    const std::optional<size_t> slot = matcher.Find(header->key);
    const std::string unexpected = slot ? std::string() : std::string(header->key);
    Result<std::string_view> data = c.ReadBlock(header->bytes);
    if (!data.ok()) return data.error();
    if (slot && *slot < is_pack.size() && is_pack[*slot]) {
      answer.packs[*slot] = *data;
      answer.pack_cas[*slot] = header->cas;
      continue;
    }
    std::optional<uint64_t> value = ParseCounter(*data);
    if (slot && !value && batch.non_counters_read_as_max)
      value = std::numeric_limits<uint64_t>::max();
    if (slot && value) {
      answer.values[*slot] = *value;
    } else if (!answer.error) {
      answer.error = Error(
          ErrorCode::kInternal,
          slot ? fmt::format("{}: the value under \"{}\" is not a counter (another client wrote "
                             "it); reset the feature to delete it",
                             server, batch.reads[*slot])
               : fmt::format("{}: unexpected item \"{}\" in answer to get", server, unexpected));
    }
  }
}

Result<std::optional<std::string>> GetOne(std::string_view server, net::Connection& c,
                                          std::string_view key, uint64_t* cas) {
  if (Status s = c.Send(fmt::format("{} {}\r\n", cas ? "gets" : "get", key)); !s.ok()) {
    return s.error();
  }
  const Batch get{std::string(key), {}, {std::string(key)}};
  const uint8_t as_bytes[] = {1};
  Result<GetAnswer> answer = ReadGetAnswer(server, c, get, as_bytes);
  if (!answer.ok()) return answer.error();
  if (answer->error) return *answer->error;
  if (cas) *cas = answer->pack_cas[0];
  return std::move(answer->packs[0]);
}

}  // namespace hourglass::memcached
