#include "until.h"

#include <fmt/format.h>

#include <algorithm>

#include "hourglass/json.h"
#include "hourglass/policy_file.h"
#include "render.h"

namespace hourglass::cli {
namespace {

std::string LimitName(const LimitOutcome& o) { return DescribeLimits({o.limit}); }

// "in 2292s", or "now".
std::string In(Seconds s) { return s.count() > 0 ? "in " + FormatDuration(s) : "now"; }

bool ExceedsAny(const Decision& d) {
  return std::any_of(d.limits.begin(), d.limits.end(),
                     [](const LimitOutcome& o) { return o.exceeded; });
}

// A denial that no limit makes: the policy is closed on a data loss the windows reach back to.
bool DeniedByLoss(const Decision& d) {
  return !d.allowed && d.degraded && !d.limits.empty() &&
         d.store_error->code() == ErrorCode::kDataLoss && !ExceedsAny(d);
}

}  // namespace

std::optional<size_t> BindingLimit(const Decision& d) {
  // A denial binds by the limits it exceeds, when it exceeds any (a denial closed on a data loss
  // or by a penalty may exceed none).
  const bool any_exceeded = ExceedsAny(d);
  if (DeniedByLoss(d)) return std::nullopt;  // the store's loss binds
  std::optional<size_t> binding;
  for (size_t i = 0; i < d.limits.size(); ++i) {
    if (!d.allowed && any_exceeded && !d.limits[i].exceeded) continue;
    if (!binding) {
      binding = i;
      continue;
    }
    const LimitOutcome &o = d.limits[i], &b = d.limits[*binding];
    if (!d.allowed) {
      // nullopt (never) binds before any time.
      const bool later = !o.retry_after ? b.retry_after.has_value()
                                        : b.retry_after && *o.retry_after > *b.retry_after;
      if (later) binding = i;
    } else if (o.remaining < b.remaining) {
      binding = i;
    }
  }
  return binding;
}

std::optional<Instant> FreeAt(const Decision& d) {
  if (d.degraded && d.limits.empty()) return std::nullopt;
  if (d.allowed) return d.at;
  if (!d.retry_after) return std::nullopt;
  return d.at + *d.retry_after;
}

std::string UntilText(const Decision& peek) {
  if (peek.degraded && peek.limits.empty()) {
    return fmt::format("a hit now: unknown, the store failed ({})\n", peek.store_error->ToString());
  }
  const std::optional<size_t> binding = BindingLimit(peek);
  const std::string binds =
      binding ? fmt::format(": {} binds", LimitName(peek.limits[*binding])) : std::string();
  std::string out;
  const std::optional<Instant> free = FreeAt(peek);
  if (peek.allowed) {
    out =
        fmt::format("a hit now: allowed{}\n",
                    binding ? fmt::format(", {} more fit under {}", peek.limits[*binding].remaining,
                                          LimitName(peek.limits[*binding]))
                            : std::string());
  } else if (!free) {
    out = fmt::format("a hit now: denied, never (its cost exceeds a limit){}\n", binds);
  } else if (peek.blocked_until && *free <= *peek.blocked_until) {
    out = fmt::format("a hit now: denied until {} ({}) by a penalty (block_for)\n",
                      FormatTime(*free), In(*free - peek.at));
  } else if (DeniedByLoss(peek)) {
    out = fmt::format(
        "a hit now: denied until {} ({}): the store lost counts its windows need, and the "
        "policy is closed on data loss\n",
        FormatTime(*free), In(*free - peek.at));
  } else {
    out = fmt::format("a hit now: denied until {} ({}){}\n", FormatTime(*free), In(*free - peek.at),
                      binds);
  }
  if (peek.degraded) out += fmt::format("  (degraded: {})\n", peek.store_error->message());
  size_t width = 0;
  for (const LimitOutcome& o : peek.limits) width = std::max(width, LimitName(o).size());
  for (size_t i = 0; i < peek.limits.size(); ++i) {
    const LimitOutcome& o = peek.limits[i];
    std::string line =
        fmt::format("  {:<{}} {:>8} of {:<8}", LimitName(o), width, o.count, o.limit.max_hits);
    if (o.exceeded) {
      line += o.retry_after ? fmt::format("  free at {}", FormatTime(peek.at + *o.retry_after))
                            : std::string("  never fits");
    }
    if (binding == i && !peek.allowed) line += "  binds";
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

nlohmann::json UntilJson(const Decision& peek) {
  const std::optional<size_t> binding = BindingLimit(peek);
  const std::optional<Instant> free = FreeAt(peek);
  return {{"allowed", peek.allowed},
          {"binding", binding ? nlohmann::json(LimitName(peek.limits[*binding])) : nullptr},
          {"free_at", free ? nlohmann::json(ToUnix(*free)) : nullptr},
          {"decision", DecisionJson(peek)}};
}

}  // namespace hourglass::cli
