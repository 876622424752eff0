// A real hourglass::Service in this test's process, as `hourglass serve` assembles it, on a clock
// the test moves: its engine and its store's buckets follow the ManualClock, its HTTP API
// listens on a free loopback port for a real HTTP client (HttpClient), and what it logs is kept.
//
//   ServiceUnderTest service("memcached://127.0.0.1:11211", options, FromUnix(1'700'000'000));
//   ASSERT_TRUE(service.ready()) << service.error();
//   HttpClient client(service.port());
//   service.clock().Advance(Seconds{60});
//
// Thread-safety: one test thread drives it; the service serves on threads of its own.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "hourglass/clock.h"
#include "hourglass/service.h"
#include "hourglass/store.h"
#include "hourglass/store_factory.h"

namespace hourglass::testing {

class ServiceUnderTest {
 public:
  // Opens the store at `store_url` (a memcached, a Redis, "memory://", an LMDB directory: the
  // memory store expires keys on the manual clock) with `store_options` (its servers' transitions
  // logged as `hourglass serve` logs them) and starts the service on it; options.http's host and
  // port are set to a free loopback port.
  ServiceUnderTest(const std::string& store_url, ServiceOptions options, Instant start,
                   StoreOptions store_options = DefaultStoreOptions());
  // On `store` and `clock`, the test's own (both must outlive the service), which other services
  // may share: services of one deployment, on one store (a MemoryStore on `clock` expires its
  // keys as the clock moves, where a server's TTLs would run in real time).
  ServiceUnderTest(Store& store, ManualClock& clock, ServiceOptions options);
  // Timeouts of 2 s: a loaded machine must not fail a request.
  static StoreOptions DefaultStoreOptions();
  // Stops the service and waits for its threads.
  ~ServiceUnderTest();
  ServiceUnderTest(const ServiceUnderTest&) = delete;
  ServiceUnderTest& operator=(const ServiceUnderTest&) = delete;

  bool ready() const { return service_ != nullptr; }
  const std::string& error() const { return error_; }  // why it is not ready
  int port() const { return ready() ? service_->http_port() : 0; }
  ManualClock& clock() { return *base_; }
  Service& service() { return *service_; }
  Store& store() { return *store_; }
  // Every line logged so far, one per line, as "<the clock's Unix time> <level> <line>" (the
  // text log's shape: "1800000010 warning memcached ... evicted ...").
  std::string log() const;
  // Whether log() contains `text` within `timeout` (polled).
  bool WaitForLog(const std::string& text,
                  std::chrono::milliseconds timeout = std::chrono::milliseconds{5000}) const;
  // Stops the service (drained) and returns what Service::Run returned.
  uint64_t Stop();

 private:
  // Starts the service on store_ and clock_.
  void Start(ServiceOptions options);
  // Keeps a line the service logged.
  void Log(LogLevel level, const std::string& line);

  ManualClock own_clock_{Instant{}};
  ManualClock* base_ = &own_clock_;
  OffsetClock clock_{*base_};
  std::unique_ptr<Store> own_store_;
  Store* store_ = nullptr;
  ServiceLog log_to_text_ = [this](LogLevel level, const std::string& line) { Log(level, line); };
  std::unique_ptr<Service> service_;
  std::string error_;
  mutable std::mutex log_mu_;
  std::string log_;  // guarded by log_mu_
  std::thread serving_;
  uint64_t refused_ = 0;
};

}  // namespace hourglass::testing
