// One ShouldRateLimit request of Envoy's rate limit service, from the request to the checks the
// engine decides and back to the response.
//
//   Result<EnvoyRequest> r = EnvoyRequest::Make(config, request, options);  // or INVALID_ARGUMENT
//   Result<Engine::RequestDecision> decided = engine.CheckAll(RequestsOf(r->checks()));
//   Result<RateLimitResponse> response = r->Answer(decided, metrics);
//
// Per descriptor, in request order: its limit is the descriptor's `limit` override if set (when
// the domain is known), else the configuration's match (all its limits, `rate_limits`, decided
// as one check); a limit named in a matched limit's `replaces` is dropped; `unlimited` and no limit
// at all answer OK. Hits: the descriptor's `hits_addend` when set (0 checks without counting: would
// one hit fit?), else the request's (0 means 1). All descriptors must pass, decided by one
// Engine::CheckAll: a refused descriptor refuses the request before anything is counted, and in
// admitted mode a denied request counts against none of them. A descriptor in `shadow_mode` that is
// over its limit answers OK and is counted as shadow_mode. A store failure answers per the failure
// mode.
//
// Thread-safety: Make and Answer are const on their inputs; one EnvoyRequest per request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.pb.h"
#include "hourglass/check_batcher.h"
#include "hourglass/engine.h"
#include "hourglass/envoy_config.h"
#include "hourglass/service_metrics.h"

namespace hourglass {

using RateLimitRequest = envoy::service::ratelimit::v3::RateLimitRequest;
using RateLimitResponse = envoy::service::ratelimit::v3::RateLimitResponse;

struct EnvoyOptions {
  CountingMode mode = CountingMode::kAdmitted;
  FailureMode on_store_failure = FailureMode::kFailOpen;  // Envoy's own default is to let through
  bool response_headers = false;  // RateLimit-Policy, RateLimit and Retry-After to add
  size_t max_descriptors = 64;    // more is INVALID_ARGUMENT
};

class EnvoyRequest {
 public:
  static Result<EnvoyRequest> Make(const EnvoyConfig& config, const RateLimitRequest& request,
                                   const EnvoyOptions& options);

  // The checks to decide, in order (descriptors without a limit have none).
  const std::vector<OwnedCheck>& checks() const { return checks_; }
  // The response for the request's decision (Engine::CheckAll of checks()), counted into
  // `metrics` (may be null); the error (INVALID_ARGUMENT) that refused it, e.g. an over-long
  // value, naming the descriptor.
  Result<RateLimitResponse> Answer(const Result<Engine::RequestDecision>& decided,
                                   ServiceMetrics* metrics) const;

 private:
  // One limit of a descriptor, as the response names it.
  struct SlotLimit {
    uint32_t requests_per_unit = 0;
    EnvoyUnit unit = EnvoyUnit::kUnknown;
    std::string name;
  };
  // One descriptor of the request.
  struct Slot {
    std::optional<size_t> check;  // into checks_, when the descriptor has a limit to check
    bool unlimited = false;
    bool shadow = false;
    std::vector<SlotLimit> limits;  // in the order of its check's policy
    std::string metric;  // the descriptor's name in metrics: its configured path, or "override"
    uint64_t hits = 0;   // hits counted; 0 for a check only
  };
  EnvoyRequest() = default;
  // The status of slot `s`, given its decision; over_limit says whether it denies the request.
  // With several limits, the status is the most constraining one's, the limit the RateLimit
  // field names (MostConstrainingLimit): of those exceeded, the one whose hits fit last;
  // otherwise the one with the least remaining.
  RateLimitResponse::DescriptorStatus StatusOf(const Slot& s, const Decision& d,
                                               bool& over_limit) const;

  std::string domain_;
  EnvoyOptions options_;
  std::vector<Slot> slots_;
  std::vector<OwnedCheck> checks_;
};

}  // namespace hourglass
