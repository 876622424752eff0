#include "hourglass/http_server.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <ctime>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "hourglass/descriptor_budget.h"
#include "hourglass/listen_socket.h"
#include "hourglass/spare_descriptor.h"

namespace hourglass {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
// A socket bound to its I/O context's executor: no type-erased executor copied per operation.
using Socket = tcp::socket::rebind_executor<net::io_context::executor_type>::other;

class Session;

std::chrono::milliseconds SweepEvery(const HttpServerOptions& o) {
  const auto shortest = std::min({o.first_byte_timeout, o.idle_timeout, o.request_timeout});
  return std::clamp(shortest / 10, std::chrono::milliseconds{10}, std::chrono::milliseconds{250});
}

}  // namespace

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(HttpServerOptions o, AsyncHttpHandler h)
      : options(std::move(o)), handler(std::move(h)), contexts(IoContexts(options.threads)) {
    for (auto& context : contexts) keep.emplace_back(context->get_executor());
  }

  // Accepts connections until the acceptor closes; out of descriptors, goes on in AwaitWaiting.
  void Accept();
  // Out of descriptors. Linux's accept() fails with EMFILE before it looks at the listen queue, so
  // accepting again would spin: waits until a connection is waiting, then AcceptOrRefuse.
  void AwaitWaiting();
  // One waiting connection: served if a descriptor is free again, else answered 503 on the spare
  // descriptor. False when neither could be done (no spare, or an accept error): the caller waits
  // before retrying.
  bool AcceptOrRefuse();
  // Out of descriptors: answers one waiting connection 503 on the spare descriptor. True only when
  // a connection was answered so.
  bool RefuseWithReserve();
  // Accept() again after a pause, after an error that retrying at once would repeat.
  void RetryLater();
  void OnAccepted(Socket socket);
  // The I/O context of the next connection: each in turn.
  net::io_context& NextContext() { return *contexts[next_context++ % contexts.size()]; }
  // Runs `task` on a thread for handlers that block.
  void RunBlocking(std::function<void()> task) { net::post(blocking, std::move(task)); }
  // Tells options.on_connection_event, if set.
  void Tell(ConnectionEvent event) const;
  // At the cap: closes the connection that has waited on its client longest (idle between
  // requests, or sending one too slowly: a flood of partial requests cannot hold every slot).
  // False when every connection is being answered.
  bool MakeRoom();
  // Connections open, and those of them on their way out, read together.
  size_t Open() const { return counts >> 32; }
  size_t Leaving() const { return counts & 0xffffffff; }
  // Connections open and not on their way out.
  size_t Staying() const {
    const uint64_t c = counts;
    return (c >> 32) - (c & 0xffffffff);
  }
  // Connections closed to make room are closed by their own threads; while kHttpMaxLeaving are
  // on their way out, accepting waits for one to be gone (new ones wait in the listen queue), so
  // a flood cannot outrun the closing and take every descriptor.
  void AcceptUnlessTooManyLeaving();
  // A connection is gone (`was_leaving`: one closed to make room): accepting goes on if it waited
  // for that.
  void Gone(bool was_leaving);
  // Closes the connections past their deadline, then again after sweep_every, until Stop() and
  // every connection is gone: one timer for every connection rather than one per read and write.
  // Runs on `accepting`.
  void Sweep();
  void Register(Session* s, std::weak_ptr<Session> w) {
    std::lock_guard lock(mu);
    sessions.emplace(s, std::move(w));
  }
  void Unregister(Session* s) {
    std::lock_guard lock(mu);
    sessions.erase(s);
  }

  HttpServerOptions options;
  AsyncHttpHandler handler;
  // One per I/O thread: a connection lives on one, so its handlers and answers wake no other
  // thread. Kept running (`keep`) until Stop(); then each ends once its connections have.
  std::vector<std::unique_ptr<net::io_context>> contexts;
  std::vector<net::executor_work_guard<net::io_context::executor_type>> keep;
  std::atomic<size_t> next_context{0};
  // The handlers that block, and HttpResponder::Blocking's work; kept running until every
  // connection is gone (Run).
  net::io_context blocking;
  // The acceptor, its retry timer and Stop's closing of them run on one strand (of the first
  // context, the one Run()'s caller serves).
  net::strand<net::io_context::executor_type> accepting = net::make_strand(*contexts[0]);
  tcp::acceptor acceptor{accepting};
  net::steady_timer accept_retry{accepting};  // after an accept error (RetryLater)
  net::steady_timer sweeper{accepting};       // Sweep's
  // How often Sweep looks: a tenth of the shortest timeout, from 10 ms to 250 ms, so a timeout
  // ends within a tenth (at most 250 ms) of its due time.
  std::chrono::milliseconds sweep_every = SweepEvery(options);
  uint16_t port = 0;  // as bound
  // Connections open (high 32 bits) and those of them MakeRoom() closed that are not gone yet (low
  // 32 bits): one word, so that a connection leaves both counts at once and no reader sees it
  // gone from one and not the other.
  std::atomic<uint64_t> counts{0};
  std::atomic<size_t> most{0};             // the most connections open at once
  std::atomic<bool> accept_paused{false};  // waiting for a leaving connection to be gone
  std::atomic<bool> stopping{false};
  SpareDescriptor spare;  // for refusing a connection when no descriptor is left; on accepting
  std::mutex mu;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions;  // guarded by mu
};

namespace {

// The monotonic clock, coarse (to a few milliseconds, and cheaper to read than steady_clock), in
// nanoseconds: a connection's deadline, read by Sweep on another thread. Coarse is enough: Sweep
// looks every 10 ms or more.
int64_t CoarseNow() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}
constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

// Appends `n` in decimal.
template <typename Number>
void AppendDecimal(Number n, std::string& out) {
  char digits[24];
  const char* end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  out.append(digits, static_cast<size_t>(end - digits));
}

// A 503 with Retry-After for a connection that cannot be served, then the connection closes.
const std::string& BusyResponse() {
  static const std::string busy = [] {
    const std::string body = "{\"error\":\"too many connections: try again\"}\n";
    return fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{}",
        body.size(), body);
  }();
  return busy;
}

void Refuse(Socket socket) {
  auto refused = std::make_shared<Socket>(std::move(socket));
  net::async_write(*refused, net::buffer(BusyResponse()), [refused](beast::error_code, size_t) {
    beast::error_code ignored;
    refused->shutdown(tcp::socket::shutdown_send, ignored);
    refused->close(ignored);
  });
}

HttpResponse ErrorResponse(HttpStatus status, std::string_view message) {
  HttpResponse res(status, fmt::format("{{\"error\":\"{}\"}}\n", message));  // plain ASCII
  res.Set("Content-Type", "application/json");
  res.set_keep_alive(false);
  return res;
}

using BeastRequest = http::request<http::string_body>;

HttpMethod MethodOf(http::verb verb) {
  switch (verb) {
    case http::verb::get:
      return HttpMethod::kGet;
    case http::verb::head:
      return HttpMethod::kHead;
    case http::verb::post:
      return HttpMethod::kPost;
    case http::verb::put:
      return HttpMethod::kPut;
    case http::verb::delete_:
      return HttpMethod::kDelete;
    case http::verb::patch:
      return HttpMethod::kPatch;
    case http::verb::options:
      return HttpMethod::kOptions;
    default:
      return HttpMethod::kOther;
  }
}

// The request as the handlers see it.
HttpRequest Plain(BeastRequest&& message) {
  HttpRequest request(MethodOf(message.method()), std::string(message.target()),
                      std::move(message.body()));
  for (const auto& field : message) {
    request.Add(std::string(field.name_string()), std::string(field.value()));
  }
  return request;
}

// A response as sent: its status line and fields, then its body (empty for a HEAD, a 1xx, a 204
// or a 304), written together in one call.
struct WireResponse {
  std::string head;
  std::string body;
  std::array<net::const_buffer, 2> Buffers() const {
    return {net::buffer(head), net::buffer(body)};
  }
};

// The response in HTTP/1.`version`, closing unless `keep_alive`, as Beast's prepare_payload()
// frames it: the handler's fields, then Connection where it is not the version's default, then
// Content-Length (none, and no body, for 1xx, 204 and 304), then the body unless the request was a
// HEAD (RFC 9110 9.3.2: the length is told, the content is not). A field value cannot end the
// header early: CR and LF in it are sent as spaces.
WireResponse Wire(HttpResponse&& response, unsigned version, bool keep_alive, bool head) {
  const int code = static_cast<int>(response.status());
  const bool bodiless = (code >= 100 && code < 200) || code == 204 || code == 304;
  size_t size = 96;  // the status line and framing fields
  for (const HttpField& field : response.fields())
    size += field.name.size() + field.value.size() + 4;
  WireResponse out;
  std::string& h = out.head;
  h.reserve(size);
  h += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  AppendDecimal(code, h);
  h += ' ';
  h += http::obsolete_reason(static_cast<http::status>(code));
  h += "\r\n";
  for (const HttpField& field : response.fields()) {
    h += field.name;
    h += ": ";
    const size_t value_at = h.size();
    h += field.value;
    // A line break in a value would end the header: each is sent as a space.
    if (field.value.find_first_of("\r\n") != std::string::npos) {
      std::replace_if(
          h.begin() + static_cast<std::ptrdiff_t>(value_at), h.end(),
          [](char c) { return c == '\r' || c == '\n'; }, ' ');
    }
    h += "\r\n";
  }
  if (version == 10 && keep_alive) h += "Connection: keep-alive\r\n";
  if (version != 10 && !keep_alive) h += "Connection: close\r\n";
  if (!bodiless) {
    h += "Content-Length: ";
    AppendDecimal(response.body().size(), h);
    h += "\r\n";
  }
  h += "\r\n";
  if (!bodiless && !head) out.body = std::move(response.body());
  return out;
}

// Why a request's body length cannot be trusted (RFC 9112 6.1, 6.3), or nullopt: a
// Transfer-Encoding whose last coding is not chunked, or one beside a Content-Length. Either can
// smuggle a second request past a proxy that frames the bytes otherwise; it is refused with a 400
// and the connection closed.
std::optional<std::string> UntrustedFraming(const BeastRequest& message, bool chunked) {
  if (message.find(http::field::transfer_encoding) == message.end()) return std::nullopt;
  if (!chunked) return "a Transfer-Encoding whose last coding is not chunked";
  if (message.find(http::field::content_length) != message.end()) {
    return "both Transfer-Encoding and Content-Length";
  }
  return std::nullopt;
}

