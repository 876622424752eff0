#include "limiters.h"

#include <algorithm>
#include <deque>
#include <functional>

namespace hourglass::bench {
namespace {

int64_t W(const Limit& l) { return l.window.length().count(); }

uint64_t Key(uint32_t feature, size_t limit, int64_t index) {
  return (uint64_t{feature} << 40) ^ (uint64_t{limit} << 36) ^ static_cast<uint64_t>(index);
}

class HourglassLimiter final : public Limiter {
 public:
  HourglassLimiter(std::string name, Store& store, ManualClock& clock, std::vector<Limit> limits,
                   std::function<uint64_t()> stored, const EngineOptions& options)
      : name_(std::move(name)),
        clock_(clock),
        engine_(*Engine::Create(store, clock, options)),
        policy_{std::move(limits), CountingMode::kAdmitted, FailureMode::kFailClosed},
        stored_(std::move(stored)) {}
  std::string name() const override { return name_; }
  bool Decide(const Request& r, std::vector<double>& estimates,
              std::vector<double>& lows) override {
    clock_.Set(FromUnix(r.t));
    const Decision d = *engine_.Check("request", std::to_string(r.feature), policy_, r.cost);
    if (d.degraded) throw std::runtime_error(d.store_error->ToString());
    for (size_t i = 0; i < d.limits.size(); ++i) {
      const uint64_t own = d.recorded ? r.cost : 0;
      estimates[i] = static_cast<double>(d.limits[i].count - own);
      lows[i] = static_cast<double>(d.limits[i].count_min - std::min(d.limits[i].count_min, own));
    }
    cache_hits += d.cost.cache_hits;
    blocked_hits += d.cost.blocked_hits;
    round_trips += d.cost.round_trips;
    keys_read_per_decision.push_back(d.cost.keys_read);
    keys_read += d.cost.keys_read;
    keys_written += d.cost.keys_written;
    return d.allowed;
  }
  uint64_t StoredKeys(int64_t) override { return stored_(); }

 private:
  std::string name_;
  ManualClock& clock_;
  Engine engine_;
  Policy policy_;
  std::function<uint64_t()> stored_;
};

class SlidingLogLimiter final : public Limiter {
 public:
  explicit SlidingLogLimiter(std::vector<Limit> limits) : limits_(std::move(limits)) {
    for (const Limit& l : limits_) longest_ = std::max(longest_, W(l));
  }
  std::string name() const override { return "sliding log (exact)"; }
  bool Decide(const Request& r, std::vector<double>& estimates, std::vector<double>&) override {
    std::deque<std::pair<int64_t, uint64_t>>& log = logs_[r.feature];
    while (!log.empty() && log.front().first <= r.t - longest_) log.pop_front();
    bool fits = true;
    for (size_t i = 0; i < limits_.size(); ++i) {
      uint64_t n = 0;
      for (auto it = log.rbegin(); it != log.rend() && it->first > r.t - W(limits_[i]); ++it) {
        n += it->second;
      }
      estimates[i] = static_cast<double>(n);
      fits = fits && n + r.cost <= limits_[i].max_hits;
      ++keys_read;  // one ZCOUNT per limit
    }
    if (fits) {
      log.emplace_back(r.t, r.cost);
      ++keys_written;
    }
    return fits;
  }
  // Entries held: every admitted hit within the longest window.
  uint64_t StoredKeys(int64_t now) override {
    uint64_t n = 0;
    for (auto& [feature, log] : logs_) {
      while (!log.empty() && log.front().first <= now - longest_) log.pop_front();
      n += log.size();
    }
    return n;
  }

 private:
  std::vector<Limit> limits_;
  int64_t longest_ = 0;
  std::unordered_map<uint32_t, std::deque<std::pair<int64_t, uint64_t>>> logs_;
};

// Counters with an expiry, like memcached keys.
class CounterStore {
 public:
  uint64_t Get(uint64_t key, int64_t now) const {
    auto it = map_.find(key);
    return it != map_.end() && it->second.second > now ? it->second.first : 0;
  }
  void Add(uint64_t key, uint64_t delta, int64_t now, int64_t ttl) {
    auto [it, fresh] = map_.try_emplace(key, 0, now + ttl);
    if (!fresh && it->second.second <= now) it->second = {0, now + ttl};
    it->second.first += delta;
  }
  void Set(uint64_t key, uint64_t value, int64_t expires) { map_[key] = {value, expires}; }
  uint64_t Live(int64_t now) {
    std::erase_if(map_, [now](const auto& kv) { return kv.second.second <= now; });
    return map_.size();
  }

 private:
  std::unordered_map<uint64_t, std::pair<uint64_t, int64_t>> map_;  // value, expiry
};

// Adds an admitted request to one counter per limit, for the window index `t / W`, living
// `ttl_windows` windows (what the fixed-window and sliding-counter peers write).
void CountAdmitted(CounterStore& store, const std::vector<Limit>& limits, const Request& r,
                   int64_t ttl_windows, uint64_t& keys_written) {
  for (size_t i = 0; i < limits.size(); ++i) {
    store.Add(Key(r.feature, i, r.t / W(limits[i])), r.cost, r.t, ttl_windows * W(limits[i]));
  }
  keys_written += limits.size();
}

class FixedWindowLimiter final : public Limiter {
 public:
  explicit FixedWindowLimiter(std::vector<Limit> limits) : limits_(std::move(limits)) {}
  std::string name() const override { return kFixedWindowName; }
  bool Decide(const Request& r, std::vector<double>& estimates, std::vector<double>&) override {
    bool fits = true;
    for (size_t i = 0; i < limits_.size(); ++i) {
      const uint64_t n = store_.Get(Key(r.feature, i, r.t / W(limits_[i])), r.t);
      estimates[i] = static_cast<double>(n);
      fits = fits && n + r.cost <= limits_[i].max_hits;
    }
    keys_read += limits_.size();
    if (fits) CountAdmitted(store_, limits_, r, 1, keys_written);
    return fits;
  }
  uint64_t StoredKeys(int64_t now) override { return store_.Live(now); }

 private:
  std::vector<Limit> limits_;
  CounterStore store_;
};

class SlidingCounterLimiter final : public Limiter {
 public:
  explicit SlidingCounterLimiter(std::vector<Limit> limits) : limits_(std::move(limits)) {}
  std::string name() const override { return "sliding-window counter estimate"; }
  bool Decide(const Request& r, std::vector<double>& estimates, std::vector<double>&) override {
    bool fits = true;
    for (size_t i = 0; i < limits_.size(); ++i) {
      const int64_t w = W(limits_[i]);
      const int64_t index = r.t / w;
      const double elapsed = static_cast<double>(r.t - index * w) / static_cast<double>(w);
      const double estimate =
          static_cast<double>(store_.Get(Key(r.feature, i, index - 1), r.t)) * (1.0 - elapsed) +
          static_cast<double>(store_.Get(Key(r.feature, i, index), r.t));
      estimates[i] = estimate;
      fits = fits &&
             estimate + static_cast<double>(r.cost) <= static_cast<double>(limits_[i].max_hits);
    }
    keys_read += 2 * limits_.size();
    if (fits) CountAdmitted(store_, limits_, r, 2, keys_written);  // the previous window is read
    return fits;
  }
  uint64_t StoredKeys(int64_t now) override { return store_.Live(now); }

