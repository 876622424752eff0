// A gRPC server for unary calls over HTTP/2 cleartext (h2c, prior knowledge, as Envoy and every
// gRPC client connect), on nghttp2 and Boost.Asio: what a rate limit service needs of gRPC and
// little else, so that a call costs a few microseconds of CPU. Calls on one connection share its
// reads and writes: the handlers of the calls one read completed run together (around_calls), and
// answers are written as they come. A connection lives on one of the server's threads.
//
//   GrpcServer::Methods methods;
//   methods["/pkg.Service/Method"] = [](std::string_view message, GrpcReply reply) {
//     reply.Ok(Serialize(Answer(Parse(message))));  // now or later, from any thread
//   };
//   auto server = *GrpcServer::Create({.host = "127.0.0.1", .port = 8081}, std::move(methods));
//   ...
//   server.reset();  // stops accepting, drains calls in flight (drain_timeout), then closes
//
// What it does, as gRPC's own server does: an unknown method is UNIMPLEMENTED; a message over
// max_message_bytes RESOURCE_EXHAUSTED; a compressed message UNIMPLEMENTED (no encoding is
// offered, so a conforming client never sends one); a call that is not one message INTERNAL.
// A connection with no call for idle_timeout is sent GOAWAY and closed; one silent for
// keepalive_time is pinged, and closed when the ping is not answered within keepalive_timeout.
// At max_connections, a new connection takes the place of the one that has sent nothing for
// longest (at least min_idle), closed at once; when none is that idle, the new one is closed. Out
// of file descriptors, a waiting connection is accepted on a descriptor kept in reserve and closed.
// A peer that breaks HTTP/2 is sent GOAWAY with the error nghttp2 found.
//
// Thread-safety: every method may be called from any thread; handlers are called on the server's
// threads, several at once, and must not block.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "hourglass/connection_events.h"
#include "hourglass/status.h"

namespace hourglass {

// gRPC status codes (grpc/status.h), those this server and its handlers send.
enum class GrpcStatus : int {
  kOk = 0,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kResourceExhausted = 8,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
};

// Answers one call: call Ok or Fail once, from any thread (later calls are ignored). A call whose
// client has gone is answered into nothing. Copies share the call.
class GrpcReply {
 public:
  struct Call;
  explicit GrpcReply(std::shared_ptr<Call> call) : call_(std::move(call)) {}

  // The response message, serialized.
  void Ok(std::string message) const;
  // `status` (not kOk) with `message` for the client (any bytes; sent percent-encoded).
  void Fail(GrpcStatus status, std::string_view message) const;

 private:
  std::shared_ptr<Call> call_;
};

// Called with the request message (valid during the call only).
using GrpcUnaryHandler = std::function<void(std::string_view message, GrpcReply reply)>;

struct GrpcServerOptions {
  std::string host = "127.0.0.1";  // an address, IPv4 or IPv6, not a name
  uint16_t port = 8081;            // 0: a free port, see port()
  int threads = 2;
  size_t max_connections = 1024;
  // A connection that has sent nothing this long may be closed to make room for a new one.
  std::chrono::milliseconds min_idle{1000};
  size_t max_message_bytes = 1 << 20;
  // What all connections' unfinished requests may hold at once; a call beyond is
  // RESOURCE_EXHAUSTED. (A connection alone holds at most 2 x max_message_bytes + 64 KiB.)
  size_t max_buffered_bytes = 64 << 20;
  uint32_t max_concurrent_streams = 1000;                  // calls in flight per connection
  std::chrono::milliseconds idle_timeout{5 * 60 * 1000};   // no call: GOAWAY
  std::chrono::milliseconds keepalive_time{60 * 1000};     // silent this long: a ping
  std::chrono::milliseconds keepalive_timeout{20 * 1000};  // no answer to it: closed
  std::chrono::milliseconds drain_timeout{5000};  // what calls in flight get at destruction
  // Told of connections closed to make room or refused (on the server's threads).
  ConnectionEventHandler on_connection_event = nullptr;
  // Runs `calls`, which calls the handlers of the calls one read completed, one after another:
  // a service may gather what they submit into one batch (CheckFrontEnd::Gather). Empty: runs
  // them plainly.
  std::function<void(const std::function<void()>& calls)> around_calls = nullptr;
};

class GrpcServer {
 public:
  // Method paths ("/package.Service/Method") and their handlers.
  using Methods = std::unordered_map<std::string, GrpcUnaryHandler>;

  // Binds, listens and serves on its own threads. kInvalidArgument for a bad address or option,
  // kUnavailable when the port cannot be bound.
  static Result<std::unique_ptr<GrpcServer>> Create(GrpcServerOptions options, Methods methods);
  // Stops accepting, sends every connection GOAWAY, gives calls in flight drain_timeout to be
  // answered, then closes every connection and stops its threads.
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  uint16_t port() const;
  // Connections open now (those closing included).
  size_t connections() const;
  // The most connections() has been since the server started.
  size_t most_connections() const;

  struct Impl;

 private:
  explicit GrpcServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace hourglass
