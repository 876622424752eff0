// The floor for `hourglass serve`: the same HTTP stack (HttpServer, Boost.Beast) answering each
// POST with one raw memcached round trip carrying the increments a check sends (one per ladder
// level) and a get of those keys, with no engine, policy or decision. The service is measured
// against it (bench/serve.sh): what the engine and the API cost on top of HTTP and one round trip.
//
//   serve_floor --listen-port 8081 --servers 127.0.0.1:11211 --threads 8
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "hourglass/engine.h"
#include "hourglass/http_server.h"
#include "hourglass/key_space.h"
#include "hourglass/memcached_store.h"

int main(int argc, char** argv) {
  using namespace hourglass;
  CLI::App app("The HTTP floor server for the service benchmark");
  int port = 8081, threads = 8;
  std::string servers = "127.0.0.1:11211";
  app.add_option("--listen-port", port, "port on 127.0.0.1");
  app.add_option("--servers", servers, "memcached host:port");
  app.add_option("--threads", threads, "server threads");
  CLI11_PARSE(app, argc, argv);

  MemcachedOptions options;
  options.servers = {servers};
  Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
  if (!store.ok()) {
    std::fprintf(stderr, "serve_floor: %s\n", store.error().message().c_str());
    return 3;
  }
  // The engine only names the keys (the same KeySpace the service uses); it is never asked.
  const Engine engine = *Engine::Create(**store, SystemClock::Get(), EngineOptions{});
  const KeySpace& keys = engine.keys();
  HttpServerOptions http;
  http.port = static_cast<uint16_t>(port);
  http.threads = threads;
  auto server = HttpServer::Create(http, [&](const HttpRequest& request) {
    HttpResponse response(HttpStatus::kOk);
    const nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
    if (!body.is_object() || !body.contains("event") || !body.contains("feature")) {
      response.set_status(HttpStatus::kBadRequest);
      return response;
    }
    const std::string group =
        keys.GroupKey(body["event"].get<std::string>(), body["feature"].get<std::string>());
    Batch batch{group, keys.HitIncrements(group, ToUnix(SystemClock::Get().Now()), 1), {}};
    for (const Increment& inc : batch.increments) batch.reads.push_back(inc.key);
    Result<std::vector<uint64_t>> values = (*store)->Apply(batch);
    response.Set("Content-Type", "application/json");
    response.body() = values.ok() ? "{\"allowed\":true}\n" : "{\"error\":\"store\"}\n";
    return response;
  });
  if (!server.ok()) {
    std::fprintf(stderr, "serve_floor: %s\n", server.error().message().c_str());
    return 3;
  }
  std::fprintf(stderr, "serve_floor: listening on 127.0.0.1:%d\n", (*server)->port());
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    (*server)->Stop();
  });
  (*server)->Run();
  stopper.join();
  return 0;
}
