// A Store on Redis (>= 6.2) or Redis Cluster, through hiredis's protocol code over the same pooled,
// time-bounded connections as the memcached store.
//
// Every batch is one EVALSHA of a Lua script loaded on each connection (its guards, its writes in
// order, then its reads, atomically on the server): one command, one round trip, and batches
// to many servers leave before any answer is read. Keys are `{<group>}...`: in Redis Cluster every
// key of one event+feature hashes to one slot (a hash tag), so a check talks to one node; the
// store follows MOVED and ASK redirections (a resharding) and TRYAGAIN. Several standalone servers
// share the groups by rendezvous hashing of the group. Seconds, minutes and hours of an hour live
// in one hash, as memcached's packed layout keys them, but kept folded: a field for the hour and
// one per minute holding its seconds, so a check reads a few fields and the script's work stays
// flat however busy the hour; generations, day ledgers and penalties are counters (INCRBY). A
// server that fails fails fast for retry_timeout, then is tried again; features never move to
// another server.
//
// Unlike memcached, Redis evaluates a batch atomically: the store takes conditional batches
// (Batch::guards), so a check can be decided and recorded on the server in one step.
//
//   Result<RedisOptions> options = ParseRedisUrl("redis://10.0.0.5:6379");
//   Result<std::unique_ptr<RedisStore>> store = RedisStore::Create(*options);
//
// Thread-safety: all methods may be called from many threads at once (a pool of pool_size
// connections per server or cluster node).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/server_transition.h"
#include "hourglass/status.h"
#include "hourglass/store.h"

namespace hourglass {

struct RedisOptions {
  // "host:port" (or "[v6]:port"). Standalone: the servers that share the groups, listed the same
  // way on every client. Cluster: any nodes of it, asked for the slot map in turn.
  std::vector<std::string> servers = {"127.0.0.1:6379"};
  bool cluster = false;
  std::string username;   // an ACL user (AUTH user password); empty: the default user
  std::string password;   // AUTH; empty: none
  uint32_t database = 0;  // SELECT, standalone only (a cluster has database 0 alone)
  std::chrono::milliseconds connect_timeout{100};  // to open a connection
  // The whole exchange with a server (a request and its replies), however it spreads its bytes.
  std::chrono::milliseconds io_timeout{100};
  std::chrono::seconds retry_timeout{1};  // after a failure, the server fails fast this long
  uint32_t pool_size = 8;                 // connections per server, shared by all threads
  std::chrono::seconds pool_wait{1};      // a thread's wait for a free connection; 0: no wait
  // A pooled connection idle at least this long is checked for a close by the server first.
  std::chrono::milliseconds idle_check_after{500};
  // Told when a server fails (refused, reset, timed out; a pooled connection closed or reset by
  // the server only when connecting again fails too) and when it answers again.
  ServerTransitionHandler on_transition = nullptr;
};

// "redis://[[user]:password@]host:port[,host:port...][/db]" (standalone servers) or
// "redis+cluster://[[user]:password@]host:port[,host:port...]" (seed nodes of a cluster). The
// password is percent-decoded. kInvalidArgument naming the URL and the expected form.
Result<RedisOptions> ParseRedisUrl(std::string_view url);

class RedisStore final : public Store {
 public:
  // Checks the options (no connection is opened until the first batch; a cluster's slot map is
  // asked for then). `clock` (which must outlive the store) gives the monotonic time of the
  // fail-fast window and idle checks.
  static Result<std::unique_ptr<RedisStore>> Create(const RedisOptions& options,
                                                    const Clock& clock = SystemClock::Get());
  // Flushes, so fire-and-forget replies are known to have arrived when a process exits.
  ~RedisStore() override;

  // A failure after the command was sent says that its writes may have been applied.
  Result<std::vector<uint64_t>> Apply(const Batch& batch) override;
  // One write and one read per server, the servers' requests sent before any reply is read;
  // redirected batches are sent again where the cluster says.
  std::vector<Result<std::vector<uint64_t>>> ApplyMany(std::span<const Batch> batches) override;
  // One write per server; replies are read by each connection's next user (a redirected one is
  // sent again, once, where the cluster says).
  std::vector<Status> Send(std::span<const Batch> batches) override;
  Status Delete(const std::string& group, std::span<const std::string> keys) override;
  uint64_t Flush() override;
  uint64_t unconfirmed_failures() const override;
  // INFO of every server (every master of a cluster): evicted_keys, used_memory, maxmemory, keys,
  // process_id, the server's time.
  std::vector<Result<ServerStats>> Stats() override;
  // GET and SET of kNoteKey on each server; none on a cluster (a key lives where its slot does).
  std::vector<Result<ServerNote>> Notes() override;
  Status WriteNote(const std::string& server, std::string_view text) override;
  bool conditional_batches() const override { return true; }
  std::string Describe() const override;

  // The server ("host:port") that holds `group`'s keys (a cluster: as its slot map says now).
  Result<std::string> ServerFor(const std::string& group);
  std::vector<std::string> ServersOf(const std::string& group) override;

 private:
  struct Impl;
  explicit RedisStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass
