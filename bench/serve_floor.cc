// The floor for `hourglass serve`: the same HTTP stack (HttpServer, Boost.Beast) answering each
// POST with one raw memcached round trip carrying the increments a check sends (one per ladder
// level) and a get of those keys, with no engine, policy or decision. The service is measured
// against it (bench/serve.sh): what the engine and the API cost on top of HTTP and one round trip.
// With --answer-head and --answer-body (a response as `curl -D HEAD -o BODY` saved it), every
// request is answered those bytes on its I/O thread, reading no store: what the service's HTTP
// stack alone costs (bench/http_peers.sh, beside nginx answering the same bytes).
//
//   serve_floor --listen-port 8081 --servers 127.0.0.1:11211 --threads 8
//   serve_floor --listen-port 8081 --answer-head head.txt --answer-body body.json --threads 4
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hourglass/engine.h"
#include "hourglass/http_server.h"
#include "hourglass/key_space.h"
#include "hourglass/memcached_store.h"

namespace {

using namespace hourglass;

// Runs `server` until SIGTERM or SIGINT, then drains it. Returns the exit code.
int ServeUntilSignalled(HttpServer& server) {
  std::fprintf(stderr, "serve_floor: listening on 127.0.0.1:%d\n", server.port());
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    server.Stop();
  });
  server.Run();
  stopper.join();
  return 0;
}

// The response `head` (a status line, then fields, as curl -D writes them) and `body` describe;
// the framing fields are left to the server.
HttpResponse ResponseOf(std::istream& head, std::string body) {
  std::string line;
  std::getline(head, line);  // HTTP/1.1 429 Too Many Requests
  std::istringstream status(line);
  std::string version;
  int code = 200;
  status >> version >> code;
  HttpResponse response(static_cast<HttpStatus>(code), std::move(body));
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;  // the end of the head
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = line.substr(0, colon);
    if (name == "Content-Length" || name == "Connection") continue;
    response.Set(name, line.substr(line.find_first_not_of(' ', colon + 1)));
  }
  return response;
}

// Answers every request the saved response at once, on its I/O thread.
int AnswerOnly(HttpServerOptions http, const std::string& head_path, const std::string& body_path) {
  std::ifstream head(head_path), body_file(body_path);
  std::stringstream body;
  body << body_file.rdbuf();
  const HttpResponse answer = ResponseOf(head, body.str());
  auto server = HttpServer::Create(std::move(http),
                                   AsyncHttpHandler([answer](HttpRequest, HttpResponder respond) {
                                     respond(HttpResponse(answer));
                                   }));
  if (!server.ok()) {
    std::fprintf(stderr, "serve_floor: %s\n", server.error().message().c_str());
    return 3;
  }
  return ServeUntilSignalled(**server);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hourglass;
  CLI::App app("The HTTP floor server for the service benchmark");
  int port = 8081, threads = 8;
  std::string servers = "127.0.0.1:11211";
  app.add_option("--listen-port", port, "port on 127.0.0.1");
  app.add_option("--servers", servers, "memcached host:port");
  app.add_option("--threads", threads, "server threads");
  std::string answer_head, answer_body;
  app.add_option("--answer-head", answer_head, "answer every request this status and fields")
      ->check(CLI::ExistingFile);
  app.add_option("--answer-body", answer_body, "... and this body, reading no store")
      ->check(CLI::ExistingFile);
  CLI11_PARSE(app, argc, argv);
  if (answer_head.empty() != answer_body.empty()) {
    std::fprintf(stderr, "serve_floor: give both --answer-head and --answer-body, or neither\n");
    return 2;
  }

  HttpServerOptions http;
  http.port = static_cast<uint16_t>(port);
  http.threads = threads;
  if (!answer_head.empty()) return AnswerOnly(http, answer_head, answer_body);

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
  return ServeUntilSignalled(**server);
}
