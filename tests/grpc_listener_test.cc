// GrpcListener with a real gRPC server and real sockets: connections it hands over are served by
// gRPC, closed ones are forgotten, and at the cap a silent connection makes room for a new client
// (a new connection is closed only when none is silent).
#include "hourglass/grpc_listener.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "silent_connections.h"

namespace hourglass {
namespace {

using std::chrono::milliseconds;

using testing::SilentConnections;

// Whether `n` of `connections` are closed by the server within `wait`.
bool ClosedWithin(SilentConnections& connections, size_t n, milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (connections.ClosedByPeer() < n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds{20});
  }
  return true;
}

// gRPC builds no server without a service: a generic one that answers every call UNIMPLEMENTED.
// A generic service serves one server only, so each server has its own, which must outlive it.
std::unique_ptr<grpc::Server> ServerWithAService(grpc::CallbackGenericService& unimplemented) {
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&unimplemented);
  return builder.BuildAndStart();
}

class GrpcListenerTest : public ::testing::Test {
 protected:
  void Start(size_t max_connections, milliseconds min_idle) {
    server_ = ServerWithAService(service_);
    ASSERT_NE(server_, nullptr);
    Result<std::unique_ptr<GrpcListener>> listener =
        GrpcListener::Create({.host = "127.0.0.1",
                              .port = 0,
                              .max_connections = max_connections,
                              .min_idle = min_idle,
                              .on_connection_event =
                                  [this](ConnectionEvent e) {
                                    std::lock_guard lock(events_mu_);
                                    ++events_[e];
                                  }},
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

  int Told(ConnectionEvent event) {
    std::lock_guard lock(events_mu_);
    return events_[event];
  }

  grpc::CallbackGenericService service_;  // before server_: it outlives the server
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcListener> listener_;
  std::mutex events_mu_;
  std::map<ConnectionEvent, int> events_;  // guarded by events_mu_
};

TEST_F(GrpcListenerTest, ConnectionsHandedOverAreServedByGrpcAndForgottenOnceClosed) {
  Start(16, milliseconds{1000});
  EXPECT_EQ(Call(), grpc::StatusCode::UNIMPLEMENTED);
  {
    SilentConnections silent(listener_->port(), 5);
    for (int i = 0; i < 100 && listener_->connections() < 5; ++i) {
      std::this_thread::sleep_for(milliseconds{20});
    }
    EXPECT_GE(listener_->connections(), 5u);
  }
  EXPECT_TRUE(ConnectionsFallTo(1)) << listener_->connections() << " still counted";
}

TEST_F(GrpcListenerTest, SilentConnectionsAtTheCapMakeRoomForARealClient) {
  Start(20, milliseconds{100});
  SilentConnections flood(listener_->port(), 200);
  ASSERT_EQ(flood.opened(), 200u);
  std::this_thread::sleep_for(milliseconds{300});
  EXPECT_EQ(Call(), grpc::StatusCode::UNIMPLEMENTED) << "a real client was locked out";
  EXPECT_TRUE(ConnectionsFallTo(20)) << listener_->connections() << " connections over a cap of 20";
  EXPECT_TRUE(ClosedWithin(flood, 180, milliseconds{2000}))
      << flood.ClosedByPeer() << " of the flood's 200 connections closed";
  // The flood arrived faster than min_idle: most were refused, and the real client's made room.
  EXPECT_GE(Told(ConnectionEvent::kMadeRoom), 1);
  EXPECT_GE(Told(ConnectionEvent::kMadeRoom) + Told(ConnectionEvent::kRefusedBusy), 180)
      << "each connection refused or closed to make room is told";
}

// A burst of connections far over the cap, each making room as soon as it may: the connections
// closed to make room but not yet let go of by gRPC are bounded too, so the process's descriptors
// stay near the cap however fast the burst comes, and a real client is served meanwhile.
TEST_F(GrpcListenerTest, ABurstOfConnectionsStaysWithinTheCapAndThoseLeaving) {
  Start(16, milliseconds{0});
  std::vector<std::unique_ptr<SilentConnections>> bursts;
  for (int i = 0; i < 5; ++i) {
    bursts.push_back(std::make_unique<SilentConnections>(listener_->port(), 200));
    ASSERT_EQ(bursts.back()->opened(), 200u);
  }
  // Every connection of the burst accepted (each beyond the cap told), and gRPC has let go of
  // those closed to make room: a new client then makes room, however slowly that went.
  const auto told = [&] {
    return Told(ConnectionEvent::kMadeRoom) + Told(ConnectionEvent::kRefusedBusy);
  };
  for (int i = 0; i < 500 && told() < 1000 - 16; ++i) std::this_thread::sleep_for(milliseconds{20});
  EXPECT_GE(told(), 1000 - 16);
  EXPECT_TRUE(ConnectionsFallTo(16)) << "gRPC let go of those closed to make room";
  EXPECT_LE(listener_->most_connections(), 16u + 4u)
      << "connections handed over at once (closing ones included), over a cap of 16";
  EXPECT_EQ(Call(), grpc::StatusCode::UNIMPLEMENTED) << "a real client was locked out";
}

TEST_F(GrpcListenerTest, WhenNoConnectionIsSilentLongEnoughANewOneIsClosed) {
  Start(2, milliseconds{60'000});
  SilentConnections two(listener_->port(), 2);
  for (int i = 0; i < 100 && listener_->connections() < 2; ++i) {
    std::this_thread::sleep_for(milliseconds{20});
  }
  SilentConnections third(listener_->port(), 1);
  EXPECT_TRUE(ClosedWithin(third, 1, milliseconds{2000}));
  EXPECT_EQ(two.ClosedByPeer(), 0u);
  EXPECT_EQ(listener_->connections(), 2u);
  EXPECT_EQ(Told(ConnectionEvent::kRefusedBusy), 1);
  EXPECT_EQ(Told(ConnectionEvent::kMadeRoom), 0);
}

TEST(GrpcListener, ABadAddressIsAClearError) {
  grpc::CallbackGenericService service;
  std::unique_ptr<grpc::Server> server = ServerWithAService(service);
  Result<std::unique_ptr<GrpcListener>> listener =
      GrpcListener::Create({.host = "localhost", .port = 0}, *server);
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(listener.error().message().find("\"localhost\""), std::string::npos);
  server->Shutdown();
}

}  // namespace
}  // namespace hourglass
