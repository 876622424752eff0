#include "hourglass/lmdb_store.h"

#include <fmt/format.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "hourglass/packed_layout.h"
#include "hourglass/saturating.h"

namespace hourglass {
namespace {

// A value: its expiry (Unix seconds, little-endian u64), then the payload: a counter's u64, or a
// pack's bytes. The expiry index's keys: the expiry big-endian (so they sort by time), then the
// value's key.
constexpr size_t kExpiryBytes = 8;
// Each write transaction deletes at most this many expired values (amortized reclaiming).
constexpr size_t kSweepPerTransaction = 32;
constexpr size_t kReclaimPerTransaction = 256;

void PutU64(std::string& out, uint64_t v) {
  for (int shift = 0; shift < 64; shift += 8) out += static_cast<char>((v >> shift) & 0xff);
}
uint64_t GetU64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(in[static_cast<size_t>(i)]);
  return v;
}
std::string IndexKey(uint64_t expiry, std::string_view key) {
  std::string out;
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((expiry >> shift) & 0xff);
  out += key;
  return out;
}

MDB_val Val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
std::string_view View(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

Result<uint64_t> ParseBytes(std::string_view text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end == text.data()) return InvalidArgument("not a size");
  const std::string_view unit = text.substr(static_cast<size_t>(end - text.data()));
  static const std::pair<std::string_view, int> kUnits[] = {{"", 0},     {"B", 0},    {"KiB", 10},
                                                            {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  for (const auto& [name, shift] : kUnits) {
    if (unit != name) continue;
    if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) break;
    return value << shift;
  }
  return InvalidArgument("not a size");
}

// One LMDB environment, shared by every LmdbStore of this process on its directory: LMDB must
// not be opened twice in one process. A second open there finds no other process holding the lock
// file (fcntl locks never conflict within a process), takes itself for the file's only user and
// initializes the lock file again, writer mutex included, under the first: two write
// transactions at once, and counts lost.
struct Environment {
  Environment() = default;
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  ~Environment() {
    if (env != nullptr) mdb_env_close(env);
  }
  MDB_env* env = nullptr;
  MDB_dbi values = 0;
  MDB_dbi expiries = 0;
  // Serializes this process's write transactions and map resizes (LMDB's own lock serializes
  // processes; a resize needs no transaction of this process open).
  std::mutex mu;
  bool grown = false;  // the map grew to make room once (Reclaim); guarded by mu
  // The data file as opened: another one at its path (deleted, moved, replaced) means other
  // processes count in another file. Checked at most once a second; guarded by mu.
  dev_t data_dev = 0;
  ino_t data_ino = 0;
  MonoTime checked_at{};
  std::optional<std::string> gone;  // why this file is no longer the directory's: sticky
};

// The environments open in this process, by their directory's device and inode.
struct OpenEnvironments {
  std::mutex mu;
  std::map<std::pair<dev_t, ino_t>, std::weak_ptr<Environment>> by_directory;  // guarded by mu
  static OpenEnvironments& Get() {
    static OpenEnvironments* open = new OpenEnvironments();  // outlives every store
    return *open;
  }
};

// One value as read in a transaction.
struct Stored {
  uint64_t expiry = 0;
  std::string payload;
};

}  // namespace

Result<LmdbOptions> ParseLmdbUrl(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("store \"{}\": {}; expected lmdb:///PATH/TO/DIR[?map_size=4GiB&sync=none|meta|"
                    "full]",
                    url, why));
  };
  constexpr std::string_view kScheme = "lmdb://";
  if (!url.starts_with(kScheme)) return bad("not an LMDB URL");
  std::string_view rest = url.substr(kScheme.size());
  LmdbOptions options;
  const size_t query = rest.find('?');
  std::string_view params = query == std::string_view::npos ? "" : rest.substr(query + 1);
  options.path = std::string(rest.substr(0, query));
  if (options.path.empty() || options.path.front() != '/') return bad("the path must be absolute");
  while (!params.empty()) {
    const size_t amp = params.find('&');
    const std::string_view param = params.substr(0, amp);
    params = amp == std::string_view::npos ? "" : params.substr(amp + 1);
    const size_t eq = param.find('=');
    const std::string_view name = param.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : param.substr(eq + 1);
    if (name == "map_size") {
      Result<uint64_t> bytes = ParseBytes(value);
      if (!bytes.ok() || *bytes < (uint64_t{1} << 20)) {
        return bad(fmt::format("map_size \"{}\" is not a size of 1MiB or more", value));
      }
      options.map_bytes = *bytes;
    } else if (name == "sync") {
      if (value == "none") {
        options.sync = LmdbSync::kNone;
      } else if (value == "meta") {
        options.sync = LmdbSync::kMeta;
      } else if (value == "full") {
        options.sync = LmdbSync::kFull;
      } else {
        return bad(fmt::format("sync \"{}\" is not none, meta or full", value));
      }
    } else {
      return bad(fmt::format("unknown parameter \"{}\"", name));
    }
  }
  return options;
}

struct LmdbStore::Impl {
  Impl(LmdbOptions o, const Clock& c) : options(std::move(o)), clock(c) {}

  const LmdbOptions options;
  const Clock& clock;
  std::shared_ptr<Environment> shared;  // with every store of this process on the directory
  // shared's, for short
  MDB_env* env = nullptr;
  MDB_dbi values = 0;
  MDB_dbi expiries = 0;

  // The environment of options.path in this process: the one other stores opened, or a new one.
  Status Open();
  Result<std::shared_ptr<Environment>> OpenEnvironment() const;

  // Whether `s` is the error of a full map.
  static bool Full(const Status& s) { return !s.ok() && Full(s.error()); }
  static bool Full(const Error& e) { return e.code() == ErrorCode::kStoreFull; }

  Error Failed(std::string_view what, int rc) const {
    if (rc == MDB_MAP_FULL) {
      return Error(ErrorCode::kStoreFull,
                   fmt::format("lmdb {}: the map is full ({} bytes): raise map_size in the store "
                               "URL (lmdb://{}?map_size=...), or shorten --retention",
                               options.path, options.map_bytes, options.path));
    }
    const ErrorCode code = rc == ENOMEM ? ErrorCode::kResourceExhausted : ErrorCode::kUnavailable;
    return Error(code, fmt::format("lmdb {}: {}: {}", options.path, what, mdb_strerror(rc)));
  }

  // One write transaction: `body` runs in it; committed when it succeeds, aborted otherwise. A
  // map grown by another process is adopted and the transaction run again.
  template <typename Body>
  Status Write(Body&& body) {
    std::lock_guard lock(shared->mu);
    if (Status s = StillTheFile(); !s.ok()) return s;
    for (int attempt = 0; attempt < 2; ++attempt) {
      MDB_txn* txn = nullptr;
      int rc = mdb_txn_begin(env, nullptr, 0, &txn);
      if (rc == MDB_MAP_RESIZED) {
        mdb_env_set_mapsize(env, 0);
        continue;
      }
      if (rc != 0) return Failed("beginning a transaction", rc);
      Status s = body(txn);
      if (!s.ok()) {
        mdb_txn_abort(txn);
        return s;
      }
      rc = mdb_txn_commit(txn);
      if (rc != 0) return Failed("committing", rc);
      return {};
    }
    return Failed("beginning a transaction", MDB_MAP_RESIZED);
  }

  // Whether the directory's data file is still the one this environment opened (at most one
  // stat a second); kDataLoss, for good, once it is not. Called with shared->mu held.
  Status StillTheFile() {
    Environment& e = *shared;
    const MonoTime now = clock.Monotonic();
    if (!e.gone && now - e.checked_at >= std::chrono::seconds{1}) {
      e.checked_at = now;
      struct stat data {};
      const std::string file = options.path + "/data.mdb";
      if (stat(file.c_str(), &data) != 0) {
        e.gone = fmt::format("{} is gone ({})", file, std::strerror(errno));
      } else if (data.st_dev != e.data_dev || data.st_ino != e.data_ino) {
        e.gone = fmt::format("{} is another file than the one this process opened", file);
      }
    }
    if (!e.gone) return {};
    return Error(ErrorCode::kDataLoss,
                 fmt::format("lmdb {}: {}: its directory was deleted, moved or replaced under this "
                             "process, so other processes count in another file; this one counts "
                             "nothing more. Restart it to count in the directory's current file",
                             options.path, *e.gone));
  }