// A request the parser refused (not a closed connection or a timeout): it deserves a 400.
bool IsMalformed(beast::error_code ec) {
  return ec && ec.category() == http::make_error_code(http::error::bad_target).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

class Session;

// A request being answered, and where its answer goes: until it is answered, the server's Run()
// does not return. Once answered it holds nothing of the connection, so a responder kept after
// answering (even past the server's life) is harmless.
class PendingAnswer : public HttpResponder::Answerer {
 public:
  // `version`, `keep_alive` and `head`: the request's.
  PendingAnswer(net::io_context& ioc, std::shared_ptr<Session> session,
                std::shared_ptr<HttpServer::Impl> server, unsigned version, bool keep_alive,
                bool head)
      : session_(std::move(session)),
        server_(std::move(server)),
        work_(ioc.get_executor()),
        version_(version),
        keep_alive_(keep_alive),
        head_(head) {}

  // The first answer is sent on the connection's thread (at once when called there); later ones
  // are ignored.
  void Send(HttpResponse response) override;
  void Build(HttpResponder::Builder build) override;
  void RunBlocking(std::function<void()> task) override { server_->RunBlocking(std::move(task)); }

 private:
  // The connection to answer, for the first caller only (null afterwards). The caller must
  // dispatch its answer before calling Answered().
  std::shared_ptr<Session> Take() {
    if (answered_.exchange(true)) return nullptr;
    return std::move(session_);
  }
  // Releases the server's work: the answer dispatched is work of its own.
  void Answered() { work_.reset(); }

  std::atomic<bool> answered_{false};
  std::shared_ptr<Session> session_;  // written only by the one caller Take() lets through
  const std::shared_ptr<HttpServer::Impl> server_;  // for RunBlocking
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  const unsigned version_;
  const bool keep_alive_, head_;
};

// One connection: wait for a request (idle timeout), read it whole (request timeout), answer,
// and again while the client keeps it alive. Runs on the one thread of its I/O context.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket socket, net::io_context& context, std::shared_ptr<HttpServer::Impl> server)
      : socket_(std::move(socket)), context_(context), server_(std::move(server)) {
    RaiseHighWater(server_->most, (server_->counts += uint64_t{1} << 32) >> 32);
  }
  ~Session() {
    server_->Unregister(this);
    server_->Gone(leaving_);
  }

  void Start() {
    beast::error_code ec;
    const tcp::endpoint remote = socket_.remote_endpoint(ec);
    if (!ec) peer_ = remote.address().to_string();
    // Waiting on its client from now, not from when its thread first runs it: a busy thread must
    // not make a flood of new connections look busy to MakeRoom.
    waiting_since_ = std::chrono::steady_clock::now().time_since_epoch().count();
    idle_ = true;
    server_->Register(this, weak_from_this());
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->WaitForRequest(); });
  }

  // Closes the connection if it is waiting for a request; one being read or answered closes
  // after it is answered (a stop drains requests in flight).
  void Shutdown() { CancelWaiting(/*arriving_too=*/false); }

  // Waiting on its client since when (its last request answered, or it connected): while idle
  // and while a request is still arriving; nullopt while one is answered, or once the connection
  // was told to leave. Any thread.
  std::optional<std::chrono::steady_clock::time_point> WaitingSince() const {
    if (!(idle_ || reading_) || leaving_) return std::nullopt;
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(waiting_since_.load()));
  }
  // Past its deadline at `now` (CoarseNow()): waiting on its client too long. Any thread.
  bool Late(int64_t now) const { return now >= deadline_.load(std::memory_order_relaxed); }
  // Closes the connection, on its own thread, if it is past its deadline still: the pending read
  // or write ends, and with it the connection. Any thread.
  void Expire() {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      beast::error_code ignored;
      if (self->Late(CoarseNow())) self->socket_.cancel(ignored);
    });
  }

  // Makes room for a new connection: closes this one if it waits on its client (idle, or its
  // request still arriving), or after the request it is answering. Counted in the server's
  // `leaving` until it is gone. Any thread; once.
  void Leave() {
    if (leaving_.exchange(true)) return;
    ++server_->counts;
    // A request still arriving is dropped too: the client that sends it so slowly gives way.
    CancelWaiting(/*arriving_too=*/true);
  }

  // Answers the request read last, with `version`, `keep_alive` and `head` as PendingAnswer's.
  // On the connection's thread.
  void Answer(HttpResponse response, unsigned version, bool keep_alive, bool head) {
    const bool keep = keep_alive && response.keep_alive() && !server_->stopping && !leaving_;
    Write(std::move(response), version, keep, head);
  }
  Socket::executor_type executor() { return socket_.get_executor(); }

 private:
  // Cancels, on the connection's thread, its wait for a request (and with `arriving_too`, the
  // reading of one not yet whole): the connection then closes.
  void CancelWaiting(bool arriving_too) {
    net::post(socket_.get_executor(), [self = shared_from_this(), arriving_too] {
      beast::error_code ignored;
      if (self->idle_ || (arriving_too && self->reading_)) self->socket_.cancel(ignored);
    });
  }

  void WaitForRequest() {
    if (server_->stopping || leaving_) return Close();
    waiting_since_ = std::chrono::steady_clock::now().time_since_epoch().count();
    if (buffer_.size() > 0) return ReadRequest();  // a pipelined request is here already
    idle_ = true;
    // A new connection gets a short wait for its first byte; a kept-alive one the idle timeout.
    SetDeadline(answered_ ? server_->options.idle_timeout : server_->options.first_byte_timeout);
    socket_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec || self->server_->stopping || self->leaving_) {
                                self->idle_ = false;
                                return self->Close();
                              }
                              self->buffer_.commit(n);
                              self->ReadRequest();
                            });
  }

  void ReadRequest() {
    reading_ = true;
    idle_ = false;  // reading_ set first: never neither
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_->options.max_header_bytes));
    parser_->body_limit(server_->options.max_body_bytes);
    SetDeadline(server_->options.request_timeout);
    ParseRequest();
  }

  // Parses what the buffer holds, and reads more until the request is whole (or wrong). A request
  // that arrived whole is answered here and now, not from a completion queued for later.
  void ParseRequest() {
    while (!parser_->is_done()) {
      if (buffer_.size() == 0) return ReadMore();
      beast::error_code ec;
      const size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more || (!ec && used == 0)) return ReadMore();
      if (ec) return OnRequest(ec);
    }
    OnRequest({});
  }

  // The rest of a request: the buffer full (at its limit) is an overflow; the client closing
  // before the request is whole, a partial message (or nothing at all, an end of stream).
  void ReadMore() {
    const size_t room = beast::read_size(buffer_, 65536);
    if (room == 0) return OnRequest(http::error::buffer_overflow);
    socket_.async_read_some(buffer_.prepare(room),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->buffer_.commit(n);
                              if (ec == net::error::eof) {
                                if (self->parser_->got_some()) {
                                  self->parser_->put_eof(ec);
                                } else {
                                  ec = http::error::end_of_stream;
                                }
                              }
                              if (ec) return self->OnRequest(ec);
                              self->ParseRequest();
                            });
  }

  void OnRequest(beast::error_code ec) {
    reading_ = false;
    deadline_ = kNoDeadline;  // the handler takes what it takes; the answer has its own
    const HttpServerOptions& o = server_->options;
    if (ec == http::error::header_limit) {
      return Write(
          ErrorResponse(HttpStatus::kRequestHeaderFieldsTooLarge,
                        fmt::format("request header larger than {} bytes", o.max_header_bytes)));
    }
    if (ec == http::error::body_limit) {
      return Write(
          ErrorResponse(HttpStatus::kPayloadTooLarge,
                        fmt::format("request body larger than {} bytes", o.max_body_bytes)));
    }
    if (IsMalformed(ec)) {
      return Write(ErrorResponse(HttpStatus::kBadRequest,
                                 fmt::format("malformed HTTP request: {}", ec.message())));
    }
    if (ec) return Close();  // closed, timed out or reset: nobody to answer
    const bool chunked = parser_->chunked();
    BeastRequest message = parser_->release();
    if (std::optional<std::string> why = UntrustedFraming(message, chunked)) {
      return Write(
          ErrorResponse(HttpStatus::kBadRequest, fmt::format("malformed HTTP request: {}", *why)));
    }
    const unsigned version = message.version();
    const bool head = message.method() == http::verb::head;
    const bool keep_alive = message.keep_alive();
    HttpRequest request = Plain(std::move(message));
    // The response is written on this connection's thread; until then the server's work is kept
    // alive.
    HttpResponder respond(std::make_shared<PendingAnswer>(context_, shared_from_this(), server_,
                                                          version, keep_alive, head),
                          peer_);
    try {
      server_->handler(std::move(request), respond);
    } catch (const std::exception&) {
      respond(ErrorResponse(HttpStatus::kInternalServerError, "internal error"));
    }
  }

  // `version`, `keep_alive` and `head`: the request's (HTTP/1.1, closing, when there was none).
  // The bytes are sent once the handlers ready on this thread have run: the answers to the
  // requests read together leave together, so a client that waits on many connections is woken
  // once for them rather than once per answer (and per answer takes the core from this thread).
  void Write(HttpResponse response, unsigned version = 11, bool keep_alive = false,
             bool head = false) {
    auto bytes =
        std::make_shared<WireResponse>(Wire(std::move(response), version, keep_alive, head));
    net::post(socket_.get_executor(), [self = shared_from_this(), bytes, keep_alive] {
      self->SetDeadline(self->server_->options.request_timeout);
      net::async_write(self->socket_, bytes->Buffers(),
                       [self, bytes, keep_alive](beast::error_code ec, size_t) {
                         if (ec || !keep_alive) return self->Close();
                         self->answered_ = true;
                         self->WaitForRequest();
                       });
    });
  }

  // The read or write about to start must end within `timeout` (Sweep closes the connection).
  void SetDeadline(std::chrono::milliseconds timeout) {
    deadline_.store(CoarseNow() + std::chrono::nanoseconds(timeout).count(),
                    std::memory_order_relaxed);
  }

  void Close() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    socket_.close(ignored);
  }

  Socket socket_;
  net::io_context& context_;  // the socket's, run by one thread
  std::shared_ptr<HttpServer::Impl> server_;
  beast::flat_buffer buffer_{16 * 1024};
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string peer_;                  // the client's address, empty when unknown
  bool answered_ = false;             // a request was answered: the connection is kept alive
  std::atomic<bool> idle_{false};     // waiting for a request (read by MakeRoom)
  std::atomic<bool> reading_{false};  // a request is arriving, not yet whole (read by MakeRoom)
  std::atomic<int64_t> waiting_since_{0};       // steady_clock ticks, set before idle_ and reading_
  std::atomic<bool> leaving_{false};            // closed to make room (Leave)
  std::atomic<int64_t> deadline_{kNoDeadline};  // CoarseNow(): Sweep closes it after
};

