// TCP connections to a loopback port that send nothing: what a connection flood is made of.
// Connected one after another (each connect returns once the kernel accepted it); closed on
// destruction. Also raises this process's soft open file limit so a flood fits.
//
//   SilentConnections flood(port, 2000);
//   EXPECT_EQ(flood.opened(), 2000u);
//   EXPECT_GE(flood.ClosedByPeerWithin(1900, std::chrono::seconds{10}), 1900u);
//
// Thread-safety: one thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

namespace hourglass::testing {

class SilentConnections {
 public:
  SilentConnections(int port, size_t n) {
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (size_t i = 0; i < n; ++i) {
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        continue;
      }
      fds_.push_back(fd);
    }
  }
  ~SilentConnections() {
    for (int fd : fds_) close(fd);
  }
  SilentConnections(const SilentConnections&) = delete;
  SilentConnections& operator=(const SilentConnections&) = delete;

  size_t opened() const { return fds_.size(); }
  // How many the server has closed by now (bytes it sent are read and skipped).
  size_t ClosedByPeer() {
    size_t closed = 0;
    for (int fd : fds_) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) <= 0) continue;
      char buffer[1024];
      ssize_t n;
      while ((n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) {
      }
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
    }
    return closed;
  }
  // ClosedByPeer() once it reaches `n`, or at the end of `wait`: a server closes connections on
  // its own threads, so a test waits for it rather than reading the count once.
  size_t ClosedByPeerWithin(size_t n, std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    size_t closed = ClosedByPeer();
    while (closed < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
      closed = ClosedByPeer();
    }
    return closed;
  }

 private:
  std::vector<int> fds_;
};

}  // namespace hourglass::testing
