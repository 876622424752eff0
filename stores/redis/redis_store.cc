#include "hourglass/redis_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "hourglass/net/pipeline.h"
#include "hourglass/net/pool.h"
#include "hourglass/packed_layout.h"
#include "placement.h"
#include "resp.h"
#include "scripts.h"

namespace hourglass {
namespace {

using net::Redirect;
using redis::Reply;

// What a connection keeps beyond its socket: the reply parser (it buffers what it read ahead),
// and the commands whose replies are owed (fire-and-forget), to send again if redirected.
struct RedisConnection final : net::ProtocolState {
  redis::ReplyReader reader;
  std::deque<std::string> unanswered;  // "" for a command not worth sending again
};

RedisConnection& StateOf(net::PooledConnection& c) {
  return static_cast<RedisConnection&>(*c.protocol);
}

Error Named(std::string_view server, ErrorCode code, std::string_view message) {
  return Error(code, fmt::format("{}: {}", server, message));
}

// A reply that is an error, as an Error: a full server (OOM, without eviction) is kStoreFull;
// transient refusals (loading, a cluster that is down or failing over) are kUnavailable; anything
// else kInternal.
Error ReplyError(std::string_view server, const Reply& reply) {
  const std::string_view kind = reply.error_kind();
  if (kind == "NOTCOUNTER") {
    const std::string_view key = std::string_view(reply.text).substr(kind.size() + 1);
    return Named(server, ErrorCode::kInternal,
                 fmt::format("the value under \"{}\" is not one hourglass wrote (another client "
                             "wrote it); reset the feature to delete it",
                             key));
  }
  if (kind == "OOM") {
    return Named(server, ErrorCode::kStoreFull,
                 fmt::format("Redis answered \"{}\"", reply.text.substr(0, 300)));
  }
  static constexpr std::string_view kTransient[] = {
      "LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "MOVED", "ASK"};
  const bool transient =
      std::find(std::begin(kTransient), std::end(kTransient), kind) != std::end(kTransient);
  return Named(server, transient ? ErrorCode::kUnavailable : ErrorCode::kInternal,
               fmt::format("Redis answered \"{}\"", reply.text.substr(0, 300)));
}

std::optional<uint64_t> ParseCounter(std::string_view text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// A request as one command: a batch's EVALSHA, with its plan; a delete's; or a fire-and-forget
// command sent again where a redirection sent it.
struct Encoded {
  std::string command;
  const Batch* batch = nullptr;  // the batch it carries, if any
  packed::WireBatch plan;        // the batch's
  size_t reads = 0;              // plan.sources.size(): the values its script answers
  // Fire-and-forget: its reply is worth sending it again for, should a redirection come back.
  bool resendable = false;

  // A command alone: a delete's, or one sent again.
  static Encoded Command(std::string command) {
    Encoded e;
    e.command = std::move(command);
    return e;
  }
};

// The index (1-based, as Lua's KEYS) of each tagged key of one command.
class KeyIndex {
 public:
  explicit KeyIndex(const std::string& group) : group_(group) {}
  std::string Of(const std::string& key) {
    auto [it, inserted] = index_.try_emplace(key, keys_.size() + 1);
    if (inserted) keys_.push_back(redis::TaggedKey(group_, key));
    return std::to_string(it->second);
  }
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  const std::string& group_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::string> keys_;
};

void AddCounterOp(const Increment& inc, KeyIndex& keys, std::vector<std::string>& argv) {
  if (inc.delta > 0) {
    argv.insert(argv.end(), {"c", keys.Of(inc.key), std::to_string(inc.delta),
                             std::to_string(std::max<int64_t>(inc.ttl.count(), 1))});
  } else if (inc.delta < 0) {
    const uint64_t amount = static_cast<uint64_t>(-(inc.delta + 1)) + 1;
    argv.insert(argv.end(), {"s", keys.Of(inc.key), std::to_string(amount)});
  }
}

// Where logical read `read` of `plan` comes from, as the script takes it: the physical key's
// index and, for a pack, the slot (65535: a counter), 4 bytes (scripts.h). Reads of the packed
// layout come from one source (never a counter and a pack both).
void PutRead(const packed::WireBatch& plan, size_t read, KeyIndex& keys, std::string& out) {
  const auto put16 = [&out](size_t v) {
    out += static_cast<char>((v >> 8) & 0xff);
    out += static_cast<char>(v & 0xff);
  };
  const packed::ReadSource& source = plan.sources[read];
  const std::string& key = plan.counters.reads[source.pack ? *source.pack : *source.counter];
  put16(std::stoul(keys.Of(key)));
  put16(source.pack ? packed::SlotIndex(source.slot) : 65535);
}

// The guards' arguments: each term is its read's 4 bytes and its sign.
void AddGuards(const Batch& batch, const packed::WireBatch& plan, KeyIndex& keys,
               std::vector<std::string>& argv) {
  argv.push_back(std::to_string(batch.guards.size()));
  for (const Guard& guard : batch.guards) {
    std::string terms;
    terms.reserve(guard.terms.size() * 5);
    for (const GuardTerm& term : guard.terms) {
      PutRead(plan, term.read, keys, terms);
      terms += static_cast<char>(term.sign > 0 ? 0 : 1);
    }
    argv.insert(argv.end(), {std::to_string(guard.max), std::to_string(guard.base), terms});
  }
}

void AppendEvalSha(const redis::Script& script, const std::vector<std::string>& keys,
                   const std::vector<std::string>& argv, std::string& out) {
  std::vector<std::string_view> args = {"EVALSHA", script.sha1};
  const std::string numkeys = std::to_string(keys.size());
  args.push_back(numkeys);
  args.insert(args.end(), keys.begin(), keys.end());
  args.insert(args.end(), argv.begin(), argv.end());
  redis::AppendCommand(args, out);
}

Encoded Encode(const Batch& batch) {
  Encoded e{{}, &batch, packed::PlanPacked(batch), 0, false};
  const packed::WireBatch& plan = e.plan;
  KeyIndex keys(batch.group);
  std::vector<std::string> argv;
  AddGuards(batch, plan, keys, argv);
  const std::vector<Increment>& counters = plan.counters.increments;
  const size_t split = std::min(plan.appends_at, counters.size());
  size_t ops = 0;
  std::vector<std::string> op_args;
  const auto counter_ops = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      const size_t before = op_args.size();
      AddCounterOp(counters[i], keys, op_args);
      ops += op_args.size() > before;
    }
  };
  counter_ops(0, split);
  for (const packed::PackAppend& append : plan.appends) {
    op_args.insert(op_args.end(), {"p", keys.Of(append.key),
                                   std::to_string(append.create_ttl.count()), append.records});
    ++ops;
  }
  counter_ops(split, counters.size());
  argv.push_back(std::to_string(ops));
  argv.insert(argv.end(), op_args.begin(), op_args.end());
  std::string reads;
  for (size_t i = 0; i < plan.sources.size(); ++i) PutRead(plan, i, keys, reads);
  argv.push_back(std::move(reads));
  e.reads = plan.sources.size();
  AppendEvalSha(redis::ApplyScript(), keys.keys(), argv, e.command);
  return e;
}

// The EVALSHA that deletes `keys` of `group` (counters and whole packs) and zeroes the slots of
// packs deleted in part.
std::string EncodeDelete(const std::string& group, std::span<const std::string> keys) {
  std::vector<std::string> deletes;
  const std::vector<packed::PackAppend> zeroes =
      packed::PlanPackedDelete(group, keys, packed::PlanOptions{}, deletes);
  KeyIndex index(group);
  std::vector<std::string> argv = {"0", std::to_string(deletes.size() + zeroes.size())};
  for (const std::string& key : deletes) argv.insert(argv.end(), {"x", index.Of(key)});
  for (const packed::PackAppend& z : zeroes) {
    argv.insert(argv.end(), {"p", index.Of(z.key), "0", z.records});
  }
  argv.emplace_back();  // no reads
  std::string command;
  AppendEvalSha(redis::ApplyScript(), index.keys(), argv, command);
  return command;
}

// Where a redirection sends a command: "MOVED 3999 127.0.0.1:6381" -> slot, "127.0.0.1:6381".
std::optional<Redirect> RedirectOf(const Reply& reply) {
  const std::string_view kind = reply.error_kind();
  if (kind != "MOVED" && kind != "ASK") return std::nullopt;
  const std::string_view rest = std::string_view(reply.text).substr(kind.size() + 1);
  const size_t space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  uint16_t slot = 0;
  if (std::from_chars(rest.data(), rest.data() + space, slot).ec != std::errc{}) {
    return std::nullopt;
  }
  return Redirect{kind == "ASK", slot, std::string(rest.substr(space + 1))};
}

// Loads the scripts on a new connection (and gives it its state), after AUTH and SELECT.
Status OpenConnection(const RedisOptions& o, net::PooledConnection& c) {
  auto state = std::make_unique<RedisConnection>();
  std::string request;
  size_t replies = 0;
  if (!o.password.empty()) {
    if (o.username.empty()) {
      redis::AppendCommand({"AUTH", o.password}, request);
    } else {
      redis::AppendCommand({"AUTH", o.username, o.password}, request);
    }
    ++replies;
  }
  if (o.database != 0 && !o.cluster) {
    const std::string db = std::to_string(o.database);
    redis::AppendCommand({"SELECT", db}, request);
    ++replies;
  }
  redis::AppendCommand({"SCRIPT", "LOAD", redis::ApplyScript().source}, request);
  ++replies;
  if (Status s = c.socket->Send(request); !s.ok()) return s;
  for (size_t i = 0; i < replies; ++i) {
    Result<Reply> reply = state->reader.Read(*c.socket);
    if (!reply.ok()) return reply.error();
    if (reply->error()) {
      const bool auth = reply->error_kind() == "WRONGPASS" || reply->error_kind() == "NOAUTH" ||
                        reply->text.find("AUTH") != std::string::npos;
      return Error(ErrorCode::kUnavailable,
                   fmt::format("setting up a connection: Redis answered \"{}\"{}",
                               reply->text.substr(0, 300),
                               auth ? " (check the user and password of the store URL, or "
                                      "HOURGLASS_REDIS_PASSWORD)"
                                    : ""));
    }
  }
  c.protocol = std::move(state);
  return {};
}

struct Node {
  std::string address;  // "host:port"
  std::unique_ptr<net::ServerPool> pool;
};

}  // namespace

Result<RedisOptions> ParseRedisUrl(std::string_view url) {
  RedisOptions options;
  const auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format(
        "store \"{}\": {}; expected redis://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...][/DB] or "
        "redis+cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]",
        url, why));
  };
  std::string_view rest;
  if (url.starts_with("redis://")) {
    rest = url.substr(8);
  } else if (url.starts_with("redis+cluster://")) {
    rest = url.substr(16);
    options.cluster = true;
  } else {
    return bad("not a Redis URL");
  }
  const size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos) return bad("a user without a password");
    options.username = std::string(userinfo.substr(0, colon));
    std::string password;
    const std::string_view encoded = userinfo.substr(colon + 1);
    for (size_t i = 0; i < encoded.size(); ++i) {
      if (encoded[i] != '%') {
        password += encoded[i];
        continue;
      }
      unsigned value = 0;
      if (i + 2 >= encoded.size() ||
          std::from_chars(encoded.data() + i + 1, encoded.data() + i + 3, value, 16).ptr !=
              encoded.data() + i + 3) {
        return bad("a password with a bad %XX escape");
      }
      password += static_cast<char>(value);
      i += 2;
    }
    options.password = std::move(password);
  }
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (!db.empty()) {
      if (options.cluster) return bad("a cluster has database 0 alone");
      const auto [end, ec] = std::from_chars(db.data(), db.data() + db.size(), options.database);
      if (ec != std::errc{} || end != db.data() + db.size())
        return bad("a database that is not a number");
    }
  }
  options.servers.clear();
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string_view::npos) comma = rest.size();
    const std::string_view server = rest.substr(pos, comma - pos);
    pos = comma + 1;
    if (server.empty()) continue;
    if (Result<net::ServerAddress> parsed = net::ParseServer(server); !parsed.ok()) {
      return bad(fmt::format("server \"{}\" is not HOST:PORT (e.g. 127.0.0.1:6379)", server));
    }
    options.servers.emplace_back(server);
  }
  if (options.servers.empty()) return bad("no server");
  return options;
}

