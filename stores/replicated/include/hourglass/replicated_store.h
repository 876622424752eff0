// A memcached store that keeps R copies of every feature's counts, on R distinct servers of the
// ring (the group's own and the R - 1 after it in ring order), so that a server that restarts,
// is flushed, evicts or is lost takes no count with it while another copy holds it.
//
//   ReplicatedStore store(std::move(memcached), 2);  // a MemcachedStore of at least 2 servers
//
// Every batch goes to each copy's server in the same exchange (the servers are written and read
// in parallel: one round trip, as without copies). A read is the largest value of each key among
// the copies that answered: a copy that lost counts, or missed writes while it was down, reads
// lower and is outvoted by one that kept them. Exactness holds as on one server: each copy
// applies a batch's increments before its reads, so of two concurrent hits the later reader of
// any copy sees both, and the largest value is at least that. A batch fails only when no copy
// answered; a failed copy is told by the store's transition handler and counted nowhere else.
// Take-backs and deletes go to every copy (a copy that missed a take-back reads higher: never an
// over-admission); a delete fails unless every copy deleted, so that a reset cannot come back
// from a copy that was down.
//
// Not done: copies that missed writes are not repaired (a copy's counts fall behind until
// their windows pass); a loss of every copy is told only through ServersOf (StoreLosses).
//
// Thread-safety: as the store it wraps: safe to use from many threads at once.
#pragma once

#include <memory>

#include "hourglass/memcached_store.h"
#include "hourglass/store.h"

namespace hourglass {

// kInvalidArgument unless 1 <= `copies` <= `servers`, naming the fix.
Status CheckCopies(size_t copies, size_t servers);

// Per batch, the largest value of each read among the copies that answered: `answers` as
// MemcachedStore::ApplyManyAt gives them (answers[r * batches + i]); a batch that no copy
// answered gets the first copy's error.
std::vector<Result<std::vector<uint64_t>>> LargestOfCopies(
    std::vector<Result<std::vector<uint64_t>>> answers, size_t copies, size_t batches);

// Per batch, success when one copy took it: `sent` as MemcachedStore::SendAt gives them.
std::vector<Status> SentToACopy(const std::vector<Status>& sent, size_t copies, size_t batches);

class ReplicatedStore final : public Store {
 public:
  // kInvalidArgument unless 2 <= `copies` <= the store's servers.
  static Result<std::unique_ptr<ReplicatedStore>> Create(std::unique_ptr<MemcachedStore> store,
                                                         size_t copies);

  Result<std::vector<uint64_t>> Apply(const Batch& batch) override;
  std::vector<Result<std::vector<uint64_t>>> ApplyMany(std::span<const Batch> batches) override;
  std::vector<Status> Send(std::span<const Batch> batches) override;
  Status Delete(const std::string& group, std::span<const std::string> keys) override;
  uint64_t Flush() override { return store_->Flush(); }
  uint64_t unconfirmed_failures() const override { return store_->unconfirmed_failures(); }
  std::vector<Result<ServerStats>> Stats() override { return store_->Stats(); }
  std::vector<Result<ServerNote>> Notes() override { return store_->Notes(); }
  Status WriteNote(const std::string& server, std::string_view text) override {
    return store_->WriteNote(server, text);
  }
  // The copies' servers: a loss is one only when each of them lost (servers_are_copies).
  std::vector<std::string> ServersOf(const std::string& group) override;
  bool servers_are_copies() const override { return true; }
  std::string Describe() const override;

  size_t copies() const { return copies_; }

 private:
  ReplicatedStore(std::unique_ptr<MemcachedStore> store, size_t copies)
      : store_(std::move(store)), copies_(copies) {}
  std::unique_ptr<MemcachedStore> store_;
  const size_t copies_;
};

}  // namespace hourglass
