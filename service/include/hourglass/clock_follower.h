// Keeps a process on its store's clock. Every client of a memcached cluster puts hits into
// buckets by its own clock, and a process caches a bucket as settled once it ended more than the
// settle margin ago by its clock: a client whose clock lags writes into buckets others have
// settled, one whose clock runs ahead settles buckets others still write. memcached's `stats`
// tells each server's clock (whole seconds), so every long-running process compares its own with
// it and, past kFollowFrom, follows the servers' (their median) instead: then all processes
// agree to within the measurement's ~1 s, well inside the settle margin, whatever their hosts'
// clocks say.
//
//   ClockFollower follower;
//   ClockFollower::Step step = follower.Update({{"10.0.0.5:11211", -10}});  // local - server
//   clock.SetOffset(step.correction);  // +10 s
//   if (step.warning) Log(*step.warning);
//
// Thread-safety: one thread (the store watch's).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace hourglass {

// One server's clock against this process's: local minus server, in seconds; exact to about a
// second (both clocks are read in whole seconds).
struct ClockOffset {
  std::string server;
  int64_t seconds = 0;
};

class ClockFollower {
 public:
  // Offsets this large are followed; those of at most kAgree (measurement noise) are not.
  static constexpr std::chrono::seconds kFollowFrom{2};
  static constexpr std::chrono::seconds kAgree{1};

  struct Step {
    std::chrono::seconds correction{0};  // add to the local clock: server minus local
    std::optional<std::string> warning;  // when the correction changed, or servers disagree
  };
  // The correction after one reading of every server that answered (none: unchanged).
  Step Update(std::span<const ClockOffset> offsets);
  std::chrono::seconds correction() const { return correction_; }

 private:
  std::chrono::seconds correction_{0};
};

}  // namespace hourglass
