// GrpcServer with real gRPC clients (grpc++'s generic stub) and real sockets: calls answered now
// or later from other threads, gRPC's errors, the message limit, keep-alive and idle limits, the
// drain at destruction, and the connection cap (a silent connection makes room for a new client;
// a new connection is closed only when none is silent).
#include "hourglass/grpc_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "descriptors_taken.h"
#include "silent_connections.h"

namespace hourglass {
namespace {

using std::chrono::milliseconds;
using testing::SilentConnections;

constexpr char kEcho[] = "/test.Echo/Reverse";  // answers the message reversed
constexpr char kHeld[] = "/test.Echo/Held";     // answered when the test says

struct Answer {
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  std::string message;  // the response, or the status's message
};

// One unary call on `channel`, waited for (at most 5 s).
Answer Call(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
            const std::string& message) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{5});
  grpc::Slice slice(message);
  grpc::ByteBuffer request(&slice, 1), response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) { done.set_value(s); });
  const grpc::Status status = done.get_future().get();
  Answer answer{status.error_code(), status.error_message()};
  if (status.ok()) {
    std::vector<grpc::Slice> slices;
    answer.message.clear();
    if (response.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        answer.message.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
  }
  return answer;
}

// What a hostile client's partial calls got: the grpc-status of each stream answered, and the
// bytes each stream sent.
struct Partial {
  std::map<int32_t, int> statuses;
  std::map<int32_t, size_t> sent;
  // The bytes of the streams the server did not answer: those it holds.
  size_t Held() const {
    size_t held = 0;
    for (const auto& [stream, bytes] : sent) held += statuses.contains(stream) ? 0 : bytes;
    return held;
  }
};

// A hostile HTTP/2 client on nghttp2: opens `streams` calls and sends up to `bytes` of each
// message's first part (less where the window ends), never the rest. Once every stream has sent
// or been closed, it pings the server twice, one ping after the other's answer: the server
// answers a ping after what it wrote before reading it, so by the second answer every refusal of
// the bytes sent has arrived. (A bound of 60 s stands in for a server that never answers.)
Partial PartialCalls(uint16_t port, int streams, size_t bytes) {
  struct Client : Partial {
    std::string chunk;
    std::set<int32_t> closed;
    int pings_answered = 0;
  } client;
  client.chunk = std::string(5, '\0') + std::string(bytes - 5, 'p');
  client.chunk[1] = 0x7f;  // announces a message far longer than what is sent
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return {};
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(
      callbacks,
      [](nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t name_length,
         const uint8_t* value, size_t value_length, uint8_t, void* user) {
        if (std::string_view(reinterpret_cast<const char*>(name), name_length) == "grpc-status") {
          static_cast<Client*>(user)->statuses[frame->hd.stream_id] =
              std::stoi(std::string(reinterpret_cast<const char*>(value), value_length));
        }
        return 0;
      });
  nghttp2_session_callbacks_set_on_stream_close_callback(
      callbacks, [](nghttp2_session*, int32_t stream, uint32_t, void* user) {
        static_cast<Client*>(user)->closed.insert(stream);
        return 0;
      });
  nghttp2_session_callbacks_set_on_frame_recv_callback(
      callbacks, [](nghttp2_session*, const nghttp2_frame* frame, void* user) {
        if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
          ++static_cast<Client*>(user)->pings_answered;
        }
        return 0;
      });
  nghttp2_session* session = nullptr;
  nghttp2_session_client_new(&session, callbacks, &client);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
  const auto header = [](std::string_view n, std::string_view v) {
    return nghttp2_nv{const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(n.data())),
                      const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(v.data())), n.size(),
                      v.size(), NGHTTP2_NV_FLAG_NONE};
  };
  const nghttp2_nv headers[] = {header(":method", "POST"), header(":scheme", "http"),
                                header(":path", kHeld), header(":authority", "test"),
                                header("content-type", "application/grpc")};
  for (int i = 0; i < streams; ++i) {
    nghttp2_data_provider data{};
    data.source.ptr = nullptr;
    data.read_callback = [](nghttp2_session*, int32_t stream, uint8_t* buffer, size_t length,
                            uint32_t*, nghttp2_data_source* source, void* user) -> ssize_t {
      if (source->ptr != nullptr) return NGHTTP2_ERR_DEFERRED;  // the rest never comes
      auto* self = static_cast<Client*>(user);
      const size_t n = std::min(length, self->chunk.size());
      std::copy_n(self->chunk.data(), n, buffer);
      self->sent[stream] = n;
      source->ptr = buffer;  // sent
      return static_cast<ssize_t>(n);
    };
    nghttp2_submit_request(session, nullptr, headers, std::size(headers), &data, nullptr);
  }
  const auto settled = [&] {
    size_t done = client.closed.size();
    for (const auto& [stream, sent] : client.sent) done += client.closed.contains(stream) ? 0 : 1;
    return done == static_cast<size_t>(streams);
  };
  int pings_sent = 0;
  const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  uint8_t in[16 * 1024];
  while (client.pings_answered < 2 && std::chrono::steady_clock::now() < bound) {
    if (settled() && pings_sent == client.pings_answered) {
      nghttp2_submit_ping(session, NGHTTP2_FLAG_NONE, nullptr);
      ++pings_sent;
    }
    const uint8_t* out = nullptr;
    for (ssize_t n; (n = nghttp2_session_mem_send(session, &out)) > 0;) {
      if (write(fd, out, static_cast<size_t>(n)) != n) break;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) != 1) continue;
    const ssize_t n = read(fd, in, sizeof in);
    if (n <= 0 || nghttp2_session_mem_recv(session, in, static_cast<size_t>(n)) < 0) break;
  }
  nghttp2_session_del(session);
  close(fd);
  return client;
}

class GrpcServerTest : public ::testing::Test {
 protected:
  void Start(GrpcServerOptions options) {
    options.host = "127.0.0.1";
    options.port = 0;
    options.on_connection_event = [this](ConnectionEvent e) {
      std::lock_guard lock(mu_);
      ++events_[e];
    };
    GrpcServer::Methods methods;
    methods[kEcho] = [](std::string_view message, GrpcReply reply) {
      if (message == "fail") return reply.Fail(GrpcStatus::kInvalidArgument, "bad: ü 100%\n");
      std::string reversed(message.rbegin(), message.rend());
      // Answered from another thread, as the service's batches are.
      std::thread([reply, reversed] { reply.Ok(reversed); }).detach();
    };
    methods[kHeld] = [this](std::string_view, GrpcReply reply) {
      std::lock_guard lock(mu_);
      held_.push_back(reply);
      held_cv_.notify_all();
    };
    Result<std::unique_ptr<GrpcServer>> server = GrpcServer::Create(options, std::move(methods));
    ASSERT_TRUE(server.ok()) << server.error().ToString();
    server_ = std::move(*server);
  }
  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                               grpc::InsecureChannelCredentials());
  }
  Answer Call(const std::string& method, const std::string& message) {
    return hourglass::Call(Channel(), method, message);
  }
  bool ConnectionsFallTo(size_t n) {
    for (int i = 0; i < 250 && server_->connections() > n; ++i) {
      std::this_thread::sleep_for(milliseconds{20});
    }
    return server_->connections() <= n;
  }
  int Told(ConnectionEvent event) {
    std::lock_guard lock(mu_);
    return events_[event];
  }
  // Waits until `n` calls of kHeld have arrived.
  void AwaitHeld(size_t n) {
    std::unique_lock lock(mu_);
    held_cv_.wait(lock, [&] { return held_.size() >= n; });
  }

  std::mutex mu_;
  std::condition_variable held_cv_;
  std::map<ConnectionEvent, int> events_;  // guarded by mu_
  std::vector<GrpcReply> held_;            // guarded by mu_
  std::unique_ptr<GrpcServer> server_;
};

