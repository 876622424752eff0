#include "pack_bases.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <random>

#include "hourglass/packed_layout.h"

namespace hourglass::memcached {

std::shared_ptr<const std::string> BaseCache::Find(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = bases_.find(key);
  return it == bases_.end() ? nullptr : it->second.value;
}

void BaseCache::Put(const std::string& key, std::string value, Instant at) {
  if (value.size() > max_bytes_) return;
  std::lock_guard lock(mu_);
  if (auto it = bases_.find(key); it != bases_.end()) {
    it->second.touched = std::max(it->second.touched, at);
    return;
  }
  bytes_ += value.size();
  bases_.emplace(key, Kept{std::make_shared<const std::string>(std::move(value)), at});
  order_.push_back(key);
  while (bytes_ > max_bytes_) {
    auto it = bases_.find(order_.front());
    bytes_ -= it->second.value->size();
    bases_.erase(it);
    order_.pop_front();
  }
}

std::shared_ptr<const std::string> BaseCache::Use(const std::string& key, Instant now,
                                                  bool& fetch_due) {
  std::lock_guard lock(mu_);
  auto it = bases_.find(key);
  fetch_due = false;
  if (it == bases_.end()) return nullptr;
  if (now - it->second.touched >= kTouchEvery) {
    it->second.touched = now;
    fetch_due = true;
  }
  return it->second.value;
}

bool Compacting::Busy(const std::string& pack, size_t own) const {
  std::lock_guard lock(mu_);
  if (packs_.contains(pack)) return true;
  auto lost = lost_.find(pack);
  return lost != lost_.end() && own < lost->second + packed::kBaseTailBytes;
}

bool Compacting::Claim(const std::string& pack) {
  std::lock_guard lock(mu_);
  return packs_.insert(pack).second;
}

void Compacting::Release(const std::string& pack, size_t own, bool named) {
  std::lock_guard lock(mu_);
  packs_.erase(pack);
  if (named) {
    lost_.erase(pack);
    return;
  }
  if (lost_.size() >= kMaxLost) lost_.clear();
  lost_[pack] = own;
}

namespace {

// Notes in `answer` that packs[i] was made whole with `base`, its own item `own` bytes long.
void NoteBase(GetAnswer& answer, size_t i, std::string base, size_t own) {
  if (answer.pack_base.empty()) {
    answer.pack_base.resize(answer.packs.size());
    answer.pack_own.resize(answer.packs.size());
  }
  answer.pack_base[i] = std::move(base);
  answer.pack_own[i] = own;
}

// packs[i] made whole with `base`, as `answer` notes it.
void Assemble(GetAnswer& answer, size_t i, const packed::BaseRef& ref, std::string_view base) {
  std::string& pack = *answer.packs[i];
  NoteBase(answer, i, ref.key, pack.size());
  pack = packed::WithBase(base, pack, ref.tail_at);
}

// The base under `key`: `cache`'s copy, or the server's (then kept, as read at `now`); nullopt
// when it is gone.
Result<std::shared_ptr<const std::string>> ReadBase(std::string_view server, net::Connection& c,
                                                    const std::string& key, Instant now,
                                                    BaseCache& cache) {
  if (std::shared_ptr<const std::string> base = cache.Find(key)) return base;
  Result<std::optional<std::string>> got = GetOne(server, c, key);
  if (!got.ok()) return got.error();
  if (!*got) return std::shared_ptr<const std::string>();
  cache.Put(key, **got, now);
  return std::make_shared<const std::string>(std::move(**got));
}

}  // namespace

std::vector<size_t> AssembleFromCache(BaseCache& cache, std::span<const std::string> reads,
                                      Instant now, GetAnswer& answer,
                                      std::vector<std::string>& touch) {
  std::vector<size_t> missing;
  for (size_t i = 0; i < answer.packs.size(); ++i) {
    if (!answer.packs[i]) continue;
    std::optional<packed::BaseRef> ref = packed::BaseRefOf(reads[i], *answer.packs[i]);
    if (!ref) continue;
    bool fetch_due = false;
    if (std::shared_ptr<const std::string> base = cache.Use(ref->key, now, fetch_due)) {
      Assemble(answer, i, *ref, *base);
      if (fetch_due) touch.push_back(ref->key);
    } else {
      missing.push_back(i);
    }
  }
  return missing;
}

void BuildTouches(std::span<const std::string> bases, std::string& out) {
  for (const std::string& base : bases)
    fmt::format_to(std::back_inserter(out), "mg {} q\r\n", base);
  out += "mn\r\n";
}

Result<WholePack> ReadWhole(std::string_view server, net::Connection& c, const std::string& pack,
                            Instant now, BaseCache& cache) {
  WholePack whole;
  for (int read = 1;; ++read) {
    Result<std::optional<std::string>> value = GetOne(server, c, pack, &whole.cas);
    if (!value.ok()) return value.error();
    whole.value = std::move(*value);
    if (!whole.value) return whole;
    whole.own = whole.value->size();
    std::optional<packed::BaseRef> ref = packed::BaseRefOf(pack, *whole.value);
    if (!ref) return whole;
    whole.base = ref->key;
    Result<std::shared_ptr<const std::string>> base = ReadBase(server, c, ref->key, now, cache);
    if (!base.ok()) return base.error();
    if (*base) {
      whole.value = packed::WithBase(**base, *whole.value, ref->tail_at);
      return whole;
    }
    if (read == kMaxReads) {  // lost: the pack's own records, after its header
      whole.value = packed::WithBase(std::string_view(*whole.value).substr(0, kPackHeaderBytes),
                                     *whole.value, ref->tail_at);
      return whole;
    }
  }
}

Status CompleteFromServer(std::string_view server, net::Connection& c,
                          std::span<const std::string> reads, std::span<const size_t> missing,
                          Instant now, BaseCache& cache, GetAnswer& answer) {
  for (size_t i : missing) {
    const packed::BaseRef ref = *packed::BaseRefOf(reads[i], *answer.packs[i]);
    Result<std::shared_ptr<const std::string>> base = ReadBase(server, c, ref.key, now, cache);
    if (!base.ok()) return base.error();
    if (*base) {
      Assemble(answer, i, ref, **base);
      continue;
    }
    Result<WholePack> whole = ReadWhole(server, c, reads[i], now, cache);
    if (!whole.ok()) return whole.error();
    answer.packs[i] = std::move(whole->value);
    answer.pack_cas[i] = whole->cas;
    NoteBase(answer, i, std::move(whole->base), whole->own);
  }
  return {};
}

namespace {

// Reads one answer line; "HD" is `stored`.
Status ReadStored(std::string_view server, net::Connection& c, bool& stored) {
  Result<std::string_view> line = c.ReadLine();
  if (!line.ok()) return line.error();
  stored = *line == "HD";
  if (*line == "ERROR") return LineError(server, *line);  // may be out of step
  return {};
}

void SendSet(std::string& out, std::string_view key, std::string_view value, uint32_t expiry,
             uint64_t cas) {
  if (cas != 0) {
    out += fmt::format("ms {} {} C{} T{}\r\n", key, value.size(), cas, expiry);
  } else {
    out += fmt::format("ms {} {} T{}\r\n", key, value.size(), expiry);
  }
  out += value;
  out += "\r\n";
}

}  // namespace

Status RewriteWithBases(std::string_view server, net::Connection& c,
                        const PackCompaction& compaction, int& owed, bool& named) {
  named = false;
  std::string request;
  bool stored = false;
  if (!compaction.base_key.empty()) {
    SendSet(request, compaction.base_key, compaction.base_value, compaction.expiry, 0);
    if (Status s = c.Send(request); !s.ok()) return s;
    if (Status s = ReadStored(server, c, stored); !s.ok() || !stored) return s;
    request.clear();
  }
  SendSet(request, compaction.key, compaction.value, compaction.expiry, compaction.cas);
  if (Status s = c.Send(request); !s.ok()) return s;
  if (Status s = ReadStored(server, c, stored); !s.ok()) return s;
  named = stored;
  // The base no pack names now: the old one, or the new one (if any) when the pack changed since
  // it was read.
  const std::string& unnamed = stored ? compaction.old_base : compaction.base_key;
  if (unnamed.empty()) return {};
  if (Status s = c.Send(fmt::format("md {} q\r\nmn\r\n", unnamed)); !s.ok()) return s;
  ++owed;
  return {};
}

uint64_t NewBaseToken() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return random();
}

}  // namespace hourglass::memcached
