#include "hourglass/memcached_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "hourglass/net/pipeline.h"
#include "hourglass/net/pool.h"
#include "hourglass/packed_layout.h"
#include "hourglass/saturating.h"
#include "pack_bases.h"
#include "protocol.h"
#include "ring.h"

namespace hourglass {
namespace {

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

net::PoolOptions PoolOptionsOf(const MemcachedOptions& o) {
  return net::PoolOptions{o.connect_timeout, o.io_timeout,       o.retry_timeout, o.pool_size,
                          o.pool_wait,       o.idle_check_after, o.on_transition};
}

// The server process the connections of one pool last found: another one means a restart.
struct ServerIdentity {
  std::mutex mu;
  uint64_t pid = 0;
  int64_t started = 0;  // ServerStats::started
  bool known = false;
};

// A new connection's first exchange: `stats`, compared with the process the pool knew. A restart
// is told through `on_loss`, dated now, before the connection carries any batch.
std::function<Status(net::PooledConnection&)> IdentityCheck(std::string server,
                                                            std::shared_ptr<ServerIdentity> seen,
                                                            StoreLossHandler on_loss,
                                                            const Clock& clock) {
  return [server = std::move(server), seen = std::move(seen), on_loss = std::move(on_loss),
          &clock](net::PooledConnection& c) -> Status {
    ServerStats stats;
    if (Status s = c.socket->Send("stats\r\n"); !s.ok()) return s;
    if (Status s = memcached::ReadStats(server, *c.socket, stats); !s.ok()) return s;
    const int64_t started = stats.started();
    bool restarted = false;
    {
      std::lock_guard lock(seen->mu);
      restarted = seen->known && (seen->pid != stats.pid || started > seen->started + 1);
      seen->pid = stats.pid;
      seen->started = started;
      seen->known = true;
    }
    if (restarted) on_loss(StoreLoss{"memcached", server, clock.Now(), LossCause::kRestart});
    return {};
  };
}

using BatchResults = std::vector<Result<std::vector<uint64_t>>>;

// A request as it goes on the wire: a batch, the caller's own (counters layout) or its packed
// plan's; or prepared bytes that read nothing (deletes).
struct Outgoing {
  const Batch* wire = nullptr;                // sent: its increments as counters, reads as gets
  const packed::WireBatch* packed = nullptr;  // the packed plan, if any
  const std::string* raw = nullptr;           // instead of `wire`: these bytes, ending in "mn"
  // Its server: the one `replica` places after its group's own in ring order (0: its own).
  size_t replica = 0;
  size_t index = 0;  // its place among the requests of its exchange
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

// What a store keeps of bases, and whether it writes them.
struct Bases {
  memcached::BaseCache& cache;
  memcached::Compacting& compacting;
  std::atomic<uint64_t>& unconfirmed;
  bool write = true;
  Instant now{};  // of the exchange: when bases read or written were last used on the server
};

// A pack as a batch read it, for its compaction: the batch's appends and reads (to tell whether
// the pack is settled), and the store's bases.
struct ReadContext {
  std::span<const packed::PackAppend> appends;
  std::span<const std::string> reads;
  const Bases& bases;
};

// `compaction`, its value `compacted`, as a base that the pack names (replacing `old_base`, if
// any).
memcached::PackCompaction IntoBase(memcached::PackCompaction compaction, std::string compacted,
                                   std::string old_base) {
  const uint64_t token = memcached::NewBaseToken();
  compaction.base_key = packed::BaseKey(compaction.key, token);
  compaction.base_value = std::move(compacted);
  compaction.value = packed::PackWithBase(compaction.expiry, token);
  compaction.old_base = std::move(old_base);
  return compaction;
}

// A compaction of `key`, read with `cas`, once one is decided.
memcached::PackCompaction CompactionStart(const std::string& key, uint64_t cas,
                                          const packed::PackFold& fold, size_t own) {
  memcached::PackCompaction compaction;
  compaction.key = key;
  compaction.cas = cas;
  compaction.expiry = fold.expiry();
  compaction.own = own;
  return compaction;
}

// The compaction of `pack`, which names `base` (read whole with `cas`, its own item `own` bytes
// long), into `out` when it is worth it: into a new base once its own records reach
// kBaseTailBytes, or back into one item once settled (its hour is past: read rarely, one item
// holds it in less memory than two).
void MaybeCompactBased(const std::string& key, const std::string& pack, uint64_t cas,
                       const packed::PackFold& fold, const std::string& base, size_t own,
                       const ReadContext& context, std::vector<memcached::PackCompaction>& out) {
  const bool settled = packed::SettledBy(key, context.appends, context.reads);
  // Another thread's compaction of it may still win: none of this one's could be named.
  if ((!settled && own < packed::kBaseTailBytes) || context.bases.compacting.Busy(key, own)) {
    return;
  }
  std::optional<packed::PackFold> full;
  if (fold.depth() != packed::PackFold::Depth::kSeconds) {
    Result<packed::PackFold> parsed = packed::PackFold::Parse(key, pack);
    if (!parsed.ok()) return;
    full = std::move(*parsed);
  }
  memcached::PackCompaction compaction = CompactionStart(key, cas, fold, own);
  std::string compacted = (full ? *full : fold).Compacted();
  if (!settled) {
    out.push_back(IntoBase(std::move(compaction), std::move(compacted), base));
    return;
  }
  compaction.value = std::move(compacted);
  compaction.old_base = base;
  out.push_back(std::move(compaction));
}

// The compaction of `pack` (read whole with `cas`; its base `base`, if any, and its own item `own`
// bytes long) into `out`, when it is worth it. One with a base: MaybeCompactBased. One without, as
// CompactionOf says, into a base when that is long and the pack open. Whether the pack is settled
// is asked only of packs with a base or records enough to compact, not of the sparse ones most
// checks read.
void MaybeCompact(const std::string& key, const std::string& pack, uint64_t cas,
                  const packed::PackFold& fold, const std::string& base, size_t own,
                  const ReadContext& context, std::vector<memcached::PackCompaction>& out) {
  if (cas == 0) return;
  if (!base.empty()) return MaybeCompactBased(key, pack, cas, fold, base, own, context, out);
  const bool settled = fold.records() >= packed::kCompactAfterRecords &&
                       packed::SettledBy(key, context.appends, context.reads);
  std::optional<std::string> compact = packed::CompactionOf(pack, fold, settled);
  if (!compact) return;
  if (context.bases.write && !settled && compact->size() >= packed::kBaseAfterBytes) {
    if (context.bases.compacting.Busy(key, pack.size())) return;
    out.push_back(IntoBase(CompactionStart(key, cas, fold, pack.size()), std::move(*compact), {}));
    return;
  }
  memcached::PackCompaction compaction = CompactionStart(key, cas, fold, own);
  compaction.value = std::move(*compact);
  out.push_back(std::move(compaction));
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
                                      memcached::GetAnswer&& answer, const Bases& bases,
                                      std::vector<memcached::PackCompaction>& compactions) {
  if (answer.error) return *answer.error;
  if (o.packed == nullptr) return std::move(answer.values);
  const packed::WireBatch& plan = *o.packed;
  const ReadContext context{plan.appends, plan.counters.reads, bases};
  static const std::string kNoBase;
  return packed::ResolveReads(
      server, plan, answer.values, answer.packs,
      [&](size_t get, const std::string& pack, const packed::PackFold& fold) {
        const bool based = !answer.pack_base.empty() && !answer.pack_base[get].empty();
        MaybeCompact(plan.counters.reads[get], pack, answer.pack_cas[get], fold,
                     based ? answer.pack_base[get] : kNoBase, based ? answer.pack_own[get] : 0,
                     context, compactions);
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

// Reads every answer the leased `c` still owes (earlier fire-and-forget requests'), its exchange's
// deadline started. A failure drops the connection.
Status ReadAllOwed(std::string_view server, net::Lease& c, std::atomic<uint64_t>& unconfirmed) {
  c->socket->BeginExchange();
  if (c->unread == 0) return {};
  if (Status s = ReadUnread(server, *c, unconfirmed); !s.ok()) return c.Fail(s.error());
  return {};
}

// Takes a connection of `pool` into `c` with nothing owed on it (ReadAllOwed).
Status InStep(net::ServerPool& pool, net::Lease& c, std::atomic<uint64_t>& unconfirmed) {
  if (Status s = c.Acquire(); !s.ok()) return s;
  return ReadAllOwed(pool.name(), c, unconfirmed);
}

// Makes `compactions` on `c`, which owes no answer to a request of its current user: those into a
// base or out of one at once (a pack never names a base not stored, and a base is deleted only
// once no pack names it; `bases` keeps the new ones), then the others sent, their answers left to
// its next user. A failure drops the connection; the packs simply stay as they are.
void MakeCompactions(std::string_view server, net::Lease& c,
                     std::span<const memcached::PackCompaction> compactions, const Bases& bases) {
  bool inline_ones = false;
  for (const memcached::PackCompaction& compaction : compactions) {
    if (!compaction.WithBases()) {
      inline_ones = true;
      continue;
    }
    if (!bases.compacting.Claim(compaction.key)) continue;
    bool named = false;
    Status s = ReadAllOwed(server, c, bases.unconfirmed);  // drops `c` itself on a failure
    if (s.ok()) {
      s = memcached::RewriteWithBases(server, *c->socket, compaction, c->unread, named);
      if (!s.ok()) (void)c.Fail(s.error());
    }
    bases.compacting.Release(compaction.key, compaction.own, named);
    if (!s.ok()) return;
    if (named && !compaction.base_key.empty()) {
      bases.cache.Put(compaction.base_key, compaction.base_value, bases.now);
    }
  }
  if (!inline_ones) return;
  thread_local std::string request;
  memcached::BuildCompactions(compactions, request);
  if (Status s = c->socket->Send(request); !s.ok()) {
    (void)c.Fail(s.error());
    return;
  }
  ++c->unread;
}

// Fetches `touches` (bases read from the store's copies) on `c`, which owes no answer to a request
// of its current user, unanswered but for one "MN" left to its next user: memcached then counts
// them as used, as their packs are. A failure drops the connection; the bases simply look unused.
void SendTouches(net::Lease& c, std::span<const std::string> touches) {
  thread_local std::string request;
  request.clear();
  memcached::BuildTouches(touches, request);
  if (Status s = c->socket->Send(request); !s.ok()) {
    (void)c.Fail(s.error());
    return;
  }
  ++c->unread;
}

// A request whose answer named bases the store had not read: resolved after its exchange.
struct PendingRead {
  size_t request = 0;
  net::ServerPool* pool = nullptr;
  memcached::GetAnswer answer;
  std::vector<size_t> missing;  // the packs whose bases are still to read
};

// The memcached protocol as net::Pipeline drives it.
struct Codec {
  using Encoded = Outgoing;
  // What reading one connection's answers leaves to do on it.
  struct Scratch {
    std::vector<memcached::PackCompaction> compactions;
    std::vector<std::string> touches;  // bases read from the store's copies, due to be fetched
  };
  using Request = net::Request<Outgoing>;

  const memcached::HashRing& ring;
  const std::vector<std::unique_ptr<net::ServerPool>>& pools;  // in ring order
  std::atomic<uint64_t>& unconfirmed;
  Instant now;
  Bases bases;
  std::vector<PendingRead>& pending;

  Result<net::ServerPool*> Route(const Request& r) const {
    return pools[(ring.PositionOf(r.group) + r.encoded.replica) % pools.size()].get();
  }
  void Append(const Request& r, std::string& out) const {
    const Outgoing& o = r.encoded;
    if (o.raw != nullptr) {
      out += *o.raw;
      return;
    }
    thread_local std::string one;
    memcached::BuildRequest(*o.wire, now, one, o.appends(), o.with_cas(), o.appends_at());
    out += one;
  }
  Status ReadOwed(net::ServerPool& pool, net::PooledConnection& c) const {
    return ReadUnread(pool.name(), c, unconfirmed);
  }
  net::Answer Read(net::ServerPool& pool, net::PooledConnection& c, const Request& r,
                   Scratch& chores) const {
    const Outgoing& o = r.encoded;
    if (o.raw != nullptr || o.wire->reads.empty()) {  // its own failures come before its "MN"
      std::optional<Error> own;
      c.unread = 1;
      if (Status s = ReadUnread(pool.name(), c, unconfirmed, &own); !s.ok()) {
        return net::Answer::Broken(s.error());
      }
      if (own) return {net::Answer::Kind::kResult, *own, std::nullopt};
      return {};
    }
    Result<memcached::GetAnswer> answer =
        memcached::ReadGetAnswer(pool.name(), *c.socket, *o.wire, o.is_pack());
    if (!answer.ok()) return net::Answer::Broken(answer.error());
    if (o.packed != nullptr && !answer->error) {
      std::vector<size_t> missing =
          AssembleFromCache(bases.cache, o.wire->reads, now, *answer, chores.touches);
      if (!missing.empty()) {
        pending.push_back({o.index, &pool, std::move(*answer), std::move(missing)});
        return {};
      }
    }
    return {net::Answer::Kind::kResult,
            Resolve(pool.name(), o, std::move(*answer), bases, chores.compactions), std::nullopt};
  }
  void Finish(net::Lease& c, Scratch& chores) const {
    MakeCompactions(c.pool().name(), c, chores.compactions, bases);
    if (!chores.touches.empty() && c.held()) SendTouches(c, chores.touches);
  }
  void Owe(net::PooledConnection& c, const Request&) const { ++c.unread; }
  void Moved(const net::Redirect&) const {}  // memcached never redirects
};

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
  packed::SentBytesTally sent;       // what writes that read nothing appended to each pack
  memcached::BaseCache bases;        // the packs' bases read or written
  memcached::Compacting compacting;  // packs being compacted into bases
  bool write_bases = true;           // long compactions go to bases
  // The packs with a base that writes reading nothing compacted, the latest of each group: no
  // read comes to settle them (a service that only records), so the first such write to a later
  // hour of the group does (CompactDue). Forgotten all at once past kMaxTrackedPacks.
  std::mutex based_mu;
  std::unordered_map<std::string, std::string> based;  // group -> pack; guarded by based_mu

  Bases BaseRules(Instant now) {
    return Bases{bases, compacting, unconfirmed_failures, write_bases, now};
  }

  std::chrono::milliseconds io_timeout{};

  net::ServerPool& PoolOf(std::string_view group, size_t replica = 0) const {
    return *pools[(ring->PositionOf(group) + replica) % pools.size()];
  }

  // `batches` as the pipeline's requests, those that are valid (for Send: also without reads):
  // errors[i] is batches[i]'s validation, and requests_of[k] the batch of requests[k]. The
  // requests point into `batches` and into `plans`, which keeps their packed plans. Each valid
  // batch goes once to each of `copies` servers (its group's and the ones after it in ring
  // order), planned once: requests_of[k] is r * batches.size() + i for copy r of batch i.
  std::vector<net::Request<Outgoing>> Requests(const Store& store, std::span<const Batch> batches,
                                               size_t copies, bool send_only,
                                               std::vector<Status>& errors,
                                               std::vector<packed::WireBatch>& plans,
                                               std::vector<size_t>& requests_of) const {
    errors.assign(batches.size(), Status());
    std::vector<bool> valid(batches.size());
    for (size_t i = 0; i < batches.size(); ++i) {
      Status& s = errors[i];
      if (send_only) s = ValidateSend(batches[i]);
      if (s.ok()) s = ValidateBatch(batches[i]);
      if (s.ok()) s = ValidateGuards(store, batches[i]);
      valid[i] = s.ok();
    }
    std::vector<Outgoing> out = Prepare(plan, batches, valid, plans);
    std::vector<net::Request<Outgoing>> requests;
    requests.reserve(batches.size() * copies);
    requests_of.clear();
    for (size_t r = 0; r < copies; ++r) {
      for (size_t i = 0; i < batches.size(); ++i) {
        if (!valid[i]) continue;
        out[i].replica = r;
        out[i].index = requests.size();
        requests.push_back({batches[i].group, out[i], !batches[i].increments.empty(), {}});
        requests_of.push_back(r * batches.size() + i);
      }
    }
    return requests;
  }

  // A codec for one exchange at `now`: requests whose bases are still to read go to `pending`.
  Codec CodecAt(Instant now, std::vector<PendingRead>& pending) {
    return Codec{*ring, pools, unconfirmed_failures, now, BaseRules(now), pending};
  }

  // The answers of `pending` (requests of `requests`, exchanged at `now`, whose packs named bases
  // not read yet) into `answers`: each such pack read whole, on a connection of the server that
  // answered.
  void ResolvePending(std::vector<PendingRead>& pending,
                      std::span<const net::Request<Outgoing>> requests, Instant now,
                      std::vector<Result<std::vector<uint64_t>>>& answers) {
    for (PendingRead& p : pending) {
      const net::Request<Outgoing>& r = requests[p.request];
      Result<std::vector<uint64_t>> values = ResolveWhole(p, r.encoded, BaseRules(now));
      answers[p.request] =
          values.ok() ? std::move(values)
                      : Result<std::vector<uint64_t>>(net::MaybeApplied(values.error(), r.writes));
    }
  }

  Result<std::vector<uint64_t>> ResolveWhole(PendingRead& p, const Outgoing& o,
                                             const Bases& rules) {
    net::ServerPool& pool = *p.pool;
    net::Lease c(pool);
    if (Status s = InStep(pool, c, unconfirmed_failures); !s.ok()) return s.error();
    if (Status s = memcached::CompleteFromServer(pool.name(), *c->socket, o.wire->reads, p.missing,
                                                 rules.now, bases, p.answer);
        !s.ok()) {
      return c.Fail(s.error());
    }
    std::vector<memcached::PackCompaction> compactions;
    Result<std::vector<uint64_t>> values =
        Resolve(pool.name(), o, std::move(p.answer), rules, compactions);
    MakeCompactions(pool.name(), c, compactions, rules);
    return values;
  }

  // Compacts the packs `requests` appended to that are due for it (their counts start again).
  // Batches that read are not counted: their reads compact what they find.
  void CompactDue(std::span<const net::Request<Outgoing>> requests, Instant now) {
    std::vector<std::pair<std::string, std::string>> due;                        // group, pack
    std::vector<std::pair<std::string, const net::Request<Outgoing>*>> settled;  // pack, by
    for (const net::Request<Outgoing>& r : requests) {
      // Another replica's packs are compacted by the reads that find them.
      if (r.encoded.replica != 0 || !r.encoded.wire->reads.empty()) continue;
      sent.Add(r.encoded.wire->group, r.encoded.appends(), due);
      if (std::optional<std::string> past =
              SettledBase(r.encoded.wire->group, r.encoded.appends())) {
        settled.emplace_back(std::move(*past), &r);
      }
    }
    const Bases rules = BaseRules(now);
    for (const auto& [group, pack] : due) Compact(group, pack, rules, {});
    for (const auto& [pack, by] : settled) {
      Compact(by->encoded.wire->group, pack, rules, by->encoded.appends());
    }
  }

  // The pack of `group` with a base that `appends` (a write reading nothing) settle, forgotten
  // once told; nullopt if none.
  std::optional<std::string> SettledBase(const std::string& group,
                                         std::span<const packed::PackAppend> appends) {
    std::lock_guard lock(based_mu);
    auto it = based.find(group);
    if (it == based.end() || !packed::SettledBy(it->second, appends)) return std::nullopt;
    std::string pack = std::move(it->second);
    based.erase(it);
    return pack;
  }

  // Notes that `pack` of `group` has a base, or is being given one.
  void NoteBased(const std::string& group, const std::string& pack) {
    std::lock_guard lock(based_mu);
    if (based.size() >= packed::SentBytesTally::kMaxTrackedPacks) based.clear();
    based[group] = pack;
  }

  // Reads `pack` of `group` and rewrites it in fewer records if that pays (one round trip; a
  // failure leaves the pack as it is); `settling`, the appends of a write to a later hour of the
  // group, settle it. A pack left with a base is noted (NoteBased).
  void Compact(const std::string& group, const std::string& pack, const Bases& rules,
               std::span<const packed::PackAppend> settling) {
    net::ServerPool& pool = PoolOf(group);
    net::Lease c(pool);
    if (!InStep(pool, c, unconfirmed_failures).ok()) return;
    Result<memcached::WholePack> whole =
        memcached::ReadWhole(pool.name(), *c->socket, pack, rules.now, bases);
    if (!whole.ok()) {
      (void)c.Fail(whole.error());
      return;
    }
    if (!whole->value) return;
    Result<packed::PackFold> fold = packed::PackFold::Parse(pack, *whole->value);
    if (!fold.ok()) return;
    std::vector<memcached::PackCompaction> compactions;
    MaybeCompact(pack, *whole->value, whole->cas, *fold, whole->base, whole->own,
                 ReadContext{settling, {}, rules}, compactions);
    const bool based_now =
        compactions.empty() ? !whole->base.empty() : !compactions.front().base_key.empty();
    if (based_now && settling.empty()) NoteBased(group, pack);
    MakeCompactions(pool.name(), c, compactions, rules);
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
    net::PoolOptions pool = PoolOptionsOf(options);
    if (options.on_loss) {
      pool.on_open = IdentityCheck(net::HostPort(address), std::make_shared<ServerIdentity>(),
                                   options.on_loss, clock);
    }
    impl->pools.push_back(std::make_unique<net::ServerPool>(address, pool, clock));
  }
  impl->ring = std::move(*ring);
  impl->io_timeout = options.io_timeout;
  impl->write_bases = options.write_bases;
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
  return std::move(ApplyMany({&batch, 1}).front());
}

BatchResults MemcachedStore::ApplyMany(std::span<const Batch> batches) {
  return ApplyManyAt(batches, 1);
}

BatchResults MemcachedStore::ApplyManyAt(std::span<const Batch> batches, size_t copies) {
  std::vector<Status> errors;
  std::vector<packed::WireBatch> plans;
  std::vector<size_t> requests_of;
  std::vector<net::Request<Outgoing>> requests =
      impl_->Requests(*this, batches, copies, /*send_only=*/false, errors, plans, requests_of);
  std::vector<PendingRead> pending;
  const Instant now = impl_->clock.Now();
  Codec codec = impl_->CodecAt(now, pending);
  std::vector<Result<std::vector<uint64_t>>> answers =
      net::Pipeline<Codec>(codec, impl_->clock, impl_->io_timeout).Exchange(requests);
  impl_->ResolvePending(pending, requests, now, answers);
  BatchResults results;
  results.reserve(batches.size() * copies);
  for (size_t r = 0; r < copies; ++r) {
    for (const Status& s : errors) {
      results.push_back(s.ok() ? Result<std::vector<uint64_t>>(std::vector<uint64_t>{})
                               : Result<std::vector<uint64_t>>(s.error()));
    }
  }
  for (size_t k = 0; k < requests.size(); ++k) results[requests_of[k]] = std::move(answers[k]);
  impl_->CompactDue(requests, now);
  return results;
}

std::vector<Status> MemcachedStore::Send(std::span<const Batch> batches) {
  return SendAt(batches, 1);
}

std::vector<Status> MemcachedStore::SendAt(std::span<const Batch> batches, size_t copies) {
  std::vector<Status> errors;
  std::vector<packed::WireBatch> plans;
  std::vector<size_t> requests_of;
  std::vector<net::Request<Outgoing>> requests =
      impl_->Requests(*this, batches, copies, /*send_only=*/true, errors, plans, requests_of);
  std::vector<Status> results;
  results.reserve(batches.size() * copies);
  for (size_t r = 0; r < copies; ++r) results.insert(results.end(), errors.begin(), errors.end());
  std::vector<PendingRead> pending;  // none: nothing is read
  const Instant now = impl_->clock.Now();
  Codec codec = impl_->CodecAt(now, pending);
  std::vector<Status> sent =
      net::Pipeline<Codec>(codec, impl_->clock, impl_->io_timeout).SendOnly(requests);
  for (size_t k = 0; k < requests.size(); ++k) results[requests_of[k]] = std::move(sent[k]);
  impl_->CompactDue(requests, now);
  return results;
}

Status MemcachedStore::Delete(const std::string& group, std::span<const std::string> keys) {
  return DeleteAt(group, keys, 0);
}

Status MemcachedStore::DeleteAt(const std::string& group, std::span<const std::string> keys,
                                size_t replica) {
  if (Status s = ValidateKeys(group, keys); !s.ok()) return s;
  std::vector<std::string> deletes;
  std::vector<packed::PackAppend> appends;
  // A bucket is deleted where this client's layouts may have written it.
  if (impl_->plan) {
    appends = packed::PlanPackedDelete(group, keys, *impl_->plan, deletes);
    keys = deletes;
  }
  const Instant now = impl_->clock.Now();
  const std::string request = memcached::BuildDeleteRequest(keys, appends, now);
  net::Request<Outgoing> r{group, Outgoing{.raw = &request, .replica = replica}, false, {}};
  std::vector<PendingRead> pending;  // none: nothing is read
  Codec codec = impl_->CodecAt(now, pending);
  Result<std::vector<uint64_t>> answer =
      std::move(net::Pipeline<Codec>(codec, impl_->clock, impl_->io_timeout).Exchange({&r, 1})[0]);
  if (!answer.ok()) return answer.error();
  return {};
}

namespace {

// One exchange with `pool`'s server on a pooled connection, after the answers it owed:
// `exchange` sends and reads. A failure drops the connection.
Status ExchangeWith(net::ServerPool& pool, std::atomic<uint64_t>& unconfirmed,
                    const std::function<Status(net::Connection&)>& exchange) {
  net::Lease c(pool);
  if (Status s = InStep(pool, c, unconfirmed); !s.ok()) return s;
  if (Status s = exchange(*c->socket); !s.ok()) return c.Fail(s.error());
  return {};
}

}  // namespace

std::vector<Result<ServerStats>> MemcachedStore::Stats() {
  std::vector<Result<ServerStats>> out;
  for (const auto& pool : impl_->pools) {
    ServerStats stats;
    stats.kind = "memcached";
    stats.server = net::HostPort(pool->address());
    Status s = ExchangeWith(*pool, impl_->unconfirmed_failures, [&](net::Connection& c) {
      Status sent = c.Send("stats\r\nstats items\r\n");
      if (sent.ok()) sent = memcached::ReadStats(pool->name(), c, stats);
      if (sent.ok()) sent = memcached::ReadItemStats(pool->name(), c, stats);
      return sent;
    });
    if (s.ok()) {
      out.emplace_back(std::move(stats));
    } else {
      out.emplace_back(s.error());
    }
  }
  return out;
}

std::vector<Result<ServerNote>> MemcachedStore::Notes() {
  std::vector<Result<ServerNote>> out;
  for (const auto& pool : impl_->pools) {
    ServerNote note{"memcached", net::HostPort(pool->address()), std::nullopt};
    Status s = ExchangeWith(*pool, impl_->unconfirmed_failures, [&](net::Connection& c) {
      // The note is text, kept as bytes as a pack is.
      Result<std::optional<std::string>> got = memcached::GetOne(pool->name(), c, kNoteKey);
      if (!got.ok()) return Status(got.error());
      note.text = std::move(*got);
      return Status();
    });
    if (s.ok()) {
      out.emplace_back(std::move(note));
    } else {
      out.emplace_back(s.error());
    }
  }
  return out;
}

Status MemcachedStore::WriteNote(const std::string& server, std::string_view text) {
  if (Status s = ValidateNote(text); !s.ok()) return s;
  for (const auto& pool : impl_->pools) {
    if (net::HostPort(pool->address()) != server) continue;
    return ExchangeWith(*pool, impl_->unconfirmed_failures, [&](net::Connection& c) -> Status {
      if (Status s = c.Send(fmt::format("set {} 0 0 {}\r\n{}\r\n", kNoteKey, text.size(), text));
          !s.ok()) {
        return s;
      }
      Result<std::string_view> line = c.ReadLine();
      if (!line.ok()) return line.error();
      if (*line != "STORED") return memcached::LineError(pool->name(), *line);
      return {};
    });
  }
  return InvalidArgument(fmt::format("{} has no server {}", Describe(), server));
}

Result<std::string> MemcachedStore::ServerFor(const std::string& group, size_t replica) {
  return net::HostPort(impl_->PoolOf(group, replica).address());
}

size_t MemcachedStore::servers() const { return impl_->pools.size(); }

std::vector<std::string> MemcachedStore::ServersOf(const std::string& group) {
  return {*ServerFor(group)};
}

}  // namespace hourglass