void PendingAnswer::Send(HttpResponse response) {
  std::shared_ptr<Session> self = Take();
  if (!self) return;  // a second answer is ignored
  net::dispatch(self->executor(), [self, response = std::move(response), version = version_,
                                   keep_alive = keep_alive_, head = head_]() mutable {
    self->Answer(std::move(response), version, keep_alive, head);
  });
  Answered();
}

void PendingAnswer::Build(HttpResponder::Builder build) {
  std::shared_ptr<Session> self = Take();
  if (!self) return;  // a second answer is ignored
  net::dispatch(self->executor(), [self, build = std::move(build), version = version_,
                                   keep_alive = keep_alive_, head = head_] {
    HttpResponse response;
    try {
      response = build();
    } catch (const std::exception&) {
      response = ErrorResponse(HttpStatus::kInternalServerError, "internal error");
    }
    self->Answer(std::move(response), version, keep_alive, head);
  });
  Answered();
}

bool OutOfDescriptors(const beast::error_code& ec) {
  return ec == net::error::no_descriptors ||
         ec == boost::system::errc::too_many_files_open_in_system;
}

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor.async_accept(NextContext(),
                        [self = shared_from_this()](beast::error_code ec, Socket socket) {
                          if (!self->acceptor.is_open()) return;
                          if (OutOfDescriptors(ec)) return self->AwaitWaiting();
                          if (ec) return self->RetryLater();
                          self->OnAccepted(std::move(socket));
                          self->AcceptUnlessTooManyLeaving();
                        });
}

void HttpServer::Impl::AcceptUnlessTooManyLeaving() {
  if (Leaving() < kHttpMaxLeaving) return Accept();
  accept_paused = true;
  // The last of them may have gone meanwhile: whoever clears the flag accepts, once.
  if (Leaving() < kHttpMaxLeaving && accept_paused.exchange(false)) Accept();
}

void HttpServer::Impl::Gone(bool was_leaving) {
  const uint64_t left = counts -= (uint64_t{1} << 32) + (was_leaving ? 1 : 0);
  if (!was_leaving) return;
  if ((left & 0xffffffff) < kHttpMaxLeaving && accept_paused.exchange(false)) {
    // Weakly: after Stop(), the first context may have ended, and a handler queued there that
    // held the server would keep it (and its contexts) alive for ever.
    net::post(accepting, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->Accept();
    });
  }
}

void HttpServer::Impl::AwaitWaiting() {
  acceptor.async_wait(tcp::acceptor::wait_read, [self = shared_from_this()](beast::error_code ec) {
    if (!self->acceptor.is_open()) return;
    if (ec || !self->AcceptOrRefuse()) return self->RetryLater();
    self->Accept();
  });
}

bool HttpServer::Impl::AcceptOrRefuse() {
  beast::error_code ec;
  Socket socket(NextContext());
  acceptor.non_blocking(true, ec);
  if (!ec) acceptor.accept(socket, ec);
  if (!ec) {
    OnAccepted(std::move(socket));
    return true;
  }
  if (!OutOfDescriptors(ec)) return ec == net::error::would_block;  // gone meanwhile: wait again
  if (!RefuseWithReserve()) return false;
  Tell(ConnectionEvent::kRefusedDescriptors);
  return true;
}

