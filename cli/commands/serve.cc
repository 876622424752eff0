// hourglass serve --policy FILE [--listen HOST:PORT] [--threads N] ...: the HTTP decision service.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "../commands.h"
#include "../runtime.h"
#include "hourglass/decision_api.h"
#include "hourglass/http_server.h"
#include "hourglass/policy_source.h"

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
  std::string feature_header = "X-Real-IP";
  std::string admin_token_file;
  bool no_admin = false;
};

void Log(const std::string& line) { std::fprintf(stderr, "hourglass serve: %s\n", line.c_str()); }

// "HOST:PORT" or "[IPV6]:PORT" into the server's options.
void ParseListen(const std::string& text, HttpServerOptions& options) {
  const size_t colon = text.rfind(':');
  const auto bad = [&] {
    Fail(kUsage,
         fmt::format("--listen {}: use HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080", text));
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

std::optional<std::string> ReadToken(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token) || token.empty()) {
    Fail(kUsage,
         fmt::format("--admin-token-file {}: cannot read a token from its first line", path));
  }
  return token;
}

// Waits for SIGHUP (reload the policy file), SIGTERM or SIGINT (drain and stop).
void HandleSignals(const sigset_t& signals, const ServeArgs& a, DecisionApi& api,
                   HttpServer& server) {
  for (;;) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal != SIGHUP) {
      Log(fmt::format("{}: draining requests in flight", strsignal(signal)));
      server.Stop();
      return;
    }
    Result<PolicySource> reloaded = PolicySource::FromFile(a.policy);
    if (!reloaded.ok()) {
      Log("reload failed, keeping the policy in force: " + reloaded.error().message());
      api.CountReload(false);
      continue;
    }
    api.SetPolicies(std::make_shared<const PolicySource>(std::move(*reloaded)));
    api.CountReload(true);
    Log("reloaded " + a.policy);
  }
}

int RunServe(const Globals& g, const ServeArgs& a) {
  auto policies = std::make_shared<const PolicySource>(Unwrap(PolicySource::FromFile(a.policy)));
  HttpServerOptions http;
  ParseListen(a.listen, http);
  http.threads = a.threads;
  http.max_connections = a.max_connections;
  DecisionApiOptions api_options;
  api_options.feature_header = a.feature_header;
  api_options.admin = !a.no_admin;
  api_options.admin_token = ReadToken(a.admin_token_file);
  // Signals go to the signal thread only: block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ServiceMetrics metrics;
  api_options.metrics = &metrics;
  Runtime rt(g, SystemClock::Get(), EngineUse::kLongRunning);
  DecisionApi api(rt.engine(), policies, api_options);
  std::unique_ptr<HttpServer> server =
      Unwrap(HttpServer::Create(http, [&api](HttpRequest r, HttpResponder respond) {
        api.HandleAsync(std::move(r), std::move(respond));
      }));
  Log(fmt::format("listening on {}:{} with {} threads; policy {}; store {}", http.host,
                  server->port(), a.threads, a.policy,
                  g.store == "memory" ? std::string("memory") : "memcached " + g.servers));
  std::thread signal_thread([&] { HandleSignals(signals, a, api, *server); });
  server->Run();
  signal_thread.join();
  const uint64_t refused = rt.Flush();  // settle fire-and-forget writes before leaving
  Log(refused == 0 ? std::string("stopped")
                   : fmt::format("stopped; the store refused {} fire-and-forget writes", refused));
  return kOk;
}

}  // namespace

Command AddServeCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand("serve", "Serve checks over HTTP (JSON API, nginx auth)");
  sub->add_option("--policy", args->policy, "YAML policy file (required); SIGHUP reloads it")
      ->required();
  sub->add_option("--listen", args->listen, "HOST:PORT to listen on ([::1]:PORT for IPv6)")
      ->capture_default_str();
  sub->add_option("--threads", args->threads,
                  "I/O threads (1 to 256); checks arriving together share memcached round trips")
      ->capture_default_str();
  sub->add_option("--max-connections", args->max_connections,
                  "connections beyond this are closed at once")
      ->capture_default_str();
  sub->add_option("--feature-header", args->feature_header,
                  "request header /v1/auth/EVENT takes the feature from")
      ->capture_default_str();
  sub->add_option("--admin-token-file", args->admin_token_file,
                  "POST /v1/hit and DELETE /v1/counters need this bearer token (first line)");
  sub->add_flag("--no-admin", args->no_admin, "turn POST /v1/hit and DELETE /v1/counters off");
  sub->footer(
      "Endpoints:\n"
      "  POST /v1/check {\"event\":E,\"feature\":F,\"cost\":1}   200 allowed, 429 denied\n"
      "       /v1/check {\"checks\":[{...},{...}]}            all must pass; none counted if not\n"
      "  GET  /v1/count?event=E&feature=F&window=1m&window=1d\n"
      "  POST /v1/hit {\"event\":E,\"feature\":F}   DELETE /v1/counters?event=E&feature=F\n"
      "  GET  /v1/auth/EVENT (nginx auth_request; feature from --feature-header): 204 or 403\n"
      "  GET  /healthz, /readyz (503 while the store cannot be reached), /metrics (Prometheus)\n"
      "SIGHUP reloads the policy file (a bad file keeps the old one); SIGTERM drains and exits 0.\n"
      "Examples:\n"
      "  hourglass serve --policy policies/example.yaml --servers 10.0.0.5:11211\n"
      "  curl -si localhost:8080/v1/check -d "
      "'{\"event\":\"signup\",\"feature\":\"ann@example.com\"}'");
  return {sub, [&g, args] { return RunServe(g, *args); }};
}

}  // namespace hourglass::cli
