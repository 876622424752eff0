#include "hourglass/envoy_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "hourglass/ratelimit_headers.h"

namespace hourglass {
namespace {

using DescriptorStatus = RateLimitResponse::DescriptorStatus;
using RateLimitDescriptor = envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;

// The override's unit: the wire numbers of SECOND to DAY, and 7 (WEEK, which the response's unit
// enum has and the override's lacks).
Result<EnvoyUnit> OverrideUnit(int wire, size_t descriptor) {
  if (wire >= 1 && wire <= 7) return static_cast<EnvoyUnit>(wire);
  return InvalidArgument(
      fmt::format("descriptor {}: limit override unit {} is unknown: use SECOND, MINUTE, HOUR, "
                  "DAY, WEEK, MONTH or YEAR",
                  descriptor, wire));
}

std::vector<EnvoyEntry> EntriesOf(const RateLimitDescriptor& d) {
  std::vector<EnvoyEntry> entries;
  entries.reserve(static_cast<size_t>(d.entries_size()));
  for (const auto& e : d.entries()) entries.push_back(EnvoyEntry{e.key(), e.value()});
  return entries;
}

// Hits a descriptor counts: its own hits_addend when set (0 included), else the request's
// (0 means 1).
uint64_t HitsOf(const RateLimitDescriptor& d, const RateLimitRequest& request) {
  if (d.has_hits_addend()) return d.hits_addend().value();
  return request.hits_addend() == 0 ? 1 : request.hits_addend();
}

uint32_t Clamp32(uint64_t n) {
  return static_cast<uint32_t>(std::min<uint64_t>(n, std::numeric_limits<uint32_t>::max()));
}

// When the next hit of the descriptor fits, never too early: a denial's retry time (nullopt when
// its hits can never fit: no reset to wait for); for a fixed window, the window's end; for a
// sliding window with room left, now; with none, the window's length (the hits in it, this one
// included, have left by then).
std::optional<Seconds> UntilWindowReset(const Decision& d, size_t k) {
  if (d.limits.empty()) return d.retry_after.value_or(Seconds{0});  // degraded
  const LimitOutcome& o = d.limits[k];
  if (const std::optional<Instant> next = o.limit.window.NextStart(d.at)) {
    return std::chrono::ceil<Seconds>(*next - d.at);
  }
  if (!d.allowed) return d.retry_after;
  return o.remaining > 0 ? Seconds{0} : o.limit.window.length();
}

// UntilWindowReset, or the end of a penalty (block_for) when that comes later.
std::optional<Seconds> UntilReset(const Decision& d, size_t k) {
  std::optional<Seconds> until = UntilWindowReset(d, k);
  if (until && d.blocked_until && *d.blocked_until > d.at) {
    until = std::max(*until, std::chrono::ceil<Seconds>(*d.blocked_until - d.at));
  }
  return until;
}

// Drops from `limits` (and `engine`, its twin) every limit named in `replaced`.
void DropReplaced(const std::set<std::string, std::less<>>& replaced, auto& limits,
                  std::vector<Limit>& engine) {
  for (size_t i = limits.size(); i-- > 0;) {
    if (limits[i].name.empty() || !replaced.contains(limits[i].name)) continue;
    limits.erase(limits.begin() + static_cast<std::ptrdiff_t>(i));
    engine.erase(engine.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void AddHeader(RateLimitResponse& response, std::string key, std::string value) {
  envoy::config::core::v3::HeaderValue* h = response.add_response_headers_to_add();
  h->set_key(std::move(key));
  h->set_value(std::move(value));
}

}  // namespace

Result<EnvoyRequest> EnvoyRequest::Make(const EnvoyConfig& config, const RateLimitRequest& request,
                                        const EnvoyOptions& options) {
  if (request.domain().empty()) return InvalidArgument("rate limit domain must not be empty");
  if (request.descriptors().empty()) {
    return InvalidArgument("rate limit descriptor list must not be empty");
  }
  if (static_cast<size_t>(request.descriptors_size()) > options.max_descriptors) {
    return InvalidArgument(fmt::format("{} descriptors in one request: at most {}",
                                       request.descriptors_size(), options.max_descriptors));
  }
  EnvoyRequest r;
  r.domain_ = request.domain();
  r.options_ = options;
  std::vector<OwnedCheck> candidates;  // per slot with a limit, before `replaces`
  std::set<std::string, std::less<>> replaced;
  for (const RateLimitDescriptor& d : request.descriptors()) {
    const size_t i = r.slots_.size();
    Slot& slot = r.slots_.emplace_back();
    slot.hits = HitsOf(d, request);
    const std::vector<EnvoyEntry> entries = EntriesOf(d);
    std::vector<Limit> limits;  // the engine's, one per slot.limits
    OwnedCheck check;
    Seconds block_for{0};  // the matched descriptor's penalty
    if (d.has_limit() && config.HasDomain(r.domain_)) {
      Result<EnvoyUnit> unit = OverrideUnit(d.limit().unit(), i);
      if (!unit.ok()) return unit.error();
      slot.limits.push_back(SlotLimit{d.limit().requests_per_unit(), *unit, ""});
      slot.metric = "override";
      limits.push_back(Limit{*EnvoyUnitWindow(*unit), d.limit().requests_per_unit()});
      check.event = r.domain_ + "\x1foverride";  // apart from every configured descriptor
      check.feature = EnvoyFeature(entries);
    } else if (std::optional<EnvoyMatch> m = config.Match(r.domain_, entries)) {
      slot.shadow = m->shadow_mode;
      slot.metric = m->event;
      for (const EnvoyRateLimit& rl : m->rate_limits) {
        slot.unlimited = slot.unlimited || rl.unlimited;
        replaced.insert(rl.replaces.begin(), rl.replaces.end());
        if (!rl.limit) continue;
        slot.limits.push_back(SlotLimit{rl.requests_per_unit, rl.unit, rl.name});
        limits.push_back(*rl.limit);
      }
      check.event = std::move(m->event);
      check.feature = std::move(m->feature);
      block_for = m->block_for;
    }
    if (limits.empty()) continue;  // no limit, or unlimited: OK without a check
    check.policy = Policy{std::move(limits), options.mode, options.on_store_failure};
    check.policy.block_for = block_for;
    check.hits = slot.hits == 0 ? 1 : slot.hits;  // 0: would one hit fit?
    check.record = slot.hits != 0;
    check.binding = !slot.shadow;
    check.label = "descriptor " + std::to_string(i);
    slot.check = candidates.size();
    candidates.push_back(std::move(check));
  }
  for (Slot& slot : r.slots_) {
    if (!slot.check) continue;
    OwnedCheck& check = candidates[*slot.check];
    DropReplaced(replaced, slot.limits, check.policy.limits);
    if (slot.limits.empty()) {
      slot = Slot{};  // every limit replaced by another descriptor's: as if it had none
      continue;
    }
    slot.check = r.checks_.size();
    r.checks_.push_back(std::move(check));
  }
  return r;
}

DescriptorStatus EnvoyRequest::StatusOf(const Slot& s, const Decision& d, bool& over_limit) const {
  DescriptorStatus status;
  over_limit = !d.allowed && !s.shadow;
  status.set_code(over_limit ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
  const size_t k = MostConstrainingLimit(d);
  const SlotLimit& shown = s.limits[std::min(k, s.limits.size() - 1)];
  RateLimitResponse::RateLimit* limit = status.mutable_current_limit();
  limit->set_requests_per_unit(shown.requests_per_unit);
  limit->set_unit(static_cast<RateLimitResponse::RateLimit::Unit>(shown.unit));
  limit->set_name(shown.name);
  if (!d.limits.empty()) status.set_limit_remaining(Clamp32(d.limits[k].remaining));
  if (const std::optional<Seconds> until = UntilReset(d, k)) {
    status.mutable_duration_until_reset()->set_seconds(until->count());
  }
  return status;
}

Result<RateLimitResponse> EnvoyRequest::Answer(const Result<Engine::RequestDecision>& decided,
                                               ServiceMetrics* metrics) const {
  if (!decided.ok()) return decided.error();
  const std::vector<Decision>& decisions = decided->decisions;
  RateLimitResponse response;
  bool denied = false;
  Decision headers;  // every checked limit, for the RateLimit fields
  headers.allowed = true;
  for (const Slot& s : slots_) {
    DescriptorStatus* status = response.add_statuses();
    if (!s.check) {
      status->set_code(RateLimitResponse::OK);
      if (s.unlimited) status->set_limit_remaining(std::numeric_limits<uint32_t>::max());
      continue;
    }
    const Decision& d = decisions[*s.check];
    if (metrics != nullptr) metrics->CountRateLimit(domain_, s.metric, s.hits, d, s.shadow);
    if (d.unread) {
      // Another descriptor denied the request first: this one's counts were not read. Without a
      // current limit, Envoy's rate limit headers pass over it.
      status->set_code(RateLimitResponse::OK);
      continue;
    }
    bool over = false;
    *status = StatusOf(s, d, over);
    denied = denied || over;
    if (!s.shadow) {
      headers.limits.insert(headers.limits.end(), d.limits.begin(), d.limits.end());
      headers.allowed = headers.allowed && d.allowed;
    }
  }
  response.set_overall_code(denied ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
  if (options_.response_headers && !headers.limits.empty()) {
    headers.retry_after = Seconds{0};
    for (const LimitOutcome& o : headers.limits) {
      if (!o.exceeded) continue;
      headers.retry_after = o.retry_after && headers.retry_after
                                ? std::optional(std::max(*o.retry_after, *headers.retry_after))
                                : std::nullopt;
    }
    const RateLimitFields fields = RateLimitFieldsFor(headers);
    AddHeader(response, "RateLimit-Policy", fields.policy);
    AddHeader(response, "RateLimit", fields.current);
    if (fields.retry_after) AddHeader(response, "Retry-After", *fields.retry_after);
  }
  return response;
}

}  // namespace hourglass