void HttpServer::Impl::Sweep() {
  const int64_t now = CoarseNow();
  std::vector<std::shared_ptr<Session>> late;
  bool any = false;
  {
    std::lock_guard lock(mu);
    any = !sessions.empty();
    for (auto& [raw, weak] : sessions) {
      if (!raw->Late(now)) continue;
      if (std::shared_ptr<Session> s = weak.lock()) late.push_back(std::move(s));
    }
  }
  for (auto& s : late) s->Expire();
  if (stopping && !any) return;  // nothing left to watch: the context may end
  sweeper.expires_after(sweep_every);
  sweeper.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->Sweep();
  });
}

void HttpServer::Impl::RetryLater() {
  accept_retry.expires_after(std::chrono::milliseconds{50});
  accept_retry.async_wait([self = shared_from_this()](beast::error_code) { self->Accept(); });
}

void HttpServer::Impl::OnAccepted(Socket socket) {
  if (Staying() >= options.max_connections) {
    const bool room = MakeRoom();
    Tell(room ? ConnectionEvent::kMadeRoom : ConnectionEvent::kRefusedBusy);
    if (!room) return Refuse(std::move(socket));
  }
  net::io_context& context = socket.get_executor().context();
  std::make_shared<Session>(std::move(socket), context, shared_from_this())->Start();
}

void HttpServer::Impl::Tell(ConnectionEvent event) const {
  if (options.on_connection_event) options.on_connection_event(event);
}

bool HttpServer::Impl::MakeRoom() {
  std::shared_ptr<Session> oldest;
  std::optional<std::chrono::steady_clock::time_point> oldest_since;
  {
    std::lock_guard lock(mu);
    for (auto& [raw, weak] : sessions) {
      const auto since = raw->WaitingSince();
      if (!since || (oldest_since && *oldest_since <= *since)) continue;
      if (std::shared_ptr<Session> s = weak.lock()) {
        oldest = std::move(s);
        oldest_since = since;
      }
    }
  }
  if (oldest == nullptr) return false;
  oldest->Leave();
  return true;
}

bool HttpServer::Impl::RefuseWithReserve() {
  bool refused = false;
  const bool spare_back = spare.Lend([this, &refused] {
    beast::error_code ec;
    tcp::socket socket(*contexts[0]);
    acceptor.accept(socket, ec);  // non-blocking (AcceptOrRefuse)
    if (ec) return;
    // A 503 of a few hundred bytes fits an empty send buffer: written at once, or dropped.
    socket.non_blocking(true, ec);
    net::write(socket, net::buffer(BusyResponse()), ec);
    socket.shutdown(tcp::socket::shutdown_send, ec);
    socket.close(ec);
    refused = true;
  });
  return refused && spare_back;
}

namespace {

// Answers given to a function as builders; blocking work run by a runner, or at once.
class FunctionAnswerer : public HttpResponder::Answerer {
 public:
  FunctionAnswerer(std::function<void(HttpResponder::Builder)> send,
                   HttpResponder::BlockingRunner blocking)
      : send_(std::move(send)), blocking_(std::move(blocking)) {}

  void Send(HttpResponse response) override {
    auto shared = std::make_shared<HttpResponse>(std::move(response));
    send_([shared] { return std::move(*shared); });
  }
  void Build(HttpResponder::Builder build) override { send_(std::move(build)); }
  void RunBlocking(std::function<void()> task) override {
    if (!blocking_) return task();
    blocking_(std::move(task));
  }

 private:
  const std::function<void(HttpResponder::Builder)> send_;
  const HttpResponder::BlockingRunner blocking_;
};

}  // namespace

HttpResponder::HttpResponder(std::function<void(Builder)> send, std::string peer,
                             BlockingRunner blocking)
    : HttpResponder(std::make_shared<FunctionAnswerer>(std::move(send), std::move(blocking)),
                    std::move(peer)) {}

void HttpResponder::Blocking(std::function<void(HttpResponder)> work) const {
  answerer_->RunBlocking([respond = *this, work = std::move(work)] {
    try {
      work(respond);
    } catch (const std::exception&) {
      respond(ErrorResponse(HttpStatus::kInternalServerError, "internal error"));
    }
  });
}

Result<std::unique_ptr<HttpServer>> HttpServer::Create(HttpServerOptions options,
                                                       HttpHandler handler) {
  return Create(std::move(options),
                [handler = std::move(handler)](HttpRequest request, HttpResponder respond) {
                  respond.Blocking([&handler, request = std::move(request)](HttpResponder answer) {
                    HttpResponse response = handler(request);
                    response.set_keep_alive(true);
                    answer(std::move(response));
                  });
                });
}

Result<std::unique_ptr<HttpServer>> HttpServer::Create(HttpServerOptions options,
                                                       AsyncHttpHandler handler) {
  if (options.threads < 1 || options.threads > 256) {
    return InvalidArgument(fmt::format("threads must be 1 to 256, not {}", options.threads));
  }
  if (options.max_connections < 1) return InvalidArgument("max_connections must be >= 1");
  auto impl = std::make_shared<Impl>(std::move(options), std::move(handler));
  if (Status s = ListenOn(impl->acceptor, impl->options.host, impl->options.port, ""); !s.ok()) {
    return s.error();
  }
  beast::error_code ec;
  impl->port = impl->acceptor.local_endpoint(ec).port();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->port; }

size_t HttpServer::connections() const { return impl_->Open(); }

size_t HttpServer::most_connections() const { return impl_->most; }

void HttpServer::Run() {
  impl_->Accept();
  net::post(impl_->accepting, [impl = impl_] { impl->Sweep(); });
  auto blocking_kept = net::make_work_guard(impl_->blocking);
  std::vector<std::thread> blocking;
  for (int i = 0; i < impl_->options.threads; ++i) {
    blocking.emplace_back([this] {
      pthread_setname_np(pthread_self(), "http-blocking");  // as top -H and perf show it
      impl_->blocking.run();
    });
  }
  std::vector<std::thread> io;
  for (size_t i = 1; i < impl_->contexts.size(); ++i) {
    io.emplace_back([this, i] {
      pthread_setname_np(pthread_self(), "http-io");
      impl_->contexts[i]->run();
    });
  }
  impl_->contexts[0]->run();
  for (std::thread& t : io) t.join();
  // Every connection is gone: no handler is waiting to be run.
  blocking_kept.reset();
  for (std::thread& t : blocking) t.join();
}

void HttpServer::Stop() {
  net::post(impl_->accepting, [impl = impl_] {
    impl->stopping = true;
    beast::error_code ignored;
    impl->acceptor.close(ignored);
    impl->accept_retry.cancel();
    std::vector<std::shared_ptr<Session>> sessions;
    {
      std::lock_guard lock(impl->mu);
      for (auto& [raw, weak] : impl->sessions) {
        if (auto s = weak.lock()) sessions.push_back(std::move(s));
      }
    }
    for (auto& s : sessions) s->Shutdown();
    // Only now may the contexts end: a Shutdown() queued in a context that had already ended
    // would hold its connection, and the server, for ever.
    for (auto& kept : impl->keep) kept.reset();
  });
}

}  // namespace hourglass
