#include "hourglass/transition_store.h"

#include <fmt/format.h>

#include <algorithm>

#include "hourglass/saturating.h"

namespace hourglass {
namespace {

// `batch` without its writes: what the previous server is asked.
Batch ReadsOnly(const Batch& batch) {
  return Batch{.group = batch.group,
               .increments = {},
               .reads = batch.reads,
               .non_counters_read_as_max = batch.non_counters_read_as_max};
}

}  // namespace

TransitionStore::TransitionStore(std::unique_ptr<MemcachedStore> current,
                                 std::unique_ptr<MemcachedStore> previous)
    : current_(std::move(current)), previous_(std::move(previous)) {}

bool TransitionStore::Moved(const std::string& group) {
  const Result<std::string> now = current_->ServerFor(group);
  const Result<std::string> before = previous_->ServerFor(group);
  return now.ok() && before.ok() && *now != *before;
}

std::vector<std::string> TransitionStore::ServersOf(const std::string& group) {
  std::vector<std::string> servers = current_->ServersOf(group);
  for (std::string& server : previous_->ServersOf(group)) {
    if (std::find(servers.begin(), servers.end(), server) == servers.end()) {
      servers.push_back(std::move(server));
    }
  }
  return servers;
}

Result<std::vector<uint64_t>> TransitionStore::Apply(const Batch& batch) {
  std::vector<Result<std::vector<uint64_t>>> results;
  results.push_back(current_->Apply(batch));
  AddPrevious({&batch, 1}, results);
  return std::move(results.front());
}

std::vector<Result<std::vector<uint64_t>>> TransitionStore::ApplyMany(
    std::span<const Batch> batches) {
  std::vector<Result<std::vector<uint64_t>>> results = current_->ApplyMany(batches);
  AddPrevious(batches, results);
  return results;
}

void TransitionStore::AddPrevious(std::span<const Batch> batches,
                                  std::vector<Result<std::vector<uint64_t>>>& results) {
  std::vector<Batch> reads;
  std::vector<size_t> of;  // reads[k] is batches[of[k]]'s
  for (size_t i = 0; i < batches.size(); ++i) {
    if (!results[i].ok() || batches[i].reads.empty() || !Moved(batches[i].group)) continue;
    reads.push_back(ReadsOnly(batches[i]));
    of.push_back(i);
  }
  if (reads.empty()) return;
  // After the current servers answered: see the class comment.
  const std::vector<Result<std::vector<uint64_t>>> before = previous_->ApplyMany(reads);
  for (size_t k = 0; k < reads.size(); ++k) {
    if (!before[k].ok()) continue;  // unreachable: its counts are missing, as without us
    std::vector<uint64_t>& values = *results[of[k]];
    for (size_t r = 0; r < values.size(); ++r)
      values[r] = SaturatingAdd(values[r], (*before[k])[r]);
  }
}

std::vector<Status> TransitionStore::Send(std::span<const Batch> batches) {
  return current_->Send(batches);
}

Status TransitionStore::Delete(const std::string& group, std::span<const std::string> keys) {
  Status current = current_->Delete(group, keys);
  if (!current.ok() || !Moved(group)) return current;
  return previous_->Delete(group, keys);
}

uint64_t TransitionStore::Flush() { return current_->Flush() + previous_->Flush(); }

uint64_t TransitionStore::unconfirmed_failures() const {
  return current_->unconfirmed_failures() + previous_->unconfirmed_failures();
}

std::string TransitionStore::Describe() const {
  return fmt::format("{} (also reading moved features on the previous {})", current_->Describe(),
                     previous_->Describe());
}

}  // namespace hourglass
