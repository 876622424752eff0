// hourglass serve --policy FILE [--listen HOST:PORT] [--threads N] ...: the HTTP decision service.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "../commands.h"
#include "../runtime.h"
#include "hourglass/audit_log.h"
#include "hourglass/client_address.h"
#include "hourglass/descriptor_budget.h"
#include "hourglass/envoy_protocol.h"
#include "hourglass/http_server.h"
#include "hourglass/log.h"
#include "hourglass/policy_source.h"
#include "hourglass/service.h"
#include "hourglass/settle_token.h"

namespace hourglass::cli {
namespace {

struct ServeArgs {
  std::string policy;
  std::string listen = "127.0.0.1:8080";
  // One per core: checks wait for the store on the batcher's thread, other requests (counts,
  // resets) on these; more threads than cores cost more in hand-offs than they gain
  // (bench/results/serve.md).
  int threads = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  size_t max_connections = 1024;
  size_t grpc_max_connections = 1024;
  std::string feature_header = "X-Real-IP";
  size_t trusted_proxies = 0;
  std::vector<std::string> trusted_proxy;  // ranges
  std::string admin_token_file;
  bool no_admin = false;
  // Settlement tokens: the key the services of a deployment share, and how long they last.
  std::string settle_key_file;
  std::string settle_within = "1h";
  // Envoy's rate limit service: off without configuration files.
  std::vector<std::string> envoy_config;
  std::string grpc_listen = "127.0.0.1:8081";
  std::string envoy_counting = "admitted";
  std::string envoy_failure_mode = "open";
  // on_store_failure local: how many services share the store (each admits 1/services of a
  // limit while it fails), and the most seconds of local hits held.
  std::string services = "auto";
  size_t fallback_max_seconds = 1'000'000;
  bool envoy_headers = false;
  bool exact_retry_after = false;
  // How often the store's own figures (evictions, memory) are read into metrics; 0: never.
  int stats_interval = 10;
  // Counters per summary of /v1/top (one summary per event, minute and kind); 0: no top.
  size_t top_capacity = 256;
  std::string top_state;  // "": $STATE_DIRECTORY/top.json under systemd, else none
  bool log_denials = true;
  // Every decision as a JSON line (hourglass audit reads them); "": none.
  std::string audit_log;
  size_t audit_log_max_mb = 100;
  size_t audit_log_files = 5;
  std::string log_level = "info";
  std::string log_format = "text";
};

using Logger = std::shared_ptr<spdlog::logger>;

// "HOST:PORT" or "[IPV6]:PORT" of option `flag` into the server's options.
void ParseListen(const std::string& flag, const std::string& text, HttpServerOptions& options) {
  const size_t colon = text.rfind(':');
  const auto bad = [&] {
    Fail(kUsage,
         fmt::format("{} {}: use HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080", flag, text));
  };
  if (colon == std::string::npos || colon == 0) bad();
  std::string host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') bad();
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != port.npos ||
      std::stoi(port) > 65535) {
    bad();
  }
  options.host = host;
  options.port = static_cast<uint16_t>(std::stoi(port));
}

// The first line of the example policy the package installs.
constexpr std::string_view kExamplePolicyMark = "# hourglass example policy";

// The policy's events and their limits, a line each; a warning when it is the example.
void LogPolicy(const Logger& log, const ServeArgs& a, const PolicySource& policy) {
  if (a.policy.empty()) return;
  const std::map<std::string, std::string> events = policy.Summary();
  log->info("policy {}: {} event{}", a.policy, events.size(), events.size() == 1 ? "" : "s");
  for (const auto& [event, summary] : events) log->info("  event {}: {}", event, summary);
  // The package installs the example as /etc/hourglass/policy.yaml: said loudly, since it limits
  // clients the operator never chose to.
  std::ifstream file(a.policy);
  std::string first;
  std::getline(file, first);
  if (first.starts_with(kExamplePolicyMark)) {
    log->warn(
        "{} is hourglass's example policy: its limits are a demonstration, not yours; write your "
        "events and limits there (hourglass policy validate FILE checks them), then reload "
        "(systemctl reload hourglass, or SIGHUP)",
        a.policy);
  }
}

// Waits for SIGHUP (reload), SIGTERM or SIGINT (drain and stop).
void HandleSignals(const Logger& log, const sigset_t& signals, Service& service) {
  for (;;) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal != SIGHUP) {
      log->info("{}: draining requests in flight", strsignal(signal));
      service.Stop();
      return;
    }
    service.Reload();
  }
}

// The service's lines into the log.
ServiceLog ToLog(const Logger& log) {
  return [log](LogLevel level, const std::string& line) {
    switch (level) {
      case LogLevel::kDebug:
        return log->debug("{}", line);
      case LogLevel::kInfo:
        return log->info("{}", line);
      case LogLevel::kWarning:
        return log->warn("{}", line);
      case LogLevel::kError:
        return log->error("{}", line);
    }
  };
}

// Which proxies /v1/auth believes about X-Forwarded-For (exit 2 for a contradiction).
TrustedProxies TrustedProxiesOf(const ServeArgs& a) {
  TrustedProxies trusted;
  trusted.hops = a.trusted_proxies;
  for (const std::string& range : a.trusted_proxy) {
    Result<IpNetwork> parsed = IpNetwork::ParseRange(range);
    if (!parsed.ok()) Fail(kUsage, "--trusted-proxy: " + parsed.error().message());
    trusted.ranges.push_back(*parsed);
  }
  const bool forwarded = boost::beast::iequals(a.feature_header, "X-Forwarded-For");
  if (trusted.hops > 0 && !trusted.ranges.empty()) {
    Fail(kUsage, "give --trusted-proxies N (hops) or --trusted-proxy RANGE, not both");
  }
  if (forwarded && !trusted.any()) {
    Fail(kUsage,
         "--feature-header X-Forwarded-For needs --trusted-proxies N (the proxies in front, each "
         "appending to it) or --trusted-proxy RANGE: its left entries are whatever the client "
         "sent, so counting them lets every request be a new client");
  }
  if (!forwarded && trusted.any()) {
    Fail(kUsage, "--trusted-proxies and --trusted-proxy apply to --feature-header X-Forwarded-For");
  }
  return trusted;
}

EnvoyOptions EnvoyOptionsOf(const ServeArgs& a) {
  EnvoyOptions o;
  o.mode = Unwrap(ParseCountingMode(a.envoy_counting));
  o.on_store_failure = Unwrap(ParseFailureMode(a.envoy_failure_mode));
  o.response_headers = a.envoy_headers;
  return o;
}

// Raises the open file limit and fits the connection caps under it beside the store's
// connections (warned when lowered; exit 2 when not even those fit).
void FitCaps(const Logger& log, const Globals& g, const ServeArgs& a, bool grpc,
             HttpServerOptions& http, size_t& grpc_cap) {
  const size_t store = StoreConnections(g);
  const size_t limit = RaiseOpenFileLimit();
  const DescriptorPlan plan =
      FitConnections(limit, {.store = store,
                             .http = a.max_connections,
                             .grpc = grpc ? a.grpc_max_connections : 0,
                             .io_threads = static_cast<size_t>(a.threads) * (grpc ? 2 : 1)});
  if (!plan.fits) Fail(kUsage, plan.warnings.front());
  for (const std::string& warning : plan.warnings) log->warn("{}", warning);
  http.max_connections = plan.http;
  grpc_cap = plan.grpc;
}

// --settle-key-file and --settle-within into `api`, or exit 2 naming them.
void SettleTokensOf(const Globals& g, const ServeArgs& a, DecisionApiOptions& api) {
  Result<Seconds> within = ParseDuration(a.settle_within);
  if (!within.ok() || *within < Seconds{1} || *within > RetentionOf(g)) {
    Fail(kUsage, fmt::format("--settle-within \"{}\": expected a duration from 1s to --retention "
                             "({}), e.g. 1h",
                             a.settle_within, g.retention));
  }
  api.settle_within = *within;
  if (!a.settle_key_file.empty()) {
    api.settle_tokens =
        std::make_shared<const SettleTokens>(Unwrap(SettleTokens::FromKeyFile(a.settle_key_file)));
  }
}

// A bad option or file leaves with exit 2, a store that cannot be opened with 3, an address that
// cannot be listened on with 4. A network store that does not answer yet is served unready.
int RunServe(const Globals& g, const ServeArgs& a) {
  if (a.policy.empty() && a.envoy_config.empty()) {
    Fail(kUsage, "serve needs --policy FILE, --envoy-config FILE_OR_DIR, or both");
  }
  const Logger log = MakeLogger({.level = Unwrap(ParseLogLevel(a.log_level)),
                                 .format = Unwrap(ParseLogFormat(a.log_format))});
  ServiceOptions options;
  options.policy_path = a.policy;
  options.engine = EngineOptionsFor(
      g, a.exact_retry_after ? EngineUse::kLongRunningExact : EngineUse::kLongRunning);
  HttpServerOptions grpc;
  ParseListen("--listen", a.listen, options.http);
  ParseListen("--grpc-listen", a.grpc_listen, grpc);
  options.http.threads = a.threads;
  size_t grpc_cap = 0;
  FitCaps(log, g, a, !a.envoy_config.empty(), options.http, grpc_cap);
  options.api.feature_header = a.feature_header;
  options.api.trusted_proxies = TrustedProxiesOf(a);
  options.api.admin = !a.no_admin;
  options.api.admin_token = ReadAdminToken(a.admin_token_file);
  SettleTokensOf(g, a, options.api);
  options.stats_interval = std::chrono::seconds{a.stats_interval};
  options.count_services = a.services == "auto";
  if (!options.count_services) options.fallback.services = std::stoull(a.services);
  options.fallback.max_seconds = a.fallback_max_seconds;
  options.top_capacity = a.top_capacity;
  options.top_state_path = a.top_state;
  // The unit's StateDirectory (systemd sets STATE_DIRECTORY): /v1/top survives a restart there.
  if (const char* dir = std::getenv("STATE_DIRECTORY");
      a.top_state.empty() && dir != nullptr && *dir != '\0') {
    options.top_state_path = std::string(dir) + "/top.json";
  }
  options.log_denials = a.log_denials;
  if (!a.envoy_config.empty()) {
    options.protocols.push_back(EnvoyProtocol({.config = a.envoy_config,
                                               .envoy = EnvoyOptionsOf(a),
                                               .grpc = {.host = grpc.host,
                                                        .port = grpc.port,
                                                        .threads = a.threads,
                                                        .max_connections = grpc_cap}}));
  }
  // Signals go to the signal thread only: block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Its flushing thread starts here, with the signals blocked.
  std::unique_ptr<AuditLog> audit;
  if (!a.audit_log.empty()) {
    audit = Unwrap(AuditLog::Open(a.audit_log, a.audit_log_max_mb << 20, a.audit_log_files));
  }

  // The engine follows the store's clock when this host's is off by 2 s or more.
  OffsetClock clock(SystemClock::Get());
  if (audit) {
    options.on_decided = [log = audit.get(), &clock](const std::vector<OwnedCheck>& checks,
                                                     const Engine::RequestDecision& decided) {
      log->Write(RequestsOf(checks), decided, clock.Now());
    };
  }
  // Losses the store's new connections find (a restart) and the service's watch sees; checks
  // consult them.
  StoreLosses losses;
  options.losses = &losses;
  const std::unique_ptr<Store> store =
      OpenCliStore(g, clock, TransitionLog(ToLog(log)), LossLog(losses, ToLog(log)));
  Result<std::unique_ptr<Service>> made = Service::Create(options, *store, clock, ToLog(log));
  if (!made.ok()) {
    // A file or option the service refused is the caller's; an address it cannot take is not.
    Fail(CodeFor(made.error()) == kUsage ? kUsage : kCannotListen, made.error().message());
  }
  Service& service = **made;
  log->info("hourglass {} listening on {}:{} with {} threads (at most {} connections); store {}",
            HOURGLASS_VERSION, options.http.host, service.http_port(), a.threads,
            options.http.max_connections, store->Describe());
  if (!g.previous_servers.empty()) {
    log->info(
        "in transition from memcached {}: features whose server changed are read on both and "
        "written to the new one; drop --previous-servers --retention ({}) after every client "
        "has switched",
        g.previous_servers, g.retention);
  }
  LogPolicy(log, a, *service.policies());
  std::thread signal_thread([&] { HandleSignals(log, signals, service); });
  const uint64_t refused = service.Run();
  signal_thread.join();
  if (refused == 0) {
    log->info("stopped");
  } else {
    log->warn("stopped; the store refused {} fire-and-forget writes", refused);
  }
  return kOk;
}

}  // namespace

