#include "hourglass/recent_top.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <atomic>
#include <tuple>
#include <unordered_map>

#include "hourglass/instance_id.h"

namespace hourglass {
namespace {

int64_t MinuteOf(Instant at) { return ToUnix(at) / 60 - (ToUnix(at) % 60 < 0 ? 1 : 0); }

// The key a feature is summarized under: itself, or for a long one its first bytes and a hash of
// all of it (the same in every process, so that services' answers merge), one byte longer than
// any feature kept whole.
std::string KeyOf(std::string_view feature) {
  if (feature.size() <= kMaxTopKey) return std::string(feature);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(feature.data()), feature.size(), digest);
  std::string hex;
  for (int i = 0; i < 8; ++i) hex += fmt::format("{:02x}", digest[i]);
  return fmt::format("{}...#{}", feature.substr(0, kMaxTopKey + 1 - 20), hex);
}

bool IsCut(std::string_view key) { return key.size() > kMaxTopKey; }

}  // namespace

Result<TopBy> ParseTopBy(std::string_view name) {
  if (name == "hits") return TopBy::kHits;
  if (name == "denied") return TopBy::kDenied;
  return Error(ErrorCode::kInvalidArgument, fmt::format("by={}: use hits or denied", name));
}

std::string_view TopByName(TopBy by) { return by == TopBy::kHits ? "hits" : "denied"; }

RecentTop::RecentTop(size_t capacity) : capacity_(capacity), id_(NextInstanceId()) {}

RecentTop::EventTop& RecentTop::Of(std::string_view event) {
  // The event this thread recorded last, and where: events are never dropped, so the pointer
  // stays good for as long as the RecentTop that `id` names lives.
  thread_local struct {
    uint64_t id = 0;
    std::string event;
    EventTop* top = nullptr;
  } last;
  if (last.id == id_ && last.event == event) return *last.top;
  EventTop* found = nullptr;
  {
    std::shared_lock lock(mu_);
    if (auto it = events_.find(event); it != events_.end()) found = it->second.get();
  }
  if (found == nullptr) {
    std::unique_lock lock(mu_);
    auto [it, added] = events_.try_emplace(std::string(event), nullptr);
    if (added) {
      it->second = std::make_unique<EventTop>();
      for (int i = 0; i < kMinutes; ++i) {
        it->second->minutes.push_back({-1, SpaceSaving(capacity_), SpaceSaving(capacity_)});
      }
    }
    found = it->second.get();
  }
  last.id = id_;
  last.event.assign(event);
  last.top = found;
  return *found;
}

const RecentTop::EventTop* RecentTop::Find(std::string_view event) const {
  std::shared_lock lock(mu_);
  const auto it = events_.find(event);
  return it == events_.end() ? nullptr : it->second.get();
}

void RecentTop::AddToMinute(const EventTop& top, const Pending& decision) {
  const int64_t minute = MinuteOf(decision.at);
  Minute& m = top.minutes[static_cast<size_t>(minute % kMinutes)];
  if (m.minute < minute) {  // a minute older than the window: start it afresh
    m.minute = minute;
    m.hits.Clear();
    m.denied.Clear();
  } else if (m.minute > minute) {
    return;  // a decision from a minute already gone round (a clock stepped back)
  }
  const LastDecision last{decision.allowed, decision.at};
  m.hits.Add(decision.key, decision.hash, decision.cost, last);
  if (!decision.allowed) m.denied.Add(decision.key, decision.hash, decision.cost, last);
}

void RecentTop::AddBuffered(const EventTop& top, Buffer& buffer) {
  if (buffer.used == 0) return;
  std::lock_guard lock(top.mu);
  for (size_t i = 0; i < buffer.used; ++i) AddToMinute(top, buffer.pending[i]);
  buffer.used = 0;
}

void RecentTop::AddAllBuffered(const EventTop& top) {
  for (Buffer& buffer : top.buffers) {
    std::lock_guard lock(buffer.mu);
    AddBuffered(top, buffer);
  }
}

void RecentTop::Record(std::string_view event, std::string_view feature, uint64_t cost,
                       bool allowed, Instant at) {
  static std::atomic<size_t> threads{0};
  thread_local const size_t thread = threads.fetch_add(1, std::memory_order_relaxed);
  EventTop& top = Of(event);
  Buffer& buffer = top.buffers[thread % kBuffers];
  std::lock_guard lock(buffer.mu);
  if (buffer.used == buffer.pending.size()) buffer.pending.emplace_back();
  Pending& decision = buffer.pending[buffer.used++];
  if (feature.size() > kMaxTopKey) {
    decision.key = KeyOf(feature);
  } else {
    decision.key.assign(feature);
  }
  decision.hash = SpaceSaving::HashOf(decision.key);
  decision.cost = cost;
  decision.allowed = allowed;
  decision.at = at;
  if (buffer.used == kBufferedDecisions) AddBuffered(top, buffer);
}

