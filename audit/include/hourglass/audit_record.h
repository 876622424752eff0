// One decision as `hourglass serve --audit-log` writes it and `hourglass audit` reads it back: a
// JSON object on one line, exact for any bytes of event and feature.
//
//   AuditRecord r = AuditRecordOf(check, decision, request_allowed);
//   std::string line = AuditLine(r);  // {"at":1764201600,"event":"signup",...}
//   Result<AuditRecord> back = ParseAuditLine(line);  // == r
//
// Line shape: at (Unix seconds), done (the second its answer was known, when later than at),
// event and feature (strings; event_hex/feature_hex instead when they are not UTF-8), hits, mode
// (admitted/attempts), allowed (the check's own decision), request_allowed (its request's: every
// binding check passed), binding, recorded (its hits stay counted), degraded, blocked (a penalty
// denied it), peek, and limits: per limit of its policy {max, window, and, when the store was read,
// count, count_min, exact}. A window is {"sliding": seconds}, {"fixed": seconds} or
// {"calendar": unit, "utc_offset": seconds | "time_zone": name}.
//
// Thread-safety: pure functions and values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/decision.h"
#include "hourglass/engine.h"
#include "hourglass/limit.h"

namespace hourglass {

struct AuditLimit {
  Limit limit;
  bool counted = false;  // the decision read this limit's count (not when the store failed)
  uint64_t count = 0;    // as LimitOutcome: the hits in the window, this one's if recorded
  uint64_t count_min = 0;
  bool exact = true;
  bool operator==(const AuditLimit&) const = default;
};

struct AuditRecord {
  int64_t at = 0;
  // The Unix second its answer was known: from `at` to `done` it was in flight, and may have
  // reached the store after decisions that began later. Below `at` (as unset) it means `at`.
  int64_t done = 0;
  std::string event;
  std::string feature;
  uint64_t hits = 1;
  CountingMode mode = CountingMode::kAdmitted;
  bool allowed = false;
  bool request_allowed = false;
  bool binding = true;
  bool recorded = false;
  bool degraded = false;
  bool blocked = false;
  bool peek = false;
  std::vector<AuditLimit> limits;
  bool operator==(const AuditRecord&) const = default;
  // Whether the client got through on this check's account: its request passed, or the check
  // does not bind it (shadow mode: its own decision).
  bool admitted() const { return allowed && (request_allowed || !binding); }
};

// The record of `check`, decided `decision` in a request decided `request_allowed` and answered
// at `answered` (done; not before the decision's instant).
AuditRecord AuditRecordOf(const Engine::CheckRequest& check, const Decision& decision,
                          bool request_allowed, Instant answered = {});

std::string AuditLine(const AuditRecord& record);

// Errors name what is wrong with the line (not JSON, a field missing or of the wrong type, a bad
// window), never echoing it.
Result<AuditRecord> ParseAuditLine(std::string_view line);

}  // namespace hourglass
