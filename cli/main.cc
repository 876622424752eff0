// hourglass: count, check, inspect, reset and replay counters from the shell.
//
// Exit codes: 0 ok (check: allowed), 1 check denied, 2 bad usage or input, 3 store unreachable.
// Results go to stdout (text, or JSON with --json); messages go to stderr. Each command lives in
// commands/; this file wires the global options and runs the one that was given.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app.h"
#include "commands.h"
#include "env_file.h"
#include "hourglass/display_text.h"

namespace hourglass::cli {
namespace {

void AddGlobalOptions(CLI::App& app, Globals& g) {
  app.add_option("--env-file", g.env_file,
                 "read HOURGLASS_* settings from this file, as the service unit does (default "
                 "/etc/default/hourglass when it exists; env HOURGLASS_ENV_FILE, \"\" for none); "
                 "the environment and options win over it. With serve, its HOURGLASS_SERVE_ARGS "
                 "are options of serve, as in the unit's command line");
  if (const char* env = std::getenv("HOURGLASS_SERVERS"); env != nullptr && *env != '\0') {
    g.servers = env;
  }
  app.add_option("--servers", g.servers,
                 "the store's servers host:port[,host:port...]: memcached (default "
                 "127.0.0.1:11211), Redis (127.0.0.1:6379) or a Redis Cluster's nodes (env "
                 "HOURGLASS_SERVERS)");
  if (const char* env = std::getenv("HOURGLASS_PREVIOUS_SERVERS"); env != nullptr && *env != '\0') {
    g.previous_servers = env;
  }
  app.add_option("--previous-servers", g.previous_servers,
                 "while changing --servers (a server added, removed or replaced): the list before; "
                 "features whose server changed are read on both, written to --servers only; keep "
                 "it for --retention after the last client switched. With --replicas, it kept as "
                 "many copies (at most its servers) unless it ends in ?replicas=N (env "
                 "HOURGLASS_PREVIOUS_SERVERS)");
  app.add_option("--replicas", g.replicas,
                 "memcached: keep this many copies of every count, on distinct servers of "
                 "--servers (at least that many); each hit is written to all in the same round "
                 "trip and a check reads the largest, so a server that restarts, is flushed or is "
                 "lost takes no count with it (env HOURGLASS_REPLICAS)")
      ->check(CLI::Range(size_t{1}, size_t{16}))
      ->envname("HOURGLASS_REPLICAS")  // parsed and checked as the option is
      ->capture_default_str();
  if (const char* env = std::getenv("HOURGLASS_STORE"); env != nullptr && *env != '\0') {
    g.store = env;
  }
  app.add_option("--store", g.store,
                 "memcached, redis, redis-cluster (with --servers), memory (in-process; for "
                 "replay), or a store URL: memcached://H:P[,...], redis://[[USER]:PASSWORD@]H:P[,"
                 "...][/DB], redis+cluster://H:P[,...], lmdb:///DIR[?map_size=4GiB] (one file "
                 "the processes of a host share) (env HOURGLASS_STORE; a Redis password also "
                 "from env HOURGLASS_REDIS_PASSWORD)")
      ->capture_default_str();
  if (const char* env = std::getenv("HOURGLASS_LAYOUT"); env != nullptr && *env != '\0') {
    g.layout = env;
  }
  app.add_option(
         "--layout", g.layout,
         "how memcached keeps buckets: packed (an hour of a feature's seconds, minutes and "
         "total in one item, 2 bytes per hit) or counters (an item per bucket, the default of "
         "hourglass 0.1); every client of the servers must use the same, or "
         "--read-both-layouts (env HOURGLASS_LAYOUT)")
      ->check(CLI::IsMember({"counters", "packed"}))
      ->capture_default_str();
  app.add_flag("--read-both-layouts", g.read_both_layouts,
               "while clients switch --layout: write as --layout says, read buckets "
               "from both layouts; give it to every client from before the first switches until "
               "--retention after the last did");
  app.add_flag("--no-pack-bases", g.no_pack_bases,
               "memcached: keep a busy hour's compacted records in its pack, which every check "
               "then reads whole, instead of in a base item that each client reads once; give "
               "it to every client while a fleet upgrades from a version without bases");
  app.add_option("--namespace", g.name_space, "first part of every key")->capture_default_str();
  app.add_flag("--json", g.json, "machine-readable output on stdout");
  app.add_option("--timeout-ms", g.timeout_ms, "connect and I/O timeout per server")
      ->capture_default_str();
  app.add_option("--retention", g.retention,
                 "longest window answered; sets bucket TTLs (same on every client)")
      ->capture_default_str();
  app.add_option("--ladder", g.ladder,
                 "bucket widths, each dividing the next, the first 1s (same on every client): "
                 "1s,1m,1h,1d reads a month in about 30 keys where the default reads up to 744 "
                 "hour buckets (env HOURGLASS_LADDER)")
      ->envname("HOURGLASS_LADDER")
      ->capture_default_str();
  app.add_option("--settle-margin", g.settle_margin,
                 "allowance for clock skew between clients (0 to 1h): buckets are cached as final "
                 "and kept in the store this much longer (same on every client)")
      ->capture_default_str();
  app.add_flag("--exact-cover", g.exact_cover,
               "no hot path: every check reads its window's exact cover (for comparison)");
  for (CLI::Option* option : app.get_options()) {
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
  }
}

// Edit distance of two short words (insertions, deletions, substitutions).
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean \"x\"?)" for the closest of `names` within two edits, else "".
std::string DidYouMean(std::string_view word, const std::vector<std::string>& names) {
  const std::string* best = nullptr;
  size_t best_distance = 3;
  for (const std::string& name : names) {
    const size_t d = Distance(word, name);
    if (d < best_distance) {
      best = &name;
      best_distance = d;
    }
  }
  return best == nullptr ? "" : fmt::format(" (did you mean \"{}\"?)", *best);
}

// The options a word may have meant: the parsed command's and the global ones, as typed.
std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  std::vector<const CLI::App*> apps = {&app};
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->parsed()) apps.push_back(sub);
    for (const CLI::App* leaf : sub->get_subcommands([](const CLI::App*) { return true; })) {
      if (leaf->parsed()) apps.push_back(leaf);
    }
  }
  for (const CLI::App* a : apps) {
    for (const CLI::Option* option : a->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    }
  }
  return names;
}

