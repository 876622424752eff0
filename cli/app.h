// What every command of the hourglass CLI shares: the global options, exit codes, how a command
// leaves with an error, and the small parsers of common arguments.
//
// Exit codes: 0 ok (check: allowed), 1 check denied, 2 bad usage or input, 3 store unreachable,
// 4 serve cannot listen.
// Results go to stdout; messages go to stderr.
//
// Thread-safety: single-threaded, like the CLI.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/ladder.h"
#include "hourglass/status.h"
#include "hourglass/window.h"

namespace hourglass::cli {

constexpr int kOk = 0;
constexpr int kDenied = 1;
constexpr int kUsage = 2;
constexpr int kUnavailable = 3;
constexpr int kCannotListen = 4;  // serve: the address is in use, or not ours to listen on

struct Globals {
  std::string env_file;            // --env-file: read before the options (main.cc)
  std::string servers;             // empty: the store's own default (memcached :11211, Redis :6379)
  bool servers_given = false;      // --servers on the command line (not only HOURGLASS_SERVERS)
  std::string previous_servers;    // in transition from this list (TransitionStore); empty: none
  size_t replicas = 1;             // memcached: copies of every count (ReplicatedStore)
  std::string layout = "packed";   // how memcached keeps buckets (MemcachedLayout)
  bool read_both_layouts = false;  // while clients switch layout
  bool no_pack_bases = false;      // memcached: compactions stay in their packs
  std::string store = "memcached";  // a kind (memcached, redis, ...) or a store URL
  std::string name_space = "hg";
  bool json = false;
  int timeout_ms = 500;
  std::string retention = "1d";
  std::string ladder = "1s,1m,1h";   // bucket widths (Ladder::Parse)
  std::string settle_margin = "5s";  // allowance for clock skew between clients
  bool exact_cover = false;          // no hot path: every check reads its exact cover
};

// A command registered on the app: its CLI11 subcommand and what runs when it was parsed.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Thrown to leave a command with an exit code; main prints the message to stderr.
struct Exit {
  int code;
  std::string message;
};

[[noreturn]] void Fail(int code, std::string message);
// kInvalidArgument and kNotFound -> 2 (usage), anything else -> 3 (store unreachable).
int CodeFor(const Error& e);

template <typename T>
T Unwrap(Result<T> r) {
  if (!r.ok()) Fail(CodeFor(r.error()), r.error().message());
  return std::move(*r);
}

// --retention, or exit 2 naming it.
Seconds RetentionOf(const Globals& g);
// --ladder, or exit 2 naming it.
Ladder LadderOf(const Globals& g);
// --settle-margin as seconds (0 to 1h); exits with kUsage naming the option otherwise.
Seconds SettleMarginOf(const Globals& g);
// --at: Unix seconds or an ISO 8601 time with its offset (ParseTime), or nullopt when not given.
std::optional<Instant> ParseAt(const std::string& text);
// The bearer token in the first line of --admin-token-file `path` (trimmed as HTTP trims a
// header), nullopt for no path; exit 2 naming the file when it has none.
std::optional<std::string> ReadAdminToken(const std::string& path);
// --cost: a whole number from 1 to kMaxHitsPerCall.
uint64_t CheckCost(int64_t cost);
// --window specs as sliding windows.
std::vector<Window> ParseWindows(const std::vector<std::string>& specs);
// Writes `text` to stdout as it is.
void Print(const std::string& text);

// --cost N, with its bound (1 to kMaxHitsPerCall) in the help; CheckCost checks it.
void AddCostOption(CLI::App* sub, int64_t& cost);

// The positional EVENT FEATURE every per-feature command takes.
void AddFeatureArgs(CLI::App* sub, std::string& event, std::string& feature);

}  // namespace hourglass::cli
