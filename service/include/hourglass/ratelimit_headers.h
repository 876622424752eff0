// The RateLimit-Policy and RateLimit response fields of draft-ietf-httpapi-ratelimit-headers-10,
// and Retry-After, for one decision.
//
//   RateLimit-Policy: "2/s";q=2;w=1, "5/m";q=5;w=60
//   RateLimit: "5/m";r=0;t=42
//   Retry-After: 42
//
// One policy item per limit, named by its spec. RateLimit names the most constraining limit: on
// a denial the exceeded one that frees up last, otherwise the one with the least remaining; `t` is
// never earlier than the truth (the retry time on a denial, else the window's length), and left
// out when the request can never fit (a banned feature, a cost above the limit): no wait helps.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "hourglass/decision.h"

namespace hourglass {

struct RateLimitFields {
  std::string policy;                      // RateLimit-Policy; empty when there are no limits
  std::string current;                     // RateLimit; empty when there are no limits
  std::optional<std::string> retry_after;  // whole seconds, on a denial that can ever fit
};

RateLimitFields RateLimitFieldsFor(const Decision& decision);
// The index of the limit RateLimit names (0 when there is none): what Envoy's status reports too.
size_t MostConstrainingLimit(const Decision& decision);
// The decision whose fields a list of checks answers with (0 for an empty list): the denied one
// that frees up last (one that never fits before all), so that the list's Retry-After is when
// every denied check fits and its RateLimit names the limit that binds; else the first.
size_t BindingDecision(std::span<const Decision> decisions);

}  // namespace hourglass
