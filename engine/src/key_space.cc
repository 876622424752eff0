#include "hourglass/key_space.h"

#include <utility>

namespace hourglass {

Seconds KeySpace::Ttl(size_t level) const {
  const Seconds reach =
      level + 1 < ladder_.levels() ? ladder_.width(level + 1) : ladder_.width(level);
  return retention_ + reach + settle_margin_;
}

std::vector<Increment> KeySpace::HitIncrements(const std::string& group, int64_t t, int64_t delta,
                                               bool ledger) const {
  std::vector<Increment> increments;
  increments.reserve(ladder_.levels() + 2);
  for (size_t level = 0; level < ladder_.levels(); ++level) {
    increments.push_back(
        Increment{BucketKey(group, ladder_.BucketAt(level, t)), delta, Ttl(level)});
  }
  if (keeps_ledger() && ledger) {  // see KeySpace::Ledger for the order
    LedgerKeys keys = Ledger(group, FloorDiv(t, kLedgerSpan.count()));
    if (delta > 0) {
      increments.push_back(Increment{std::move(keys.events), delta, LedgerTtl()});
      increments.push_back(Increment{std::move(keys.added), delta, LedgerTtl()});
    } else if (delta < 0) {
      increments.insert(increments.begin(), Increment{std::move(keys.events), -delta, LedgerTtl()});
    }
  }
  return increments;
}

namespace {

std::string PenaltyKey(const std::string& group, Seconds block_for, int64_t slot) {
  return group + ":b:" + std::to_string(block_for.count()) + ":" + std::to_string(slot);
}

// The end of the block a slot's key holds, if any.
std::optional<int64_t> EndOf(int64_t slot, int64_t width, uint64_t value) {
  const uint64_t strikes = value / KeySpace::kStrike;
  if (strikes == 0) return std::nullopt;
  const uint64_t offsets = value % KeySpace::kStrike;  // each strike's offset + 1
  const int64_t mean = static_cast<int64_t>((offsets + strikes - 1) / strikes) - 1;
  return slot * width + mean + width;
}

}  // namespace

KeySpace::PenaltyKeys KeySpace::Penalty(const std::string& group, Seconds block_for, int64_t t) {
  const int64_t slot = FloorDiv(t, block_for.count());
  return {PenaltyKey(group, block_for, slot - 1), PenaltyKey(group, block_for, slot)};
}

Increment KeySpace::Strike(const std::string& group, Seconds block_for, int64_t t) const {
  const int64_t b = block_for.count();
  const int64_t slot = FloorDiv(t, b);
  const uint64_t offset = static_cast<uint64_t>(t - slot * b);
  // Read until the end of the next slot, where the latest block starting in this one ends.
  return Increment{PenaltyKey(group, block_for, slot), static_cast<int64_t>(kStrike + offset + 1),
                   2 * block_for + settle_margin_};
}

std::optional<Instant> KeySpace::BlockedUntil(Seconds block_for, int64_t t, uint64_t previous,
                                              uint64_t current) {
  const int64_t b = block_for.count();
  const int64_t slot = FloorDiv(t, b);
  std::optional<int64_t> end;
  for (const auto& [s, value] : {std::pair{slot - 1, previous}, std::pair{slot, current}}) {
    const std::optional<int64_t> e = EndOf(s, b, value);
    if (e && *e > t && (!end || *e > *end)) end = e;
  }
  if (!end) return std::nullopt;
  return FromUnix(*end);
}

bool KeySpace::keeps_ledger() const {
  const int64_t top = ladder_.width(ladder_.levels() - 1).count();
  return top < kLedgerSpan.count() && kLedgerSpan.count() % top == 0;
}

}  // namespace hourglass
