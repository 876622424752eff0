// A Store decorator that fails on demand: a fault we cannot provoke for real at a precise call
// (the real-server faults are in fault_test.cc).
#pragma once

#include <atomic>

#include "hourglass/store.h"

namespace hourglass::testing {

class FailingStore final : public Store {
 public:
  explicit FailingStore(Store& inner) : inner_(inner) {}
  // While set, every call fails with `code` and reaches nothing.
  void Fail(bool on, ErrorCode code = ErrorCode::kUnavailable) {
    code_ = code;
    failing_ = on;
  }
  // Fails only batches without reads (the fire-and-forget take-backs).
  void FailWritesOnly(bool on) { fail_writes_only_ = on; }
  // Fails every `n`th call from now on, whichever thread makes it (0: none).
  void FailEvery(uint64_t n) { every_ = n; }
  Result<std::vector<uint64_t>> Apply(const Batch& batch) override {
    const uint64_t every = every_.load();
    if (failing_ || (fail_writes_only_ && batch.reads.empty()) ||
        (every > 0 && ++calls_ % every == 0)) {
      return Error(code_, "injected fault");
    }
    return inner_.Apply(batch);
  }
  Status Delete(const std::string& group, std::span<const std::string> keys) override {
    if (failing_) return Error(code_, "injected fault");
    return inner_.Delete(group, keys);
  }
  std::string Describe() const override { return "failing " + inner_.Describe(); }

 private:
  Store& inner_;
  std::atomic<bool> failing_{false};
  std::atomic<bool> fail_writes_only_{false};
  std::atomic<uint64_t> every_{0};
  std::atomic<uint64_t> calls_{0};
  ErrorCode code_ = ErrorCode::kUnavailable;
};

}  // namespace hourglass::testing
