#include "hourglass/grpc_server.h"

#include <fmt/format.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "hourglass/descriptor_budget.h"
#include "hourglass/listen_socket.h"
#include "hourglass/spare_descriptor.h"

namespace hourglass {
namespace h2 {
class Connection;
}  // namespace h2
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using ErrorCode_ = boost::system::error_code;

int64_t Ticks(SteadyClock::time_point t) { return t.time_since_epoch().count(); }
SteadyClock::time_point FromTicks(int64_t ticks) {
  return SteadyClock::time_point(SteadyClock::duration(ticks));
}

nghttp2_nv Header(std::string_view name, std::string_view value) {
  // nghttp2 copies names and values when a frame is submitted.
  return {const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(name.data())),
          const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(value.data())), name.size(),
          value.size(), NGHTTP2_NV_FLAG_NONE};
}

// grpc-message's encoding: printable ASCII but '%' as it is, every other byte as %XX.
std::string PercentEncoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u <= 0x7e && u != '%') {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", u);
    }
  }
  return out;
}

}  // namespace

// Whether replies may still be posted to the server's threads: closed once they are stopped.
struct ReplyGate {
  std::mutex mu;
  bool open = true;  // guarded by mu
};

struct GrpcServer::Impl {
  Impl(GrpcServerOptions o, Methods m) : options(std::move(o)), methods(std::move(m)) {}

  void Accept();
  void AcceptOrRefuse();
  void RetryLater();
  void OnAccepted(tcp::socket socket, boost::asio::io_context& context);
  // At the cap: closes the connection silent longest, if at least min_idle. False when none is.
  bool MakeRoom();
  void Tell(ConnectionEvent event) const {
    if (options.on_connection_event) options.on_connection_event(event);
  }
  size_t Staying() const { return open - leaving; }
  // Takes `bytes` of the budget of unfinished requests; false (nothing taken) when over it.
  bool Reserve(size_t bytes) {
    size_t held = buffered.load();
    do {
      if (held + bytes > options.max_buffered_bytes) return false;
    } while (!buffered.compare_exchange_weak(held, held + bytes));
    return true;
  }
  void Register(h2::Connection* c, std::weak_ptr<h2::Connection> w) {
    std::lock_guard lock(mu);
    live.emplace(c, std::move(w));
  }
  void Unregister(h2::Connection* c) {
    {
      std::lock_guard lock(mu);
      live.erase(c);
    }
    gone.notify_all();
  }
  std::vector<std::shared_ptr<h2::Connection>> Live() {
    std::vector<std::shared_ptr<h2::Connection>> all;
    std::lock_guard lock(mu);
    for (auto& [raw, weak] : live) {
      if (auto c = weak.lock()) all.push_back(std::move(c));
    }
    return all;
  }

  const GrpcServerOptions options;
  const Methods methods;
  std::shared_ptr<ReplyGate> gate = std::make_shared<ReplyGate>();
  std::atomic<size_t> open{0};
  std::atomic<size_t> most{0};
  std::atomic<size_t> leaving{0};   // closed to make room and not gone yet
  std::atomic<size_t> buffered{0};  // bytes of unfinished requests, all connections
  SpareDescriptor spare;            // on the acceptor's thread
  std::mutex mu;
  std::condition_variable gone;
  std::unordered_map<h2::Connection*, std::weak_ptr<h2::Connection>> live;  // guarded by mu
  uint16_t port = 0;
  // Last: destroyed first, with the handlers still queued (which may hold connections, whose
  // destructors use the members above).
  // One context per thread, each with one thread: a connection lives on one, so its handlers and
  // the answers given on that thread need no lock and wake no other thread. The acceptor is on
  // the first.
  std::vector<std::unique_ptr<net::io_context>> contexts = IoContexts(options.threads);
  size_t next_context = 0;  // for the next connection; on the acceptor's thread
  tcp::acceptor acceptor{*contexts[0]};
  net::steady_timer accept_retry{*contexts[0]};
  std::vector<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
};

