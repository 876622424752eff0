// A memcached store in transition between two server lists (a server added, removed or replaced):
// every write goes to the current list's ring; a batch that reads also reads its group's keys on
// the server the previous list's ring put them on, when that is another server, and adds the two.
// So a feature whose keys moved keeps its counts: nothing starts again from zero.
//
//   TransitionStore store(std::move(current), std::move(previous));  // both MemcachedStores
//   TransitionStore copies(std::move(current), std::move(previous), 2, 2);  // as ReplicatedStore
//
// With copies (a list keeping each count on several servers, as ReplicatedStore does), a group's
// servers in the two lists may share some: a shared server took every write of both lists, one
// of the current list only those since, one of the previous list only those before. A read is
// the largest of: each shared copy, and the largest current-only copy plus the largest
// previous-only copy. So a lost shared server costs nothing while the copies of either side
// hold the hits they took; the previous servers are read only when some of them are not current.
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
#include <string>
#include <vector>

#include "hourglass/memcached_store.h"
#include "hourglass/store.h"

namespace hourglass {

class TransitionStore final : public Store {
 public:
  // Requires 1 <= copies <= each list's servers (CheckCopies).
  TransitionStore(std::unique_ptr<MemcachedStore> current, std::unique_ptr<MemcachedStore> previous,
                  size_t copies = 1, size_t previous_copies = 1);

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
  std::vector<Result<ServerNote>> Notes() override { return current_->Notes(); }
  Status WriteNote(const std::string& server, std::string_view text) override {
    return current_->WriteNote(server, text);
  }
  // Without copies, both lists' servers: a group's counts are the sum of its servers' in the two.
  // With copies, the current ones (losses on previous servers are not told: the watch reads the
  // current servers' figures only, and the transition ends within the longest window).
  std::vector<std::string> ServersOf(const std::string& group) override;
  bool servers_are_copies() const override { return copies_ > 1; }
  std::string Describe() const override;

  // Whether some of `group`'s servers in the previous list are not among its current ones.
  bool Moved(const std::string& group);

 private:
  // A group's copies' servers in one list, copy r at [r].
  std::vector<std::string> Copies(MemcachedStore& list, size_t copies, const std::string& group);
  // A group's copies' servers in both lists.
  struct Placement {
    std::vector<std::string> current, previous;
    bool Moved() const;  // some previous server is not a current one
  };
  Placement PlacementOf(const std::string& group);

  std::unique_ptr<MemcachedStore> current_;
  std::unique_ptr<MemcachedStore> previous_;
  const size_t copies_, previous_copies_;
};

}  // namespace hourglass
