// The Redis store's protocol unit: commands in RESP (binary-safe), and replies read from a
// connection however the bytes arrive, every kind of reply, errors named, garbage refused.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "resp.h"

namespace hourglass::redis {
namespace {

using std::chrono::milliseconds;

TEST(AppendCommand, WritesBinarySafeRespArrays) {
  std::string out;
  AppendCommand({"SET", "k", std::string_view("a\r\n\0b", 5)}, out);
  EXPECT_EQ(out, std::string("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\r\n\0b\r\n", 31));
  AppendCommand({"PING"}, out);
  EXPECT_TRUE(out.ends_with("*1\r\n$4\r\nPING\r\n"));
}

// The server side of a socketpair that sends `chunks` one after another, `gap` apart.
class Peer {
 public:
  Peer(std::vector<std::string> chunks, milliseconds gap) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    Result<std::unique_ptr<net::Connection>> c = net::Connection::Adopt(fds[0], milliseconds{500});
    connection_ = std::move(*c);
    thread_ = std::thread([fd = fds[1], chunks = std::move(chunks), gap] {
      for (const std::string& chunk : chunks) {
        (void)!send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);  // EPIPE once the reader left
        std::this_thread::sleep_for(gap);
      }
      std::this_thread::sleep_for(milliseconds{700});
      close(fd);
    });
  }
  // Closes the reader's end first: a writer blocked on a full socket (a test that stopped
  // reading, say after a failed assertion) then ends instead of hanging the test.
  ~Peer() {
    connection_.reset();
    thread_.join();
  }
  net::Connection& connection() { return *connection_; }

 private:
  std::unique_ptr<net::Connection> connection_;
  std::thread thread_;
};

TEST(ReplyReader, EveryKindOfReplyHoweverItsBytesArrive) {
  const std::string replies =
      "+OK\r\n-MOVED 3999 127.0.0.1:6381\r\n:-42\r\n$-1\r\n$5\r\nab\r\nc\r\n"
      "*3\r\n:1\r\n$-1\r\n*1\r\n$0\r\n\r\n";
  std::vector<std::string> bytes;
  for (char c : replies) bytes.emplace_back(1, c);  // one byte at a time
  for (const std::vector<std::string>& chunks : {std::vector<std::string>{replies}, bytes}) {
    Peer peer(chunks, milliseconds{0});
    ReplyReader reader;
    net::Connection& c = peer.connection();
    c.BeginExchange();
    Result<Reply> r = reader.Read(c);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r->type, Reply::Type::kStatus);
    EXPECT_EQ(r->text, "OK");
    r = reader.Read(c);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->error());
    EXPECT_EQ(r->error_kind(), "MOVED");
    EXPECT_EQ(r->text, "MOVED 3999 127.0.0.1:6381");
    r = reader.Read(c);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->integer, -42);
    r = reader.Read(c);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->type, Reply::Type::kNil);
    r = reader.Read(c);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->text, "ab\r\nc") << "bulk strings are binary-safe";
    r = reader.Read(c);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->type, Reply::Type::kArray);
    ASSERT_EQ(r->elements.size(), 3u);
    EXPECT_EQ(r->elements[0].integer, 1);
    EXPECT_EQ(r->elements[1].type, Reply::Type::kNil);
    ASSERT_EQ(r->elements[2].elements.size(), 1u);
    EXPECT_EQ(r->elements[2].elements[0].text, "");
  }
}

TEST(ReplyReader, BytesThatAreNotRespAreAnErrorAndSilenceIsADeadline) {
  {
    Peer peer({"VALUE k 0 1\r\n"}, milliseconds{0});  // a memcached answer
    ReplyReader reader;
    peer.connection().BeginExchange();
    Result<Reply> r = reader.Read(peer.connection());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kInternal);
    EXPECT_NE(r.error().message().find("not RESP"), std::string::npos) << r.error().message();
  }
  {
    Peer peer({"$10\r\nabc"}, milliseconds{0});  // cut short, then nothing
    ReplyReader reader;
    peer.connection().BeginExchange();
    Result<Reply> r = reader.Read(peer.connection());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kDeadlineExceeded) << r.error().ToString();
  }
}

TEST(ReplyReader, TheElementBoundCountsOneReplysArraysNotTheConnections) {
  // Two replies under the bound each, then one over it by a nested array's header alone.
  constexpr size_t kBound = 1000;
  const size_t half = kBound / 2 + 1;
  std::string two_large = "*" + std::to_string(half) + "\r\n";
  for (size_t i = 0; i < half; ++i) two_large += ":1\r\n";
  two_large += two_large;
  Peer peer({two_large, fmt::format("*2\r\n*{}\r\n", kBound - 1)}, milliseconds{0});
  ReplyReader reader(kBound);
  net::Connection& c = peer.connection();
  for (int i = 0; i < 2; ++i) {
    c.BeginExchange();
    Result<Reply> r = reader.Read(c);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r->elements.size(), half);
  }
  c.BeginExchange();
  Result<Reply> r = reader.Read(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInternal);
  EXPECT_NE(r.error().message().find("more than 1000 array elements"), std::string::npos)
      << r.error().message();
}

TEST(ReplyReader, AnArrayHeaderOverTheDefaultBoundIsRefusedBeforeItIsAllocated) {
  for (const std::string& header :
       {std::string("*270005461\r\n"), fmt::format("*2\r\n*{}\r\n", kMaxReplyElements - 1)}) {
    SCOPED_TRACE(header);
    Peer peer({header}, milliseconds{0});
    ReplyReader reader;
    net::Connection& c = peer.connection();
    c.BeginExchange();
    Result<Reply> r = reader.Read(c);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kInternal);
    EXPECT_NE(r.error().message().find(fmt::format("more than {} array", kMaxReplyElements)),
              std::string::npos)
        << r.error().message();
  }
}

}  // namespace
}  // namespace hourglass::redis