  // The live value of `key`, or nullopt (missing or expired).
  Result<std::optional<Stored>> Get(MDB_txn* txn, std::string_view key, uint64_t now) const {
    MDB_val k = Val(key), v{};
    const int rc = mdb_get(txn, values, &k, &v);
    if (rc == MDB_NOTFOUND) return std::optional<Stored>();
    if (rc != 0) return Failed("reading", rc);
    const std::string_view bytes = View(v);
    if (bytes.size() < kExpiryBytes) {
      return Error(ErrorCode::kInternal,
                   fmt::format("lmdb {}: the value under \"{}\" is not one hourglass wrote; reset "
                               "the feature to delete it",
                               options.path, key));
    }
    const uint64_t expiry = GetU64(bytes);
    if (expiry <= now) return std::optional<Stored>();
    return std::optional<Stored>(Stored{expiry, std::string(bytes.substr(kExpiryBytes))});
  }

  // Writes `payload` under `key` until `expiry` (a new value's expiry is indexed).
  Status Put(MDB_txn* txn, std::string_view key, uint64_t expiry, std::string_view payload,
             bool created) {
    std::string value;
    value.reserve(kExpiryBytes + payload.size());
    PutU64(value, expiry);
    value += payload;
    MDB_val k = Val(key), v = Val(value);
    if (int rc = mdb_put(txn, values, &k, &v, 0); rc != 0) return Failed("writing", rc);
    if (!created) return {};
    const std::string index = IndexKey(expiry, key);
    MDB_val ik = Val(index), empty{0, nullptr};
    if (int rc = mdb_put(txn, expiries, &ik, &empty, 0); rc != 0) return Failed("writing", rc);
    return {};
  }

  // Deletes `key` and its index entry, if present (expired or not).
  Status Del(MDB_txn* txn, std::string_view key) {
    MDB_val k = Val(key), v{};
    int rc = mdb_get(txn, values, &k, &v);
    if (rc == MDB_NOTFOUND) return {};
    if (rc != 0) return Failed("reading", rc);
    const std::string_view bytes = View(v);
    if (bytes.size() >= kExpiryBytes) {
      const std::string index = IndexKey(GetU64(bytes), key);
      MDB_val ik = Val(index);
      rc = mdb_del(txn, expiries, &ik, nullptr);
      if (rc != 0 && rc != MDB_NOTFOUND) return Failed("deleting", rc);
    }
    rc = mdb_del(txn, values, &k, nullptr);
    if (rc != 0 && rc != MDB_NOTFOUND) return Failed("deleting", rc);
    return {};
  }

  // Deletes up to `limit` values that expired by `now`; how many.
  Result<uint64_t> Sweep(MDB_txn* txn, uint64_t now, size_t limit) {
    MDB_cursor* cursor = nullptr;
    if (int rc = mdb_cursor_open(txn, expiries, &cursor); rc != 0) return Failed("sweeping", rc);
    std::vector<std::pair<uint64_t, std::string>> doomed;  // expiry, index key
    MDB_val k{}, v{};
    int rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST);
    while (rc == 0 && doomed.size() < limit) {
      const std::string_view index = View(k);
      if (index.size() < kExpiryBytes) break;
      uint64_t expiry = 0;
      for (size_t i = 0; i < kExpiryBytes; ++i) {
        expiry = expiry << 8 | static_cast<unsigned char>(index[i]);
      }
      if (expiry > now) break;
      doomed.emplace_back(expiry, index);
      rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cursor);
    for (const auto& [expiry, index] : doomed) {
      MDB_val ik = Val(index);
      if (int d = mdb_del(txn, expiries, &ik, nullptr); d != 0 && d != MDB_NOTFOUND) {
        return Failed("sweeping", d);
      }
      // The value goes only if it still carries that expiry (it may have been written anew).
      MDB_val vk = Val(std::string_view(index).substr(kExpiryBytes)), vv{};
      if (mdb_get(txn, values, &vk, &vv) != 0 || vv.mv_size < kExpiryBytes ||
          GetU64(View(vv)) != expiry) {
        continue;
      }
      if (int d = mdb_del(txn, values, &vk, nullptr); d != 0 && d != MDB_NOTFOUND) {
        return Failed("sweeping", d);
      }
    }
    return doomed.size();
  }

  // Deletes every expired value; how many it deleted. Deleting writes pages too (LMDB copies
  // what it changes), which a map full to its last page has no room for: the map then grows by
  // an eighth, once, so that a full store can always make room.
  Result<uint64_t> Reclaim() {
    Result<uint64_t> reclaimed = ReclaimInPlace();
    if (reclaimed.ok() || !Full(reclaimed.error()) || shared->grown) return reclaimed;
    {
      std::lock_guard lock(shared->mu);
      shared->grown = true;
      MDB_envinfo info{};
      mdb_env_info(env, &info);
      if (int rc = mdb_env_set_mapsize(env, info.me_mapsize + info.me_mapsize / 8); rc != 0) {
        return Failed("growing the map", rc);
      }
    }
    return ReclaimInPlace();
  }

  Result<uint64_t> ReclaimInPlace() {
    const uint64_t now = static_cast<uint64_t>(std::max<int64_t>(0, ToUnix(clock.Now())));
    uint64_t total = 0;
    for (size_t swept = kReclaimPerTransaction; swept == kReclaimPerTransaction;) {
      Status s = Write([&](MDB_txn* txn) -> Status {
        Result<uint64_t> n = Sweep(txn, now, kReclaimPerTransaction);
        if (!n.ok()) return n.error();
        swept = *n;
        return {};
      });
      if (!s.ok()) return s.error();
      total += swept;
    }
    return total;
  }

  Result<std::vector<uint64_t>> ApplyIn(MDB_txn* txn, const Batch& batch, uint64_t now);
};

Result<std::vector<uint64_t>> LmdbStore::Impl::ApplyIn(MDB_txn* txn, const Batch& batch,
                                                       uint64_t now) {
  const packed::WireBatch plan = packed::PlanPacked(batch);
  // Every get of the plan as it stands before the writes (guards) and after them (reads).
  const auto gets =
      [&]() -> Result<std::pair<std::vector<uint64_t>, std::vector<std::optional<std::string>>>> {
    const size_t n = plan.counters.reads.size();
    std::vector<uint64_t> counters(n, 0);
    std::vector<std::optional<std::string>> packs(n);
    for (size_t i = 0; i < n; ++i) {
      Result<std::optional<Stored>> stored = Get(txn, plan.counters.reads[i], now);
      if (!stored.ok()) return stored.error();
      if (!*stored) continue;
      if (plan.get_is_pack[i]) {
        packs[i] = std::move((*stored)->payload);
      } else if ((*stored)->payload.size() == 8) {
        counters[i] = GetU64((*stored)->payload);
      } else if (batch.non_counters_read_as_max) {
        counters[i] = std::numeric_limits<uint64_t>::max();
      } else {
        return Error(ErrorCode::kInternal,
                     fmt::format("lmdb {}: the value under \"{}\" is not a counter; reset the "
                                 "feature to delete it",
                                 options.path, plan.counters.reads[i]));
      }
    }
    return std::make_pair(std::move(counters), std::move(packs));
  };
  const std::string server = "lmdb " + options.path;
  bool applied = true;
  if (!batch.guards.empty()) {
    auto before = gets();
    if (!before.ok()) return before.error();
    Result<std::vector<uint64_t>> prior =
        packed::ResolveReads(server, plan, before->first, before->second, nullptr);
    if (!prior.ok()) return prior.error();
    for (const Guard& guard : batch.guards) applied = applied && GuardHolds(guard, *prior);
  }
  if (applied) {
    const auto counter = [&](const Increment& inc) -> Status {
      Result<std::optional<Stored>> stored = Get(txn, inc.key, now);
      if (!stored.ok()) return stored.error();
      if (*stored && (*stored)->payload.size() != 8) {
        return Error(ErrorCode::kInternal,
                     fmt::format("lmdb {}: the value under \"{}\" is not a counter; reset the "
                                 "feature to delete it",
                                 options.path, inc.key));
      }
      if (!*stored && inc.delta <= 0) return {};  // a decrement never creates
      const uint64_t old = *stored ? GetU64((*stored)->payload) : 0;
      const uint64_t magnitude =
          inc.delta < 0 ? uint64_t(-(inc.delta + 1)) + 1 : uint64_t(inc.delta);
      const uint64_t value =
          inc.delta >= 0 ? SaturatingAdd(old, magnitude) : (old > magnitude ? old - magnitude : 0);
      std::string payload;
      PutU64(payload, value);
      if (*stored) return Put(txn, inc.key, (*stored)->expiry, payload, false);
      if (Status s = Del(txn, inc.key); !s.ok()) return s;  // an expired value and its index
      return Put(txn, inc.key, now + static_cast<uint64_t>(inc.ttl.count()), payload, true);
    };
    const std::vector<Increment>& incs = plan.counters.increments;
    const size_t split = std::min(plan.appends_at, incs.size());
    for (size_t i = 0; i < split; ++i) {
      if (Status s = counter(incs[i]); !s.ok()) return s.error();
    }
    for (const packed::PackAppend& append : plan.appends) {
      Result<std::optional<Stored>> stored = Get(txn, append.key, now);
      if (!stored.ok()) return stored.error();
      if (!*stored && append.create_ttl.count() == 0) continue;
      std::string pack;
      uint64_t expiry = 0;
      if (*stored) {
        pack = std::move((*stored)->payload);
        expiry = (*stored)->expiry;
      } else {
        if (Status s = Del(txn, append.key); !s.ok()) return s.error();
        pack = packed::PackHeader(FromUnix(static_cast<int64_t>(now)), append.create_ttl);
        expiry = now + static_cast<uint64_t>(append.create_ttl.count());
      }
      pack += append.records;
      // Compacted as written: a busy second stays a few bytes.
      if (Result<packed::PackFold> fold = packed::PackFold::Parse(append.key, pack); fold.ok()) {
        if (std::optional<std::string> compact = packed::CompactionOf(pack, *fold)) {
          pack = std::move(*compact);
        }
      } else {
        return Error(fold.error().code(), fmt::format("{}: {}", server, fold.error().message()));
      }
      if (Status s = Put(txn, append.key, expiry, pack, !*stored); !s.ok()) return s.error();
    }
    for (size_t i = split; i < incs.size(); ++i) {
      if (Status s = counter(incs[i]); !s.ok()) return s.error();
    }
  }
  auto after = gets();
  if (!after.ok()) return after.error();
  Result<std::vector<uint64_t>> read =
      packed::ResolveReads(server, plan, after->first, after->second, nullptr);
  if (read.ok() && !batch.guards.empty()) read->push_back(applied ? 1 : 0);
  return read;
}

