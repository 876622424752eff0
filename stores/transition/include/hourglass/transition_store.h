// A memcached store in transition between two server lists (a server added, removed or replaced):
// every write goes to the current list's ring; a batch that reads also reads its group's keys on
// the server the previous list's ring put them on, when that is another server, and adds the two.
// So a feature whose keys moved keeps its counts: nothing starts again from zero.
//
//   TransitionStore store(std::move(current), std::move(previous));  // both MemcachedStores
//
// The previous server is read after the current one has answered (two round trips for a feature
// that moved, one otherwise). That order keeps checks exact while processes with the two lists
// swapped run side by side (a rolling restart): each writes its own server, then reads the other,
// so of two concurrent hits at least one sees the other.
// A previous server that cannot answer reads as empty: the counts it held are missing, as they
// would be without the transition; the store's transition handler hears of it.
//
// Thread-safety: as the stores it wraps: safe to use from many threads at once.
#pragma once

#include <memory>

#include "hourglass/memcached_store.h"
#include "hourglass/store.h"

namespace hourglass {

class TransitionStore final : public Store {
 public:
  TransitionStore(std::unique_ptr<MemcachedStore> current,
                  std::unique_ptr<MemcachedStore> previous);

  Result<std::vector<uint64_t>> Apply(const Batch& batch) override;
  std::vector<Result<std::vector<uint64_t>>> ApplyMany(std::span<const Batch> batches) override;
  // Writes only: the current servers.
  std::vector<Status> Send(std::span<const Batch> batches) override;
  // Deletes on both servers of a group that moved: a reset leaves nothing to read back.
  Status Delete(const std::string& group, std::span<const std::string> keys) override;
  uint64_t Flush() override;
  uint64_t unconfirmed_failures() const override;
  // The current servers' figures (the previous ones stop taking writes).
  std::vector<Result<ServerStats>> Stats() override { return current_->Stats(); }
  // Both: a group's counts are the sum of its servers' in the two lists.
  std::vector<std::string> ServersOf(const std::string& group) override;
  std::string Describe() const override;

  // Whether `group`'s keys lie on another server in the previous list.
  bool Moved(const std::string& group);

 private:
  // Adds the previous servers' values of the moved batches with reads to `results`.
  void AddPrevious(std::span<const Batch> batches,
                   std::vector<Result<std::vector<uint64_t>>>& results);

  std::unique_ptr<MemcachedStore> current_;
  std::unique_ptr<MemcachedStore> previous_;
};

}  // namespace hourglass
