#include "hourglass/ratelimit_headers.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <iterator>

namespace hourglass {
namespace {

// Appends a structured-field string: the spec text, whose characters need no escaping but '"'
// and '\'.
void AppendSfString(const std::string& text, std::string& out) {
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

}  // namespace

size_t MostConstrainingLimit(const Decision& d) {
  size_t best = 0;
  for (size_t i = 1; i < d.limits.size(); ++i) {
    const LimitOutcome& a = d.limits[i];
    const LimitOutcome& b = d.limits[best];
    if (!d.allowed) {
      // Never (nullopt) frees up last.
      const bool later = a.exceeded && (!b.exceeded || !a.retry_after ||
                                        (b.retry_after && *a.retry_after > *b.retry_after));
      if (later) best = i;
    } else if (a.remaining < b.remaining) {
      best = i;
    }
  }
  return best;
}

size_t BindingDecision(std::span<const Decision> decisions) {
  std::optional<size_t> binding;
  for (size_t i = 0; i < decisions.size(); ++i) {
    const Decision& d = decisions[i];
    if (d.allowed) continue;
    const std::optional<Seconds>& best =
        binding ? decisions[*binding].retry_after : std::optional<Seconds>(Seconds{-1});
    const bool later = best && (!d.retry_after || *d.retry_after > *best);  // never is latest
    if (later) binding = i;
  }
  return binding.value_or(0);
}

RateLimitFields RateLimitFieldsFor(const Decision& d) {
  RateLimitFields fields;
  for (const LimitOutcome& o : d.limits) {
    if (!fields.policy.empty()) fields.policy += ", ";
    AppendSfString(o.limit.ToString(), fields.policy);
    fmt::format_to(std::back_inserter(fields.policy), FMT_COMPILE(";q={};w={}"), o.limit.max_hits,
                   o.limit.window.length().count());
  }
  if (!d.limits.empty()) {
    const LimitOutcome& o = d.limits[MostConstrainingLimit(d)];
    const bool never = !d.allowed && o.exceeded && !o.retry_after;  // a ban, or too costly
    const bool waits = !d.allowed && o.exceeded && o.retry_after.has_value();
    const int64_t t = waits ? o.retry_after->count() : o.limit.window.length().count();
    AppendSfString(o.limit.ToString(), fields.current);
    auto out = std::back_inserter(fields.current);
    if (never) {
      fmt::format_to(out, FMT_COMPILE(";r={}"), o.remaining);
    } else {
      fmt::format_to(out, FMT_COMPILE(";r={};t={}"), o.remaining, t);
    }
  }
  if (!d.allowed && d.retry_after) fields.retry_after = std::to_string(d.retry_after->count());
  return fields;
}

}  // namespace hourglass
