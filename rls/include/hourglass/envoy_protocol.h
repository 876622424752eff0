// Envoy's rate limit service as a protocol of the decision service (hourglass::Service): its
// configuration files loaded (a limit beyond the engine's retention refuses them), ShouldRateLimit
// served over gRPC on its own listener and as JSON on the HTTP server's POST /json, on the
// service's engine, check front end and metrics; reloaded with the policy.
//
//   ServiceOptions options;
//   options.protocols.push_back(EnvoyProtocol({.config = {"ratelimit/config"},
//                                              .grpc = {.host = "0.0.0.0", .port = 8081}}));
//
// Thread-safety: as ServiceProtocol.
#pragma once

#include <string>
#include <vector>

#include "hourglass/envoy_request.h"
#include "hourglass/grpc_server.h"
#include "hourglass/service_protocol.h"

namespace hourglass {

struct EnvoyProtocolOptions {
  std::vector<std::string> config;  // envoyproxy/ratelimit YAML files or folders
  EnvoyOptions envoy;               // counting, failure mode, response headers
  GrpcServerOptions grpc;           // where to listen, threads, how many connections at once
};

// Loads the configuration and listens when the service starts it. Errors: the configuration's
// (kInvalidArgument, naming the file and line), kUnavailable when the address cannot be bound.
ProtocolFactory EnvoyProtocol(EnvoyProtocolOptions options);

}  // namespace hourglass
