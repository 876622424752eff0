// A real memcached for tests: started on a free loopback port, stopped by its PID.
//
//   MemcachedServer server;            // starts it, or the test fails
//   ASSERT_TRUE(server.running());
//   options.servers = {server.address()};
//   server.Stop(); server.Start();     // same port: a restart
//
// Thread-safety: one thread drives a server.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hourglass::testing {

class MemcachedServer {
 public:
  // Starts memcached on `host` ("127.0.0.1" or "::1") and a free port (as root with -u root),
  // with `megabytes` of memory for items (-m; memcached's least is 8) and `extra_args` (e.g.
  // "-M": no eviction, a full server refuses to store).
  explicit MemcachedServer(std::string host = "127.0.0.1", int megabytes = 256,
                           std::vector<std::string> extra_args = {});
  ~MemcachedServer();
  MemcachedServer(const MemcachedServer&) = delete;
  MemcachedServer& operator=(const MemcachedServer&) = delete;

  // Starts the server again on the same port; true when it accepts connections.
  bool Start();
  // SIGTERM, then waits for the process to exit (memcached takes about a second).
  void Stop();
  // SIGKILL, then waits: an abrupt crash, and the quick way to tear down.
  void Kill();

  // SIGSTOP, and waits until every thread of the server has stopped: connections stay open and
  // nothing answers, like a hung host. Thaw() sends SIGCONT.
  bool Freeze();
  void Thaw();

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // "127.0.0.1:PORT" or "[::1]:PORT".
  std::string address() const {
    return (host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_) + ":" +
           std::to_string(port_);
  }
  // Sends "stats\r\n" and returns the value of `name` (e.g. "curr_items"), or -1.
  long long Stat(const std::string& name) const;
  // Sends raw ASCII commands and returns their whole answer, however long the server takes (up
  // to a minute): a meta no-op ("mn") follows them, and its "MN" marks the end (it is not
  // returned). "" when the server cannot be reached.
  std::string Raw(const std::string& command) const;
  // Sends `request` as it is and returns the answer once `done` says it is whole (or after a
  // minute).
  std::string RawUntil(const std::string& request,
                       const std::function<bool(const std::string&)>& done) const;
  // Stores `items` small items (a bucket's size, keys "<prefix><i>") in one quiet request; true
  // once the server answered after them. Enough of them make a small server (-m 8) evict.
  // `reads` > 0 reads each that many times after (items in use, as a bucket is, which memcached's
  // segmented LRU protects against one-time writes).
  bool Fill(int items, const std::string& prefix = "fill:", int reads = 0) const;
  // Evicts every item whose key contains `needle` (URL-encoded as memcached lists keys: letters,
  // digits and "-_.~" as they are) by LRU, as a flood of other items would on a small server:
  // stores items of their sizes (lru_crawler metadump), each read twice (in use, as the flooded
  // items were), until none is left, at most `rounds` times. True once none is left.
  bool EvictKeysContaining(const std::string& needle, int rounds = 40) const;
  // Every item's metadata (`lru_crawler metadump all`, up to its "END"), asked again while the
  // crawler is busy; nullopt when it cannot be had within a minute.
  std::optional<std::string> MetaDump() const;
  // The reason the last Start() failed, for assertion messages.
  const std::string& error() const { return error_; }

 private:
  std::string host_;
  int port_ = 0;
  int megabytes_ = 256;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
  std::string error_;
};

}  // namespace hourglass::testing