 private:
  std::vector<Limit> limits_;
  CounterStore store_;
};

class CoarseBucketsLimiter final : public Limiter {
 public:
  explicit CoarseBucketsLimiter(std::vector<Limit> limits) : limits_(std::move(limits)) {}
  std::string name() const override { return "coarse buckets"; }
  static int64_t BucketWidth(int64_t w) { return w <= 60 ? 1 : w <= 3600 ? 60 : 3600; }
  static size_t Level(int64_t b) { return b == 1 ? 0 : b == 60 ? 1 : 2; }
  bool Decide(const Request& r, std::vector<double>& estimates, std::vector<double>&) override {
    bool fits = true;
    for (size_t i = 0; i < limits_.size(); ++i) {
      const int64_t w = W(limits_[i]);
      const int64_t b = BucketWidth(w);
      const int64_t current = r.t / b;
      uint64_t n = 0;
      for (int64_t k = current - w / b + 1; k <= current; ++k) {
        n += store_.Get(Key(r.feature, Level(b), k), r.t);
      }
      keys_read += static_cast<uint64_t>(w / b);
      estimates[i] = static_cast<double>(n);
      fits = fits && n + r.cost <= limits_[i].max_hits;
    }
    if (fits) {
      for (int64_t b : {1, 60, 3600}) {
        store_.Add(Key(r.feature, Level(b), r.t / b), r.cost, r.t, 86400 + b);
        ++keys_written;
      }
    }
    return fits;
  }
  uint64_t StoredKeys(int64_t now) override { return store_.Live(now); }

 private:
  std::vector<Limit> limits_;
  CounterStore store_;  // keyed by (feature, level of the width, bucket index)
};

class FirstAccessLimiter final : public Limiter {
 public:
  explicit FirstAccessLimiter(std::vector<Limit> limits) : limits_(std::move(limits)) {}
  std::string name() const override { return kFirstAccessName; }
  bool Decide(const Request& r, std::vector<double>& estimates, std::vector<double>&) override {
    bool fits = true;
    for (size_t i = 0; i < limits_.size(); ++i) {
      State& s = state_[Key(r.feature, i, 0)];
      if (r.t - s.start >= W(limits_[i])) s = State{r.t, 0};
      estimates[i] = static_cast<double>(s.count);
      fits = fits && s.count + r.cost <= limits_[i].max_hits;
    }
    keys_read += limits_.size();
    if (fits) {
      for (size_t i = 0; i < limits_.size(); ++i) state_[Key(r.feature, i, 0)].count += r.cost;
      keys_written += limits_.size();
    }
    return fits;
  }
  uint64_t StoredKeys(int64_t now) override {
    uint64_t n = 0;
    for (const auto& [key, s] : state_) {
      n += now - s.start < W(limits_[(key >> 36) & 0xf]) ? 1 : 0;
    }
    return n;
  }

 private:
  struct State {
    int64_t start = std::numeric_limits<int64_t>::min() / 2;
    uint64_t count = 0;
  };
  std::vector<Limit> limits_;
  std::unordered_map<uint64_t, State> state_;
};

}  // namespace

std::unique_ptr<Limiter> MakeHourglass(const std::string& name, Store& store, ManualClock& clock,
                                       const std::vector<Limit>& limits,
                                       std::function<uint64_t()> stored_keys,
                                       const EngineOptions& options) {
  return std::make_unique<HourglassLimiter>(name, store, clock, limits, std::move(stored_keys),
                                            options);
}
EngineOptions ExactCoverOptions() {
  EngineOptions options;
  options.hot_path = HotPathOptions::Off();
  return options;
}

EngineOptions HotPathEngineOptions() {
  EngineOptions options;
  options.hot_path = HotPathOptions::LongRunning();
  return options;
}

std::unique_ptr<Limiter> MakeSlidingLog(const std::vector<Limit>& limits) {
  return std::make_unique<SlidingLogLimiter>(limits);
}
std::unique_ptr<Limiter> MakeFixedWindow(const std::vector<Limit>& limits) {
  return std::make_unique<FixedWindowLimiter>(limits);
}
std::unique_ptr<Limiter> MakeSlidingCounter(const std::vector<Limit>& limits) {
  return std::make_unique<SlidingCounterLimiter>(limits);
}
std::unique_ptr<Limiter> MakeCoarseBuckets(const std::vector<Limit>& limits) {
  return std::make_unique<CoarseBucketsLimiter>(limits);
}
std::unique_ptr<Limiter> MakeFirstAccess(const std::vector<Limit>& limits) {
  return std::make_unique<FirstAccessLimiter>(limits);
}

}  // namespace hourglass::bench
