// A Store in one LMDB environment (a memory-mapped file in a directory), shared by every process
// of the host that opens the same directory: no server. Counts survive a restart and a process
// killed at any instant (LMDB's copy-on-write pages; a writer killed holding the write lock is
// recovered by the next one).
//
// Every batch is one write transaction: its guards, its increments in order and its reads happen
// as one step for every process (conditional batches, so checks are decided atomically).
// Seconds, minutes and hours of an hour live in one value of 2-byte records (the packed layout, as
// on memcached and Redis), compacted as they are written; generations, ledgers and penalties are
// counters. Each value carries its expiry: expired values read as absent, and every write
// transaction deletes some of those that expired (an index by expiry finds them), so the file's
// pages are reused.
//
//   Result<LmdbOptions> options = ParseLmdbUrl("lmdb:///var/lib/hourglass");
//   Result<std::unique_ptr<LmdbStore>> store = LmdbStore::Create(*options, clock);
//
// Durability (LmdbOptions::sync): by default commits are not flushed to disk (a process killed
// loses nothing; an operating system crash or power loss may lose the last seconds' counts, or
// damage the file if the file system reorders writes: delete the directory to start afresh).
// "meta" flushes data on every commit (integrity through a crash), "full" data and metadata.
//
// The stores a process opens on one directory share one LMDB environment (LMDB must not be
// opened twice in a process: the second open would reset the lock file under the first); the
// first of them sets its sync, the largest map_size given wins.
//
// Thread-safety: all methods may be called from many threads (and processes) at once; write
// transactions take turns.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "hourglass/clock.h"
#include "hourglass/status.h"
#include "hourglass/store.h"

namespace hourglass {

enum class LmdbSync {
  kNone,  // MDB_NOSYNC: the operating system writes pages back when it likes
  kMeta,  // MDB_NOMETASYNC: data flushed on each commit
  kFull,  // data and metadata flushed on each commit
};

struct LmdbOptions {
  std::string path;  // a directory, made when missing; data.mdb and lock.mdb live in it
  // The most the file may grow to, in bytes (virtual memory reserved, not used: the file is as big
  // as the live counts). Every process opening the directory should give the same; the largest
  // one given wins. When it is full, expired values are deleted first (deleting needs a few free
  // pages, so a full map grows by an eighth once to make room); still full, a write is an error
  // naming this option.
  uint64_t map_bytes = uint64_t{1} << 30;
  LmdbSync sync = LmdbSync::kNone;
};

// "lmdb:///var/lib/hourglass[?map_size=4GiB&sync=none|meta|full]" (map_size in bytes, or with
// KiB, MiB, GiB, TiB). kInvalidArgument naming the URL and the expected form.
Result<LmdbOptions> ParseLmdbUrl(std::string_view url);

class LmdbStore final : public Store {
 public:
  // Opens (or makes) the environment. `clock` (which must outlive the store) gives the expiry
  // of values: the real clock for processes sharing the directory, a manual one in tests.
  // Errors: kInvalidArgument for bad options, kUnavailable naming the path when the directory
  // cannot be made, opened or written (permissions, a file that is not an environment).
  static Result<std::unique_ptr<LmdbStore>> Create(const LmdbOptions& options, const Clock& clock);
  ~LmdbStore() override;

  Result<std::vector<uint64_t>> Apply(const Batch& batch) override;
  // Every batch in one transaction (one commit).
  std::vector<Result<std::vector<uint64_t>>> ApplyMany(std::span<const Batch> batches) override;
  std::vector<Status> Send(std::span<const Batch> batches) override;
  Status Delete(const std::string& group, std::span<const std::string> keys) override;
  // The file's figures: bytes its pages use, the map's size, the values it holds (live and
  // expired, not yet deleted); no evictions (a full map refuses writes instead).
  std::vector<Result<ServerStats>> Stats() override;
  bool conditional_batches() const override { return true; }
  std::string Describe() const override;

  // Deletes every expired value now (tests, and an operator's maintenance); how many it deleted.
  Result<uint64_t> Reclaim();

 private:
  struct Impl;
  explicit LmdbStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass
