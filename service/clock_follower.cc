#include "hourglass/clock_follower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace hourglass {
namespace {

int64_t Median(std::span<const ClockOffset> offsets) {
  std::vector<int64_t> sorted;
  for (const ClockOffset& o : offsets) sorted.push_back(o.seconds);
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

std::string Disagreement(std::span<const ClockOffset> offsets) {
  const auto [low, high] = std::minmax_element(
      offsets.begin(), offsets.end(),
      [](const ClockOffset& a, const ClockOffset& b) { return a.seconds < b.seconds; });
  if (high->seconds - low->seconds < ClockFollower::kFollowFrom.count()) return "";
  return fmt::format(
      "the store's servers' clocks disagree by {} s ({} and {}): clients put a feature's "
      "hits in buckets by the clock they follow, the median here; fix the servers' clocks (NTP)",
      high->seconds - low->seconds, low->server, high->server);
}

}  // namespace

ClockFollower::Step ClockFollower::Update(std::span<const ClockOffset> offsets) {
  Step step{correction_, std::nullopt};
  if (offsets.empty()) return step;
  const int64_t offset = Median(offsets);  // local - servers
  const int64_t wanted = -offset;
  std::chrono::seconds next = correction_;
  if (std::abs(offset) <= kAgree.count()) {
    next = std::chrono::seconds{0};
  } else if (std::abs(offset) >= kFollowFrom.count() &&
             std::abs(wanted - correction_.count()) > kAgree.count()) {
    next = std::chrono::seconds{wanted};
  }
  std::string warning = Disagreement(offsets);
  if (next != correction_) {
    if (!warning.empty()) warning += "; ";
    warning +=
        next.count() == 0
            ? fmt::format(
                  "this host's clock agrees with the store's again (within {} s): "
                  "following it",
                  kAgree.count())
            : fmt::format(
                  "this host's clock is {} s {} the store's: following the store's "
                  "({:+} s) so that hits land in the buckets other clients read; fix this host's "
                  "clock (NTP)",
                  std::abs(offset), offset < 0 ? "behind" : "ahead of", next.count());
    correction_ = next;
  }
  step.correction = correction_;
  if (!warning.empty()) step.warning = std::move(warning);
  return step;
}

}  // namespace hourglass
