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

// The sum of every sample of metric `name` whose labels contain `label` (e.g. `store="redis"`);
// -1 when there is none.
inline double SampleSum(const std::string& text, const std::string& name,
                        const std::string& label) {
  std::stringstream in(text);
  std::string line;
  double sum = -1;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    const size_t close = line.find("} ");
    if (close == std::string::npos || line.substr(0, close).find(label) == std::string::npos) {
      continue;
    }
    sum = (sum < 0 ? 0 : sum) + std::stod(line.substr(close + 2));
  }
  return sum;
}

}  // namespace hourglass::testing
