#include "hourglass/denial_answers.h"

#include <cstdint>

#include "hourglass/json.h"

namespace hourglass {
namespace {

// Mixes `v` into `h` (the boost::hash_combine step, 64-bit).
void Mix(uint64_t& h, uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 12) + (h >> 4); }

uint64_t SecondsOr(const std::optional<Seconds>& s, uint64_t none) {
  return s ? static_cast<uint64_t>(s->count()) : none;
}

}  // namespace

DenialAnswers::DenialAnswers(size_t slots)
    : slots_(slots == 0 ? 1 : slots), slot_(std::make_unique<Slot[]>(slots_)) {}

bool DenialAnswers::Keeps(const Decision& d) { return !d.allowed && !d.degraded && !d.local; }

size_t DenialAnswers::HashOf(const Decision& d) {
  // What tells one client's denial from another's: the instant, the counts and the waits. Equal
  // decisions hash equal; unequal ones that collide are told apart by operator==.
  uint64_t h = static_cast<uint64_t>(d.at.time_since_epoch().count());
  Mix(h, SecondsOr(d.retry_after, ~uint64_t{0}));
  Mix(h, d.recorded);
  Mix(h, d.blocked_until ? static_cast<uint64_t>(d.blocked_until->time_since_epoch().count()) : 0);
  Mix(h, d.cost.blocked_hits);
  for (const LimitOutcome& o : d.limits) {
    Mix(h, o.count);
    Mix(h, o.limit.max_hits);
    Mix(h, static_cast<uint64_t>(o.limit.window.length().count()));
    Mix(h, SecondsOr(o.retry_after, ~uint64_t{0}));
  }
  return static_cast<size_t>(h);
}

DenialAnswers::Answer DenialAnswers::Render(const Decision& d) {
  Slot& slot = slot_[HashOf(d) % slots_];
  {
    std::lock_guard lock(slot.mu);
    if (slot.decision == d) return slot.answer;
  }
  Answer answer;
  AppendDecisionJson(d, /*shadow_denied=*/false, answer.json);
  answer.fields = RateLimitFieldsFor(d);
  std::lock_guard lock(slot.mu);
  slot.decision = d;
  slot.answer = answer;
  return answer;
}

}  // namespace hourglass