int ParseError(const CLI::App& app, const CLI::ParseError& e) {
  std::string message = e.what();
  if (const std::vector<std::string> rest = app.remaining(); !rest.empty()) {
    const std::string& word = rest.front();
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      commands.push_back(sub->get_name());
    }
    if (word.starts_with("-")) {
      message = fmt::format("unknown option \"{}\"{}; see the command's --help", word,
                            DidYouMean(word, OptionNames(app)));
    } else {
      message = fmt::format("unknown command or argument \"{}\"{} (commands: {})", word,
                            DidYouMean(word, commands), fmt::join(commands, ", "));
    }
  }
  std::fprintf(stderr, "hourglass: %s\nRun 'hourglass --help' for usage.\n", message.c_str());
  return kUsage;
}

// The --env-file option's value in `args`, if given.
std::optional<std::string> EnvFileFlag(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--env-file" && i + 1 < args.size()) return args[i + 1];
    if (args[i].starts_with("--env-file=")) return args[i].substr(11);
  }
  return std::nullopt;
}

// Reads the host's environment file into the environment (what is set already wins). Returns what
// the help shows of it; exits 2 for a file named but missing or malformed.
std::string LoadEnvFile(const EnvFileChoice& choice) {
  if (choice.path.empty()) return "Environment file: none (HOURGLASS_ENV_FILE is empty).";
  Result<EnvFile> file = ReadEnvFile(choice.path);
  if (!file.ok() && file.error().code() == ErrorCode::kNotFound && !choice.explicitly) {
    return fmt::format("Environment file: {} (absent).", choice.path);
  }
  if (!file.ok()) throw Exit{kUsage, "--env-file " + file.error().message()};
  std::vector<std::string> applied;
  for (const auto& [name, value] : file->assignments) {
    if (!name.starts_with("HOURGLASS_") || std::getenv(name.c_str()) != nullptr) continue;
    ::setenv(name.c_str(), value.c_str(), 0);
    applied.push_back(name == "HOURGLASS_REDIS_PASSWORD" ? name : name + "=" + value);
  }
  return fmt::format(
      "Environment file: {} (read; set {}).", choice.path,
      applied.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(applied, " ")));
}

