// The file descriptors of a service process: raise the soft limit as far as the hard limit allows,
// then fit the connection caps under it, so that a flood of clients can never take the
// descriptors the store's own connections need.
//
//   const size_t limit = RaiseOpenFileLimit();
//   DescriptorPlan plan = FitConnections(limit, {.store = 8, .http = 1024, .grpc = 1024});
//   for (const std::string& w : plan.warnings) Log("warning: " + w);
//   if (!plan.fits) Fail(...);  // not even the store's connections fit
//
// Thread-safety: RaiseOpenFileLimit changes the process; call it at start, before other threads.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hourglass {

// HTTP connections closed to make room that may not be gone yet: the most the HTTP server lets be
// on their way out at once (it stops accepting until one is gone).
inline constexpr size_t kHttpMaxLeaving = 16;

// Descriptors a service needs besides its connections and its I/O threads': standard streams,
// the listeners, the policy and configuration files read on reload, the HTTP connections on their
// way out (kHttpMaxLeaving), and one kept in reserve to refuse a connection when all others are
// taken.
inline constexpr size_t kDescriptorOverhead = 64;
// An I/O thread's own: its epoll, eventfd and timerfd.
inline constexpr size_t kDescriptorsPerIoThread = 3;

// gRPC connections closed to make room that may not be gone yet: the most the gRPC server lets be
// on their way out at once beside a cap of `cap`.
inline size_t GrpcMaxLeaving(size_t cap) { return cap / 8 > 4 ? cap / 8 : 4; }
// The descriptors a gRPC connection cap may take: one per connection, for the cap and for those
// still on their way out.
inline size_t GrpcDescriptors(size_t cap) { return cap == 0 ? 0 : cap + GrpcMaxLeaving(cap); }

struct DescriptorNeeds {
  size_t store = 0;       // connections the store may open (per server pool size x servers)
  size_t http = 0;        // the HTTP connection cap
  size_t grpc = 0;        // the gRPC connection cap; 0 without the gRPC listener
  size_t io_threads = 0;  // the HTTP and gRPC servers' I/O threads together
};

struct DescriptorPlan {
  bool fits = true;  // false: the store's connections and the overhead alone exceed the limit
  size_t http = 0;   // caps that fit (each at least 1 when `fits`)
  size_t grpc = 0;
  std::vector<std::string> warnings;  // each names the limit, the cap lowered and the fix
};

// Raises the soft RLIMIT_NOFILE to the hard limit. Returns the soft limit now in force.
size_t RaiseOpenFileLimit();

// The caps of `needs` under `limit` open descriptors: unchanged when they fit beside the store
// and the overhead, otherwise lowered in proportion, with a warning.
DescriptorPlan FitConnections(size_t limit, const DescriptorNeeds& needs);

}  // namespace hourglass
