// For fuzz targets of protocol readers: a real connection whose server has sent the fuzzer's
// bytes and closed its end, so a reader meets them as it would a server's answer.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "hourglass/net/connection.h"

namespace hourglass::fuzz {

// Null if the bytes do not fit the socket buffer at once (the fuzzer's inputs are far smaller).
inline std::unique_ptr<net::Connection> Answering(const uint8_t* data, size_t size) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return nullptr;
  const ssize_t sent = size == 0 ? 0 : send(fds[1], data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fds[1]);
  if (sent != static_cast<ssize_t>(size)) {
    close(fds[0]);
    return nullptr;
  }
  Result<std::unique_ptr<net::Connection>> c =
      net::Connection::Adopt(fds[0], std::chrono::milliseconds{1000});
  return c.ok() ? std::move(*c) : nullptr;
}

}  // namespace hourglass::fuzz
