// Reading one sample back from the Prometheus text exposition format, for tests of /metrics.
#pragma once

#include <sstream>
#include <string>

namespace hourglass::testing {

// The value of the sample `series` (a name, with its labels as rendered, e.g.
// `hourglass_checks_total{event="e",result="allowed"}`) in `text`, or -1 when it is absent.
inline double Sample(const std::string& text, const std::string& series) {
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

}  // namespace hourglass::testing
