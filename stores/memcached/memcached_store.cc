#include "hourglass/memcached_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "hourglass/net/pool.h"
#include "hourglass/packed_layout.h"
#include "hourglass/saturating.h"
#include "protocol.h"
#include "ring.h"

namespace hourglass {
namespace {

// More unanswered no-ops than this on one connection and a request waits for them first, so the
// answers of fire-and-forget requests never pile up in the socket.
constexpr int kMaxUnreadNoops = 32;

Status ValidateOptions(const MemcachedOptions& options) {
  if (options.servers.empty()) return InvalidArgument("no memcached server given");
  for (const std::string& server : options.servers) {
    if (Result<std::vector<std::string>> parsed = ParseServers(server); !parsed.ok()) {
      return parsed.error();
    }
  }
  if (options.pool_size < 1) return InvalidArgument("pool_size must be >= 1");
  if (options.connect_timeout.count() < 1 || options.io_timeout.count() < 1) {
    return InvalidArgument("connect_timeout and io_timeout must be >= 1ms");
  }
  return {};
}

// A batch whose request left (wholly or in part) but whose answer did not come: its increments
// may have been applied, or may be applied when a stalled server resumes. Nothing takes them
// back: if they never landed, a take-back would erase other hits and over-admit.
Error MaybeApplied(const Error& error, const Batch& batch) {
  if (batch.increments.empty()) return error;
  return Error(error.code(), error.message() +
                                 " (the increments were sent: they may have been "
                                 "applied, now or when the server resumes)");
}

net::PoolOptions PoolOptionsOf(const MemcachedOptions& o) {
  return net::PoolOptions{o.connect_timeout, o.io_timeout,       o.retry_timeout, o.pool_size,
                          o.pool_wait,       o.idle_check_after, o.on_transition};
}

using BatchResults = std::vector<Result<std::vector<uint64_t>>>;

// A batch as it goes on the wire: the caller's own (counters layout) or its packed plan's.
struct Outgoing {
  const Batch* wire = nullptr;                // sent: its increments as counters, reads as gets
  const packed::WireBatch* packed = nullptr;  // the packed plan, if any
  std::span<const packed::PackAppend> appends() const {
    return packed ? std::span<const packed::PackAppend>(packed->appends)
                  : std::span<const packed::PackAppend>{};
  }
  std::span<const uint8_t> is_pack() const {
    return packed ? std::span<const uint8_t>(packed->get_is_pack) : std::span<const uint8_t>{};
  }
  // Where the appends go among the counter increments.
  size_t appends_at() const { return packed ? packed->appends_at : SIZE_MAX; }
  // Packs are read with their CAS values, for compaction.
  bool with_cas() const {
    return packed && std::find(packed->get_is_pack.begin(), packed->get_is_pack.end(), 1) !=
                         packed->get_is_pack.end();
  }
};

// The compaction of `pack` (read with `cas`) into `out`, when it is worth it.
void MaybeCompact(const std::string& key, const std::string& pack, uint64_t cas,
                  const packed::PackFold& fold, std::vector<memcached::PackCompaction>& out) {
  if (cas == 0) return;
  std::optional<std::string> compact = packed::CompactionOf(pack, fold);
  if (compact)
    out.push_back(memcached::PackCompaction{key, cas, fold.expiry(), std::move(*compact)});
}

// What `batches` send: themselves (plain counters: no `plan`), or plans[i] holds batches[i]'s
// plan (valid[i] only).
std::vector<Outgoing> Prepare(const std::optional<packed::PlanOptions>& plan,
                              std::span<const Batch> batches, const std::vector<bool>& valid,
                              std::vector<packed::WireBatch>& plans) {
  std::vector<Outgoing> out(batches.size());
  if (plan) plans.resize(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    if (!plan || !valid[i]) {
      out[i].wire = &batches[i];
      continue;
    }
    plans[i] = packed::PlanPacked(batches[i], *plan);
    out[i] = Outgoing{&plans[i].counters, &plans[i]};
  }
  return out;
}

// The values of the caller's reads from the answer to `o`'s gets; packs worth compacting go to
// `compactions`.
Result<std::vector<uint64_t>> Resolve(std::string_view server, const Outgoing& o,
                                      memcached::GetAnswer&& answer,
                                      std::vector<memcached::PackCompaction>& compactions) {
  if (answer.error) return *answer.error;
  if (o.packed == nullptr) return std::move(answer.values);
  const packed::WireBatch& plan = *o.packed;
  return packed::ResolveReads(
      server, plan, answer.values, answer.packs,
      [&](size_t get, const std::string& pack, const packed::PackFold& fold) {
        MaybeCompact(plan.counters.reads[get], pack, answer.pack_cas[get], fold, compactions);
      });
}

// Reads the answers `c` still owes: earlier callers' failures go to `unconfirmed`; with `own`,
// the failures before the last MN are the caller's own request's (the first in *own).
Status ReadUnread(std::string_view server, net::PooledConnection& c,
                  std::atomic<uint64_t>& unconfirmed, std::optional<Error>* own = nullptr) {
  memcached::NoopAnswers answers;
  Status s = memcached::ReadNoops(server, *c.socket, c.unread, own != nullptr, answers);
  c.unread -= answers.read;
  unconfirmed.fetch_add(answers.failures, std::memory_order_relaxed);
  if (own != nullptr && answers.own) *own = std::move(answers.own);
  return s;
}

// Takes a connection of `pool` ready for a request: no more unread answers than allowed.
Status Ready(net::ServerPool& pool, net::Lease& c, std::atomic<uint64_t>& unconfirmed) {
  if (Status s = c.Acquire(); !s.ok()) return s;
  c->socket->BeginExchange();  // io_timeout bounds the whole exchange, not each read
  if (c->unread >= kMaxUnreadNoops) {
    if (Status s = ReadUnread(pool.name(), *c, unconfirmed); !s.ok()) {
      return c.Fail(s.error());
    }
  }
  return {};
}

// Sends `batches[indices]` on `c` as one request.
Status SendBatches(net::Lease& c, std::span<const Outgoing> batches,
                   const std::vector<size_t>& indices, Instant now) {
  thread_local std::string request, one;
  request.clear();
  for (size_t i : indices) {
    memcached::BuildRequest(*batches[i].wire, now, one, batches[i].appends(), batches[i].with_cas(),
                            batches[i].appends_at());
    request += one;
  }
  if (Status s = c->socket->Send(request); !s.ok()) return c.Fail(s.error());
  return {};
}

// Sends `request` (ending in a get of `batch.reads`) on the ready connection `c` and reads its
// answer, after what earlier requests left unread. On an error `c` is failed (out of step).
Result<memcached::GetAnswer> SendAndRead(net::ServerPool& pool, net::Lease& c,
                                         const std::string& request, const Batch& batch,
                                         std::span<const uint8_t> is_pack,
                                         std::atomic<uint64_t>& unconfirmed) {
  if (Status s = c->socket->Send(request); !s.ok()) return c.Fail(s.error());
  if (Status s = ReadUnread(pool.name(), *c, unconfirmed); !s.ok()) return c.Fail(s.error());
  Result<memcached::GetAnswer> answer =
      memcached::ReadGetAnswer(pool.name(), *c->socket, batch, is_pack);
  if (!answer.ok()) return c.Fail(answer.error());
  return answer;
}

// Sends `compactions` on `c`, their answers left to its next user. A failure to send drops the
// connection; the packs simply stay as they are.
void SendCompactions(net::Lease& c, std::span<const memcached::PackCompaction> compactions) {
  if (compactions.empty()) return;
  thread_local std::string request;
  memcached::BuildCompactions(compactions, request);
  if (Status s = c->socket->Send(request); !s.ok()) {
    (void)c.Fail(s.error());
    return;
  }
  ++c->unread;
}

// Reads the answers of `batches[indices]`, sent on `c`, into `results`.
void ReadBatches(net::ServerPool& pool, net::Lease& c, std::span<const Outgoing> batches,
                 const std::vector<size_t>& indices, std::atomic<uint64_t>& unconfirmed,
                 BatchResults& results) {
  std::vector<memcached::PackCompaction> compactions;
  Status s = ReadUnread(pool.name(), *c, unconfirmed);  // earlier requests'
  for (size_t k = 0; k < indices.size(); ++k) {
    const Batch& batch = *batches[indices[k]].wire;
    Result<std::vector<uint64_t>>& result = results[indices[k]];
    if (s.ok() && batch.reads.empty()) {
      std::optional<Error> own;
      c->unread = 1;  // this batch's "mn"
      s = ReadUnread(pool.name(), *c, unconfirmed, &own);
      if (s.ok()) result = own ? Result<std::vector<uint64_t>>(*own) : std::vector<uint64_t>{};
    } else if (s.ok()) {
      Result<memcached::GetAnswer> answer =
          memcached::ReadGetAnswer(pool.name(), *c->socket, batch, batches[indices[k]].is_pack());
      if (!answer.ok()) s = answer.error();
      if (s.ok()) {
        result = Resolve(pool.name(), batches[indices[k]], std::move(*answer), compactions);
      }
    }
    if (!s.ok()) {  // out of step: this batch and the later ones are unanswered
      const Error failed = c.Fail(s.error());
      for (size_t j = k; j < indices.size(); ++j) {
        results[indices[j]] = MaybeApplied(failed, *batches[indices[j]].wire);
      }
      return;
    }
  }
  SendCompactions(c, compactions);
}

}  // namespace

Result<MemcachedLayout> ParseLayout(std::string_view name) {
  if (name == "counters") return MemcachedLayout::kCounters;
  if (name == "packed") return MemcachedLayout::kPacked;
  return InvalidArgument(
      fmt::format("layout \"{}\": expected counters (one item per bucket) or packed (an hour of "
                  "a feature's seconds, minutes and total in one item)",
                  name));
}

struct MemcachedStore::Impl {
  explicit Impl(const Clock& c) : clock(c) {}

