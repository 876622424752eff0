// A real Redis for tests: started on a free loopback port (no persistence, its files in a
// temporary directory), stopped by its PID; and a real Redis Cluster of three such masters.
//
//   RedisServer server;                    // starts it, or the test fails
//   ASSERT_TRUE(server.running()) << server.error();
//   options.servers = {server.address()};
//   server.Command({"INFO", "stats"});    // through redis-cli
//
//   RedisCluster cluster;                  // three masters, every slot served
//   ASSERT_TRUE(cluster.ready()) << cluster.error();
//   cluster.MoveSlot(slot, 0, 1);          // a resharding, as redis-cli does it
//
// Thread-safety: one thread drives a server.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace hourglass::testing {

struct RedisServerOptions {
  bool cluster = false;       // cluster-enabled yes
  int maxmemory_mb = 0;       // 0: no limit
  std::string policy = "";    // maxmemory-policy, e.g. "allkeys-lru"
  std::string password = "";  // requirepass
};

class RedisServer {
 public:
  explicit RedisServer(RedisServerOptions options = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts the server again on the same port (and directory); true when it answers PING.
  bool Start();
  // SHUTDOWN NOSAVE's equivalent: SIGTERM, then waits for the process to exit.
  void Stop();
  // SIGKILL, then waits.
  void Kill();
  // SIGSTOP until every thread has stopped: connections stay open and nothing answers.
  bool Freeze();
  void Thaw();

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // One command through redis-cli (raw output, trailing newline removed); "" when it fails.
  std::string Command(const std::vector<std::string>& args) const;
  // A numeric field of INFO ("evicted_keys", "used_memory"), or -1.
  long long Info(const std::string& field) const;
  const std::string& error() const { return error_; }

 private:
  RedisServerOptions options_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string error_;
};

class RedisCluster {
 public:
  // Three masters on free loopback ports, slots shared by redis-cli --cluster create.
  RedisCluster();
  bool ready() const { return ready_; }
  const std::string& error() const { return error_; }
  RedisServer& node(size_t i) { return *nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  // "h:p,h:p,h:p", every node.
  std::string seeds() const;
  // The node (index) that serves `slot` now, or -1.
  int OwnerOf(int slot) const;
  // Moves `slot` to node `to` as redis-cli does: IMPORTING/MIGRATING, MIGRATE of its keys, then
  // SETSLOT NODE everywhere. With `finish` false it stops after the keys moved, leaving the slot
  // migrating (clients are sent to the new node with ASK); Finish(slot, to) ends it.
  bool MoveSlot(int slot, size_t to, bool finish = true);
  bool Finish(int slot, size_t to);
  // The slot of `key` as the cluster computes it (CLUSTER KEYSLOT).
  int KeySlot(const std::string& key) const;
  // Node `i`'s cluster id (CLUSTER MYID).
  std::string NodeId(size_t i) const;

 private:
  bool WaitUntilOk();
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  bool ready_ = false;
  std::string error_;
};

}  // namespace hourglass::testing
