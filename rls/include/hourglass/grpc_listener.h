// The TCP listener of a grpc::Server, with a connection cap gRPC itself lacks: connections are
// accepted here and handed to the server, which serves them as its own. At max_connections, a new
// connection takes the place of the one that has sent nothing for longest (at least min_idle),
// closed at once; when none is that idle, the new connection is closed.
//
//   std::unique_ptr<grpc::Server> server = builder.BuildAndStart();  // no listening port
//   auto listener = GrpcListener::Create({.host = "127.0.0.1", .port = 8081}, *server);
//   ...
//   listener.reset();   // stops accepting; then server->Shutdown()
//
// Connections are watched through a duplicate of their descriptor: gRPC's close shows as a hang-up
// on it, and the duplicate is closed then. So a connection costs this process two descriptors.
// A connection closed to make room holds its descriptors until gRPC lets go of it: at most
// max_connections / 8 (at least 4) may be on their way out at once, and a new connection beyond
// that is closed at once, so a burst of connections cannot take the process's descriptors while
// gRPC is busy with it.
//
// Thread-safety: connections() may be called from any thread; the listener runs on its own.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "hourglass/connection_events.h"
#include "hourglass/status.h"

namespace hourglass {

struct GrpcListenerOptions {
  std::string host = "127.0.0.1";  // an address, IPv4 or IPv6, not a name
  uint16_t port = 8081;            // 0: a free port, see port()
  size_t max_connections = 1024;
  // A connection that has sent nothing this long may be closed to make room for a new one.
  std::chrono::milliseconds min_idle{1000};
  // Told of connections closed to make room or refused (on the accepting thread).
  ConnectionEventHandler on_connection_event = nullptr;
};

class GrpcListener {
 public:
  // Binds and listens, and hands each connection to `server` (started, and outliving this).
  // kInvalidArgument for a bad address, kUnavailable when the port cannot be bound.
  static Result<std::unique_ptr<GrpcListener>> Create(GrpcListenerOptions options,
                                                      grpc::Server& server);
  ~GrpcListener();  // stops accepting; connections handed over stay the server's
  GrpcListener(const GrpcListener&) = delete;
  GrpcListener& operator=(const GrpcListener&) = delete;

  uint16_t port() const;
  // Connections handed to the server and not closed yet (those on their way out included).
  size_t connections() const;
  // The most connections() has been since the listener started.
  size_t most_connections() const;

  struct Impl;

 private:
  explicit GrpcListener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass
