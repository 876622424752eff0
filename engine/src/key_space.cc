#include "hourglass/key_space.h"

namespace hourglass {

Seconds KeySpace::Ttl(size_t level) const {
  const Seconds reach =
      level + 1 < ladder_.levels() ? ladder_.width(level + 1) : ladder_.width(level);
  return retention_ + reach + settle_margin_;
}

std::vector<Increment> KeySpace::HitIncrements(const std::string& group, int64_t t,
                                               int64_t delta) const {
  std::vector<Increment> increments;
  increments.reserve(ladder_.levels() + 2);
  for (size_t level = 0; level < ladder_.levels(); ++level) {
    increments.push_back(
        Increment{BucketKey(group, ladder_.BucketAt(level, t)), delta, Ttl(level)});
  }
  if (keeps_ledger()) {  // see KeySpace::Ledger for the order
    LedgerKeys ledger = Ledger(group, FloorDiv(t, kLedgerSpan.count()));
    if (delta > 0) {
      increments.push_back(Increment{std::move(ledger.events), delta, LedgerTtl()});
      increments.push_back(Increment{std::move(ledger.added), delta, LedgerTtl()});
    } else if (delta < 0) {
      increments.insert(increments.begin(),
                        Increment{std::move(ledger.events), -delta, LedgerTtl()});
    }
  }
  return increments;
}

bool KeySpace::keeps_ledger() const {
  const int64_t top = ladder_.width(ladder_.levels() - 1).count();
  return top < kLedgerSpan.count() && kLedgerSpan.count() % top == 0;
}

}  // namespace hourglass