LmdbStore::LmdbStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LmdbStore::~LmdbStore() = default;

Status LmdbStore::Impl::Open() {
  struct stat dir {};
  if (stat(options.path.c_str(), &dir) != 0) {
    return Error(ErrorCode::kUnavailable,
                 fmt::format("lmdb {}: {}", options.path, std::strerror(errno)));
  }
  OpenEnvironments& open = OpenEnvironments::Get();
  std::lock_guard lock(open.mu);
  std::weak_ptr<Environment>& known = open.by_directory[{dir.st_dev, dir.st_ino}];
  shared = known.lock();
  if (shared == nullptr) {
    Result<std::shared_ptr<Environment>> opened = OpenEnvironment();
    if (!opened.ok()) return opened.error();
    shared = std::move(*opened);
    known = shared;
  } else {
    // A store asking for a larger map than the environment has: the largest one given wins.
    std::lock_guard write(shared->mu);  // no write transaction of this process is open
    MDB_envinfo info{};
    mdb_env_info(shared->env, &info);
    if (info.me_mapsize < options.map_bytes) mdb_env_set_mapsize(shared->env, options.map_bytes);
  }
  env = shared->env;
  values = shared->values;
  expiries = shared->expiries;
  return {};
}

Result<std::shared_ptr<Environment>> LmdbStore::Impl::OpenEnvironment() const {
  auto e = std::make_shared<Environment>();
  if (int rc = mdb_env_create(&e->env); rc != 0) return Failed("creating", rc);
  mdb_env_set_maxdbs(e->env, 2);
  if (int rc = mdb_env_set_mapsize(e->env, options.map_bytes); rc != 0) {
    return Failed("setting the map size", rc);
  }
  unsigned flags = MDB_NOTLS;
  if (options.sync == LmdbSync::kNone) flags |= MDB_NOSYNC;
  if (options.sync == LmdbSync::kMeta) flags |= MDB_NOMETASYNC;
  if (int rc = mdb_env_open(e->env, options.path.c_str(), flags, 0640); rc != 0) {
    return Error(ErrorCode::kUnavailable,
                 fmt::format("lmdb {}: cannot open the environment: {} (the directory must be "
                             "writable by this user)",
                             options.path, mdb_strerror(rc)));
  }
  // Another process may have made the map bigger: adopt the larger size.
  MDB_envinfo info{};
  mdb_env_info(e->env, &info);
  if (info.me_mapsize < options.map_bytes) mdb_env_set_mapsize(e->env, options.map_bytes);
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(e->env, nullptr, 0, &txn);
  if (rc == MDB_MAP_RESIZED) {  // grown by another process meanwhile
    mdb_env_set_mapsize(e->env, 0);
    rc = mdb_txn_begin(e->env, nullptr, 0, &txn);
  }
  if (rc != 0) return Failed("beginning a transaction", rc);
  for (auto [name, dbi] : {std::pair{"values", &e->values}, std::pair{"expiries", &e->expiries}}) {
    if (rc = mdb_dbi_open(txn, name, MDB_CREATE, dbi); rc != 0) {
      mdb_txn_abort(txn);
      return Failed("opening its tables", rc);
    }
  }
  if (rc = mdb_txn_commit(txn); rc != 0) return Failed("committing", rc);
  struct stat data {};
  if (stat((options.path + "/data.mdb").c_str(), &data) == 0) {
    e->data_dev = data.st_dev;
    e->data_ino = data.st_ino;
  }
  e->checked_at = clock.Monotonic();
  return e;
}

Result<std::unique_ptr<LmdbStore>> LmdbStore::Create(const LmdbOptions& options,
                                                     const Clock& clock) {
  if (options.path.empty()) return InvalidArgument("lmdb: no directory given");
  if (options.map_bytes < (uint64_t{1} << 20)) return InvalidArgument("lmdb: map_size below 1MiB");
  auto impl = std::make_unique<Impl>(options, clock);
  const auto unavailable = [&](std::string_view why) {
    return Error(ErrorCode::kUnavailable,
                 fmt::format("lmdb {}: {} (the directory must be writable by this user)",
                             options.path, why));
  };
  std::error_code ec;
  std::filesystem::create_directories(options.path, ec);
  if (ec) return unavailable("cannot make the directory: " + ec.message());
  if (!std::filesystem::is_directory(options.path, ec)) return unavailable("not a directory");
  if (access(options.path.c_str(), R_OK | W_OK | X_OK) != 0) {
    return unavailable(std::string("cannot write it: ") + std::strerror(errno));
  }
  if (Status s = impl->Open(); !s.ok()) return s.error();
  return std::unique_ptr<LmdbStore>(new LmdbStore(std::move(impl)));
}

std::string LmdbStore::Describe() const { return "lmdb " + impl_->options.path; }

Result<std::vector<uint64_t>> LmdbStore::Apply(const Batch& batch) {
  return std::move(ApplyMany({&batch, 1}).front());
}

std::vector<Result<std::vector<uint64_t>>> LmdbStore::ApplyMany(std::span<const Batch> batches) {
  std::vector<Result<std::vector<uint64_t>>> results(
      batches.size(), Result<std::vector<uint64_t>>(std::vector<uint64_t>{}));
  const uint64_t now = static_cast<uint64_t>(std::max<int64_t>(0, ToUnix(impl_->clock.Now())));
  std::vector<size_t> valid;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (Status s = ValidateBatch(batches[i]); !s.ok()) {
      results[i] = s.error();
    } else {
      valid.push_back(i);
    }
  }
  if (valid.empty()) return results;
  // All the batches in one write transaction. A batch failing alone (a value that is not ours)
  // undoes the transaction; then each batch runs in a transaction of its own, so that the failure
  // is that batch's alone. (Nested transactions would isolate it too, but cost LMDB two
  // allocations of megabytes per batch.) A full map first has its expired values deleted, then
  // the batches are tried once more.
  const auto run = [&](std::span<const size_t> which) -> Status {
    const auto apply = [&](MDB_txn* txn) -> Status {
      for (size_t i : which) {
        results[i] = impl_->ApplyIn(txn, batches[i], now);
        if (!results[i].ok()) return results[i].error();
      }
      Result<uint64_t> swept = impl_->Sweep(txn, now, kSweepPerTransaction);
      return swept.ok() ? Status() : Status(swept.error());
    };
    Status s = impl_->Write(apply);
    if (!s.ok() && impl_->Full(s) && impl_->Reclaim().ok()) s = impl_->Write(apply);
    return s;
  };
  const Status all = run(valid);
  if (all.ok()) return results;
  // A failure of the whole store (unreachable, full) is every batch's; any other may be one
  // batch's own (a value hourglass did not write): then each batch runs alone.
  const ErrorCode code = all.error().code();
  const bool one_batch_failed = code != ErrorCode::kUnavailable && code != ErrorCode::kStoreFull &&
                                code != ErrorCode::kDataLoss && valid.size() > 1;
  for (size_t i : valid) {
    const Status alone = one_batch_failed ? run({&i, 1}) : all;
    if (!alone.ok()) results[i] = alone.error();
  }
  return results;
}

