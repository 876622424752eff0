// Recomputes decisions from their audit records (AuditRecord) with an exact log of the hits they
// left counted, and reports per event what the limiter got wrong, as the accuracy benchmark
// judges a limiter, from production's own decisions:
//
// - over-admissions: a client let through though a window of the check could not hold its hits,
//   whatever the order of the other decisions of its second;
// - needless denials: a check its own counts denied (the store answered, no penalty) though every
//   window could hold its hits even after every other hit of its second;
// - count errors: a count the decision reported that no order of its second's hits makes true;
//   the largest such distance too.
//
// Decisions of one second, from several services or racing in one, have no order between them,
// nor have decisions in flight together: one stamped at second t and answered (done) at t + 1 may
// reach the store after a decision stamped t + 1. Those whose judgement depends on that order are
// counted as order-dependent, not as errors. Degraded decisions (the store failed or lost
// counts) are counted apart and not judged. The log knows
// only the hits of the records it is given: give it every service's records of the same events,
// and no reset, settlement or CLI hit happened meanwhile.
//
//   Auditor auditor;
//   for (AuditRecord& r : records) auditor.Add(std::move(r));
//   AuditReport report = auditor.Report();
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hourglass/audit_record.h"

namespace hourglass {

struct AuditRow {
  uint64_t decisions = 0;
  uint64_t admitted = 0;
  uint64_t denied = 0;
  uint64_t over_admissions = 0;
  uint64_t needless_denials = 0;
  uint64_t count_errors = 0;
  uint64_t count_error_max = 0;
  uint64_t degraded = 0;
  uint64_t order_dependent = 0;
  uint64_t errors() const { return over_admissions + needless_denials + count_errors; }
  AuditRow& operator+=(const AuditRow& o);
  bool operator==(const AuditRow&) const = default;
};

struct AuditReport {
  std::map<std::string, AuditRow> events;  // by event (raw bytes)
  AuditRow total;
  uint64_t features = 0;  // distinct event+features
};

class Auditor {
 public:
  void Add(AuditRecord record);
  AuditReport Report() const;

 private:
  std::vector<AuditRecord> records_;
};

}  // namespace hourglass
