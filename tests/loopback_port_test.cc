// The test servers' ports: a free one is bindable, and a listener is told by its process.
#include "loopback_port.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "memcached_server.h"

namespace hourglass::testing {
namespace {

// A socket of this process listening on 127.0.0.1:`port`; -1 if it cannot bind.
int ListenHere(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 1) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(FreeLoopbackPort, IsBelowTheEphemeralRangeAndBindable) {
  const int port = FreeLoopbackPort();
  ASSERT_GE(port, 10000);
  ASSERT_LE(port, 32767);
  const int fd = ListenHere(port);
  EXPECT_GE(fd, 0) << "port " << port;
  if (fd >= 0) close(fd);
}

TEST(ListensOn, OnlyTheProcessThatHoldsTheListenerListens) {
  MemcachedServer memcached;
  ASSERT_TRUE(memcached.running()) << memcached.error();
  EXPECT_TRUE(ListensOn(memcached.pid(), memcached.port()));
  EXPECT_FALSE(ListensOn(getpid(), memcached.port())) << "a client of the port";

  const int port = FreeLoopbackPort();
  EXPECT_FALSE(ListensOn(getpid(), port)) << "nobody listens yet";
  const int fd = ListenHere(port);
  ASSERT_GE(fd, 0) << "port " << port;
  EXPECT_TRUE(ListensOn(getpid(), port));
  EXPECT_FALSE(ListensOn(memcached.pid(), port));
  close(fd);
  EXPECT_FALSE(ListensOn(getpid(), port)) << "closed";
}

}  // namespace
}  // namespace hourglass::testing
