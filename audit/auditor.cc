#include "hourglass/auditor.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>

namespace hourglass {
namespace {

// The hits one event+feature left counted, second by second in time order: sums of any span.
class CountedLog {
 public:
  // Appends `hits` at second `t`, no earlier than every second appended before.
  void Add(int64_t t, uint64_t hits) {
    if (hits == 0) return;
    const uint64_t before = sums_.empty() ? 0 : sums_.back();
    if (!seconds_.empty() && seconds_.back() == t) {
      sums_.back() += hits;
    } else {
      seconds_.push_back(t);
      sums_.push_back(before + hits);
    }
  }
  // Hits in [first, last].
  uint64_t CountIn(int64_t first, int64_t last) const {
    if (first > last) return 0;
    return Before(std::upper_bound(seconds_.begin(), seconds_.end(), last)) -
           Before(std::lower_bound(seconds_.begin(), seconds_.end(), first));
  }

 private:
  uint64_t Before(std::vector<int64_t>::const_iterator it) const {
    const size_t i = static_cast<size_t>(it - seconds_.begin());
    return i == 0 ? 0 : sums_[i - 1];
  }
  std::vector<int64_t> seconds_;
  std::vector<uint64_t> sums_;  // hits up to and including seconds_[i]
};

// How far the reported [low, high] is from the true [low, high]; 0 when they meet.
uint64_t Distance(uint64_t low, uint64_t high, uint64_t true_low, uint64_t true_high) {
  if (high < true_low) return true_low - high;
  if (low > true_high) return low - true_high;
  return 0;
}

// The hits counted in `window` at `t` before second `t`.
uint64_t Before(const CountedLog& log, const Window& window, int64_t t) {
  return log.CountIn(window.SpanAt(FromUnix(t)).first, t - 1);
}

// The hits a decision of second `t` may have been decided with or without, besides its own:
// `others` of its own second, `ahead` of later seconds whose decisions began while it was in
// flight (before its `done`), and the hits of `in_flight` (earlier seconds' decisions still in
// flight at `t`) that a window counts before `t`.
struct Unordered {
  uint64_t others = 0;
  uint64_t ahead = 0;
  const std::vector<const AuditRecord*>* in_flight = nullptr;
  // The hits of in_flight within `window` at `t`.
  uint64_t Behind(const Window& window, int64_t t) const {
    const int64_t first = window.SpanAt(FromUnix(t)).first;
    uint64_t hits = 0;
    for (const AuditRecord* x : *in_flight) hits += x->at >= first ? x->hits : 0;
    return hits;
  }
};

// Counts `r` into `row`, and the counts it reported that no order of the decisions it was
// unordered with (`u`) makes true.
void TallyAndCheckCounts(const AuditRecord& r, const CountedLog& log, const Unordered& u,
                         AuditRow& row) {
  ++row.decisions;
  ++(r.admitted() ? row.admitted : row.denied);
  if (r.degraded) {
    ++row.degraded;
    return;
  }
  const uint64_t own = r.recorded ? r.hits : 0;
  for (const AuditLimit& l : r.limits) {
    if (!l.counted) continue;
    const uint64_t before = Before(log, l.limit.window, r.at);
    const uint64_t gap =
        Distance(l.exact ? l.count : l.count_min, l.count,
                 before - u.Behind(l.limit.window, r.at) + own, before + u.others + u.ahead + own);
    if (gap > 0) {
      ++row.count_errors;
      row.count_error_max = std::max(row.count_error_max, gap);
    }
  }
}

// Judges `r` alone: an error only when it is one first or last among the decisions it was
// unordered with (`u`).
void JudgeAlone(const AuditRecord& r, const CountedLog& log, const Unordered& u, AuditRow& row) {
  if (r.degraded) return;
  bool fits_first = true, fits_last = true;
  for (const AuditLimit& l : r.limits) {
    const uint64_t before = Before(log, l.limit.window, r.at);
    fits_first = fits_first && before - u.Behind(l.limit.window, r.at) + r.hits <= l.limit.max_hits;
    fits_last = fits_last && before + u.others + u.ahead + r.hits <= l.limit.max_hits;
  }
  if (r.admitted()) {
    if (!fits_first) {
      ++row.over_admissions;
    } else if (!fits_last) {
      ++row.order_dependent;
    }
  } else if (!r.allowed && !r.blocked) {
    if (fits_last) {
      ++row.needless_denials;
    } else if (fits_first) {
      ++row.order_dependent;
    }
  }
}

// Whether the decisions [first, last) are single hits of one policy in admitted mode, each
// counted exactly when it got through, none degraded, blocked, a peek or in shadow mode: then
// whatever their order, an exact limiter admits as many as there is room for.
bool Interchangeable(const std::vector<const AuditRecord*>& second) {
  for (const AuditRecord* r : second) {
    if (r->hits != 1 || r->peek || !r->binding || r->degraded || r->blocked ||
        r->mode != CountingMode::kAdmitted || r->recorded != r->admitted() ||
        r->limits.size() != second.front()->limits.size()) {
      return false;
    }
    for (size_t i = 0; i < r->limits.size(); ++i) {
      if (!(r->limits[i].limit == second.front()->limits[i].limit)) return false;
    }
  }
  return true;
}

// Judges interchangeable decisions together: the room their windows had at the start of the
// second, against how many got through.
void JudgeTogether(const std::vector<const AuditRecord*>& second, const CountedLog& log,
                   AuditRow& row) {
  const AuditRecord& first = *second.front();
  uint64_t room = UINT64_MAX;
  for (const AuditLimit& l : first.limits) {
    const uint64_t before = Before(log, l.limit.window, first.at);
    room = std::min(room, before >= l.limit.max_hits ? 0 : l.limit.max_hits - before);
  }
  uint64_t admitted = 0;
  for (const AuditRecord* r : second) admitted += r->admitted() ? 1 : 0;
  const uint64_t asked = second.size();
  row.over_admissions += admitted > room ? admitted - room : 0;
  const uint64_t fit = std::min(room, asked);
  row.needless_denials += fit > admitted ? fit - admitted : 0;
}

}  // namespace

AuditRow& AuditRow::operator+=(const AuditRow& o) {
  decisions += o.decisions;
  admitted += o.admitted;
  denied += o.denied;
  over_admissions += o.over_admissions;
  needless_denials += o.needless_denials;
  count_errors += o.count_errors;
  count_error_max = std::max(count_error_max, o.count_error_max);
  degraded += o.degraded;
  order_dependent += o.order_dependent;
  return *this;
}

void Auditor::Add(AuditRecord record) {
  record.done = std::max(record.done, record.at);
  records_.push_back(std::move(record));
}

AuditReport Auditor::Report() const {
  std::vector<size_t> order(records_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const AuditRecord& x = records_[a];
    const AuditRecord& y = records_[b];
    return std::tie(x.event, x.feature, x.at) < std::tie(y.event, y.feature, y.at);
  });
  const auto same_feature = [&](size_t a, size_t b) {
    return records_[order[a]].event == records_[order[b]].event &&
           records_[order[a]].feature == records_[order[b]].feature;
  };
  AuditReport report;
  CountedLog log;
  std::vector<const AuditRecord*> in_flight;  // this feature's, from seconds before `first`'s
  for (size_t i = 0; i < order.size();) {
    const AuditRecord& first = records_[order[i]];
    const bool new_feature = i == 0 || !same_feature(i - 1, i);
    if (new_feature) {
      log = CountedLog();
      in_flight.clear();
      ++report.features;
    }
    std::erase_if(in_flight, [&](const AuditRecord* x) { return x->done < first.at; });
    // The decisions of one second of this feature.
    size_t end = i;
    uint64_t counted = 0;
    while (end < order.size() && records_[order[end]].event == first.event &&
           records_[order[end]].feature == first.feature && records_[order[end]].at == first.at) {
      const AuditRecord& r = records_[order[end]];
      counted += r.recorded ? r.hits : 0;
      ++end;
    }
    std::vector<const AuditRecord*> second;
    for (size_t k = i; k < end; ++k) second.push_back(&records_[order[k]]);
    AuditRow& row = report.events[first.event];
    bool alone_in_time = in_flight.empty();
    std::vector<Unordered> unordered;
    for (const AuditRecord* r : second) {
      Unordered u{counted - (r->recorded ? r->hits : 0), 0, &in_flight};
      // Decisions of this feature that began in a later second while r was in flight.
      for (size_t k = end; k < order.size() && same_feature(k, i); ++k) {
        const AuditRecord& x = records_[order[k]];
        if (x.at > r->done) break;
        u.ahead += x.recorded ? x.hits : 0;
      }
      alone_in_time = alone_in_time && r->done == first.at;
      unordered.push_back(u);
    }
    for (size_t k = 0; k < second.size(); ++k) {
      TallyAndCheckCounts(*second[k], log, unordered[k], row);
    }
    if (alone_in_time && Interchangeable(second)) {
      JudgeTogether(second, log, row);
    } else {
      for (size_t k = 0; k < second.size(); ++k) JudgeAlone(*second[k], log, unordered[k], row);
    }
    log.Add(first.at, counted);
    for (const AuditRecord* r : second) {
      if (r->recorded && r->done > r->at) in_flight.push_back(r);
    }
    i = end;
  }
  for (const auto& [event, row] : report.events) report.total += row;
  return report;
}

}  // namespace hourglass
