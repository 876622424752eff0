// "Who is blocked, and until when": what a hit now would get under an event's policy (a peek,
// Engine::Peek), told for `inspect`, `count` and `check --peek`: each limit's count of its
// maximum, the limit that binds, and the instant the client is free again.
//
//   const Decision peek = *engine.Peek("signup", "ann", policy);
//   Print(UntilText(peek));
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hourglass/clock.h"
#include "hourglass/decision.h"

namespace hourglass::cli {

// The index in d.limits of the limit that binds: when denied, the exceeded one freeing last (one
// that can never fit first); when allowed, the one with the least room left. nullopt without
// limits, or for a degraded denial that exceeds none (closed on a data loss: the loss binds).
std::optional<size_t> BindingLimit(const Decision& d);

// When a hit would fit again: d.at when allowed, d.at + retry_after when denied (a penalty's end
// included); nullopt when it never can (its cost exceeds a limit) or the store failed.
std::optional<Instant> FreeAt(const Decision& d);

// Lines such as
//   a hit now: denied until 2026-11-27T02:10:00Z (in 2292s): 3/h binds
//     3/h          3 of 3      free at 2026-11-27T02:10:00Z  binds
//     10/d         3 of 10
std::string UntilText(const Decision& peek);

// {"allowed":false,"binding":"3/h","free_at":1800000000,"decision":{...DecisionJson...}};
// binding and free_at are null when there is none.
nlohmann::json UntilJson(const Decision& peek);

}  // namespace hourglass::cli
