// Shared by the network stores: the connections of one server, shared by every thread.
//
// A Lease borrows one connection and hands it back when it ends. After a transport failure
// (refused, reset, timed out) the server fails fast for `retry_timeout`, then is tried again; a
// connection that sat idle `idle_check_after` is checked for a close by the server before use.
// A pooled connection that the server closed or reset while in use (a restart under traffic)
// fails only its own exchange: the next lease connects anew, and the server fails fast only if
// that fails too, so a server that is back at once is not skipped for retry_timeout.
// Those two read the injected clock's monotonic time; the waits themselves (connect, I/O, a free
// connection) are bounded by the operating system in real time.
//
//   Lease lease(pool);
//   if (Status s = lease.Acquire(); !s.ok()) return s.error();
//   if (Status s = lease->socket->Send(request); !s.ok()) return lease.Fail(s.error());
//
// Thread-safety: a ServerPool may be used from many threads; a Lease by one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/net/connection.h"
#include "hourglass/net/servers.h"
#include "hourglass/server_transition.h"
#include "hourglass/status.h"

namespace hourglass::net {

struct PooledConnection;

struct PoolOptions {
  std::chrono::milliseconds connect_timeout{100};  // to open a connection
  std::chrono::milliseconds io_timeout{100};       // each wait for the server to answer
  std::chrono::seconds retry_timeout{1};  // after a failure, the server fails fast this long
  uint32_t pool_size = 8;                 // connections per server
  std::chrono::seconds pool_wait{1};      // a thread's wait for a free connection; 0: no wait
  // A connection idle at least this long is checked for a close by the server before it is used.
  std::chrono::milliseconds idle_check_after{500};
  // Called when the server fails after having answered (or at its first failure) and when it
  // answers again after a failure; on the thread that saw it, outside the pool's lock.
  ServerTransitionHandler on_transition = nullptr;
  // Run on every new connection before its first use (a password, scripts to load, the state a
  // protocol keeps per connection), within one exchange: an error fails the connection. Empty:
  // nothing to run.
  std::function<Status(PooledConnection&)> on_open = nullptr;
};

// What a protocol keeps per connection beyond the socket (a reply parser's buffered bytes), made
// by PoolOptions::on_open.
struct ProtocolState {
  virtual ~ProtocolState() = default;
};

// A connection and what the protocol still owes on it.
struct PooledConnection {
  std::unique_ptr<Connection> socket;
  // Answers owed by requests sent without waiting (memcached: their "MN"; Redis: their replies),
  // read by the connection's next user before its own.
  int unread = 0;
  std::unique_ptr<ProtocolState> protocol;  // null unless on_open made one
  MonoTime idle_since{};                    // when it was last handed back
};

class ServerPool {
 public:
  // `kind` names the server in messages ("memcached", "redis").
  ServerPool(ServerAddress address, PoolOptions options, const Clock& clock,
             std::string_view kind = "memcached");

  const ServerAddress& address() const { return address_; }
  // "<kind> host:port" ("memcached 10.0.0.1:11211"), the prefix of every message about it.
  const std::string& name() const { return name_; }
  // Calls `keep` on every idle connection (under the pool's lock); a connection for which it
  // returns false is closed.
  void SweepIdle(const std::function<bool(PooledConnection&)>& keep);

 private:
  friend class Lease;
  ServerAddress address_;
  std::string kind_;
  std::string name_;
  PoolOptions options_;
  const Clock& clock_;

  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<PooledConnection>> idle_;  // guarded by mu_
  uint32_t open_ = 0;                                    // idle + leased; guarded by mu_
  MonoTime retry_at_{};  // after a failure, fail fast until then; guarded by mu_
  std::string failure_;  // what failed; guarded by mu_
  bool down_ = false;    // failed, and has not answered since; guarded by mu_
};

// One connection of a ServerPool, returned to its idle list when the lease ends unless dropped.
class Lease {
 public:
  explicit Lease(ServerPool& pool) : pool_(pool) {}
  ~Lease();
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  // kUnavailable while the server fails fast or every connection stays busy for pool_wait;
  // connect errors otherwise.
  Status Acquire();
  PooledConnection& operator*() const { return *connection_; }
  PooledConnection* operator->() const { return connection_.get(); }
  ServerPool& pool() const { return pool_; }
  // Whether it holds a connection: acquired, and not dropped by Fail since.
  bool held() const { return connection_ != nullptr; }

  // Drops the connection (its state is unknown after `error`); a transport failure also drops the
  // pool's idle connections, which are likely dead too, and makes the server fail fast for
  // retry_timeout, unless it was a close or reset (kUnavailable) of a connection taken from the
  // pool: the server may have restarted and be back, so the next lease connects to find out.
  // A local error (kResourceExhausted: out of descriptors) does neither: the server is fine.
  // Returns the error, its message starting with the server's name.
  Error Fail(const Error& error);

 private:
  // Takes an idle connection that is still open; holds the pool's lock.
  bool TakeIdle();
  Status Open();

  ServerPool& pool_;
  std::unique_ptr<PooledConnection> connection_;
  bool reused_ = false;  // connection_ came from the idle list: it answered before
};

}  // namespace hourglass::net
