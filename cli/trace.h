// Trace files for `hourglass replay`: one hit per line.
//
// - hits:   "UNIX_SECONDS<TAB>EVENT<TAB>FEATURE[<TAB>COST]"; the feature is the third field
//           verbatim (spaces and all). Blank lines and lines starting with '#' are skipped.
// - apache: Apache combined log lines; time from "[17/May/2015:10:05:03 +0000]", feature = the
//           client address (first field), event = the caller's choice.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/status.h"

namespace hourglass::cli {

struct TraceHit {
  int64_t at = 0;  // Unix seconds
  std::string event;
  std::string feature;
  uint64_t cost = 1;
  int64_t line = 0;  // in the trace file, set by the reader
};

// nullopt for a line to skip (blank or comment); an error naming what is wrong otherwise.
Result<std::optional<TraceHit>> ParseHitsLine(std::string_view line);
Result<std::optional<TraceHit>> ParseApacheLine(std::string_view line, std::string_view event);

// The longest line a trace file may have: an event and a feature of kMaxFieldBytes each, and
// the time and cost.
constexpr size_t kMaxTraceLine = 2 * 65536 + 64;

// The next line of `in` without its '\n' into `line`; false at the end. A line longer than
// kMaxTraceLine is an error, found without reading the rest of it.
Result<bool> ReadBoundedLine(std::istream& in, std::string& line);

// A whole trace file, in time order (file order within a second).
struct Trace {
  std::vector<TraceHit> hits;
  int64_t out_of_order = 0;  // lines earlier than the line before them in the file
};
// `format` is "hits" or "apache" (whose lines get `event`). Errors name the file and the line.
Result<Trace> ReadTrace(const std::string& path, std::string_view format, std::string_view event);

}  // namespace hourglass::cli