RecentTop::State RecentTop::Save() const {
  State state;
  std::shared_lock lock(mu_);
  for (const auto& [event, top] : events_) {
    AddAllBuffered(*top);
    std::lock_guard minutes_lock(top->mu);
    for (const Minute& m : top->minutes) {
      if (m.minute < 0 || m.hits.total() == 0) continue;
      state[event].push_back(
          {m.minute, m.hits.Entries(), m.denied.Entries(), m.hits.total(), m.denied.total()});
    }
  }
  return state;
}

void RecentTop::Restore(const State& state, Instant now) {
  const int64_t last = MinuteOf(now);
  for (const auto& [event, minutes] : state) {
    EventTop& top = Of(event);
    AddAllBuffered(top);
    std::lock_guard lock(top.mu);
    for (const MinuteState& saved : minutes) {
      if (saved.minute <= last - kMinutes || saved.minute > last) continue;
      Minute& m = top.minutes[static_cast<size_t>(saved.minute % kMinutes)];
      if (m.minute >= saved.minute) continue;
      m.minute = saved.minute;
      m.hits = SpaceSaving::Restored(capacity_, saved.hits, saved.hits_total);
      m.denied = SpaceSaving::Restored(capacity_, saved.denied, saved.denied_total);
    }
  }
}

Ranking MergeRankings(std::span<const RankingPart> parts, size_t n) {
  Ranking ranking;
  struct Sum {
    uint64_t estimate = 0, lower = 0;
    TopRow row;
  };
  std::unordered_map<std::string, Sum> sums;
  std::vector<std::unordered_map<std::string_view, const TopRow*>> listed(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    ranking.total += parts[p].total;
    ranking.bound += parts[p].unlisted_at_most;
    for (const TopRow& row : parts[p].rows) {
      listed[p].emplace(row.feature, &row);
      sums.try_emplace(row.feature, Sum{.estimate = 0, .lower = 0, .row = row});
    }
  }
  for (auto& [feature, sum] : sums) {
    for (size_t p = 0; p < parts.size(); ++p) {
      const auto it = listed[p].find(feature);
      if (it == listed[p].end()) {
        sum.estimate += parts[p].unlisted_at_most;
        continue;
      }
      const TopRow& row = *it->second;
      sum.estimate += row.estimate;
      sum.lower += row.estimate - row.error;
      if (row.last.at > sum.row.last.at) sum.row.last = row.last;
    }
    sum.row.estimate = sum.estimate;
    sum.row.error = sum.estimate - sum.lower;
    ranking.rows.push_back(std::move(sum.row));
  }
  std::sort(ranking.rows.begin(), ranking.rows.end(), [](const TopRow& a, const TopRow& b) {
    return std::tie(b.estimate, a.error, a.feature) < std::tie(a.estimate, b.error, b.feature);
  });
  if (ranking.rows.size() > n) ranking.rows.resize(n);
  return ranking;
}

TopAnswer RecentTop::Query(std::string_view event, int minutes, TopBy by, size_t n,
                           Instant now) const {
  minutes = std::clamp(minutes, 1, kMinutes);
  const int64_t last_minute = MinuteOf(now);
  TopAnswer answer{.from = FromUnix((last_minute - minutes + 1) * 60),
                   .to = now,
                   .total = 0,
                   .bound = 0,
                   .capacity = capacity_,
                   .rows = {}};
  const EventTop* top = Find(event);
  if (top == nullptr) return answer;
  AddAllBuffered(*top);
  std::lock_guard lock(top->mu);
  std::vector<const Minute*> chosen;
  std::vector<RankingPart> parts;
  for (const Minute& m : top->minutes) {
    if (m.minute <= last_minute - minutes || m.minute > last_minute) continue;
    chosen.push_back(&m);
    const SpaceSaving& summary = by == TopBy::kHits ? m.hits : m.denied;
    RankingPart& part = parts.emplace_back(
        RankingPart{.total = summary.total(), .unlisted_at_most = summary.min_count(), .rows = {}});
    for (const SpaceSaving::Entry& e : summary.Entries()) {
      part.rows.push_back({e.key, IsCut(e.key), e.count, e.error, e.last});
    }
  }
  Ranking ranking = MergeRankings(parts, n);
  // A row's last decision: the newest either summary saw (by denied, a later allowed one too).
  for (TopRow& row : ranking.rows) {
    for (const Minute* m : chosen) {
      for (const SpaceSaving* either : {&m->hits, &m->denied}) {
        const SpaceSaving::Entry* seen = either->Find(row.feature);
        if (seen != nullptr && seen->last.at >= row.last.at) row.last = seen->last;
      }
    }
  }
  answer.total = ranking.total;
  answer.bound = ranking.bound;
  answer.rows = std::move(ranking.rows);
  return answer;
}

}  // namespace hourglass