  const Clock& clock;
  std::optional<packed::PlanOptions> plan;  // none: plain counters
  std::string description;
  std::unique_ptr<memcached::HashRing> ring;
  std::vector<std::unique_ptr<net::ServerPool>> pools;  // in ring order
  std::atomic<uint64_t> unconfirmed_failures{0};
  packed::SentBytesTally sent;  // what writes that read nothing appended to each pack

  net::ServerPool& PoolOf(const std::string& group) const {
    return *pools[ring->PositionOf(group)];
  }

  // The packs `out` appends to that are due for a compaction (their counts start again), with
  // their groups. Batches that read are not counted: their reads compact what they find.
  std::vector<std::pair<std::string, std::string>> DueForCompaction(std::span<const Outgoing> out) {
    std::vector<std::pair<std::string, std::string>> due;  // group, pack
    for (const Outgoing& o : out) {
      if (o.wire->reads.empty()) sent.Add(o.wire->group, o.appends(), due);
    }
    return due;
  }

  // Reads `pack` of `group` and rewrites it in fewer records if that pays (one round trip; a
  // failure leaves the pack as it is).
  void Compact(const std::string& group, const std::string& pack) {
    net::ServerPool& pool = PoolOf(group);
    net::Lease c(pool);
    if (!Ready(pool, c, unconfirmed_failures).ok()) return;
    const Batch read{group, {}, {pack}};
    const uint8_t is_pack[] = {1};
    std::string request;
    memcached::BuildRequest(read, clock.Now(), request, {}, /*with_cas=*/true);
    Result<memcached::GetAnswer> answer =
        SendAndRead(pool, c, request, read, is_pack, unconfirmed_failures);
    if (!answer.ok() || !answer->packs[0]) return;
    Result<packed::PackFold> fold = packed::PackFold::Parse(pack, *answer->packs[0]);
    if (!fold.ok()) return;
    std::vector<memcached::PackCompaction> compactions;
    MaybeCompact(pack, *answer->packs[0], answer->pack_cas[0], *fold, compactions);
    SendCompactions(c, compactions);
  }

