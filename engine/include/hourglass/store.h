// The store seam: the primitive memcached really has, batched.
//
// One batch = "add these deltas to these keys (creating missing ones at 0 with this TTL), then
// read these keys", all keys sharing one group key (the server-affinity key), answered in one
// round trip. Every implementation passes one contract test suite (tests/store_contract_test.cc);
// stores/ holds the in-memory and the memcached store.
//
//   Batch batch{.group = group, .increments = {{key, 1, Seconds{90}}}, .reads = {key}};
//   Result<std::vector<uint64_t>> values = store.Apply(batch);
//
// Thread-safety: every Store is safe to use from many threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/status.h"

namespace hourglass {

struct Increment {
  std::string key;
  // > 0: add, creating the key at 0 with `ttl` first if it is missing (atomic against concurrent
  // creators). < 0: subtract, floored at 0; a missing key stays missing.
  int64_t delta = 0;
  // Relative time to live, set only when the key is created. Any length >= 1s. A store may keep
  // a key longer, never shorter (memcached's packed layout keeps an hour of seconds until the
  // last one's TTL has passed).
  Seconds ttl{0};
};

// A condition on a batch's increments, for stores that evaluate a batch atomically
// (Store::conditional_batches): the increments are applied only when `base` plus every term's read
// value (as it was before the increments) times its sign is at most `max`.
struct GuardTerm {
  size_t read = 0;  // an index into the batch's reads
  int sign = 1;     // +1 or -1
};
struct Guard {
  int64_t base = 0;  // what the terms leave out (a process's cached buckets)
  int64_t max = 0;   // the sum allowed; below 0 holds the increments back whatever is read
  std::vector<GuardTerm> terms = {};
};

struct Batch {
  std::string group;  // every key of the batch lives where this group key hashes to
  // Applied in order before the reads: another client reading these keys meanwhile sees them
  // take effect in this order (one at a time, not all at once).
  std::vector<Increment> increments;
  std::vector<std::string> reads;  // read after the increments, in order; missing keys read 0
  // A read key holding a value that is not a counter (another client's set) fails the batch,
  // naming the key; with this set it reads as the largest value instead (Reset, which deletes
  // whatever is there).
  bool non_counters_read_as_max = false;
  // Only for stores with conditional_batches(): the increments are applied only if every guard
  // holds, all at once with the reads (nothing else runs in between). The answer then has one
  // value after the reads' values: 1 when the increments were applied, 0 when a guard held them
  // back (and nothing was written).
  std::vector<Guard> guards = {};
};

// Checks every key of a batch (KeyCodec::CheckKey) and every creating increment's TTL (>= 1s).
// Each Store calls it before anything is applied, so a malformed batch changes nothing.
Status ValidateBatch(const Batch& batch);
// Whether `guard` holds over `values` (the batch's reads as they stood before its increments):
// base + the sum of sign * value <= max, in saturating arithmetic, so no sum wraps.
bool GuardHolds(const Guard& guard, std::span<const uint64_t> values);
// Guards only for a store with conditional_batches().
class Store;
Status ValidateGuards(const Store& store, const Batch& batch);
// What Store::Send asks beyond ValidateBatch: the batch reads nothing.
Status ValidateSend(const Batch& batch);
// The same for a delete.
Status ValidateKeys(const std::string& group, std::span<const std::string> keys);

// A server's own figures (memcached's `stats`), for operators: what it holds and what it lost.
struct ServerStats {
  std::string kind;             // "memcached", "redis", "lmdb"
  std::string server;           // "host:port" (LMDB: the directory)
  uint64_t evictions = 0;       // live items (keys) dropped to make room, since the server started
  uint64_t bytes = 0;           // bytes its items take
  uint64_t limit_maxbytes = 0;  // the memory it may use for items
  uint64_t curr_items = 0;
  uint64_t pid = 0;      // the server's process: another one means it restarted (figures from 0)
  uint64_t time = 0;     // the server's clock when it answered, Unix seconds (0: not reported)
  uint64_t uptime = 0;   // seconds since the process started (0: not reported)
  uint64_t flushes = 0;  // flushes of every item since it started (memcached cmd_flush)
  // Per slab class (memcached `stats items`): items evicted since the server started, and
  // `evicted_time`, the seconds since the last use of the latest one evicted when it was.
  struct ClassEvictions {
    uint32_t id = 0;
    uint64_t evicted = 0, evicted_time = 0;
  };
  std::vector<ClassEvictions> classes = {};  // empty when the store tells none (Redis)
  // Its process's start by its own clock, Unix seconds (`time - uptime`; memcached's is 62 s
  // early, but fixed for the process); 0 when either is not reported.
  int64_t started() const {
    return time > 0 && uptime > 0 ? static_cast<int64_t>(time) - static_cast<int64_t>(uptime) : 0;
  }
};

// A server's note (Store::Notes).
struct ServerNote {
  std::string kind;                 // as ServerStats::kind names it
  std::string server;               // as ServerStats::server names it
  std::optional<std::string> text;  // nullopt: none there
};
// The key a server's note is kept under: no count's key (KeyCodec's events are never empty),
// the same for every namespace (a server's loss is every namespace's).
inline constexpr std::string_view kNoteKey = "hourglass::note";
// What Store::WriteNote accepts: 1 to 200 bytes of printable ASCII.
Status ValidateNote(std::string_view text);

class Store {
 public:
  virtual ~Store() = default;