std::vector<Status> LmdbStore::Send(std::span<const Batch> batches) {
  std::vector<Status> statuses(batches.size());
  std::vector<Batch> writes;
  std::vector<size_t> at;
  for (size_t i = 0; i < batches.size(); ++i) {
    statuses[i] = ValidateSend(batches[i]);
    if (statuses[i].ok() && !batches[i].guards.empty()) {
      statuses[i] = InvalidArgument("Store::Send takes batches without guards");
    }
    if (statuses[i].ok()) at.push_back(i);
  }
  std::vector<Batch> selected;
  for (size_t i : at) selected.push_back(batches[i]);
  std::vector<Result<std::vector<uint64_t>>> applied = ApplyMany(selected);
  for (size_t k = 0; k < at.size(); ++k) {
    statuses[at[k]] = applied[k].ok() ? Status() : Status(applied[k].error());
  }
  return statuses;
}

Status LmdbStore::Delete(const std::string& group, std::span<const std::string> keys) {
  if (Status s = ValidateKeys(group, keys); !s.ok()) return s;
  std::vector<std::string> deletes;
  const std::vector<packed::PackAppend> zeroes =
      packed::PlanPackedDelete(group, keys, packed::PlanOptions{}, deletes);
  const uint64_t now = static_cast<uint64_t>(std::max<int64_t>(0, ToUnix(impl_->clock.Now())));
  return impl_->Write([&](MDB_txn* txn) -> Status {
    for (const std::string& key : deletes) {
      if (Status s = impl_->Del(txn, key); !s.ok()) return s;
    }
    for (const packed::PackAppend& zero : zeroes) {
      Result<std::optional<Stored>> stored = impl_->Get(txn, zero.key, now);
      if (!stored.ok()) return stored.error();
      if (!*stored) continue;
      std::string pack = std::move((*stored)->payload) + zero.records;
      if (Status s = impl_->Put(txn, zero.key, (*stored)->expiry, pack, false); !s.ok()) return s;
    }
    return {};
  });
}

Result<uint64_t> LmdbStore::Reclaim() { return impl_->Reclaim(); }

std::vector<Result<ServerStats>> LmdbStore::Stats() {
  ServerStats stats;
  stats.kind = "lmdb";
  stats.server = impl_->options.path;
  MDB_envinfo info{};
  MDB_stat env{};
  mdb_env_info(impl_->env, &info);
  mdb_env_stat(impl_->env, &env);
  stats.bytes = (info.me_last_pgno + 1) * env.ms_psize;
  stats.limit_maxbytes = info.me_mapsize;
  stats.pid = static_cast<uint64_t>(getpid());
  stats.time = 0;  // no server: its clock is this host's
  Status s = impl_->Write([&](MDB_txn* txn) -> Status {
    MDB_stat values{};
    if (int rc = mdb_stat(txn, impl_->values, &values); rc != 0) return impl_->Failed("stat", rc);
    stats.curr_items = values.ms_entries;
    return {};
  });
  std::vector<Result<ServerStats>> out;
  if (s.ok()) {
    out.emplace_back(std::move(stats));
  } else {
    out.emplace_back(s.error());
  }
  return out;
}

}  // namespace hourglass