struct RedisStore::Impl {
  Impl(const RedisOptions& o, const Clock& c) : options(o), clock(c) {}

  const RedisOptions options;
  const Clock& clock;
  std::string description;
  std::atomic<uint64_t> unconfirmed{0};

  // Standalone: the servers, fixed. Cluster: every node met so far, and the slot map.
  mutable std::mutex nodes_mu;
  std::vector<std::unique_ptr<Node>> nodes;  // guarded by nodes_mu (grows only)
  mutable std::shared_mutex map_mu;
  std::optional<redis::SlotMap> slots;  // guarded by map_mu
  std::vector<Node*> slot_nodes;        // per slots->nodes entry; guarded by map_mu
  std::atomic<int64_t> refreshed_at_ms{std::numeric_limits<int64_t>::min()};

  net::PoolOptions PoolOptionsFor() const {
    net::PoolOptions p{
        options.connect_timeout, options.io_timeout,       options.retry_timeout, options.pool_size,
        options.pool_wait,       options.idle_check_after, options.on_transition, nullptr};
    p.on_open = [this](net::PooledConnection& c) { return OpenConnection(options, c); };
    return p;
  }

  // The node at `address`, made on first use.
  Result<Node*> NodeAt(const std::string& address) {
    std::lock_guard lock(nodes_mu);
    for (const auto& n : nodes) {
      if (n->address == address) return n.get();
    }
    Result<net::ServerAddress> parsed = net::ParseServer(address);
    if (!parsed.ok()) return parsed.error();
    auto node = std::make_unique<Node>();
    node->address = address;
    node->pool = std::make_unique<net::ServerPool>(*parsed, PoolOptionsFor(), clock, "redis");
    nodes.push_back(std::move(node));
    return nodes.back().get();
  }

  // Asks the seeds, then the nodes met, for the slot map, in turn.
  Status RefreshSlots() {
    refreshed_at_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock.Monotonic().time_since_epoch())
            .count();
    std::vector<std::string> candidates = options.servers;
    {
      std::lock_guard lock(nodes_mu);
      for (const auto& n : nodes) candidates.push_back(n->address);
    }
    std::optional<Error> last;
    for (const std::string& address : candidates) {
      Result<Node*> node = NodeAt(address);
      if (!node.ok()) return node.error();
      Result<Reply> reply = Command(**node, {"CLUSTER", "SLOTS"});
      if (!reply.ok()) {
        last = reply.error();
        continue;
      }
      Result<redis::SlotMap> map = redis::ParseClusterSlots(*reply, address);
      if (!map.ok()) return map.error();
      std::vector<Node*> owners;
      for (const std::string& n : map->nodes) {
        Result<Node*> owner = NodeAt(n);
        if (!owner.ok()) return owner.error();
        owners.push_back(*owner);
      }
      std::unique_lock lock(map_mu);
      slots = std::move(*map);
      slot_nodes = std::move(owners);
      return {};
    }
    return last ? *last : Error(ErrorCode::kUnavailable, "no Redis Cluster node answered");
  }

  // The node that holds `group`'s keys.
  Result<Node*> NodeFor(std::string_view group) {
    if (!options.cluster) {
      const size_t shard = redis::RendezvousShard(group, options.servers);
      return NodeAt(options.servers[shard]);
    }
    const uint16_t slot = redis::HashSlot(redis::TaggedKey(group, group));
    {
      std::shared_lock lock(map_mu);
      if (slots && slots->owner[slot] >= 0)
        return slot_nodes[static_cast<size_t>(slots->owner[slot])];
    }
    if (Status s = RefreshSlots(); !s.ok()) return s.error();
    std::shared_lock lock(map_mu);
    if (slots->owner[slot] < 0) {
      return Error(
          ErrorCode::kUnavailable,
          fmt::format("redis cluster: no node serves slot {} (the cluster is not ready)", slot));
    }
    return slot_nodes[static_cast<size_t>(slots->owner[slot])];
  }

  // A MOVED: the slot lives on `node` now; the whole map is asked again at most every 100 ms.
  void Moved(const Redirect& r) {
    Result<Node*> node = NodeAt(r.node);
    {
      std::unique_lock lock(map_mu);
      if (slots && node.ok()) {
        size_t index = 0;
        while (index < slot_nodes.size() && slot_nodes[index] != *node) ++index;
        if (index == slot_nodes.size()) {
          slot_nodes.push_back(*node);
          slots->nodes.push_back(r.node);
        }
        slots->owner[r.slot] = static_cast<int16_t>(index);
      }
    }
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock.Monotonic().time_since_epoch())
            .count();
    if (now_ms - refreshed_at_ms.load() >= 100) (void)RefreshSlots();
  }

  // Fire-and-forget commands a cluster redirected, to send again once this thread holds no
  // connection (and no pool's lock): following a redirection takes connections of its own.
  struct Redirected {
    Redirect redirect;
    std::string command;
  };
  static std::vector<Redirected>& Deferred() {
    thread_local std::vector<Redirected> deferred;
    return deferred;
  }

  // Reads the replies `c` owes for fire-and-forget commands: errors count as unconfirmed
  // failures; redirected commands wait in Deferred() for SendDeferred.
  Status ReadUnread(net::PooledConnection& c) {
    RedisConnection& state = StateOf(c);
    while (c.unread > 0) {
      Result<Reply> reply = state.reader.Read(*c.socket);
      if (!reply.ok()) return reply.error();
      --c.unread;
      std::string command = std::move(state.unanswered.front());
      state.unanswered.pop_front();
      if (!reply->error()) continue;
      std::optional<Redirect> redirect = RedirectOf(*reply);
      if (redirect && !command.empty()) {
        Deferred().push_back({std::move(*redirect), std::move(command)});
        continue;
      }
      unconfirmed.fetch_add(1, std::memory_order_relaxed);
    }
    return {};
  }

  // Sends the redirected fire-and-forget commands again where they belong (once: their replies
  // are owed there, and a second redirection counts as a failure). Call holding no connection.
  void SendDeferred();

  // Takes a connection of the lease's pool ready for a request: no more unread replies than
  // allowed.
  Status Ready(net::ServerPool& pool, net::Lease& c) {
    return net::Ready(pool, c, [this](net::ServerPool&, net::PooledConnection& connection) {
      return ReadUnread(connection);
    });
  }

  // One command to `node`, waiting for its reply (after what the connection owed).
  Result<Reply> Command(Node& node, std::initializer_list<std::string_view> args) {
    net::Lease c(*node.pool);
    if (Status s = Ready(*node.pool, c); !s.ok()) return s.error();
    std::string request;
    redis::AppendCommand(args, request);
    if (Status s = c->socket->Send(request); !s.ok()) return c.Fail(s.error());
    if (Status s = ReadUnread(*c); !s.ok()) return c.Fail(s.error());
    Result<Reply> reply = StateOf(*c).reader.Read(*c->socket);
    if (!reply.ok()) return c.Fail(reply.error());
    return reply;
  }

  // The values of `batch`'s reads from its script's reply.
  static Result<std::vector<uint64_t>> Resolve(std::string_view server, const Batch& batch,
                                               const Encoded& e, const Reply& reply) {
    if (reply.error()) return ReplyError(server, reply);
    if (reply.type != Reply::Type::kArray || reply.elements.size() != e.reads + 1 ||
        reply.elements[0].type != Reply::Type::kInteger) {
      return Named(server, ErrorCode::kInternal,
                   "the batch script answered something else than its reads (another script "
                   "under the same SHA-1?)");
    }
    const packed::WireBatch& plan = e.plan;
    std::vector<uint64_t> values(e.reads, 0);
    for (size_t i = 0; i < e.reads; ++i) {
      const Reply& value = reply.elements[i + 1];
      const packed::ReadSource& source = plan.sources[i];
      const std::string& key = plan.counters.reads[source.pack ? *source.pack : *source.counter];
      if (value.type == Reply::Type::kInteger && source.pack) {
        values[i] = static_cast<uint64_t>(std::max<int64_t>(value.integer, 0));
        continue;
      }
      if (value.type == Reply::Type::kNil) continue;
      std::optional<uint64_t> counter =
          source.pack ? std::nullopt : std::optional<uint64_t>(ParseCounter(value.text));
      if (!counter && !batch.non_counters_read_as_max) {
        return Named(
            server, ErrorCode::kInternal,
            fmt::format("the value under \"{}\" is not {} (another client wrote it); "
                        "reset the feature to delete it",
                        redis::TaggedKey(batch.group, key),
                        source.pack ? "a pack of hourglass's packed layout" : "a counter"));
      }
      values[i] = counter.value_or(std::numeric_limits<uint64_t>::max());
    }
    if (!batch.guards.empty()) values.push_back(reply.elements[0].integer == 1 ? 1 : 0);
    return values;
  }

  // The Redis protocol as net::Pipeline drives it.
  struct Codec {
    using Encoded = hourglass::Encoded;
    struct Scratch {};  // nothing gathered across a connection's answers
    using Request = net::Request<Encoded>;
    Impl& impl;

    Result<net::ServerPool*> Route(const Request& r) const {
      Result<Node*> node = r.redirect ? impl.NodeAt(r.redirect->node) : impl.NodeFor(r.group);
      if (!node.ok()) return node.error();
      return (*node)->pool.get();
    }
    void Append(const Request& r, std::string& out) const {
      if (r.redirect && r.redirect->ask) redis::AppendCommand({"ASKING"}, out);
      out += r.encoded.command;
    }
    Status ReadOwed(net::ServerPool&, net::PooledConnection& c) const { return impl.ReadUnread(c); }
    net::Answer Read(net::ServerPool& pool, net::PooledConnection& c, const Request& r,
                     Scratch&) const {
      redis::ReplyReader& reader = StateOf(c).reader;
      if (r.redirect && r.redirect->ask) {
        if (Result<Reply> asking = reader.Read(*c.socket); !asking.ok()) {  // ASKING's +OK
          return net::Answer::Broken(asking.error());
        }
      }
      Result<Reply> reply = reader.Read(*c.socket);
      if (!reply.ok()) return net::Answer::Broken(reply.error());
      const std::string& server = pool.name();
      if (std::optional<Redirect> redirect = RedirectOf(*reply)) {
        return {net::Answer::Kind::kRedirected, ReplyError(server, *reply), std::move(redirect)};
      }
      if (reply->error_kind() == "TRYAGAIN") {  // a slot's keys split by a migration
        return {net::Answer::Kind::kTryAgain, ReplyError(server, *reply), std::nullopt};
      }
      if (reply->error_kind() == "NOSCRIPT") {  // SCRIPT FLUSH: a new connection loads them again
        return {net::Answer::Kind::kScriptsLost, ReplyError(server, *reply), std::nullopt};
      }
      if (r.encoded.batch == nullptr) {  // a delete: done, or refused
        if (reply->error()) return {net::Answer::Kind::kResult, ReplyError(server, *reply), {}};
        return {};
      }
      return {net::Answer::Kind::kResult, Resolve(server, *r.encoded.batch, r.encoded, *reply),
              std::nullopt};
    }
    void Finish(net::Lease&, Scratch&) const {}
    void Owe(net::PooledConnection& c, const Request& r) const {
      RedisConnection& state = StateOf(c);
      if (r.redirect && r.redirect->ask) {  // ASKING's reply
        state.unanswered.emplace_back();
        ++c.unread;
      }
      state.unanswered.push_back(r.encoded.resendable ? r.encoded.command : std::string());
      ++c.unread;
    }
    void Moved(const Redirect& r) const { impl.Moved(r); }
  };
  net::Pipeline<Codec> PipelineOf(Codec& codec) const {
    return net::Pipeline<Codec>(codec, clock, options.io_timeout);
  }
};

