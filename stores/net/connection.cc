#include "hourglass/net/connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

namespace hourglass::net {
namespace {

constexpr size_t kReadChunk = 16 * 1024;
constexpr size_t kMaxLine = 64 * 1024;  // memcached's answer lines are short; more is a desync

// An error of this process (out of descriptors or memory) is not the server's: it must not make
// the server look down.
Error ErrnoError(std::string_view what, int err) {
  if (err == EMFILE || err == ENFILE) {
    return Error(ErrorCode::kResourceExhausted,
                 fmt::format("{}: {}: this process is out of file descriptors (raise `ulimit -n`, "
                             "or lower --max-connections)",
                             what, std::strerror(err)));
  }
  if (err == ENOBUFS || err == ENOMEM) {
    return Error(ErrorCode::kResourceExhausted, fmt::format("{}: {}", what, std::strerror(err)));
  }
  return Error(ErrorCode::kUnavailable, fmt::format("{}: {}", what, std::strerror(err)));
}

// A non-blocking connect to one address, bounded by `timeout`. Returns the socket or an error.
Result<int> ConnectOne(const addrinfo& ai, std::chrono::milliseconds timeout) {
  const int fd =
      socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) return ErrnoError("socket", errno);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // no Nagle wait per request
  if (connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      const int err = errno;
      close(fd);
      return ErrnoError("connect", err);
    }
    pollfd p{fd, POLLOUT, 0};
    int ready;
    do {
      ready = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready == 0) {
      close(fd);
      // Nothing was sent: unreachable, not a request left unanswered.
      return Error(ErrorCode::kUnavailable,
                   fmt::format("connect: no answer within {} ms", timeout.count()));
    }
    int err = 0;
    socklen_t length = sizeof err;
    if (ready < 0) err = errno;
    if (err == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0) err = errno;
    if (err != 0) {
      close(fd);
      return ErrnoError("connect", err);
    }
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& host,
                                                     const std::string& port,
                                                     std::chrono::milliseconds connect_timeout,
                                                     std::chrono::milliseconds io_timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Error(ErrorCode::kUnavailable, fmt::format("name lookup: {}", gai_strerror(rc)));
  }
  std::optional<Error> last;
  int fd = -1;
  for (const addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    Result<int> connected = ConnectOne(*ai, connect_timeout);
    if (connected.ok()) {
      fd = *connected;
    } else {
      last = connected.error();
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return last.value_or(Error(ErrorCode::kUnavailable, "name lookup: no address"));
  return Adopt(fd, io_timeout);
}

Result<std::unique_ptr<Connection>> Connection::Adopt(int fd,
                                                      std::chrono::milliseconds io_timeout) {
  // Blocking from here on, each send and recv bounded by io_timeout: one system call per read
  // instead of recv, poll, recv.
  const timeval tv{static_cast<time_t>(io_timeout.count() / 1000),
                   static_cast<suseconds_t>(io_timeout.count() % 1000 * 1000)};
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoError("socket options", err);
  }
  return std::unique_ptr<Connection>(new Connection(fd, io_timeout));
}

Connection::Connection(int fd, std::chrono::milliseconds io_timeout)
    : fd_(fd), io_timeout_(io_timeout), receive_timeout_(io_timeout), buffer_(kReadChunk) {}

void Connection::BeginExchange() { deadline_ = std::chrono::steady_clock::now() + io_timeout_; }

Status Connection::WaitAtMost(std::chrono::microseconds left) {
  // The first read of an exchange waits the whole io_timeout as set: no system call. Later reads
  // (an answer in pieces) get what is left; the next exchange's first read restores the rest.
  constexpr std::chrono::microseconds kSlack{2000};
  const std::chrono::microseconds want = std::min<std::chrono::microseconds>(left, io_timeout_);
  if (want + kSlack >= receive_timeout_ && want <= receive_timeout_) return {};
  const timeval tv{static_cast<time_t>(want.count() / 1000000),
                   static_cast<suseconds_t>(want.count() % 1000000)};
  if (setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
    return ErrnoError("socket options", errno);
  }
  receive_timeout_ = want;
  return {};
}

bool Connection::PeerClosed() const {
  pollfd p{fd_, POLLRDHUP, 0};
  int ready;
  do {
    ready = poll(&p, 1, 0);
  } while (ready < 0 && errno == EINTR);
  return ready != 0 && (ready < 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0);
}

Error Connection::TimedOut(std::string_view what) const {
  return Error(ErrorCode::kDeadlineExceeded,
               fmt::format("{}: no answer within {} ms", what, io_timeout_.count()));
}

Connection::~Connection() { close(fd_); }

Status Connection::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    // MSG_NOSIGNAL: a server that went away is an error here, not a SIGPIPE for the process.
    const ssize_t sent = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent >= 0) {
      bytes.remove_prefix(static_cast<size_t>(sent));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return TimedOut("send");
    } else if (errno != EINTR) {
      return ErrnoError("send", errno);
    }
  }
  return {};
}

Status Connection::Fill() {
  if (begin_ == end_) {
    begin_ = end_ = 0;
  } else if (end_ == buffer_.size()) {
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    } else {
      buffer_.resize(buffer_.size() * 2);
    }
  }
  while (true) {
    if (deadline_ != std::chrono::steady_clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::microseconds>(
          deadline_ - std::chrono::steady_clock::now());
      if (left <= std::chrono::microseconds{0}) return TimedOut("read");
      if (Status s = WaitAtMost(left); !s.ok()) return s;
    }
    const ssize_t got = recv(fd_, buffer_.data() + end_, buffer_.size() - end_, 0);
    if (got > 0) {
      end_ += static_cast<size_t>(got);
      return {};
    }
    if (got == 0) return Error(ErrorCode::kUnavailable, "the server closed the connection");
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return TimedOut("read");
    } else if (errno != EINTR) {
      return ErrnoError("read", errno);
    }
  }
}

Result<std::string_view> Connection::ReadLine() {
  size_t scanned = begin_;
  while (true) {
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(buffer_.data() + scanned, '\n', end_ - scanned);
    if (nl != nullptr) {
      const size_t length = static_cast<size_t>(static_cast<const char*>(nl) - start);
      begin_ += length + 1;
      const size_t text = length > 0 && start[length - 1] == '\r' ? length - 1 : length;
      return std::string_view(start, text);
    }
    if (end_ - begin_ > kMaxLine) {
      return Error(ErrorCode::kInternal, "an answer line longer than 64 KiB (out of step?)");
    }
    scanned = end_ - begin_;  // relative; Fill may move the unread bytes
    if (Status s = Fill(); !s.ok()) return s.error();
    scanned += begin_;
  }
}

Result<std::string_view> Connection::ReadBlock(size_t n) {
  if (n > kMaxBlock) {
    return Error(ErrorCode::kInternal,
                 fmt::format("a data block of {} bytes announced, more than the {} bytes read at "
                             "most (out of step?)",
                             n, kMaxBlock));
  }
  while (end_ - begin_ < n + 2) {
    if (Status s = Fill(); !s.ok()) return s.error();
  }
  const char* start = buffer_.data() + begin_;
  if (start[n] != '\r' || start[n + 1] != '\n') {
    return Error(ErrorCode::kInternal, "a data block without its \\r\\n (out of step?)");
  }
  begin_ += n + 2;
  return std::string_view(start, n);
}

Result<std::string_view> Connection::ReadSome() {
  if (begin_ == end_) {
    if (Status s = Fill(); !s.ok()) return s.error();
  }
  const std::string_view some(buffer_.data() + begin_, end_ - begin_);
  begin_ = end_;
  return some;
}

}  // namespace hourglass::net
