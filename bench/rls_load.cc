// rls_load: a load driver for Envoy's RateLimitService/ShouldRateLimit, built from the upstream
// definitions like an Envoy would be. It keeps --concurrency requests in flight on one channel
// for --seconds, each asking for one client address of the real log at random under every
// --key, and prints one JSON line: requests, seconds, rps, p50_us, p99_us, max_us, over_limit,
// errors. --value asks for one value (one client) every time instead; --prefix makes every
// value new to the servers (a fresh set of clients per run).
//   rls_load --target 127.0.0.1:8081 --domain bench --key per_second --key per_day --log LOG
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace {

namespace rls = envoy::service::ratelimit::v3;
using Clock = std::chrono::steady_clock;

std::vector<std::string> ClientAddresses(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> addresses;
  for (std::string line; std::getline(in, line);) {
    const std::string address = line.substr(0, line.find(' '));
    if (!address.empty()) addresses.push_back(address);
  }
  return addresses;
}

struct Totals {
  std::mutex mu;
  std::condition_variable idle;
  int in_flight = 0;
  std::vector<int64_t> latencies_us;
  int64_t over_limit = 0;
  int64_t errors = 0;
};

// One request slot: asks, and on each answer records it and asks again until the deadline.
// Thread-safety: a slot has one call in flight at a time; Totals is guarded by its mutex.
class Slot {
 public:
  Slot(rls::RateLimitService::Stub* stub, const std::vector<std::string>* addresses,
       const std::string* domain, const std::vector<std::string>* keys, Clock::time_point deadline,
       uint32_t seed, Totals* totals)
      : stub_(stub),
        addresses_(addresses),
        domain_(domain),
        keys_(keys),
        deadline_(deadline),
        random_(seed),
        totals_(totals) {}

  void Ask() {
    request_.Clear();
    request_.set_domain(*domain_);
    const std::string& address = (*addresses_)[random_() % addresses_->size()];
    for (const std::string& key : *keys_) {
      auto* entry = request_.add_descriptors()->add_entries();
      entry->set_key(key);
      entry->set_value(address);
    }
    context_ = std::make_unique<grpc::ClientContext>();
    start_ = Clock::now();
    stub_->async()->ShouldRateLimit(context_.get(), &request_, &response_,
                                    [this](grpc::Status status) { Answered(status); });
  }

 private:
  void Answered(const grpc::Status& status) {
    const auto now = Clock::now();
    const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count();
    {
      std::lock_guard lock(totals_->mu);
      totals_->latencies_us.push_back(us);
      if (!status.ok()) ++totals_->errors;
      if (status.ok() && response_.overall_code() != rls::RateLimitResponse::OK) {
        ++totals_->over_limit;
      }
      if (now >= deadline_) {
        if (--totals_->in_flight == 0) totals_->idle.notify_all();
        return;
      }
    }
    Ask();
  }

  rls::RateLimitService::Stub* stub_;
  const std::vector<std::string>* addresses_;
  const std::string* domain_;
  const std::vector<std::string>* keys_;
  Clock::time_point deadline_;
  std::minstd_rand random_;
  Totals* totals_;
  std::unique_ptr<grpc::ClientContext> context_;
  rls::RateLimitRequest request_;
  rls::RateLimitResponse response_;
  Clock::time_point start_;
};

int64_t Percentile(std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1,
                            static_cast<size_t>(p / 100 * static_cast<double>(sorted.size())));
  return sorted[i];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Drives ShouldRateLimit with concurrent requests; prints one JSON line."};
  std::string target = "127.0.0.1:8081";
  std::string domain = "bench";
  std::vector<std::string> keys;
  std::string log;
  int concurrency = 64;
  double seconds = 10;
  app.add_option("--target", target, "the service's gRPC HOST:PORT");
  app.add_option("--domain", domain, "the request's domain");
  app.add_option("--key", keys, "a descriptor key; each request has one descriptor per key")
      ->required();
  std::string value;
  auto* log_option =
      app.add_option("--log", log, "an Apache access log; its client addresses are the values")
          ->check(CLI::ExistingFile);
  app.add_option("--value", value, "one value for every request (one client) instead of --log's")
      ->excludes(log_option);
  std::string prefix;
  app.add_option("--prefix", prefix,
                 "prepended to every value: clients that no earlier run has counted");
  app.add_option("--concurrency", concurrency, "requests in flight")->check(CLI::Range(1, 4096));
  app.add_option("--seconds", seconds, "how long to ask")->check(CLI::Range(0.1, 3600.0));
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> addresses =
      value.empty() ? ClientAddresses(log) : std::vector<std::string>{value};
  for (std::string& address : addresses) address.insert(0, prefix);
  if (addresses.empty()) {
    std::cerr << "rls_load: no client addresses in " << log << " (give --log or --value)\n";
    return 2;
  }
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto stub = rls::RateLimitService::NewStub(channel);
  Totals totals;
  totals.in_flight = concurrency;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::unique_ptr<Slot>> slots;
  for (int i = 0; i < concurrency; ++i) {
    slots.push_back(std::make_unique<Slot>(stub.get(), &addresses, &domain, &keys, deadline,
                                           static_cast<uint32_t>(i + 1), &totals));
  }
  for (auto& slot : slots) slot->Ask();
  std::unique_lock lock(totals.mu);
  totals.idle.wait(lock, [&] { return totals.in_flight == 0; });
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(totals.latencies_us.begin(), totals.latencies_us.end());
  const auto n = static_cast<int64_t>(totals.latencies_us.size());
  std::cout << "{\"requests\":" << n << ",\"seconds\":" << elapsed
            << ",\"rps\":" << static_cast<double>(n) / elapsed
            << ",\"p50_us\":" << Percentile(totals.latencies_us, 50)
            << ",\"p99_us\":" << Percentile(totals.latencies_us, 99)
            << ",\"max_us\":" << (n == 0 ? 0 : totals.latencies_us.back())
            << ",\"over_limit\":" << totals.over_limit << ",\"errors\":" << totals.errors << "}\n";
  return totals.errors == 0 ? 0 : 1;
}
