#include "hourglass/replicated_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace hourglass {

Status CheckCopies(size_t copies, size_t servers) {
  if (copies >= 1 && copies <= servers) return {};
  return InvalidArgument(
      fmt::format("--replicas {} needs at least that many memcached servers (given {}), and at "
                  "least 1",
                  copies, servers));
}

std::vector<Result<std::vector<uint64_t>>> LargestOfCopies(
    std::vector<Result<std::vector<uint64_t>>> answers, size_t copies, size_t batches) {
  std::vector<Result<std::vector<uint64_t>>> results;
  results.reserve(batches);
  for (size_t i = 0; i < batches; ++i) {
    std::optional<std::vector<uint64_t>> merged;
    for (size_t r = 0; r < copies; ++r) {
      Result<std::vector<uint64_t>>& answer = answers[r * batches + i];
      if (!answer.ok()) continue;
      if (!merged) {
        merged = std::move(*answer);
        continue;
      }
      for (size_t k = 0; k < merged->size() && k < answer->size(); ++k) {
        (*merged)[k] = std::max((*merged)[k], (*answer)[k]);
      }
    }
    if (merged) {
      results.emplace_back(std::move(*merged));
    } else {
      results.push_back(std::move(answers[i]));  // no copy answered: the first copy's error
    }
  }
  return results;
}

std::vector<Status> SentToACopy(const std::vector<Status>& sent, size_t copies, size_t batches) {
  std::vector<Status> results;
  results.reserve(batches);
  for (size_t i = 0; i < batches; ++i) {
    Status result = sent[i];
    for (size_t r = 1; r < copies && !result.ok(); ++r) {
      if (sent[r * batches + i].ok()) result = Status();
    }
    results.push_back(std::move(result));
  }
  return results;
}

Result<std::unique_ptr<ReplicatedStore>> ReplicatedStore::Create(
    std::unique_ptr<MemcachedStore> store, size_t copies) {
  if (copies < 2)
    return InvalidArgument(fmt::format("--replicas {}: copies are at least 2", copies));
  if (Status s = CheckCopies(copies, store->servers()); !s.ok()) return s.error();
  return std::unique_ptr<ReplicatedStore>(new ReplicatedStore(std::move(store), copies));
}

Result<std::vector<uint64_t>> ReplicatedStore::Apply(const Batch& batch) {
  return std::move(ApplyMany({&batch, 1}).front());
}

std::vector<Result<std::vector<uint64_t>>> ReplicatedStore::ApplyMany(
    std::span<const Batch> batches) {
  return LargestOfCopies(store_->ApplyManyAt(batches, copies_), copies_, batches.size());
}

std::vector<Status> ReplicatedStore::Send(std::span<const Batch> batches) {
  return SentToACopy(store_->SendAt(batches, copies_), copies_, batches.size());
}

Status ReplicatedStore::Delete(const std::string& group, std::span<const std::string> keys) {
  for (size_t r = 0; r < copies_; ++r) {
    if (Status s = store_->DeleteAt(group, keys, r); !s.ok()) return s;
  }
  return {};
}

std::vector<std::string> ReplicatedStore::ServersOf(const std::string& group) {
  std::vector<std::string> servers;
  for (size_t r = 0; r < copies_; ++r) {
    if (Result<std::string> server = store_->ServerFor(group, r); server.ok()) {
      servers.push_back(std::move(*server));
    }
  }
  return servers;
}

std::string ReplicatedStore::Describe() const {
  return fmt::format("{} ({} copies of each count)", store_->Describe(), copies_);
}

}  // namespace hourglass