  // Reads what fire-and-forget requests left unread on every idle connection; a connection that
  // cannot answer counts as one unconfirmed failure and is dropped.
  void Flush() {
    for (const auto& pool : pools) {
      pool->SweepIdle([&](net::PooledConnection& c) {
        if (c.unread > 0) c.socket->BeginExchange();
        if (c.unread == 0 || ReadUnread(pool->name(), c, unconfirmed_failures).ok()) {
          return true;
        }
        unconfirmed_failures.fetch_add(1, std::memory_order_relaxed);
        return false;
      });
    }
  }
};

MemcachedStore::MemcachedStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MemcachedStore::~MemcachedStore() { impl_->Flush(); }

Result<std::unique_ptr<MemcachedStore>> MemcachedStore::Create(const MemcachedOptions& options,
                                                               const Clock& clock) {
  if (Status s = ValidateOptions(options); !s.ok()) return s.error();
  Result<std::unique_ptr<memcached::HashRing>> ring = memcached::HashRing::Create(options.servers);
  if (!ring.ok()) return ring.error();
  auto impl = std::make_unique<Impl>(clock);
  impl->description = fmt::format("memcached {}", fmt::join(options.servers, ","));
  if (options.layout == MemcachedLayout::kPacked || options.read_both_layouts) {
    impl->plan =
        packed::PlanOptions{options.layout == MemcachedLayout::kPacked, options.read_both_layouts};
  }
  for (const net::ServerAddress& address : (*ring)->servers()) {
    impl->pools.push_back(
        std::make_unique<net::ServerPool>(address, PoolOptionsOf(options), clock));
  }
  impl->ring = std::move(*ring);
  return std::unique_ptr<MemcachedStore>(new MemcachedStore(std::move(impl)));
}

std::string MemcachedStore::Describe() const { return impl_->description; }

uint64_t MemcachedStore::Flush() {
  impl_->Flush();
  return unconfirmed_failures();
}

uint64_t MemcachedStore::unconfirmed_failures() const {
  return impl_->unconfirmed_failures.load(std::memory_order_relaxed);
}

Result<std::vector<uint64_t>> MemcachedStore::Apply(const Batch& batch) {
  if (batch.reads.empty()) return std::move(ApplyMany({&batch, 1}).front());  // waits for it
  if (Status s = ValidateBatch(batch); !s.ok()) return s.error();
  if (Status s = ValidateGuards(*this, batch); !s.ok()) return s.error();
  std::vector<packed::WireBatch> plans;
  const std::vector<Outgoing> out = Prepare(impl_->plan, {&batch, 1}, {true}, plans);
  net::ServerPool& pool = impl_->PoolOf(batch.group);
  net::Lease c(pool);
  if (Status s = Ready(pool, c, impl_->unconfirmed_failures); !s.ok()) return s.error();
  thread_local std::string request;
  memcached::BuildRequest(*out[0].wire, impl_->clock.Now(), request, out[0].appends(),
                          out[0].with_cas(), out[0].appends_at());
  Result<memcached::GetAnswer> answer =
      SendAndRead(pool, c, request, *out[0].wire, out[0].is_pack(), impl_->unconfirmed_failures);
  if (!answer.ok()) return MaybeApplied(answer.error(), batch);
  std::vector<memcached::PackCompaction> compactions;
  Result<std::vector<uint64_t>> values =
      Resolve(pool.name(), out[0], std::move(*answer), compactions);
  SendCompactions(c, compactions);
  return values;
}

BatchResults MemcachedStore::ApplyMany(std::span<const Batch> batches) {
  BatchResults results;
  results.reserve(batches.size());
  std::vector<std::vector<size_t>> by_pool(impl_->pools.size());
  std::vector<bool> valid(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    Status s = ValidateBatch(batches[i]);
    if (s.ok()) s = ValidateGuards(*this, batches[i]);
    valid[i] = s.ok();
    results.push_back(s.ok() ? Result<std::vector<uint64_t>>(std::vector<uint64_t>{})
                             : Result<std::vector<uint64_t>>(s.error()));
    if (s.ok()) by_pool[impl_->ring->PositionOf(batches[i].group)].push_back(i);
  }
  std::vector<packed::WireBatch> plans;
  const std::vector<Outgoing> out = Prepare(impl_->plan, batches, valid, plans);
  // Every server's request leaves before any answer is read: the servers work at once.
  const Instant now = impl_->clock.Now();
  std::vector<std::unique_ptr<net::Lease>> leases(impl_->pools.size());
  for (size_t p = 0; p < by_pool.size(); ++p) {
    if (by_pool[p].empty()) continue;
    leases[p] = std::make_unique<net::Lease>(*impl_->pools[p]);
    Status s = Ready(*impl_->pools[p], *leases[p], impl_->unconfirmed_failures);
    const bool ready = s.ok();
    if (ready) s = SendBatches(*leases[p], out, by_pool[p], now);
    if (s.ok()) continue;
    for (size_t i : by_pool[p]) {
      results[i] =
          ready ? MaybeApplied(s.error(), batches[i]) : Result<std::vector<uint64_t>>(s.error());
    }
    leases[p].reset();
  }
  for (size_t p = 0; p < by_pool.size(); ++p) {
    if (leases[p] == nullptr) continue;
    ReadBatches(*impl_->pools[p], *leases[p], out, by_pool[p], impl_->unconfirmed_failures,
                results);
  }
  leases.clear();  // Compact leases connections of its own
  for (const auto& [group, pack] : impl_->DueForCompaction(out)) {
    impl_->Compact(group, pack);
  }
  return results;
}

std::vector<Status> MemcachedStore::Send(std::span<const Batch> batches) {
  std::vector<Status> results(batches.size());
  std::vector<std::vector<size_t>> by_pool(impl_->pools.size());
  std::vector<bool> valid(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    results[i] = ValidateSend(batches[i]);
    if (results[i].ok()) results[i] = ValidateBatch(batches[i]);
    if (results[i].ok()) results[i] = ValidateGuards(*this, batches[i]);
    valid[i] = results[i].ok();
    if (results[i].ok()) by_pool[impl_->ring->PositionOf(batches[i].group)].push_back(i);
  }
  std::vector<packed::WireBatch> plans;
  const std::vector<Outgoing> out = Prepare(impl_->plan, batches, valid, plans);
  const Instant now = impl_->clock.Now();
  for (size_t p = 0; p < by_pool.size(); ++p) {
    if (by_pool[p].empty()) continue;
    net::Lease c(*impl_->pools[p]);
    Status s = Ready(*impl_->pools[p], c, impl_->unconfirmed_failures);
    const bool ready = s.ok();
    if (ready) s = SendBatches(c, out, by_pool[p], now);
    if (s.ok()) {
      // Each batch's answer is read by the connection's next user.
      c->unread += static_cast<int>(by_pool[p].size());
      continue;
    }
    for (size_t i : by_pool[p]) results[i] = ready ? MaybeApplied(s.error(), batches[i]) : s;
  }
  for (const auto& [group, pack] : impl_->DueForCompaction(out)) {
    impl_->Compact(group, pack);
  }
  return results;
}

Status MemcachedStore::Delete(const std::string& group, std::span<const std::string> keys) {
  if (Status s = ValidateKeys(group, keys); !s.ok()) return s;
  net::ServerPool& pool = impl_->PoolOf(group);
  net::Lease c(pool);
  if (Status s = c.Acquire(); !s.ok()) return s.error();
  c->socket->BeginExchange();
  std::vector<std::string> deletes;
  std::vector<packed::PackAppend> appends;
  // A bucket is deleted where this client's layouts may have written it.
  if (impl_->plan) {
    appends = packed::PlanPackedDelete(group, keys, *impl_->plan, deletes);
    keys = deletes;
  }
  if (Status s = c->socket->Send(memcached::BuildDeleteRequest(keys, appends, impl_->clock.Now()));
      !s.ok()) {
    return c.Fail(s.error());
  }
  ++c->unread;
  // The deletes' own failures come before the last MN; anything else is an earlier request's.
  std::optional<Error> error;
  if (Status s = ReadUnread(pool.name(), *c, impl_->unconfirmed_failures, &error); !s.ok()) {
    return c.Fail(s.error());
  }
  if (error) return *error;
  return {};
}

std::vector<Result<ServerStats>> MemcachedStore::Stats() {
  std::vector<Result<ServerStats>> out;
  for (const auto& pool : impl_->pools) {
    ServerStats stats;
    stats.kind = "memcached";
    stats.server = net::HostPort(pool->address());
    net::Lease c(*pool);
    Status s = c.Acquire();
    if (s.ok()) {
      c->socket->BeginExchange();
      // Answers of earlier fire-and-forget requests come first.
      if (c->unread > 0) s = ReadUnread(pool->name(), *c, impl_->unconfirmed_failures);
      if (s.ok()) s = c->socket->Send("stats\r\n");
      if (s.ok()) s = memcached::ReadStats(pool->name(), *c->socket, stats);
      if (!s.ok()) s = c.Fail(s.error());
    }
    if (s.ok()) {
      out.emplace_back(std::move(stats));
    } else {
      out.emplace_back(s.error());
    }
  }
  return out;
}

Result<std::string> MemcachedStore::ServerFor(const std::string& group) {
  return net::HostPort(impl_->PoolOf(group).address());
}

}  // namespace hourglass
