// GrpcListener with a real gRPC server and real sockets: connections it hands over are served by
// gRPC, closed ones are forgotten, and at the cap a silent connection makes room for a new client
// (a new connection is closed only when none is silent).
#include "hourglass/grpc_listener.h"

#include <arpa/inet.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hourglass {
namespace {

using std::chrono::milliseconds;

// A TCP connection that sends nothing: what a flood is made of.
class SilentClient {
 public:
  explicit SilentClient(uint16_t port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~SilentClient() { close(fd_); }
  bool connected() const { return connected_; }
  // Whether the server closes the connection within `wait` (bytes it sends are skipped).
  bool ClosedWithin(milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      char buffer[1024];
      if (recv(fd_, buffer, sizeof buffer, 0) <= 0) return true;
    }
    return false;
  }

 private:
  int fd_;
  bool connected_ = false;
};

// gRPC builds no server without a service: a generic one that answers every call UNIMPLEMENTED.
std::unique_ptr<grpc::Server> ServerWithAService() {
  static grpc::CallbackGenericService unimplemented;
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&unimplemented);
  return builder.BuildAndStart();
}

class GrpcListenerTest : public ::testing::Test {
 protected:
  void Start(size_t max_connections, milliseconds min_idle) {
    server_ = ServerWithAService();
    ASSERT_NE(server_, nullptr);
    Result<std::unique_ptr<GrpcListener>> listener = GrpcListener::Create(
        {.host = "127.0.0.1", .port = 0, .max_connections = max_connections, .min_idle = min_idle},
        *server_);
    ASSERT_TRUE(listener.ok()) << listener.error().ToString();
    listener_ = std::move(*listener);
  }
  void TearDown() override {
    listener_.reset();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds{1});
  }
  // A call on a new channel: UNIMPLEMENTED (the server has no services) proves gRPC served it.
  grpc::StatusCode Call() {
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(listener_->port()),
                                       grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{3});
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1), response;
    grpc::Status status;
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    stub.UnaryCall(&context, "/test.Nothing/Call", grpc::StubOptions(), &request, &response,
                   [&](grpc::Status s) {
                     std::lock_guard lock(mu);
                     status = s;
                     done = true;
                     done_cv.notify_one();
                   });
    std::unique_lock lock(mu);
    done_cv.wait(lock, [&] { return done; });
    return status.error_code();
  }
  bool ConnectionsFallTo(size_t n) {
    for (int i = 0; i < 250 && listener_->connections() > n; ++i) {
      std::this_thread::sleep_for(milliseconds{20});
    }
    return listener_->connections() <= n;
  }

  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcListener> listener_;
};

TEST_F(GrpcListenerTest, ConnectionsHandedOverAreServedByGrpcAndForgottenOnceClosed) {
  Start(16, milliseconds{1000});
  EXPECT_EQ(Call(), grpc::StatusCode::UNIMPLEMENTED);
  {
    std::vector<std::unique_ptr<SilentClient>> silent;
    for (int i = 0; i < 5; ++i) silent.push_back(std::make_unique<SilentClient>(listener_->port()));
    for (int i = 0; i < 100 && listener_->connections() < 5; ++i) {
      std::this_thread::sleep_for(milliseconds{20});
    }
    EXPECT_GE(listener_->connections(), 5u);
  }
  EXPECT_TRUE(ConnectionsFallTo(1)) << listener_->connections() << " still counted";
}

TEST_F(GrpcListenerTest, SilentConnectionsAtTheCapMakeRoomForARealClient) {
  Start(20, milliseconds{100});
  std::vector<std::unique_ptr<SilentClient>> flood;
  for (int i = 0; i < 200; ++i) flood.push_back(std::make_unique<SilentClient>(listener_->port()));
  std::this_thread::sleep_for(milliseconds{300});
  EXPECT_EQ(Call(), grpc::StatusCode::UNIMPLEMENTED) << "a real client was locked out";
  EXPECT_TRUE(ConnectionsFallTo(20)) << listener_->connections() << " connections over a cap of 20";
  size_t closed = 0;
  for (auto& c : flood) closed += c->ClosedWithin(milliseconds{20}) ? 1 : 0;
  EXPECT_GE(closed, 180u) << "the flood's connections were not closed";
}

TEST_F(GrpcListenerTest, WhenNoConnectionIsSilentLongEnoughANewOneIsClosed) {
  Start(2, milliseconds{60'000});
  SilentClient first(listener_->port()), second(listener_->port());
  for (int i = 0; i < 100 && listener_->connections() < 2; ++i) {
    std::this_thread::sleep_for(milliseconds{20});
  }
  SilentClient third(listener_->port());
  EXPECT_TRUE(third.ClosedWithin(milliseconds{2000}));
  EXPECT_FALSE(first.ClosedWithin(milliseconds{100}));
  EXPECT_EQ(listener_->connections(), 2u);
}

TEST(GrpcListener, ABadAddressIsAClearError) {
  std::unique_ptr<grpc::Server> server = ServerWithAService();
  Result<std::unique_ptr<GrpcListener>> listener =
      GrpcListener::Create({.host = "localhost", .port = 0}, *server);
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(listener.error().message().find("\"localhost\""), std::string::npos);
  server->Shutdown();
}

}  // namespace
}  // namespace hourglass
