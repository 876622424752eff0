// The test servers' ports: a free one is bindable, and a listener is told by its process.
#include "loopback_port.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "memcached_server.h"

namespace hourglass::testing {
namespace {

TEST(FreeLoopbackPort, IsBelowTheEphemeralRangeAndBindable) {
  const int port = FreeLoopbackPort();
  ASSERT_GE(port, 10000);
  ASSERT_LE(port, 32767);
  const int fd = ListenOnLoopback(port);
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
  const int fd = ListenOnLoopback(port);
  ASSERT_GE(fd, 0) << "port " << port;
  EXPECT_TRUE(ListensOn(getpid(), port));
  EXPECT_FALSE(ListensOn(memcached.pid(), port));
  close(fd);
  EXPECT_FALSE(ListensOn(getpid(), port)) << "closed";
}

}  // namespace
}  // namespace hourglass::testing
