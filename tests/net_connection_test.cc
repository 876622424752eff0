// net::Connection against a real memcached (its first user): whole requests in, lines and data
// blocks out, and every failure (refused, unknown host, frozen, killed) a clear error within the
// timeout.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "hourglass/net/connection.h"
#include "loopback_port.h"
#include "memcached_server.h"

namespace hourglass {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr milliseconds kTimeout{100};

std::unique_ptr<net::Connection> Connect(const testing::MemcachedServer& server) {
  Result<std::unique_ptr<net::Connection>> c =
      net::Connection::Open("127.0.0.1", std::to_string(server.port()), kTimeout, kTimeout);
  EXPECT_TRUE(c.ok()) << c.error().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

TEST(NetConnection, PipelinedRequestAnswersLineByLine) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  std::unique_ptr<net::Connection> c = Connect(server);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Send("ma k N60 J4 D4 q\r\nma k N60 J4 D4 q\r\nget k missing\r\nmn\r\n").ok());
  EXPECT_EQ(*c->ReadLine(), "HD");  // created; the second increment answers nothing (q)
  EXPECT_EQ(*c->ReadLine(), "VALUE k 0 1");
  EXPECT_EQ(*c->ReadBlock(1), "8");
  EXPECT_EQ(*c->ReadLine(), "END");
  EXPECT_EQ(*c->ReadLine(), "MN");
}

TEST(NetConnection, ValuesLargerThanTheReadBufferArriveWhole) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  std::unique_ptr<net::Connection> c = Connect(server);
  ASSERT_NE(c, nullptr);
  std::string value(200'000, 'x');
  for (size_t i = 0; i < value.size(); i += 997) value[i] = 'y';
  ASSERT_TRUE(c->Send("set big 0 60 " + std::to_string(value.size()) + "\r\n" + value + "\r\n" +
                      "get big big\r\n")
                  .ok());
  EXPECT_EQ(*c->ReadLine(), "STORED");
  for (int copy = 0; copy < 2; ++copy) {
    EXPECT_EQ(*c->ReadLine(), "VALUE big 0 " + std::to_string(value.size()));
    Result<std::string_view> block = c->ReadBlock(value.size());
    ASSERT_TRUE(block.ok()) << block.error().ToString();
    EXPECT_EQ(*block, value);
  }
  EXPECT_EQ(*c->ReadLine(), "END");
}

// ReadSome hands over whatever arrived, line or not, after what ReadLine left buffered: every
// byte of the answer exactly once, in order.
TEST(NetConnection, ReadSomeHandsOverEveryByteOnce) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  std::unique_ptr<net::Connection> c = Connect(server);
  ASSERT_NE(c, nullptr);
  const std::string value(100'000, 'v');
  ASSERT_TRUE(
      c->Send("set k 0 60 " + std::to_string(value.size()) + "\r\n" + value + "\r\nget k\r\n")
          .ok());
  EXPECT_EQ(*c->ReadLine(), "STORED");
  const std::string expected =
      "VALUE k 0 " + std::to_string(value.size()) + "\r\n" + value + "\r\nEND\r\n";
  std::string got;
  c->BeginExchange();
  while (got.size() < expected.size()) {
    Result<std::string_view> some = c->ReadSome();
    ASSERT_TRUE(some.ok()) << some.error().ToString();
    ASSERT_FALSE(some->empty());
    got += *some;
  }
  EXPECT_EQ(got, expected);
  Result<std::string_view> more = c->ReadSome();  // nothing else comes: the exchange times out
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error().code(), ErrorCode::kDeadlineExceeded);
}

// A server (or whatever answers on its port) that announces a data block of 2^64 - 1 bytes, or
// of more than an item holds, gets an error: no read past the buffer, no unbounded allocation.
TEST(NetConnection, AnnouncedBlockLongerThanAnItemIsAnError) {
  for (const size_t n : {~size_t{0}, ~size_t{0} - 1, net::Connection::kMaxBlock + 1}) {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    const std::string answer = "VALUE k 0 " + std::to_string(n) + "\r\n1\r\nEND\r\n";
    ASSERT_EQ(write(fds[1], answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
    Result<std::unique_ptr<net::Connection>> c = net::Connection::Adopt(fds[0], kTimeout);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->ReadLine().ok());
    Result<std::string_view> block = (*c)->ReadBlock(n);
    ASSERT_FALSE(block.ok()) << n;
    EXPECT_NE(block.error().message().find("more than the 1048576 bytes"), std::string::npos)
        << block.error().message();
    close(fds[1]);
  }
}

TEST(NetConnection, RefusedConnectionIsUnavailable) {
  Result<std::unique_ptr<net::Connection>> c = net::Connection::Open(
      "127.0.0.1", std::to_string(testing::FreeLoopbackPort()), kTimeout, kTimeout);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(c.error().message().find("connect"), std::string::npos) << c.error().message();
}

TEST(NetConnection, UnknownHostIsUnavailable) {
  Result<std::unique_ptr<net::Connection>> c =
      net::Connection::Open("no-such-host.invalid", "11211", kTimeout, kTimeout);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(c.error().message().find("name lookup"), std::string::npos) << c.error().message();
}

TEST(NetConnection, FrozenServerTimesOut) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  std::unique_ptr<net::Connection> c = Connect(server);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(server.Freeze());
  const auto start = steady_clock::now();
  ASSERT_TRUE(c->Send("mn\r\n").ok());  // the kernel accepts it; nobody answers
  Result<std::string_view> line = c->ReadLine();
  const auto elapsed = steady_clock::now() - start;
  server.Thaw();
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.error().code(), ErrorCode::kDeadlineExceeded) << line.error().ToString();
  EXPECT_GE(elapsed, kTimeout);
  EXPECT_LT(elapsed, 10 * kTimeout);
}

TEST(NetConnection, KilledServerIsUnavailableAndNoSignalKillsTheProcess) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  std::unique_ptr<net::Connection> c = Connect(server);
  ASSERT_NE(c, nullptr);
  server.Kill();
  // Writing to a reset connection raises SIGPIPE unless suppressed: this test would die.
  Status sent;
  for (int i = 0; i < 3 && sent.ok(); ++i) sent = c->Send("mn\r\n");
  Result<std::string_view> line = c->ReadLine();
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.error().code(), ErrorCode::kUnavailable) << line.error().ToString();
}

}  // namespace
}  // namespace hourglass