int Run(std::vector<std::string> args, bool env_file_named, const std::string& env_note,
        bool serve_args_added);

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  const std::optional<std::string> flag = EnvFileFlag(args);
  const EnvFileChoice choice =
      ChooseEnvFile(flag ? &*flag : nullptr, std::getenv("HOURGLASS_ENV_FILE"));
  std::string env_note;
  try {
    env_note = LoadEnvFile(choice);
  } catch (const Exit& e) {
    std::fprintf(stderr, "hourglass: %s\n", DisplayText(e.message).c_str());
    return e.code;
  }
  return Run(std::move(args), choice.explicitly, env_note, false);
}

// Parses `args` and runs the command. `env_file_named`: serve takes HOURGLASS_SERVE_ARGS as its
// options (run again with them added, once).
int Run(std::vector<std::string> args, bool env_file_named, const std::string& env_note,
        bool serve_args_added) {
  CLI::App app{
      "hourglass: exact hit counters in memcached, Redis or LMDB, per event and feature, to the\n"
      "second.\n"
      "Counts hits in second/minute/hour buckets and answers any window exactly."};
  app.fallthrough();  // global options may follow the command
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("hourglass ") + HOURGLASS_VERSION);
  app.footer(
      "Exit codes: 0 ok, 1 check denied, 2 bad usage or input, 3 store unreachable,\n"
      "4 serve cannot listen.\n"
      "Examples:\n"
      "  hourglass check url_shorten 203.0.113.7 --limit 2/s --limit 5/m --limit 100/d\n"
      "  hourglass count signup ann@example.com --window 1h --window 1d --json\n"
      "  hourglass replay access.log --format apache --policy policies/example.yaml\n"
      "Run 'hourglass COMMAND --help' for a command's options and examples.\n" +
      env_note);
  Globals g;
  AddGlobalOptions(app, g);
  const std::vector<Command> commands = {AddHitCommand(app, g),    AddCountCommand(app, g),
                                         AddCheckCommand(app, g),  AddInspectCommand(app, g),
                                         AddResetCommand(app, g),  AddReplayCommand(app, g),
                                         AddPolicyCommand(app, g), AddServeCommand(app, g),
                                         AddTopCommand(app, g),    AddAuditCommand(app, g)};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return ParseError(app, e);
  }
  const char* serve_args = std::getenv("HOURGLASS_SERVE_ARGS");
  if (env_file_named && !serve_args_added && serve_args != nullptr &&
      app.get_subcommand("serve")->parsed()) {
    Result<std::vector<std::string>> words = SplitArgs(serve_args);
    if (!words.ok()) {
      std::fprintf(stderr, "hourglass: %s\n", DisplayText(words.error().message()).c_str());
      return kUsage;
    }
    args.insert(args.end(), words->begin(), words->end());
    return Run(std::move(args), env_file_named, env_note, true);
  }
  // HOURGLASS_SERVERS alone does not contradict a store URL (an environment file may keep both).
  g.servers_given = app.get_option("--servers")->count() > 0;
  try {
    for (const Command& command : commands) {
      if (command.app->parsed()) return command.run();
    }
  } catch (const Exit& e) {
    std::fflush(stdout);
    // A message may quote a feature or a file's bytes: spelled out, never written raw.
    std::fprintf(stderr, "hourglass: %s\n", DisplayText(e.message).c_str());
    return e.code;
  }
  return kUsage;
}

}  // namespace
}  // namespace hourglass::cli

int main(int argc, char** argv) { return hourglass::cli::Main(argc, argv); }