namespace h2 {

// One call: its request as it arrives, then its response as nghttp2 takes it.
struct Stream {
  std::string path;
  bool post = false;
  bool grpc = false;      // content-type application/grpc...
  bool identity = true;   // no grpc-encoding, or identity
  bool handled = false;   // answered, or given to the handler
  bool arriving = false;  // answered while the request still arrives: reset once answered
  std::string body;       // the request's DATA
  std::string response;   // the length-prefixed response message
  size_t sent = 0;        // of response
};

// One HTTP/2 connection, on one of the server's threads.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, net::io_context& context, GrpcServer::Impl& server)
      : socket_(std::move(socket)),
        executor_(context.get_executor()),
        server_(server),
        timer_(context) {
    RaiseHighWater(server_.most, ++server_.open);
    last_received_ = Ticks(SteadyClock::now());
    last_call_ = SteadyClock::now();
  }
  ~Connection() {
    if (session_ != nullptr) nghttp2_session_del(session_);
    if (leaving_) --server_.leaving;
    --server_.open;
    server_.Unregister(this);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Start() {
    server_.Register(this, weak_from_this());
    net::post(executor_, [self = shared_from_this()] { self->Begin(); });
  }
  // Sends GOAWAY: calls begun are answered, then the connection closes. Any thread.
  void GoAway() {
    net::post(executor_, [self = shared_from_this()] { self->SendGoAway(); });
  }
  // Closes now. Any thread.
  void CloseSoon() {
    net::post(executor_, [self = shared_from_this()] { self->Close(); });
  }
  // Closes to make room for a new connection; counted as leaving until gone. Any thread; once.
  bool Leave() {
    if (leaving_.exchange(true)) return false;
    ++server_.leaving;
    CloseSoon();
    return true;
  }
  bool leaving() const { return leaving_; }
  SteadyClock::time_point last_received() const { return FromTicks(last_received_); }

  // From another thread: answers call `id` on the connection's thread. Answers arriving together
  // share one wake-up of that thread and one write.
  void Deliver(int32_t id, GrpcStatus status, std::string message) {
    {
      std::lock_guard lock(inbox_mu_);
      inbox_.push_back({id, status, std::move(message)});
      if (inbox_.size() > 1) return;  // a wake-up is on its way
    }
    net::post(executor_, [self = shared_from_this()] { self->TakeInbox(); });
  }
  // Whether this is the connection's thread.
  bool OnItsThread() const { return executor_.running_in_this_thread(); }
  // On its thread: answers call `id` (if its client still waits). Written at once, unless the
  // handlers of a read are running: after them, with the other answers they gave.
  void Respond(int32_t id, GrpcStatus status, std::string_view message) {
    auto it = streams_.find(id);
    if (closed_ || it == streams_.end()) return;
    if (status == GrpcStatus::kOk) {
      Succeed(*it->second, id, message);
    } else {
      Fail(id, status, message);
    }
    if (!running_calls_) Flush();
  }

 private:
  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      auto* self = static_cast<Connection*>(user);
      self->streams_[frame->hd.stream_id] = std::make_unique<Stream>();
      self->last_call_ = SteadyClock::now();
    }
    return 0;
  }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_length, const uint8_t* value, size_t value_length, uint8_t,
                      void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    Stream* s = static_cast<Connection*>(user)->Find(frame->hd.stream_id);
    if (s == nullptr) return 0;
    const std::string_view n(reinterpret_cast<const char*>(name), name_length);
    const std::string_view v(reinterpret_cast<const char*>(value), value_length);
    if (n == ":path") {
      s->path = v;
    } else if (n == ":method") {
      s->post = v == "POST";
    } else if (n == "content-type") {
      s->grpc = v.starts_with("application/grpc");
    } else if (n == "grpc-encoding") {
      s->identity = v == "identity";
    }
    return 0;
  }
  // A request's bytes as they arrive. A message over max_message_bytes is refused, and so is one
  // that would take the connection's buffered requests over twice that (plus a read), or all
  // connections' over max_buffered_bytes: clients cannot make the service hold their calls'
  // worth of large messages at once.
  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t length,
                    void* user) {
    auto* self = static_cast<Connection*>(user);
    Stream* s = self->Find(id);
    if (s == nullptr || s->handled) return 0;
    const size_t max_message = self->server_.options.max_message_bytes;
    const size_t connection_cap = 2 * max_message + 64 * 1024;
    std::string why;
    if (s->body.size() + length > max_message + 5) {
      why = fmt::format("the request is larger than {} bytes", max_message);
    } else if (self->buffered_ + length > connection_cap) {
      why = fmt::format("the connection's calls in flight hold more than {} bytes of requests",
                        connection_cap);
    } else if (!self->server_.Reserve(length)) {
      why = fmt::format("the server's calls in flight hold more than {} bytes of requests",
                        self->server_.options.max_buffered_bytes);
    }
    if (!why.empty()) {
      s->handled = true;
      s->arriving = true;
      self->Drop(*s);
      self->Fail(id, GrpcStatus::kResourceExhausted, why);
      return 0;
    }
    s->body.append(reinterpret_cast<const char*>(data), length);
    self->buffered_ += length;
    return 0;
  }
  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto* self = static_cast<Connection*>(user);
    switch (frame->hd.type) {
      case NGHTTP2_DATA:
      case NGHTTP2_HEADERS:
        if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) self->Dispatch(frame->hd.stream_id);
        break;
      case NGHTTP2_PING:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) self->ping_sent_.reset();
        break;
      default:
        break;
    }
    return 0;
  }
  // A request answered while it still arrives is reset (NO_ERROR) once its answer is sent, so
  // that its client stops sending (RFC 9113 8.1); nghttp2 would send a reset before the answer.
  static int OnSent(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
      return 0;
    }
    Stream* s = static_cast<Connection*>(user)->Find(frame->hd.stream_id);
    if (s != nullptr && s->arriving &&
        nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id) == 0) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
    }
    return 0;
  }
  static int OnClose(nghttp2_session*, int32_t id, uint32_t, void* user) {
    auto* self = static_cast<Connection*>(user);
    if (Stream* s = self->Find(id)) self->Drop(*s);
    self->streams_.erase(id);
    self->last_call_ = SteadyClock::now();
    return 0;
  }
  static ssize_t ReadResponse(nghttp2_session* session, int32_t id, uint8_t* buffer, size_t length,
                              uint32_t* flags, nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    const size_t n = std::min(length, s->response.size() - s->sent);
    std::copy_n(s->response.data() + s->sent, n, buffer);
    s->sent += n;
    if (s->sent == s->response.size()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
      const nghttp2_nv trailer[] = {Header("grpc-status", "0")};
      if (nghttp2_submit_trailer(session, id, trailer, 1) != 0) {
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
    }
    return static_cast<ssize_t>(n);
  }

  void Begin() {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, OnFrame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, OnClose);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, OnSent);
    const int made = nghttp2_session_server_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    if (made != 0) return Close();
    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, server_.options.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 256 * 1024},
    };
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
    ErrorCode_ ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    Flush();
    Read();
    Arm();
  }

  // Frees a request's bytes.
  void Drop(Stream& s) {
    buffered_ -= s.body.size();
    server_.buffered -= s.body.size();
    std::string().swap(s.body);
  }

  Stream* Find(int32_t id) {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }

  void Read() {
    socket_.async_read_some(net::buffer(in_), [self = shared_from_this()](ErrorCode_ ec, size_t n) {
      if (ec || self->closed_) return self->Close();
      self->last_received_ = Ticks(SteadyClock::now());
      const ssize_t used = nghttp2_session_mem_recv(self->session_, self->in_.data(), n);
      if (used < 0) {
        // The peer broke the protocol (or is not speaking HTTP/2): tell it, then close.
        self->ready_.clear();
        nghttp2_session_terminate_session(self->session_, NGHTTP2_PROTOCOL_ERROR);
        return self->Flush();
      }
      self->RunReady();
      self->Flush();
      if (nghttp2_session_want_read(self->session_) != 0) self->Read();
    });
  }

  // Writes what nghttp2 has to send; closes once it wants neither to read nor to write.
  void Flush() {
    if (writing_ || closed_) return;
    out_.clear();
    while (out_.size() < 64 * 1024) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return Close();
      if (n == 0) break;
      out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (out_.empty()) {
      if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
        Close();
      }
      return;
    }
    writing_ = true;
    net::async_write(socket_, net::buffer(out_),
                     [self = shared_from_this()](ErrorCode_ ec, size_t) {
                       self->writing_ = false;
                       if (ec) return self->Close();
                       self->Flush();
                     });
  }

  struct Delivered {
    int32_t id;
    GrpcStatus status;
    std::string message;
  };
  void TakeInbox() {
    std::vector<Delivered> taken;
    {
      std::lock_guard lock(inbox_mu_);
      taken.swap(inbox_);
    }
    running_calls_ = true;  // one write for all of them
    for (Delivered& d : taken) Respond(d.id, d.status, d.message);
    running_calls_ = false;
    Flush();
  }

  // A whole request: checks it, then gives its message to the method's handler.
  void Dispatch(int32_t id) {
    Stream* s = Find(id);
    if (s == nullptr || s->handled) return;
    s->handled = true;
    auto method = server_.methods.find(s->path);
    if (!s->post || !s->grpc) {
      return Fail(id, GrpcStatus::kInternal, "not a gRPC call: POST application/grpc expected");
    }
    if (method == server_.methods.end()) {
      return Fail(id, GrpcStatus::kUnimplemented, fmt::format("unknown method {}", s->path));
    }
    const std::string& body = s->body;
    if (!s->identity || (!body.empty() && body[0] != 0)) {
      return Fail(id, GrpcStatus::kUnimplemented,
                  "compressed messages are not accepted (no grpc-accept-encoding is offered)");
    }
    if (body.size() < 5) return Fail(id, GrpcStatus::kInternal, "the call carries no message");
    const auto* prefix = reinterpret_cast<const uint8_t*>(body.data());
    const uint32_t length = (uint32_t{prefix[1]} << 24) | (uint32_t{prefix[2]} << 16) |
                            (uint32_t{prefix[3]} << 8) | uint32_t{prefix[4]};
    if (length != body.size() - 5) {
      return Fail(id, GrpcStatus::kInternal, "a unary call carries exactly one message");
    }
    ready_.push_back({id, &method->second});
  }

  // Calls the handlers of the calls the last read completed.
  void RunReady() {
    if (ready_.empty()) return;
    const auto calls = [this] {
      for (const auto& [id, handler] : ready_) {
        Stream* s = Find(id);
        if (s == nullptr) continue;  // reset by its client meanwhile
        GrpcReply reply(std::make_shared<GrpcReply::Call>(weak_from_this(), id, server_.gate));
        try {
          (*handler)(std::string_view(s->body).substr(5), reply);
        } catch (const std::exception&) {
          reply.Fail(GrpcStatus::kInternal, "internal error");
        }
        Drop(*s);
      }
    };
    running_calls_ = true;
    if (server_.options.around_calls) {
      server_.options.around_calls(calls);
    } else {
      calls();
    }
    running_calls_ = false;
    ready_.clear();
  }

  void Succeed(Stream& s, int32_t id, std::string_view message) {
    const auto size = static_cast<uint32_t>(message.size());
    s.response.reserve(5 + message.size());
    s.response.push_back('\0');
    for (int shift = 24; shift >= 0; shift -= 8) {
      s.response.push_back(static_cast<char>((size >> shift) & 0xff));
    }
    s.response.append(message);
    const nghttp2_nv headers[] = {Header(":status", "200"),
                                  Header("content-type", "application/grpc")};
    nghttp2_data_provider data{};
    data.source.ptr = &s;
    data.read_callback = ReadResponse;
    if (nghttp2_submit_response(session_, id, headers, std::size(headers), &data) != 0) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
    }
  }

  // A trailers-only response with `status`.
  void Fail(int32_t id, GrpcStatus status, std::string_view message) {
    const std::string code = std::to_string(static_cast<int>(status));
    const std::string text = PercentEncoded(message);
    const nghttp2_nv headers[] = {Header(":status", "200"),
                                  Header("content-type", "application/grpc"),
                                  Header("grpc-status", code), Header("grpc-message", text)};
    nghttp2_submit_response(session_, id, headers, std::size(headers), nullptr);
  }

  void SendGoAway() {
    if (closed_ || session_ == nullptr) return;
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                          nullptr, 0);
    Flush();
  }

  // The next keep-alive or idle deadline.
  void Arm() {
    if (closed_) return;
    const GrpcServerOptions& o = server_.options;
    SteadyClock::time_point next =
        ping_sent_ ? *ping_sent_ + o.keepalive_timeout : last_received() + o.keepalive_time;
    if (streams_.empty()) next = std::min(next, last_call_ + o.idle_timeout);
    // A call in flight may end at any time: look again then rather than sleep past its idle end.
    next = std::min(next, SteadyClock::now() + std::min(o.idle_timeout, o.keepalive_time));
    timer_.expires_at(next);
    timer_.async_wait([self = shared_from_this()](ErrorCode_ ec) {
      if (!ec) self->OnTimer();
    });
  }

  void OnTimer() {
    if (closed_) return;
    const GrpcServerOptions& o = server_.options;
    const auto now = SteadyClock::now();
    if (ping_sent_ && now - *ping_sent_ >= o.keepalive_timeout) return Close();
    if (!ping_sent_ && now - last_received() >= o.keepalive_time) {
      nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
      ping_sent_ = now;
      Flush();
    }
    if (streams_.empty() && now - last_call_ >= o.idle_timeout) SendGoAway();
    Arm();
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    ErrorCode_ ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  tcp::socket socket_;
  const net::io_context::executor_type executor_;
  GrpcServer::Impl& server_;
  net::steady_timer timer_;
  nghttp2_session* session_ = nullptr;
  // A read takes at most 4 KiB, some 40 small calls: the answers to those are written before the
  // next are read, so a client that keeps many calls in flight works on them meanwhile (a read of
  // everything waiting turned both ends into lockstep, halving the calls per second).
  std::array<uint8_t, 4 * 1024> in_{};
  std::string out_;  // being written
  bool writing_ = false;
  bool closed_ = false;
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
  size_t buffered_ = 0;  // bytes of requests held in streams_
  // Calls the read being taken in completed, checked: handed to their handlers after it.
  std::vector<std::pair<int32_t, const GrpcUnaryHandler*>> ready_;
  bool running_calls_ = false;  // handlers are running, or answers are taken: Flush after them
  std::mutex inbox_mu_;
  std::vector<Delivered> inbox_;       // answers from other threads; guarded by inbox_mu_
  SteadyClock::time_point last_call_;  // a call began or ended
  std::optional<SteadyClock::time_point> ping_sent_;  // unanswered
  std::atomic<int64_t> last_received_{0};             // steady ticks; read by MakeRoom
  std::atomic<bool> leaving_{false};
};

}  // namespace h2

namespace {

bool OutOfDescriptors(const ErrorCode_& ec) {
  return ec == net::error::no_descriptors ||
         ec == boost::system::errc::too_many_files_open_in_system;
}

}  // namespace

struct GrpcReply::Call {
  Call(std::weak_ptr<h2::Connection> c, int32_t i, std::shared_ptr<ReplyGate> g)
      : connection(std::move(c)), id(i), gate(std::move(g)) {}
  void Answer(GrpcStatus status, std::string message) {
    if (answered.exchange(true)) return;
    std::lock_guard lock(gate->mu);
    if (!gate->open) return;
    std::shared_ptr<h2::Connection> c = connection.lock();
    if (c == nullptr) return;
    if (c->OnItsThread()) return c->Respond(id, status, message);
    c->Deliver(id, status, std::move(message));
  }

  std::weak_ptr<h2::Connection> connection;
  int32_t id;
  std::shared_ptr<ReplyGate> gate;
  std::atomic<bool> answered{false};
};

void GrpcReply::Ok(std::string message) const {
  call_->Answer(GrpcStatus::kOk, std::move(message));
}

void GrpcReply::Fail(GrpcStatus status, std::string_view message) const {
  call_->Answer(status == GrpcStatus::kOk ? GrpcStatus::kInternal : status, std::string(message));
}

