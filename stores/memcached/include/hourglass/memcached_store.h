// A Store on memcached (text protocol with meta commands; memcached >= 1.6).
//
// Per batch, on one pooled connection to the server the group key hashes to (libmemcached's
// consistent-hash ring, so keys land where any libmemcached client listing the same servers puts
// them): for each increment `ma key N<ttl> J<delta> D<delta> q` (atomic create-or-add), then one
// `get` of every read key, all written with one send(): one round trip, one write. TCP_NODELAY is
// on; timeouts are short and configurable. A server that fails (refused, reset, timed out) fails
// fast for retry_timeout, then is tried again; a pooled connection that a restart cut fails only
// its own exchange. Its features are never moved to another server:
// there they would start again from zero and over-admit; checks answer per their policy instead.
//
//   MemcachedOptions options;
//   options.servers = *ParseServers("10.0.0.1:11211,10.0.0.2:11211");
//   Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
//
// Thread-safety: all methods may be called from many threads at once (a connection pool of
// `pool_size` per server; further threads wait up to `pool_wait` for a connection).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/server_transition.h"
#include "hourglass/status.h"
#include "hourglass/store.h"
#include "hourglass/store_losses.h"

namespace hourglass {

// How buckets are kept in memcached. Every process sharing the servers must use the same one (the
// two keep buckets under different keys), or read both while they switch
// (MemcachedOptions::read_both_layouts).
enum class MemcachedLayout {
  // One counter item per bucket that saw a hit (~100 bytes each, whatever the count). The
  // default of hourglass 0.1.
  kCounters,
  // A feature's second, minute and hour buckets of one hour in one item, 2 bytes per hit (or per
  // busy second once compacted); generations, ledgers and penalties stay counters. Exact like
  // counters. The default since hourglass 0.2.
  kPacked,
};

// "counters" or "packed".
Result<MemcachedLayout> ParseLayout(std::string_view name);

struct MemcachedOptions {
  // "host:port" (or "[v6]:port"). Every client must list the servers the same way: the ring
  // hashes the strings.
  std::vector<std::string> servers = {"127.0.0.1:11211"};
  std::chrono::milliseconds connect_timeout{100};  // to open a connection
  // The whole exchange with the server (a request and its answers), however it spreads its bytes.
  std::chrono::milliseconds io_timeout{100};
  std::chrono::seconds retry_timeout{1};  // after a failure, the server fails fast this long
  uint32_t pool_size = 8;                 // connections per server, shared by all threads
  std::chrono::seconds pool_wait{1};      // a thread's wait for a free connection; 0: no wait
  // A pooled connection idle at least this long is checked for a close by the server (e.g. a
  // restart) before it is used, so a restart while idle fails no request. 0: check every time.
  std::chrono::milliseconds idle_check_after{500};
  MemcachedLayout layout = MemcachedLayout::kPacked;
  // While clients switch layout: write as `layout` says, but read (and delete) seconds, minutes and
  // hours in both layouts, adding the two. Every client runs with it from before the first one
  // switches until the retention has passed after the last one did; checks stay exact throughout.
  bool read_both_layouts = false;
  // Packed layout: a long compaction of a pack goes to a base, a second item that readers keep,
  // so a check reads the bytes appended since, not its hour's (packed_layout.h, "A base"). Every
  // client reads bases whatever this says; a client older than bases fails on a pack that names
  // one, so a fleet upgrading from one turns this off until every client is upgraded.
  bool write_bases = true;
  // Told when a server fails (a transport error: refused, reset, timed out; a pooled connection
  // closed or reset by the server only when connecting again fails too) and when it answers
  // again: once per change, however many requests see it. Empty: nobody is told.
  ServerTransitionHandler on_transition = nullptr;
  // Set: every new connection first asks the server's `stats` (one exchange), and a server whose
  // process is another than the one an earlier connection found (it restarted: its counts are
  // gone) is told, dated now, before the connection carries a batch. Empty: not asked.
  StoreLossHandler on_loss = nullptr;
};

// "h1:11211,h2:11211" -> {"h1:11211", "h2:11211"}; rejects missing or bad ports.
Result<std::vector<std::string>> ParseServers(std::string_view list);

// One message per pair of `servers` entries that reach the same address and port, e.g.
// "localhost:11211" and "127.0.0.1:11211": the ring hashes the text, so it treats them as two
// servers, and clients that spell one server differently place keys differently. Looks names up
// (entries whose lookup fails are skipped).
std::vector<std::string> SameServerWarnings(const std::vector<std::string>& servers);

class MemcachedStore final : public Store {
 public:
  // `clock` (which must outlive the store) gives the wall time of absolute TTLs and the
  // monotonic time of the fail-fast window and idle checks.
  static Result<std::unique_ptr<MemcachedStore>> Create(const MemcachedOptions& options,
                                                        const Clock& clock = SystemClock::Get());
  // Flushes (see Flush), so fire-and-forget answers are known to have arrived when a short-lived
  // process exits and no socket is closed with unread answers.
  ~MemcachedStore() override;

  // A failure after the request was sent says that its increments may have been applied (now, or
  // when a stalled server resumes): at least once, never taken back.
  Result<std::vector<uint64_t>> Apply(const Batch& batch) override;
  // One write and one read per server, the servers' requests sent before any answer is read.
  // A transport failure fails that server's batches from the first unanswered one on.
  std::vector<Result<std::vector<uint64_t>>> ApplyMany(std::span<const Batch> batches) override;
  // One write per server, answers left to each connection's next user.
  std::vector<Status> Send(std::span<const Batch> batches) override;
  Status Delete(const std::string& group, std::span<const std::string> keys) override;
  // Reads the answers of every fire-and-forget batch sent so far on idle connections (up to
  // io_timeout per connection) and returns unconfirmed_failures().
  uint64_t Flush() override;
  std::string Describe() const override;
  // `stats` of every server, in ring order (one round trip each, up to io_timeout).
  std::vector<Result<ServerStats>> Stats() override;
  // `get` and `set` of kNoteKey, one round trip per server (up to io_timeout).
  std::vector<Result<ServerNote>> Notes() override;
  Status WriteNote(const std::string& server, std::string_view text) override;

  // Failures of fire-and-forget increments (Send's batches), learnt after their callers
  // had returned: increments memcached refused (e.g. out of memory). Normally 0.
  uint64_t unconfirmed_failures() const override;

  // The server ("host:port") that holds `group`'s keys; with `replica` r, the server r places
  // after it in ring order (the r-th copy's: ReplicatedStore).
  Result<std::string> ServerFor(const std::string& group, size_t replica = 0);
  // How many servers the ring has.
  size_t servers() const;

  // ApplyMany and Send with each batch sent to `copies` servers in the same exchange: its group's
  // and the copies - 1 after it in ring order (ServerFor(group, r) for r < copies), planned
  // once. results[r * batches.size() + i] is copy r of batches[i]. DeleteAt deletes on one copy's
  // server. For ReplicatedStore, which keeps copies on distinct servers.
  std::vector<Result<std::vector<uint64_t>>> ApplyManyAt(std::span<const Batch> batches,
                                                         size_t copies);
  std::vector<Status> SendAt(std::span<const Batch> batches, size_t copies);
  Status DeleteAt(const std::string& group, std::span<const std::string> keys, size_t replica);
  std::vector<std::string> ServersOf(const std::string& group) override;

 private:
  struct Impl;
  explicit MemcachedStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass
