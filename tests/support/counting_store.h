// A Store decorator that counts the calls made to the store it wraps, so tests can assert how
// many sends a batch of checks cost (the store itself stays real).
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "hourglass/store.h"

namespace hourglass::testing {

class CountingStore final : public Store {
 public:
  explicit CountingStore(Store& inner) : inner_(inner) {}
  Result<std::vector<uint64_t>> Apply(const Batch& batch) override {
    ++applies;
    return inner_.Apply(batch);
  }
  std::vector<Result<std::vector<uint64_t>>> ApplyMany(std::span<const Batch> batches) override {
    ++apply_manys;
    batches_in_apply_many += batches.size();
    return inner_.ApplyMany(batches);
  }
  std::vector<Status> Send(std::span<const Batch> batches) override {
    {
      std::lock_guard lock(mu_);
      sends_.push_back(batches.size());
    }
    return inner_.Send(batches);
  }
  Status Delete(const std::string& group, std::span<const std::string> keys) override {
    return inner_.Delete(group, keys);
  }
  std::string Describe() const override { return inner_.Describe(); }

  // The number of batches of each Send call, in order.
  std::vector<size_t> sends() const {
    std::lock_guard lock(mu_);
    return sends_;
  }

  std::atomic<int> applies{0}, apply_manys{0};
  std::atomic<size_t> batches_in_apply_many{0};

 private:
  Store& inner_;
  mutable std::mutex mu_;
  std::vector<size_t> sends_;  // guarded by mu_
};

}  // namespace hourglass::testing