void GrpcServer::Impl::Accept() {
  net::io_context& context = *contexts[next_context];
  acceptor.async_accept(context, [this, &context](ErrorCode_ ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;
    if (OutOfDescriptors(ec)) return AcceptOrRefuse();
    if (ec) return RetryLater();
    next_context = (next_context + 1) % contexts.size();
    OnAccepted(std::move(socket), context);
    Accept();
  });
}

void GrpcServer::Impl::AcceptOrRefuse() {
  bool refused = false;
  const bool kept = spare.Lend([&] {
    ErrorCode_ ec;
    tcp::socket socket(*contexts[0]);
    acceptor.non_blocking(true, ec);
    if (!ec) acceptor.accept(socket, ec);
    acceptor.non_blocking(false, ec);
    if (!socket.is_open()) return;
    refused = true;
    Tell(ConnectionEvent::kRefusedDescriptors);  // before the client can see the close
    socket.close(ec);
  });
  if (refused && kept) return Accept();
  RetryLater();
}

void GrpcServer::Impl::RetryLater() {
  accept_retry.expires_after(std::chrono::milliseconds{50});
  accept_retry.async_wait([this](ErrorCode_ ec) {
    if (!ec && acceptor.is_open()) Accept();
  });
}

void GrpcServer::Impl::OnAccepted(tcp::socket socket, net::io_context& context) {
  if (Staying() >= options.max_connections) {
    const bool room = leaving < GrpcMaxLeaving(options.max_connections) && MakeRoom();
    Tell(room ? ConnectionEvent::kMadeRoom : ConnectionEvent::kRefusedBusy);
    if (!room) {
      ErrorCode_ ignored;
      socket.close(ignored);
      return;
    }
  }
  std::make_shared<h2::Connection>(std::move(socket), context, *this)->Start();
}