Command AddServeCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve", "Serve checks over HTTP (JSON API, nginx auth)");
  sub->add_option("--policy", args->policy,
                  "YAML policy file for the /v1 API (or --envoy-config); SIGHUP reloads it (env "
                  "HOURGLASS_POLICY)")
      ->envname("HOURGLASS_POLICY");
  sub->add_option("--listen", args->listen, "HOST:PORT to listen on ([::1]:PORT for IPv6)")
      ->capture_default_str();
  sub->add_option("--threads", args->threads,
                  "I/O threads (1 to 256); checks arriving together share store round trips")
      ->capture_default_str();
  sub->add_option("--max-connections", args->max_connections,
                  "HTTP connections at once; a new one beyond takes the place of the one idle "
                  "longest, or is answered 503 when all are busy (lowered, with a warning, to fit "
                  "the open file limit)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  sub->add_option(
         "--grpc-max-connections", args->grpc_max_connections,
         "gRPC connections at once (with --envoy-config); a new one beyond takes the place "
         "of one silent for a second or more, or is closed")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--feature-header", args->feature_header,
                  "request header /v1/auth/EVENT takes the feature from; X-Forwarded-For is read "
                  "as a list, through --trusted-proxies or --trusted-proxy")
      ->capture_default_str();
  sub->add_option("--trusted-proxies", args->trusted_proxies,
                  "with --feature-header X-Forwarded-For: how many proxies stand in front, each "
                  "appending to it (1: the client is its last entry)")
      ->check(CLI::Range(size_t{1}, size_t{64}));
  sub->add_option("--trusted-proxy", args->trusted_proxy,
                  "with --feature-header X-Forwarded-For: a trusted proxy's address or range "
                  "(repeat); the client is the last entry from the right not in one, and a peer "
                  "not in one is the client itself");
  sub->add_option(
      "--admin-token-file", args->admin_token_file,
      "the admin calls (POST /v1/hit, DELETE /v1/counters, GET /v1/top, GET /v1/policy) "
      "need this bearer token (first line)");
  sub->add_option("--settle-key-file", args->settle_key_file,
                  "the key (32 bytes or more) that signs and verifies settle_tokens: every service "
                  "of a deployment needs the same one; without it tokens settle only on the "
                  "service that issued them");
  sub->add_option("--settle-within", args->settle_within,
                  "how long after its decision a settle_token is accepted (at most --retention)")
      ->capture_default_str();
  sub->add_flag("--no-admin", args->no_admin,
                "turn the admin calls (hit, counters, top, policy) off");
  sub->add_option("--envoy-config", args->envoy_config,
                  "envoyproxy/ratelimit YAML files or folders: serve Envoy's rate limit service "
                  "(gRPC, and POST /json); SIGHUP reloads them")
      ->check(CLI::ExistingPath);
  sub->add_option("--grpc-listen", args->grpc_listen,
                  "HOST:PORT of the gRPC rate limit service (with --envoy-config)")
      ->capture_default_str();
  sub->add_option("--envoy-counting", args->envoy_counting,
                  "admitted: a denied request counts against none of its descriptors; attempts: "
                  "every request counts")
      ->capture_default_str();
  sub->add_option("--envoy-failure-mode", args->envoy_failure_mode,
                  "store unreachable: open answers OK, closed OVER_LIMIT, local decides here "
                  "against 1/--services of each limit and writes the hits back later")
      ->capture_default_str();
  sub->add_option("--services", args->services,
                  "N|auto: how many services share the store. While it fails, a policy with "
                  "on_store_failure: local (and no local_share) admits 1/N of each limit here, so "
                  "that all of them together admit at most the limit; the hits are written back "
                  "once it answers. auto: counted in the store every 5 s (each service records "
                  "itself under the event hourglass:services), the last count kept while it fails; "
                  "before the first count, local checks are denied")
      ->check(CLI::IsMember({"auto"}) | CLI::Range(uint64_t{1}, uint64_t{10000}))
      ->capture_default_str();
  sub->add_option("--fallback-max-seconds", args->fallback_max_seconds,
                  "the most event+feature seconds of local hits held for the write-back (about "
                  "140 bytes each); when full, a local check that needs another is denied")
      ->check(CLI::Range(size_t{1}, size_t{1} << 32))
      ->capture_default_str();
  sub->add_flag("--exact-retry-after", args->exact_retry_after,
                "on a denial, read what pins Retry-After to the second (as `check` does); off, it "
                "may be late by up to a bucket's width, never early");
  sub->add_option("--stats-interval", args->stats_interval,
                  "seconds between reads of the store's own figures (memcached's stats, Redis's "
                  "INFO, LMDB's: evictions, memory, the server's clock) into /metrics; a rise in "
                  "evictions is logged as a warning, and a host clock 2 s or more off the "
                  "servers' is followed to theirs; 0: never")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  sub->add_option("--top-capacity", args->top_capacity,
                  "counters per event and minute behind GET /v1/top (each row's error is at most "
                  "the window's hits / this); 0: no /v1/top")
      ->check(CLI::Range(size_t{0}, size_t{1} << 16))
      ->capture_default_str();
  sub->add_option("--top-state", args->top_state,
                  "keep /v1/top's summaries in FILE across restarts (read at start, written "
                  "every minute and at stop); default $STATE_DIRECTORY/top.json when systemd "
                  "gives the unit a state directory, else none");
  sub->add_option("--audit-log", args->audit_log,
                  "write every decision to FILE, a JSON line per check, for `hourglass audit` to "
                  "recompute (off by default; about 300 bytes a check); rotated by size");
  sub->add_option("--audit-log-max-mb", args->audit_log_max_mb,
                  "rotate the audit log when it reaches this many MiB")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  sub->add_option("--audit-log-files", args->audit_log_files,
                  "audit log files kept: FILE and the rotated FILE.1 ... (spdlog names them "
                  "audit.1.log for audit.log)")
      ->check(CLI::Range(size_t{1}, size_t{1000}))
      ->capture_default_str();
  sub->add_option("--log-level", args->log_level,
                  "debug, info, warning, error or off: lines below it are not written")
      ->capture_default_str();
  sub->add_flag("--log-denials,!--no-log-denials", args->log_denials,
                "log sampled denials (on by default; --no-log-denials turns them off): at most "
                "one line per event a second, naming that moment's denied feature (escaped) and "
                "how many denials it stands for; the rest of a burst within a second");
  sub->add_option("--log-format", args->log_format,
                  "text (\"2026-11-25T00:22:45.123Z info ...\") or json (an object a line), on "
                  "stderr")
      ->capture_default_str();
  sub->add_flag("--envoy-response-headers", args->envoy_headers,
                "add RateLimit-Policy, RateLimit and Retry-After to Envoy's responses");
  sub->footer(
      "Endpoints:\n"
      "  POST /v1/check {\"event\":E,\"feature\":F,\"cost\":1}   200 allowed, 429 denied\n"
      "       /v1/check {\"checks\":[{...},{...}]}            all must pass; none counted if not\n"
      "       \"record\":false in a check: would it fit? (a peek, nothing counted)\n"
      "       \"limits\":[\"100/m\",\"10000/d\"] in a check: its own limits, for events whose\n"
      "       policy has request_limits {max_hits, max_window} (a tenant's plan)\n"
      "  POST /v1/settle {\"event\":E,\"feature\":F,\"at\":T,\"cost\":C,\"actual\":A}: the "
      "decision at\n"
      "       T (its \"at\") charged C, its true cost is A (events with settle: true)\n"
      "  GET  /v1/count?event=E&feature=F&window=1m&window=1d\n"
      "  POST /v1/hit {\"event\":E,\"feature\":F}   DELETE /v1/counters?event=E&feature=F\n"
      "  GET  /v1/auth/EVENT (nginx auth_request; feature from --feature-header): 204 or 403\n"
      "  GET  /healthz, /readyz (503 while the store cannot be reached), /metrics (Prometheus)\n"
      "  GET  /v1/top?event=E&window=5m&by=denied&n=20: who is denied (or hit) most (admin)\n"
      "  GET  /v1/policy: the policy in force (admin)\n"
      "  POST /json (with --envoy-config): a RateLimitRequest in JSON: 200 OK, 429 OVER_LIMIT\n"
      "gRPC (with --envoy-config, on --grpc-listen):\n"
      "  envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit; each unit is an exact\n"
      "  sliding window (`window: fixed` in a rate_limit: the reference's fixed windows);\n"
      "  `rate_limits: [{unit, requests_per_unit}, ...]` puts several limits on one descriptor\n"
      "The store's own figures (memcached's stats, Redis's INFO) are read every\n"
      "--stats-interval seconds: evictions (each a lost count) and memory per server in\n"
      "/metrics, and a warning in the log when evictions rise.\n"
      "The same read compares clocks: a host clock 2 s or more off the servers' (their median)\n"
      "is warned about and the service follows the servers' clock instead, so that its buckets\n"
      "agree with every other client's (hourglass_clock_offset_seconds{server}).\n"
      "Logs go to stderr, a line per start, reload (what changed), store server lost or back,\n"
      "eviction or clock followed; never a line per request. An answer given by the failure mode\n"
      "because the store failed carries `Hourglass-Degraded: <error>`.\n"
      "SIGHUP reloads the policy and Envoy files (a bad file keeps the old ones); SIGTERM drains\n"
      "and exits 0. Exit 2: a bad option or file (a limit longer than --retention too), 3: a\n"
      "store that cannot be opened (an unusable LMDB directory), 4: cannot listen (address in\n"
      "use). A memcached or Redis that does not answer at start stops nothing: the service "
      "starts,\n"
      "logs it, answers per each event's on_store_failure and is unready (/readyz 503) until the\n"
      "store answers. on_store_failure: local decides here against a share of each limit\n"
      "(local_share, or 1/--services) and writes those hits back at their own seconds once the\n"
      "store answers (hourglass_fallback_* in /metrics); a restart meanwhile loses them (logged).\n"
      "Examples:\n"
      "  hourglass serve --policy policies/example.yaml --servers 10.0.0.5:11211\n"
      "  hourglass serve --policy policies/example.yaml --store redis+cluster://10.0.0.7:7000\n"
      "  hourglass serve --policy policies/example.yaml --store lmdb:///var/lib/hourglass/counts\n"
      "  hourglass serve --envoy-config ratelimit/config/ --grpc-listen 0.0.0.0:8081\n"
      "  hourglass serve --policy p.yaml --feature-header X-Forwarded-For --trusted-proxies 1\n"
      "  hourglass serve --policy p.yaml --services 3   # on_store_failure: local, a third each\n"
      "  curl -si localhost:8080/v1/check -d "
      "'{\"event\":\"signup\",\"feature\":\"ann@example.com\"}'");
  return {sub, [&g, args] { return RunServe(g, *args); }};
}

}  // namespace hourglass::cli
