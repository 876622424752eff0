// /v1/top's summaries kept across a restart of the service: the last minutes' Space-Saving
// summaries of every event written to a file (on stop and every minute), read back at start, so
// `hourglass top` still names who was limited before the restart.
//
//   SaveTopState(top, "/var/lib/hourglass/top.json");
//   Status s = LoadTopState(top, "/var/lib/hourglass/top.json", clock.Now());
//
// The file is JSON, written whole to a temporary file beside it and renamed over it: a reader
// never sees half of one. Features are kept as the summaries hold them (at most kMaxTopKey bytes).
//
// Thread-safety: as RecentTop's Save and Restore.
#pragma once

#include <string>

#include "hourglass/clock.h"
#include "hourglass/recent_top.h"
#include "hourglass/status.h"

namespace hourglass {

// kInvalidArgument naming the file when it cannot be written.
Status SaveTopState(const RecentTop& top, const std::string& path);

// kNotFound when there is no file; kInvalidArgument naming the file when it is not one this
// wrote. Minutes older than RecentTop::kMinutes before `now` are left out.
Status LoadTopState(RecentTop& top, const std::string& path, Instant now);

}  // namespace hourglass
