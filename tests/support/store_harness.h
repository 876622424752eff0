// Harnesses that give tests a real Store of each kind plus a way to let time pass for it:
// the in-memory store on a ManualClock (time advances instantly), and a MemcachedStore or a
// RedisStore on a real memcached, Redis or Redis Cluster started on free loopback ports (time
// really passes).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "hourglass/lmdb_store.h"
#include "hourglass/memcached_store.h"
#include "hourglass/memory_store.h"
#include "hourglass/redis_store.h"
#include "hourglass/replicated_store.h"
#include "memcached_server.h"
#include "redis_server.h"

namespace hourglass::testing {

class StoreHarness {
 public:
  virtual ~StoreHarness() = default;
  virtual Store& store() = 0;
  // The clock the engine should use with this store.
  virtual Clock& clock() = 0;
  // Lets `d` pass for the store's TTLs.
  virtual void Advance(Seconds d) = 0;
  virtual std::string name() const = 0;
  // The manual clock the store expires values on, if it runs on one (the memory and LMDB stores
  // here); null for stores that live in real time.
  virtual ManualClock* store_clock() { return nullptr; }
};

class MemoryHarness final : public StoreHarness {
 public:
  // `conditional`: the store takes guarded batches (atomic checks), as Redis and LMDB do.
  explicit MemoryHarness(bool conditional = false)
      : clock_(FromUnix(1'700'000'000)), store_(clock_, conditional), conditional_(conditional) {}
  Store& store() override { return store_; }
  Clock& clock() override { return clock_; }
  void Advance(Seconds d) override { clock_.Advance(d); }
  std::string name() const override { return conditional_ ? "memory_conditional" : "memory"; }
  ManualClock& manual_clock() { return clock_; }
  ManualClock* store_clock() override { return &clock_; }

 private:
  ManualClock clock_;
  MemoryStore store_;
  bool conditional_;
};

// One LMDB environment in a temporary directory, on a manual clock (time advances instantly).
class LmdbHarness final : public StoreHarness {
 public:
  LmdbHarness() : clock_(FromUnix(1'700'000'000)) {
    char dir[] = "/tmp/hourglass-lmdb-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      ADD_FAILURE() << "cannot make a directory for LMDB";
      return;
    }
    path_ = dir;
    Result<std::unique_ptr<LmdbStore>> store =
        LmdbStore::Create(LmdbOptions{.path = path_, .map_bytes = uint64_t{256} << 20}, clock_);
    if (!store.ok()) {
      ADD_FAILURE() << store.error().ToString();
      return;
    }
    store_ = std::move(*store);
  }
  ~LmdbHarness() override {
    store_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  Store& store() override { return *store_; }
  Clock& clock() override { return clock_; }
  void Advance(Seconds d) override { clock_.Advance(d); }
  std::string name() const override { return "lmdb"; }
  ManualClock* store_clock() override { return &clock_; }
  const std::string& path() const { return path_; }
  LmdbStore& lmdb() { return *store_; }

 private:
  ManualClock clock_;
  std::string path_;
  std::unique_ptr<LmdbStore> store_;
};

// The manual clock an engine over `harness` runs on, set to `start`: the store's own when it
// expires values on one (memory, LMDB), else one created into `own` (memcached and Redis expire
// them in real time).
inline ManualClock& ManualClockFor(StoreHarness& harness, std::unique_ptr<ManualClock>& own,
                                   Instant start) {
  if (ManualClock* clock = harness.store_clock()) {
    clock->Set(start);
    return *clock;
  }
  own = std::make_unique<ManualClock>(start);
  return *own;
}

// `options` with timeouts a loaded 2-core box (sanitizer builds, tests in parallel) does not
// reach. With the defaults (100 ms), a stall there timed a check out; the engine failed it open,
// and the test read that as an over-admission. Tests of the timeouts set their own.
inline MemcachedOptions PatientMemcachedOptions(MemcachedOptions options = {}) {
  options.io_timeout = std::chrono::milliseconds{2000};
  options.connect_timeout = std::chrono::milliseconds{2000};
  return options;
}

// Real memcached, real time.
class MemcachedHarness final : public StoreHarness {
 public:
  explicit MemcachedHarness(MemcachedOptions options = PatientMemcachedOptions())
      : layout_(options.layout) {
    if (!server_.running()) {
      ADD_FAILURE() << "cannot start memcached: " << server_.error();
      return;
    }
    options.servers = {server_.address()};
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
    if (!store.ok()) {
      ADD_FAILURE() << store.error().ToString();
      return;
    }
    store_ = std::move(*store);
  }
  Store& store() override { return *store_; }
  Clock& clock() override { return clock_; }
  void Advance(Seconds d) override { std::this_thread::sleep_for(d); }
  std::string name() const override {
    return layout_ == MemcachedLayout::kPacked ? "memcached_packed" : "memcached";
  }
  MemcachedServer& server() { return server_; }
  MemcachedStore& memcached() { return *store_; }

 private:
  MemcachedLayout layout_;
  MemcachedServer server_;
  SystemClock clock_;
  std::unique_ptr<MemcachedStore> store_;
};

// Three real memcached servers keeping two copies of every count (ReplicatedStore, the packed
// layout), real time.
class ReplicatedHarness final : public StoreHarness {
 public:
  ReplicatedHarness() {
    MemcachedOptions options = PatientMemcachedOptions();
    options.servers.clear();
    for (MemcachedServer& server : servers_) {
      if (!server.running()) {
        ADD_FAILURE() << "cannot start memcached: " << server.error();
        return;
      }
      options.servers.push_back(server.address());
    }
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
    if (!store.ok()) {
      ADD_FAILURE() << store.error().ToString();
      return;
    }
    Result<std::unique_ptr<ReplicatedStore>> replicated =
        ReplicatedStore::Create(std::move(*store), 2);
    if (!replicated.ok()) {
      ADD_FAILURE() << replicated.error().ToString();
      return;
    }
    store_ = std::move(*replicated);
  }
  Store& store() override { return *store_; }
  Clock& clock() override { return clock_; }
  void Advance(Seconds d) override { std::this_thread::sleep_for(d); }
  std::string name() const override { return "memcached_replicated"; }
  MemcachedServer& server(size_t i) { return servers_[i]; }

 private:
  MemcachedServer servers_[3];
  SystemClock clock_;
  std::unique_ptr<ReplicatedStore> store_;
};

// Real Redis (one server, or a cluster of three masters), real time.
class RedisHarness final : public StoreHarness {
 public:
  explicit RedisHarness(bool cluster) : cluster_(cluster) {
    RedisOptions options;
    options.io_timeout = std::chrono::milliseconds{2000};  // a loaded 2-core box must not fail
    options.connect_timeout = std::chrono::milliseconds{2000};
    if (cluster) {
      cluster_servers_ = std::make_unique<RedisCluster>();
      if (!cluster_servers_->ready()) {
        ADD_FAILURE() << "cannot start a Redis Cluster: " << cluster_servers_->error();
        return;
      }
      options.cluster = true;
      options.servers = {cluster_servers_->node(0).address(), cluster_servers_->node(1).address()};
    } else {
      server_ = std::make_unique<RedisServer>();
      if (!server_->running()) {
        ADD_FAILURE() << "cannot start redis-server: " << server_->error();
        return;
      }
      options.servers = {server_->address()};
    }
    Result<std::unique_ptr<RedisStore>> store = RedisStore::Create(options);
    if (!store.ok()) {
      ADD_FAILURE() << store.error().ToString();
      return;
    }
    store_ = std::move(*store);
  }
  Store& store() override { return *store_; }
  Clock& clock() override { return clock_; }
  void Advance(Seconds d) override { std::this_thread::sleep_for(d); }
  std::string name() const override { return cluster_ ? "redis_cluster" : "redis"; }
  RedisServer& server() { return *server_; }
  RedisCluster& cluster() { return *cluster_servers_; }
  RedisStore& redis() { return *store_; }

 private:
  bool cluster_;
  std::unique_ptr<RedisServer> server_;
  std::unique_ptr<RedisCluster> cluster_servers_;
  SystemClock clock_;
  std::unique_ptr<RedisStore> store_;
};

// "memory", "memory_conditional" (taking guarded batches), "memcached" (the counters layout),
// "memcached_packed" (the packed layout, the default), "memcached_replicated" (two copies on three
// servers), "redis", "redis_cluster" or "lmdb"; any other name fails the test and gives nullptr.
inline std::unique_ptr<StoreHarness> MakeHarness(const std::string& kind) {
  if (kind == "memory") return std::make_unique<MemoryHarness>();
  if (kind == "memory_conditional") return std::make_unique<MemoryHarness>(true);
  if (kind == "memcached") {
    return std::make_unique<MemcachedHarness>(
        PatientMemcachedOptions({.layout = MemcachedLayout::kCounters}));
  }
  if (kind == "memcached_packed") {
    return std::make_unique<MemcachedHarness>(
        PatientMemcachedOptions({.layout = MemcachedLayout::kPacked}));
  }
  if (kind == "memcached_replicated") return std::make_unique<ReplicatedHarness>();
  if (kind == "redis") return std::make_unique<RedisHarness>(false);
  if (kind == "lmdb") return std::make_unique<LmdbHarness>();
  if (kind == "redis_cluster") return std::make_unique<RedisHarness>(true);
  ADD_FAILURE() << "unknown store harness \"" << kind
                << "\": use memory, memory_conditional, memcached, memcached_packed, "
                   "memcached_replicated, redis, redis_cluster or lmdb";
  return nullptr;
}

}  // namespace hourglass::testing
