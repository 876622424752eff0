// Fuzzes both trace formats (hits and apache) and the bounded line reader: every line parses or
// is refused with an error, and a parsed hit keeps the bounds the replay relies on.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "hourglass/clock.h"
#include "trace.h"

namespace {

void CheckHit(const hourglass::Result<std::optional<hourglass::cli::TraceHit>>& hit) {
  if (!hit.ok()) {
    FUZZ_CHECK(!hit.error().message().empty());
    return;
  }
  if (!hit->has_value()) return;
  FUZZ_CHECK(!(*hit)->event.empty());
  FUZZ_CHECK((*hit)->cost >= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass::cli;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  std::string line;
  size_t lines = 0;
  for (;;) {
    hourglass::Result<bool> more = ReadBoundedLine(in, line);
    if (!more.ok() || !*more) break;
    FUZZ_CHECK(line.size() <= kMaxTraceLine);
    FUZZ_CHECK(++lines <= size + 1);
    CheckHit(ParseHitsLine(line));
    CheckHit(ParseApacheLine(line, "fetch"));
  }
  return 0;
}
