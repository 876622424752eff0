// Read-only views an operator asks a running service for (admin calls, answered in JSON):
//
//   GET /v1/top?event=E&window=5m&by=denied&n=20   who is denied (or hit) most here, recently
//   GET /v1/policy                                  the policy in force
//
// Thread-safety: pure functions over thread-safe arguments.
#pragma once

#include <string>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/http_message.h"
#include "hourglass/policy_source.h"
#include "hourglass/recent_top.h"
#include "hourglass/status.h"

namespace hourglass {

// The JSON of GET /v1/top for the query `params`: event (required, known to `policies`), window
// (whole minutes, 1m to 15m, default 5m: the current minute and the ones before it), by (denied,
// the default, or hits), n (1 to 1000, default 20):
//   {"event","by","window","from","to","total","bound","capacity","windows":[seconds...],
//    "features":[{"feature","estimate","error","truncated","last_decision":{"allowed","at"}}]}
// kInvalidArgument naming the bad parameter; kNotFound for an event the policy lacks.
Result<std::string> TopView(const RecentTop& top, const PolicySource& policies,
                            const std::vector<QueryParam>& params, Instant now);

// The JSON of GET /v1/policy: {"file": path or null, "events": {name: {"limits": [specs],
// "mode", "on_store_failure", "shadow", "feature": "any"|"ip", "overrides": {key: [specs]}}}};
// inline limits are the event "*".
std::string PolicyView(const PolicySource& policies, const std::string& path);

}  // namespace hourglass