void RedisStore::Impl::SendDeferred() {
  while (!Deferred().empty()) {
    std::vector<Redirected> redirected = std::move(Deferred());
    Deferred().clear();
    std::vector<net::Request<Encoded>> requests;
    requests.reserve(redirected.size());
    for (Redirected& r : redirected) {
      if (!r.redirect.ask) Moved(r.redirect);
      requests.push_back({{}, Encoded::Command(std::move(r.command)), true, std::move(r.redirect)});
    }
    Codec codec{*this};
    for (const Status& s : PipelineOf(codec).SendOnly(requests)) {
      if (!s.ok()) unconfirmed.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

RedisStore::RedisStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RedisStore::~RedisStore() { Flush(); }

Result<std::unique_ptr<RedisStore>> RedisStore::Create(const RedisOptions& options,
                                                       const Clock& clock) {
  if (options.servers.empty()) return InvalidArgument("no Redis server given");
  for (const std::string& server : options.servers) {
    if (Result<net::ServerAddress> parsed = net::ParseServer(server); !parsed.ok()) {
      return parsed.error();
    }
  }
  if (options.pool_size < 1) return InvalidArgument("pool_size must be >= 1");
  if (options.connect_timeout.count() < 1 || options.io_timeout.count() < 1) {
    return InvalidArgument("connect_timeout and io_timeout must be >= 1ms");
  }
  if (options.cluster && options.database != 0) {
    return InvalidArgument("a Redis Cluster has database 0 alone");
  }
  auto impl = std::make_unique<Impl>(options, clock);
  impl->description =
      fmt::format("redis{} {}", options.cluster ? " cluster" : "", fmt::join(options.servers, ","));
  if (!options.cluster) {
    for (const std::string& server : options.servers) {
      if (Result<Node*> node = impl->NodeAt(server); !node.ok()) return node.error();
    }
  }
  return std::unique_ptr<RedisStore>(new RedisStore(std::move(impl)));
}

std::string RedisStore::Describe() const { return impl_->description; }

uint64_t RedisStore::unconfirmed_failures() const {
  return impl_->unconfirmed.load(std::memory_order_relaxed);
}

uint64_t RedisStore::Flush() {
  // Reads what every idle connection owes; a connection that cannot answer counts as a failure.
  const auto sweep = [this] {
    std::vector<Node*> nodes;
    {
      std::lock_guard lock(impl_->nodes_mu);
      for (const auto& n : impl_->nodes) nodes.push_back(n.get());
    }
    for (Node* node : nodes) {
      node->pool->SweepIdle([&](net::PooledConnection& c) {
        if (c.unread == 0) return true;
        c.socket->BeginExchange();
        if (impl_->ReadUnread(c).ok()) return true;
        impl_->unconfirmed.fetch_add(1, std::memory_order_relaxed);
        return false;
      });
    }
  };
  sweep();
  impl_->SendDeferred();
  if (impl_->options.cluster) {  // what was sent again owes its reply too, where it went
    sweep();
    impl_->unconfirmed.fetch_add(impl_->Deferred().size(), std::memory_order_relaxed);
    impl_->Deferred().clear();
  }
  return unconfirmed_failures();
}

Result<std::vector<uint64_t>> RedisStore::Apply(const Batch& batch) {
  return std::move(ApplyMany({&batch, 1}).front());
}

std::vector<Result<std::vector<uint64_t>>> RedisStore::ApplyMany(std::span<const Batch> batches) {
  std::vector<Result<std::vector<uint64_t>>> results(
      batches.size(), Result<std::vector<uint64_t>>(std::vector<uint64_t>{}));
  std::vector<net::Request<Encoded>> requests;
  std::vector<size_t> requests_of;
  for (size_t i = 0; i < batches.size(); ++i) {
    Status s = ValidateBatch(batches[i]);
    if (s.ok() && !batches[i].guards.empty() && batches[i].increments.empty()) {
      s = InvalidArgument("a guarded batch without increments");
    }
    if (!s.ok()) {
      results[i] = s.error();
      continue;
    }
    requests.push_back({batches[i].group, Encode(batches[i]), !batches[i].increments.empty(), {}});
    requests_of.push_back(i);
  }
  Impl::Codec codec{*impl_};
  std::vector<Result<std::vector<uint64_t>>> answers = impl_->PipelineOf(codec).Exchange(requests);
  for (size_t k = 0; k < requests.size(); ++k) results[requests_of[k]] = std::move(answers[k]);
  impl_->SendDeferred();
  return results;
}

std::vector<Status> RedisStore::Send(std::span<const Batch> batches) {
  std::vector<Status> results(batches.size());
  std::vector<net::Request<Encoded>> requests;
  std::vector<size_t> requests_of;
  for (size_t i = 0; i < batches.size(); ++i) {
    results[i] = ValidateSend(batches[i]);
    if (results[i].ok()) results[i] = ValidateBatch(batches[i]);
    if (results[i].ok() && !batches[i].guards.empty()) {
      results[i] = InvalidArgument("Store::Send takes batches without guards");
    }
    if (!results[i].ok()) continue;
    Encoded encoded = Encode(batches[i]);
    encoded.resendable = impl_->options.cluster;  // a redirection sends it again where it belongs
    requests.push_back({batches[i].group, std::move(encoded), !batches[i].increments.empty(), {}});
    requests_of.push_back(i);
  }
  Impl::Codec codec{*impl_};
  std::vector<Status> sent = impl_->PipelineOf(codec).SendOnly(requests);
  for (size_t k = 0; k < requests.size(); ++k) results[requests_of[k]] = std::move(sent[k]);
  impl_->SendDeferred();
  return results;
}

Status RedisStore::Delete(const std::string& group, std::span<const std::string> keys) {
  if (Status s = ValidateKeys(group, keys); !s.ok()) return s;
  net::Request<Encoded> request{group, Encoded::Command(EncodeDelete(group, keys)), false, {}};
  Impl::Codec codec{*impl_};
  Result<std::vector<uint64_t>> deleted =
      std::move(impl_->PipelineOf(codec).Exchange({&request, 1})[0]);
  impl_->SendDeferred();
  if (!deleted.ok()) return deleted.error();
  return {};
}

std::vector<Result<ServerStats>> RedisStore::Stats() {
  std::vector<Node*> targets;
  if (impl_->options.cluster) {
    (void)impl_->RefreshSlots();
    std::shared_lock lock(impl_->map_mu);
    targets = impl_->slot_nodes;
  } else {
    for (const std::string& server : impl_->options.servers) {
      if (Result<Node*> node = impl_->NodeAt(server); node.ok()) targets.push_back(*node);
    }
  }
  std::vector<Result<ServerStats>> out;
  for (Node* node : targets) {
    Result<Reply> info = impl_->Command(*node, {"INFO"});
    if (!info.ok()) {
      out.emplace_back(info.error());
      continue;
    }
    if (info->error() || info->type != Reply::Type::kString) {
      out.emplace_back(info->error() ? ReplyError(node->pool->name(), *info)
                                     : Named(node->pool->name(), ErrorCode::kInternal,
                                             "INFO answered something else than text"));
      continue;
    }
    ServerStats stats;
    stats.kind = "redis";
    stats.server = node->address;
    std::string_view text = info->text;
    while (!text.empty()) {
      const size_t eol = text.find('\n');
      std::string_view line = text.substr(0, eol);
      text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
      if (line.ends_with('\r')) line.remove_suffix(1);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view name = line.substr(0, colon), value = line.substr(colon + 1);
      uint64_t number = 0;
      const bool numeric =
          std::from_chars(value.data(), value.data() + value.size(), number).ec == std::errc{};
      if (name == "evicted_keys" && numeric) stats.evictions = number;
      if (name == "used_memory" && numeric) stats.bytes = number;
      if (name == "maxmemory" && numeric) stats.limit_maxbytes = number;
      if (name == "process_id" && numeric) stats.pid = number;
      if (name == "uptime_in_seconds" && numeric) stats.uptime = number;
      if (name == "server_time_usec" && numeric) stats.time = number / 1'000'000;
      if (name.starts_with("db") && value.starts_with("keys=")) {
        uint64_t keys = 0;
        std::from_chars(value.data() + 5, value.data() + value.size(), keys);
        stats.curr_items += keys;
      }
    }
    out.emplace_back(std::move(stats));
  }
  impl_->SendDeferred();
  return out;
}

std::vector<Result<ServerNote>> RedisStore::Notes() {
  std::vector<Result<ServerNote>> out;
  if (impl_->options.cluster) return out;  // a key's node is its slot's, not one of our choice
  for (const std::string& server : impl_->options.servers) {
    Result<Node*> node = impl_->NodeAt(server);
    if (!node.ok()) {
      out.emplace_back(node.error());
      continue;
    }
    Result<Reply> value = impl_->Command(**node, {"GET", kNoteKey});
    if (!value.ok()) {
      out.emplace_back(value.error());
    } else if (value->error()) {
      out.emplace_back(ReplyError((*node)->pool->name(), *value));
    } else {
      ServerNote note{"redis", (*node)->address, std::nullopt};
      if (value->type == Reply::Type::kString) note.text = std::move(value->text);
      out.emplace_back(std::move(note));
    }
  }
  impl_->SendDeferred();
  return out;
}

Status RedisStore::WriteNote(const std::string& server, std::string_view text) {
  if (Status s = ValidateNote(text); !s.ok()) return s;
  const auto& servers = impl_->options.servers;
  if (impl_->options.cluster ||
      std::find(servers.begin(), servers.end(), server) == servers.end()) {
    return Store::WriteNote(server, text);
  }
  Result<Node*> node = impl_->NodeAt(server);
  if (!node.ok()) return node.error();
  Result<Reply> reply = impl_->Command(**node, {"SET", kNoteKey, text});
  impl_->SendDeferred();
  if (!reply.ok()) return reply.error();
  if (reply->error()) return ReplyError((*node)->pool->name(), *reply);
  return {};
}

Result<std::string> RedisStore::ServerFor(const std::string& group) {
  Result<Node*> node = impl_->NodeFor(group);
  if (!node.ok()) return node.error();
  return (*node)->address;
}

std::vector<std::string> RedisStore::ServersOf(const std::string& group) {
  Result<std::string> server = ServerFor(group);
  if (!server.ok()) return {};
  return {std::move(*server)};
}

}  // namespace hourglass
