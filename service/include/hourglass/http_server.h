// A small HTTP/1.1 server on Boost.Beast (kept out of this header: handlers see HttpRequest and
// HttpResponse, plain values): keep-alive, bounded requests, timeouts, a connection
// cap and a graceful drain. Each request is answered by one call of the handler. An asynchronous
// handler is called on the connection's I/O thread (each of `threads` serves its own connections)
// and must not block it: it is given the request and a responder to call once, from any thread,
// when the response is ready, and hands work that may block to HttpResponder::Blocking. A plain
// handler returns the response, and may block (on the store): it runs on one of `threads` threads
// kept for that, which bound how many such requests are being answered at once.
//
//   HttpServer server = *HttpServer::Create(options, [](const HttpRequest& r) { ... });
//   std::thread t([&] { server.Run(); });  // until Stop() and every connection is closed
//   server.Stop();
//
// A slow or hostile client cannot hold the server: a new connection must send its first byte
// within first_byte_timeout, an idle keep-alive connection is closed after idle_timeout, a request
// must arrive whole within request_timeout once its first byte has, and an answer must be taken
// by its client within request_timeout (each to within a tenth of the shortest timeout, at most
// 250 ms: one sweep over the connections keeps every deadline), a header over
// max_header_bytes is answered 431 and a body over max_body_bytes 413. At max_connections, a new
// connection takes the place of the connection idle longest (closed at once); only when every
// connection is busy with a request is the new one answered 503 (Retry-After: 1) and closed. Out
// of file descriptors, a new connection is still answered 503 (a descriptor is kept in reserve
// for it) rather than left waiting in the listen queue.
//
// Thread-safety: Stop() and port() may be called from any thread; the handler is called from many
// threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "hourglass/connection_events.h"
#include "hourglass/http_message.h"
#include "hourglass/status.h"

namespace hourglass {

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// Answers one request: call it exactly once, from any thread (later calls are ignored). Until
// then the connection waits, and the server's Run() does not return.
class HttpResponder {
 public:
  using Builder = std::function<HttpResponse()>;
  // Runs a task on a thread that may block; empty: on the caller's.
  using BlockingRunner = std::function<void(std::function<void()>)>;
  // Where a responder's answer goes: the server's connection (or a test's stand-in). Its calls
  // may come from any thread.
  class Answerer {
   public:
    virtual ~Answerer() = default;
    virtual void Send(HttpResponse response) = 0;
    // Builds the response on the connection's own thread, then sends it.
    virtual void Build(Builder build) = 0;
    // Runs `task` on a thread that may block.
    virtual void RunBlocking(std::function<void()> task) = 0;
  };

  // Answers through `send`: every answer is given to it as a builder.
  explicit HttpResponder(std::function<void(Builder)> send, std::string peer = "",
                         BlockingRunner blocking = nullptr);
  HttpResponder(std::shared_ptr<Answerer> answerer, std::string peer)
      : answerer_(std::move(answerer)), peer_(std::move(peer)) {}

  // Sends `response`.
  void operator()(HttpResponse response) const { answerer_->Send(std::move(response)); }
  // Builds the response on the connection's own thread, then sends it: for a caller whose
  // thread has other work (a thread sending batches for many connections).
  void Later(Builder build) const { answerer_->Build(std::move(build)); }
  // Runs `work` on one of the server's threads that may block (on the store), given this
  // responder to answer with: for an asynchronous handler whose request cannot be answered
  // without waiting. A `work` that throws is answered 500.
  void Blocking(std::function<void(HttpResponder)> work) const;
  // The address of the connection's peer ("203.0.113.7", "2001:db8::1"); empty when unknown.
  const std::string& peer() const { return peer_; }

 private:
  std::shared_ptr<Answerer> answerer_;
  std::string peer_;
};
using AsyncHttpHandler = std::function<void(HttpRequest, HttpResponder)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an address, IPv4 or IPv6 ("::1"), not a name
  uint16_t port = 8080;            // 0: a free port, see HttpServer::port()
  int threads = 4;
  size_t max_connections = 1024;
  size_t max_header_bytes = 8 * 1024;
  size_t max_body_bytes = 256 * 1024;  // room for a few 64 KiB features, JSON-escaped
  std::chrono::milliseconds first_byte_timeout{5'000};  // a new connection's wait for a byte
  std::chrono::milliseconds idle_timeout{60'000};       // a keep-alive connection's wait
  std::chrono::milliseconds request_timeout{5'000};     // from a request's first byte to its last
  // Told of connections closed to make room or refused; empty: nobody is told.
  ConnectionEventHandler on_connection_event = nullptr;
};

class HttpServer {
 public:
  // Binds and listens; kInvalidArgument for a bad address or option, kUnavailable when the port
  // cannot be bound.
  static Result<std::unique_ptr<HttpServer>> Create(HttpServerOptions options, HttpHandler handler);
  static Result<std::unique_ptr<HttpServer>> Create(HttpServerOptions options,
                                                    AsyncHttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port listened on.
  uint16_t port() const;
  // Serves on `threads` I/O threads (this one among them) and `threads` threads for handlers that
  // block, until Stop() and the drain end.
  void Run();
  // Stops accepting, closes idle connections, and lets each request in flight be answered
  // (with "Connection: close") before its connection closes; Run() then returns.
  void Stop();
  // Connections open now (those closing included).
  size_t connections() const;
  // The most connections() has been since the server started.
  size_t most_connections() const;

  struct Impl;

 private:
  explicit HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace hourglass
