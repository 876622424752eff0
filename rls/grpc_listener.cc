#include "hourglass/grpc_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grpcpp/server_posix.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "hourglass/descriptor_budget.h"
#include "hourglass/spare_descriptor.h"

namespace hourglass {
namespace {

// Milliseconds since `fd`'s connection last received data (or was established).
uint32_t MillisSinceReceived(int fd) {
  tcp_info info{};
  socklen_t length = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return 0;
  return info.tcpi_last_data_recv;
}

Result<int> Listen(const std::string& host, uint16_t port) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof *v4;
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof *v6;
  } else {
    return InvalidArgument(fmt::format(
        "gRPC listen address \"{}\" is not an IP address (e.g. 127.0.0.1 or ::1)", host));
  }
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int on = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 || listen(fd, SOMAXCONN) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return Error(ErrorCode::kUnavailable,
                 fmt::format("cannot listen for gRPC on {}:{}: {}", host, port, strerror(err)));
  }
  return fd;
}

uint16_t BoundPort(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  return ntohs(storage.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
}

}  // namespace

struct GrpcListener::Impl {
  Impl(GrpcListenerOptions o, grpc::Server& s, int listen)
      : options(std::move(o)), server(s), listen_fd(listen), port(BoundPort(listen)) {}
  ~Impl() {
    for (auto& [watch, shut] : watched) close(watch);
    for (int fd : {listen_fd, epoll_fd, stop_fd}) {
      if (fd >= 0) close(fd);
    }
  }

  Status Start();
  void Run();
  void AcceptAll();
  // Hands `fd` to the server, watching a duplicate; false (fd closed) when that cannot be done.
  void HandOver(int fd);
  // Shuts down the connection idle longest, if one is idle at least min_idle.
  bool MakeRoom();
  // Out of descriptors: accepts and closes one waiting connection on the spare descriptor (its
  // client sees the connection closed at once, not a wait). False when none was refused.
  bool RefuseWithReserve();
  void Tell(ConnectionEvent event) const {
    if (options.on_connection_event) options.on_connection_event(event);
  }
  void Forget(int watch);
  size_t Staying() const { return watched.size() - leaving; }
  // Connections closed to make room whose descriptors gRPC has not let go of yet, at most.
  size_t MaxLeaving() const { return GrpcMaxLeaving(options.max_connections); }

  GrpcListenerOptions options;
  grpc::Server& server;
  int listen_fd;
  int epoll_fd = -1;
  int stop_fd = -1;
  SpareDescriptor spare;
  uint16_t port;
  // Duplicates of the connections handed over, and whether each was shut down to make room.
  // Touched by the listener's thread only.
  std::unordered_map<int, bool> watched;
  size_t leaving = 0;
  std::atomic<size_t> open{0};  // watched.size(), for other threads
  std::atomic<size_t> most{0};  // the largest `open` so far
  std::thread thread;
};

Status GrpcListener::Impl::Start() {
  epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event listen_event{.events = EPOLLIN, .data = {.fd = listen_fd}};
  epoll_event stop_event{.events = EPOLLIN, .data = {.fd = stop_fd}};
  if (epoll_fd < 0 || stop_fd < 0 ||
      epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &listen_event) != 0 ||
      epoll_ctl(epoll_fd, EPOLL_CTL_ADD, stop_fd, &stop_event) != 0) {
    return Error(ErrorCode::kResourceExhausted,
                 fmt::format("gRPC listener: cannot wait for connections: {}", strerror(errno)));
  }
  thread = std::thread([this] { Run(); });
  return {};
}

void GrpcListener::Impl::Run() {
  epoll_event events[64];
  for (;;) {
    const int n = epoll_wait(epoll_fd, events, 64, -1);
    if (n < 0 && errno != EINTR) return;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd) return;
      if (fd == listen_fd) {
        AcceptAll();
      } else {
        Forget(fd);  // a hang-up or an error: gRPC closed the connection, or the peer reset it
      }
    }
  }
}

void GrpcListener::Impl::AcceptAll() {
  for (;;) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if ((err == EMFILE || err == ENFILE) && RefuseWithReserve()) {
        Tell(ConnectionEvent::kRefusedDescriptors);
        continue;
      }
      if (err != EAGAIN && err != EWOULDBLOCK) {
        // Out of descriptors with no reserve: wait rather than spin on a listener still ready.
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
      }
      return;
    }
    if (Staying() >= options.max_connections) {
      const bool room = leaving < MaxLeaving() && MakeRoom();
      Tell(room ? ConnectionEvent::kMadeRoom : ConnectionEvent::kRefusedBusy);
      if (!room) {
        close(fd);
        continue;
      }
    }
    HandOver(fd);
  }
}

void GrpcListener::Impl::HandOver(int fd) {
  const int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  const int watch = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  // No events asked: a hang-up and an error are reported anyway, and nothing else is wanted.
  epoll_event event{.events = 0, .data = {.fd = watch}};
  if (watch < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, watch, &event) != 0) {
    if (watch >= 0) close(watch);
    close(fd);
    return;
  }
  watched.emplace(watch, false);
  open = watched.size();
  if (watched.size() > most) most = watched.size();
  grpc::AddInsecureChannelFromFd(&server, fd);
}

bool GrpcListener::Impl::RefuseWithReserve() {
  bool refused = false;
  const bool spare_kept = spare.Lend([&] {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    refused = fd >= 0;
    if (refused) close(fd);
  });
  return refused && spare_kept;
}

bool GrpcListener::Impl::MakeRoom() {
  int oldest = -1;
  uint32_t oldest_idle = 0;
  for (auto& [watch, shut] : watched) {
    if (shut) continue;
    const uint32_t idle = MillisSinceReceived(watch);
    if (idle >= options.min_idle.count() && (oldest < 0 || idle > oldest_idle)) {
      oldest = watch;
      oldest_idle = idle;
    }
  }
  if (oldest < 0) return false;
  watched[oldest] = true;
  ++leaving;
  shutdown(oldest, SHUT_RDWR);  // gRPC reads the end of the stream and closes its side
  return true;
}

void GrpcListener::Impl::Forget(int watch) {
  auto it = watched.find(watch);
  if (it == watched.end()) return;
  if (it->second) --leaving;
  epoll_ctl(epoll_fd, EPOLL_CTL_DEL, watch, nullptr);
  close(watch);
  watched.erase(it);
  open = watched.size();
}

Result<std::unique_ptr<GrpcListener>> GrpcListener::Create(GrpcListenerOptions options,
                                                           grpc::Server& server) {
  if (options.max_connections < 1) return InvalidArgument("gRPC max_connections must be >= 1");
  Result<int> listen = Listen(options.host, options.port);
  if (!listen.ok()) return listen.error();
  auto impl = std::make_unique<Impl>(std::move(options), server, *listen);
  if (Status s = impl->Start(); !s.ok()) return s.error();
  return std::unique_ptr<GrpcListener>(new GrpcListener(std::move(impl)));
}

GrpcListener::GrpcListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcListener::~GrpcListener() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = write(impl_->stop_fd, &one, sizeof one);
  impl_->thread.join();
}

uint16_t GrpcListener::port() const { return impl_->port; }

size_t GrpcListener::connections() const { return impl_->open; }

size_t GrpcListener::most_connections() const { return impl_->most; }

}  // namespace hourglass