bool GrpcServer::Impl::MakeRoom() {
  const auto now = SteadyClock::now();
  std::shared_ptr<h2::Connection> quietest;
  SteadyClock::duration longest{};
  for (std::shared_ptr<h2::Connection>& c : Live()) {
    if (c->leaving()) continue;
    const auto silent = now - c->last_received();
    if (silent >= options.min_idle && (quietest == nullptr || silent > longest)) {
      quietest = c;
      longest = silent;
    }
  }
  return quietest != nullptr && quietest->Leave();
}

GrpcServer::GrpcServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<GrpcServer>> GrpcServer::Create(GrpcServerOptions options, Methods methods) {
  if (options.threads < 1 || options.threads > 256) {
    return InvalidArgument(fmt::format("threads must be 1 to 256, not {}", options.threads));
  }
  if (options.max_connections < 1) return InvalidArgument("max_connections must be >= 1");
  auto impl = std::make_shared<Impl>(std::move(options), std::move(methods));
  if (Status s = ListenOn(impl->acceptor, impl->options.host, impl->options.port, "gRPC");
      !s.ok()) {
    return s.error();
  }
  ErrorCode_ ec;
  impl->port = impl->acceptor.local_endpoint(ec).port();
  net::post(*impl->contexts[0], [raw = impl.get()] { raw->Accept(); });
  for (auto& context : impl->contexts) {
    impl->work.push_back(net::make_work_guard(*context));
    impl->threads.emplace_back([raw = context.get()] {
      pthread_setname_np(pthread_self(), "grpc-io");  // as top -H and perf show it
      raw->run();
    });
  }
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(impl)));
}

GrpcServer::~GrpcServer() {
  Impl& impl = *impl_;
  std::promise<void> closed;
  net::post(*impl.contexts[0], [&impl, &closed] {
    ErrorCode_ ignored;
    impl.acceptor.close(ignored);
    impl.accept_retry.cancel();
    closed.set_value();
  });
  closed.get_future().wait();  // no connection is accepted after this
  for (auto& c : impl.Live()) c->GoAway();
  {
    std::unique_lock lock(impl.mu);
    impl.gone.wait_for(lock, impl.options.drain_timeout, [&] { return impl.live.empty(); });
  }
  for (auto& c : impl.Live()) c->CloseSoon();
  impl.work.clear();
  {
    std::unique_lock lock(impl.mu);
    impl.gone.wait_for(lock, std::chrono::seconds{1}, [&] { return impl.live.empty(); });
  }
  for (auto& context : impl.contexts) context->stop();
  for (std::thread& t : impl.threads) t.join();
  std::lock_guard lock(impl.gate->mu);
  impl.gate->open = false;
}

uint16_t GrpcServer::port() const { return impl_->port; }

size_t GrpcServer::connections() const { return impl_->open; }

size_t GrpcServer::most_connections() const { return impl_->most; }

}  // namespace hourglass
