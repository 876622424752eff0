// A protocol served beside the decision service's HTTP API, on its engine, check front end and
// metrics: Envoy's rate limit service (hourglass::rls_service) is one. The service makes each
// protocol from its factory when it starts, hands it the HTTP requests to the endpoints it serves
// (Envoy's POST /json), reloads it with the policy, and stops it before the engine goes.
//
// Thread-safety: HandleHttp may be called from many threads at once; PrepareReload from the
// thread that reloads; Stop once.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "hourglass/api_route.h"
#include "hourglass/check_front_end.h"
#include "hourglass/engine.h"
#include "hourglass/http_server.h"
#include "hourglass/recent_top.h"
#include "hourglass/service_metrics.h"
#include "hourglass/status.h"

namespace hourglass {

// How the service tells what happens (a start, a reload, a warning): one line each.
enum class LogLevel { kDebug, kInfo, kWarning, kError };
using ServiceLog = std::function<void(LogLevel level, const std::string& line)>;

class ServiceProtocol {
 public:
  virtual ~ServiceProtocol() = default;

  // Whether it answers the HTTP requests routed to `endpoint`; and answers one.
  virtual bool Serves(Endpoint endpoint) const = 0;
  virtual void HandleHttp(const HttpRequest& request, HttpResponder respond) = 0;

  // Its configuration read again: a line saying what would be in force, and how to put it in
  // force; or the error that keeps the one in force.
  struct Reloaded {
    std::string summary;
    std::function<void()> apply;
  };
  virtual Result<Reloaded> PrepareReload() = 0;

  // Stops taking requests and gives those in flight time to finish.
  virtual void Stop() = 0;
};

// What a protocol is made on; each must outlive the protocol.
struct ProtocolContext {
  const Engine& engine;
  CheckFrontEnd& front_end;
  ServiceMetrics& metrics;
  const ServiceLog& log;
  RecentTop* top = nullptr;  // who is limited (/v1/top); null: the service keeps none
};
// Makes (and starts) a protocol, or says why it cannot (a bad configuration file, an address
// that cannot be bound).
using ProtocolFactory =
    std::function<Result<std::unique_ptr<ServiceProtocol>>(const ProtocolContext& context)>;

}  // namespace hourglass
