// The seam through which a check is decided in this process while its store fails, and its hits
// are written back once the store answers again (Policy::on_store_failure local).
//
//   LocalLedger ledger({.services = 2, .keep = Seconds{86400}});   // fallback/local_ledger.h
//   EngineOptions options{.fallback = &ledger};
//   Policy p{.limits = *ParseLimits("10/m"), .on_store_failure = FailureMode::kLocal};
//
// While a check's batch fails, the engine decides it against the hits this process decided
// locally for the same event+feature, each limit scaled by a share (Policy::local_share, or the
// fallback's default_share()): a window admits at most share.Of(max_hits) hits here. What it
// admits is held as pending, per second. Before the feature's next check reads the store, and
// periodically (Engine::WriteBackLocal), the pending hits are claimed and written back at their
// own seconds; once they land, every window counts them as if the store had never failed. So a
// window admits at most its limit through the store, plus each process's share while it fails.
//
// Thread-safety: implementations are called from many threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/status.h"
#include "hourglass/window.h"

namespace hourglass {

// A fraction of a limit: num/den with 0 <= num <= den (0: none of it).
struct Share {
  uint64_t num = 1;
  uint64_t den = 1;
  // floor(max_hits * num / den): the hits a window admits under this share.
  uint64_t Of(uint64_t max_hits) const;
  std::string ToString() const;  // "1/3"; "1" for the whole limit, "none" for none
  bool operator==(const Share&) const = default;
};
// "1/3", "0.25", "1": a share of a limit, more than 0 and at most 1. kInvalidArgument naming the
// text and a valid example otherwise.
Result<Share> ParseShare(std::string_view text);

class StoreFallback {
 public:
  // Hits at one second: claimed for a write-back (negative: taken back after their claim).
  struct SecondHits {
    int64_t second = 0;
    int64_t hits = 0;
    bool operator==(const SecondHits&) const = default;
  };
  // A local decision.
  struct Verdict {
    bool allowed = false;
    bool recorded = false;  // the hits are held (pending) for the write-back
    // Refused for want of room: the ledger holds as many seconds as it may (denied, unrecorded).
    bool full = false;
    // Per span, the hits decided locally within it, this check's included when recorded, as
    // pieces (one per second, in order).
    std::vector<std::vector<CountedSpan>> pieces;
  };

  virtual ~StoreFallback() = default;

  // The share of a policy that names none.
  virtual Share default_share() const = 0;
  // A check to decide: `hits` at second `t`, recorded when `record` and they fit, or `record`
  // and `attempts` (every attempt counts). `sent`: the hits went to the store in a batch whose
  // answer timed out, so they may land there (a frozen server applies what it received once it
  // runs again): they count here but are not written back, and are told as uncertain.
  struct Ask {
    uint64_t hits = 1;
    int64_t t = 0;
    bool record = true;
    bool attempts = false;
    bool sent = false;
  };
  // Decides `ask` for `group` against `maxes` (per span, the limits scaled by the share): it fits
  // when every span's locally decided hits plus its hits stay within its max. Decides and records
  // as one step: concurrent decisions of one group never both take the last unit.
  virtual Verdict Decide(const std::string& group, std::span<const Span> spans,
                         std::span<const uint64_t> maxes, const Ask& ask) = 0;
  // Takes back hits Decide recorded (a request denied by another check).
  virtual void TakeBack(const std::string& group, int64_t t, uint64_t hits) = 0;

  // Whether any group has hits to write back: cheap, for every check to ask first.
  virtual bool AnyPending() const = 0;
  // Up to `max` groups with hits to write back.
  virtual std::vector<std::string> PendingGroups(size_t max) const = 0;
  // Claims `group`'s pending hits for a write-back (in order of their seconds, none of 0 hits;
  // empty: none). They still count in local decisions. Claimed hits are claimed by no one else
  // until Released.
  virtual std::vector<SecondHits> Claim(const std::string& group) = 0;
  // How a write-back went: landed; failed, and the hits are pending again; or timed out, and
  // they are taken to have landed (the server received them, as a frozen one applies them once
  // it runs again), told as uncertain: sending them again could count them twice.
  enum class Landed { kYes, kNo, kUnknown };
  // The write-back of `claimed` (Claim's answer) went as `landed` says.
  virtual void Release(const std::string& group, std::span<const SecondHits> claimed,
                       Landed landed) = 0;
};

}  // namespace hourglass
