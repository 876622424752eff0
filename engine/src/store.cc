#include "hourglass/store.h"

#include "hourglass/key_codec.h"

namespace hourglass {

Status ValidateBatch(const Batch& batch) {
  if (Status s = KeyCodec::CheckKey(batch.group); !s.ok()) return s;
  for (const Increment& inc : batch.increments) {
    if (Status s = KeyCodec::CheckKey(inc.key); !s.ok()) return s;
    if (inc.delta > 0 && inc.ttl < Seconds{1})
      return InvalidArgument("increment TTL must be >= 1s");
  }
  for (const std::string& key : batch.reads) {
    if (Status s = KeyCodec::CheckKey(key); !s.ok()) return s;
  }
  for (const Guard& guard : batch.guards) {
    for (const GuardTerm& term : guard.terms) {
      if (term.read >= batch.reads.size() || (term.sign != 1 && term.sign != -1)) {
        return InvalidArgument("a guard's term names no read of its batch, or its sign is not +-1");
      }
    }
  }
  return {};
}

Status ValidateGuards(const Store& store, const Batch& batch) {
  if (batch.guards.empty() || store.conditional_batches()) return {};
  return InvalidArgument(store.Describe() + " cannot apply a batch with guards atomically");
}

Status ValidateSend(const Batch& batch) {
  if (batch.reads.empty()) return {};
  return InvalidArgument("Store::Send takes batches without reads (fire-and-forget writes)");
}

Status ValidateKeys(const std::string& group, std::span<const std::string> keys) {
  if (Status s = KeyCodec::CheckKey(group); !s.ok()) return s;
  for (const std::string& key : keys) {
    if (Status s = KeyCodec::CheckKey(key); !s.ok()) return s;
  }
  return {};
}

std::vector<Result<std::vector<uint64_t>>> Store::ApplyMany(std::span<const Batch> batches) {
  std::vector<Result<std::vector<uint64_t>>> results;
  results.reserve(batches.size());
  for (const Batch& batch : batches) results.push_back(Apply(batch));
  return results;
}

std::vector<Status> Store::Send(std::span<const Batch> batches) {
  std::vector<Status> results;
  results.reserve(batches.size());
  for (const Batch& batch : batches) {
    if (Status s = ValidateSend(batch); !s.ok()) {
      results.push_back(s);
      continue;
    }
    Result<std::vector<uint64_t>> applied = Apply(batch);
    results.push_back(applied.ok() ? Status() : Status(applied.error()));
  }
  return results;
}

}  // namespace hourglass