TEST_F(GrpcServerTest, AMethodAnswersFromAnyThreadAndItsErrorsReachTheClient) {
  Start({});
  auto channel = Channel();
  EXPECT_EQ(hourglass::Call(channel, kEcho, "abc").message, "cba");
  EXPECT_EQ(hourglass::Call(channel, kEcho, "").message, "");
  const Answer failed = hourglass::Call(channel, kEcho, "fail");
  EXPECT_EQ(failed.code, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(failed.message, "bad: ü 100%\n");  // percent-encoded on the wire, decoded by gRPC
  const Answer unknown = hourglass::Call(channel, "/test.Echo/Nothing", "x");
  EXPECT_EQ(unknown.code, grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(unknown.message.find("/test.Echo/Nothing"), std::string::npos);
  EXPECT_EQ(hourglass::Call(channel, kEcho, "still served").message, "devres llits");
}

TEST_F(GrpcServerTest, ManyCallsInFlightOnOneConnectionEachGetTheirOwnAnswer) {
  Start({.threads = 2});
  auto channel = Channel();
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string mine = std::to_string(t) + "/" + std::to_string(i) + std::string(i, 'x');
        if (hourglass::Call(channel, kEcho, mine).message !=
            std::string(mine.rbegin(), mine.rend())) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(server_->connections(), 1u) << "the calls shared the channel's one connection";
}

TEST_F(GrpcServerTest, AMessageOverTheLimitIsResourceExhaustedAndTheConnectionGoesOn) {
  Start({.max_message_bytes = 1000});
  auto channel = Channel();
  EXPECT_EQ(hourglass::Call(channel, kEcho, std::string(1000, 'a')).code, grpc::StatusCode::OK);
  const Answer big = hourglass::Call(channel, kEcho, std::string(100'000, 'a'));
  EXPECT_EQ(big.code, grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(big.message.find("1000 bytes"), std::string::npos) << big.message;
  EXPECT_EQ(hourglass::Call(channel, kEcho, "ok").message, "ko");
}

// Calls whose messages never finish arriving: the connection holds their bytes up to its cap, then
// the calls beyond it are refused at once, and a real client is served meanwhile.
TEST_F(GrpcServerTest, PartialMessagesCannotMakeAConnectionHoldMoreThanItsCap) {
  Start({.max_message_bytes = 10'000});
  const size_t cap = 2 * 10'000 + 64 * 1024;
  const Partial got = PartialCalls(server_->port(), 200, 900);
  for (const auto& [stream, status] : got.statuses) {
    EXPECT_EQ(status, static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED)) << stream;
  }
  EXPECT_LE(got.Held(), cap);
  EXPECT_GT(got.Held(), cap - 900) << "refused only what did not fit";
  EXPECT_EQ(Call(kEcho, "ok").message, "ko");
}

// Ten such clients at once: each connection within its own cap, all of them together within the
// server's.
TEST_F(GrpcServerTest, PartialMessagesOfManyConnectionsCannotMakeTheServerHoldMoreThanItsCap) {
  Start({.max_message_bytes = 10'000, .max_buffered_bytes = 640'000});
  std::vector<std::future<Partial>> clients;
  for (int i = 0; i < 10; ++i) {
    clients.push_back(
        std::async(std::launch::async, [this] { return PartialCalls(server_->port(), 200, 900); }));
  }
  size_t held = 0;
  for (auto& client : clients) {
    const Partial got = client.get();
    for (const auto& [stream, status] : got.statuses) {
      EXPECT_EQ(status, static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED)) << stream;
    }
    held += got.Held();
  }
  EXPECT_LE(held, 640'000u);
  EXPECT_GT(held, 640'000u - 900) << "refused only what did not fit";
  EXPECT_EQ(Call(kEcho, "ok").message, "ko");
}

TEST_F(GrpcServerTest, ACompressedMessageIsRefusedAsUnimplemented) {
  Start({});
  grpc::ChannelArguments arguments;
  arguments.SetCompressionAlgorithm(GRPC_COMPRESS_GZIP);
  auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                           grpc::InsecureChannelCredentials(), arguments);
  const Answer answer = hourglass::Call(channel, kEcho, std::string(4000, 'z'));
  EXPECT_EQ(answer.code, grpc::StatusCode::UNIMPLEMENTED) << answer.message;
}

TEST_F(GrpcServerTest, DestroyingTheServerAnswersTheCallsInFlightFirst) {
  Start({});
  auto channel = Channel();
  std::vector<std::future<Answer>> calls;
  for (int i = 0; i < 3; ++i) {
    calls.push_back(
        std::async(std::launch::async, [&] { return hourglass::Call(channel, kHeld, ""); }));
  }
  AwaitHeld(3);
  std::thread stopping([this] { server_.reset(); });
  // The server waits (GOAWAY sent) for the answers still owed.
  std::this_thread::sleep_for(milliseconds{100});
  {
    std::lock_guard lock(mu_);
    for (GrpcReply& reply : held_) reply.Ok("late");
  }
  stopping.join();
  for (auto& call : calls) EXPECT_EQ(call.get().message, "late");
}

TEST_F(GrpcServerTest, APeerThatAnswersNoPingIsClosedAndAClientThatDoesStays) {
  // The real client has a second to answer each ping, however busy the machine.
  Start({.keepalive_time = milliseconds{200}, .keepalive_timeout = milliseconds{1000}});
  auto channel = Channel();
  EXPECT_EQ(hourglass::Call(channel, kEcho, "a").message, "a");
  SilentConnections silent(server_->port(), 3);
  EXPECT_EQ(silent.ClosedByPeerWithin(3, milliseconds{10'000}), 3u)
      << "silent peers were pinged, then closed";
  // A peer sees its connection closed before the server has forgotten it: wait for that.
  EXPECT_TRUE(ConnectionsFallTo(1)) << server_->connections() << " still counted";
  EXPECT_EQ(server_->connections(), 1u) << "the real client answered its pings";
  EXPECT_EQ(channel->GetState(false), GRPC_CHANNEL_READY) << "its connection was never closed";
  EXPECT_EQ(hourglass::Call(channel, kEcho, "b").message, "b");
}

TEST_F(GrpcServerTest, AConnectionWithNoCallForTheIdleTimeIsSentGoAway) {
  Start({.idle_timeout = milliseconds{300}});
  auto channel = Channel();
  EXPECT_EQ(hourglass::Call(channel, kEcho, "a").message, "a");
  EXPECT_TRUE(ConnectionsFallTo(0)) << "the idle connection was closed";
  EXPECT_EQ(hourglass::Call(channel, kEcho, "b").message, "b") << "the client connects again";
}

TEST_F(GrpcServerTest, AClientThatDoesNotSpeakHttp2IsClosed) {
  Start({});
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(server_->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  bool closed = false;
  char buffer[4096];
  for (int i = 0; i < 100 && !closed; ++i) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) == 1) closed = read(fd, buffer, sizeof buffer) <= 0;
  }
  close(fd);
  EXPECT_TRUE(closed);
  EXPECT_EQ(Call(kEcho, "ok").message, "ko");
}

TEST_F(GrpcServerTest, ClosedConnectionsAreForgotten) {
  Start({.max_connections = 16});
  EXPECT_EQ(Call(kEcho, "x").message, "x");
  {
    SilentConnections silent(server_->port(), 5);
    for (int i = 0; i < 100 && server_->connections() < 5; ++i) {
      std::this_thread::sleep_for(milliseconds{20});
    }
    EXPECT_GE(server_->connections(), 5u);
  }
  EXPECT_TRUE(ConnectionsFallTo(1)) << server_->connections() << " still counted";
}

TEST_F(GrpcServerTest, SilentConnectionsAtTheCapMakeRoomForARealClient) {
  Start({.max_connections = 20, .min_idle = milliseconds{100}});
  SilentConnections flood(server_->port(), 200);
  ASSERT_EQ(flood.opened(), 200u);
  std::this_thread::sleep_for(milliseconds{300});
  EXPECT_EQ(Call(kEcho, "real").message, "laer") << "a real client was locked out";
  EXPECT_TRUE(ConnectionsFallTo(20)) << server_->connections() << " connections over a cap of 20";
  EXPECT_GE(flood.ClosedByPeerWithin(180, milliseconds{10'000}), 180u)
      << "of the flood's 200 connections, closed";
  // The flood arrived faster than min_idle: most were refused, and the real client's made room.
  EXPECT_GE(Told(ConnectionEvent::kMadeRoom), 1);
  EXPECT_GE(Told(ConnectionEvent::kMadeRoom) + Told(ConnectionEvent::kRefusedBusy), 180)
      << "each connection refused or closed to make room is told";
}

// A burst of connections far over the cap, each making room as soon as it may: the connections
// closed to make room but not gone yet are bounded too, so the process's descriptors stay near
// the cap however fast the burst comes, and a real client is served meanwhile.
TEST_F(GrpcServerTest, ABurstOfConnectionsStaysWithinTheCapAndThoseLeaving) {
  Start({.max_connections = 16, .min_idle = milliseconds{0}});
  std::vector<std::unique_ptr<SilentConnections>> bursts;
  for (int i = 0; i < 5; ++i) {
    bursts.push_back(std::make_unique<SilentConnections>(server_->port(), 200));
    ASSERT_EQ(bursts.back()->opened(), 200u);
  }
  const auto told = [&] {
    return Told(ConnectionEvent::kMadeRoom) + Told(ConnectionEvent::kRefusedBusy);
  };
  for (int i = 0; i < 500 && told() < 1000 - 16; ++i) std::this_thread::sleep_for(milliseconds{20});
  EXPECT_GE(told(), 1000 - 16);
  EXPECT_TRUE(ConnectionsFallTo(16)) << "those closed to make room are gone";
  EXPECT_LE(server_->most_connections(), 16u + 4u)
      << "connections open at once (closing ones included), over a cap of 16";
  EXPECT_EQ(Call(kEcho, "real").message, "laer") << "a real client was locked out";
}

TEST_F(GrpcServerTest, WhenNoConnectionIsSilentLongEnoughANewOneIsClosed) {
  Start({.max_connections = 2, .min_idle = milliseconds{60'000}});
  SilentConnections two(server_->port(), 2);
  for (int i = 0; i < 100 && server_->connections() < 2; ++i) {
    std::this_thread::sleep_for(milliseconds{20});
  }
  SilentConnections third(server_->port(), 1);
  EXPECT_EQ(third.ClosedByPeerWithin(1, milliseconds{10'000}), 1u);
  EXPECT_EQ(two.ClosedByPeer(), 0u);
  EXPECT_EQ(server_->connections(), 2u);
  EXPECT_EQ(Told(ConnectionEvent::kRefusedBusy), 1);
  EXPECT_EQ(Told(ConnectionEvent::kMadeRoom), 0);
}

// The process out of descriptors: a waiting connection is accepted on the one kept in reserve and
// closed at once (not left in the listen queue until its client gives up), and told; once
// descriptors are free again, clients are served.
TEST_F(GrpcServerTest, OutOfDescriptorsANewConnectionIsClosedNotLeftWaiting) {
  Start({});
  const int fd = socket(AF_INET, SOCK_STREAM, 0);  // before the descriptors run out
  ASSERT_GE(fd, 0);
  {
    testing::DescriptorsTaken taken(fd);
    ASSERT_TRUE(taken.exhausted());
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(server_->port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    bool closed = false;
    char buffer[256];
    for (int i = 0; i < 100 && !closed; ++i) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 50) == 1) closed = read(fd, buffer, sizeof buffer) <= 0;
    }
    EXPECT_TRUE(closed) << "the connection waited in the listen queue";
  }
  close(fd);
  EXPECT_GE(Told(ConnectionEvent::kRefusedDescriptors), 1);
  EXPECT_EQ(Call(kEcho, "after").message, "retfa");
}

TEST(GrpcServer, ABadAddressIsAClearError) {
  Result<std::unique_ptr<GrpcServer>> server =
      GrpcServer::Create({.host = "localhost", .port = 0}, {});
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(server.error().message().find("\"localhost\""), std::string::npos);
}

}  // namespace
}  // namespace hourglass