  // Applies the increments, then reads. values[i] is the value of batch.reads[i]. Returns once
  // the store answered, reads or not (Send is the fire-and-forget call).
  // Errors: kUnavailable when the store cannot be reached (nothing was sent, or the server went
  // away), kDeadlineExceeded when it did not answer in time (some increments may have been
  // applied, or be applied later: a frozen server applies what it received once it runs again),
  // kInvalidArgument for a malformed key.
  virtual Result<std::vector<uint64_t>> Apply(const Batch& batch) = 0;

  // Applies several batches: results[i] is Apply(batches[i])'s. The batches bound for one server
  // are applied in order, those for different servers in any order. Stores that can send them
  // together override it (memcached: one write and one read per server, however many batches);
  // this one applies them one by one.
  virtual std::vector<Result<std::vector<uint64_t>>> ApplyMany(std::span<const Batch> batches);

  // Fire-and-forget: applies batches that read nothing (take-backs, a blocked client's hits),
  // returning once they are sent, not once applied; results[i] is batches[i]'s. A failure is for
  // a batch that could not be sent (or was malformed); what the store refuses later is learnt as
  // unconfirmed_failures(). Stores that can send them together override it (memcached: one write
  // per server); this one applies them one by one. Batches with reads are kInvalidArgument.
  virtual std::vector<Status> Send(std::span<const Batch> batches);

  // Deletes `keys` of `group`; deleting a missing key is not an error.
  virtual Status Delete(const std::string& group, std::span<const std::string> keys) = 0;

  // Waits for any unfinished asynchronous work (fire-and-forget batches sent so far) and returns
  // how many of those writes the store refused since it was created (normally 0). Stores that
  // apply every batch before returning have nothing to wait for.
  virtual uint64_t Flush() { return 0; }

  // How many fire-and-forget writes the store has refused so far, as learnt without waiting (a
  // refusal is learnt when its connection is next used; Flush learns them all). 0 for stores
  // that apply every batch before returning. Thread-safe.
  virtual uint64_t unconfirmed_failures() const { return 0; }

  // Each server's figures, in a fixed order; a server that cannot answer gives its error. Stores
  // without servers of their own (the memory store) give none.
  virtual std::vector<Result<ServerStats>> Stats() { return {}; }

  // The servers `group`'s counts are read from, named as Stats() names them: a loss on one of them
  // (StoreLosses) can take the group's counts with it. Empty when the store cannot tell.
  virtual std::vector<std::string> ServersOf(const std::string& group) {
    static_cast<void>(group);
    return {};
  }
  // Whether each of ServersOf's servers holds a whole copy of a group's counts (ReplicatedStore):
  // then a loss is one only when every one of them told of one.
  virtual bool servers_are_copies() const { return false; }

  // Per server, in Stats()'s order, the short note kept on the server itself under kNoteKey, a
  // key no count uses: every client of the server reads what any one of them wrote (the latest
  // loss seen there, StoreLosses). A note is gone when the server's data is (a restart, a flush).
  // Stores without servers of their own, or that cannot address one server, give none.
  virtual std::vector<Result<ServerNote>> Notes() { return {}; }
  // Writes `server`'s note (named as Stats() names it), replacing what was there; kept until the
  // server loses it. kInvalidArgument for a server the store does not have or a note over 200
  // bytes or with bytes other than printable ASCII.
  virtual Status WriteNote(const std::string& server, std::string_view text);

  // Whether batches may carry guards: the store evaluates a batch (guards, increments, reads) as
  // one atomic step. Stores that cannot refuse guarded batches as kInvalidArgument.
  virtual bool conditional_batches() const { return false; }

  // "memory" or "memcached 127.0.0.1:11211", for messages.
  virtual std::string Describe() const = 0;
};

}  // namespace hourglass
