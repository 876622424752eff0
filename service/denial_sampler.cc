#include "hourglass/denial_sampler.h"

#include <fmt/format.h>

namespace hourglass {

std::string Printable(std::string_view text, size_t max) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

std::optional<std::string> DenialSampler::Offer(std::string_view event, std::string_view feature,
                                                Instant at) {
  uint64_t stands_for = 0;
  {
    std::lock_guard lock(mu_);
    auto it = events_.find(event);
    if (it == events_.end()) it = events_.emplace(std::string(event), Seen{}).first;
    Seen& seen = it->second;
    ++seen.since;
    if (seen.logged_at != Instant{} && at - seen.logged_at < every_) {
      // Kept as it came (one byte past Printable's cut, so that it still shows the cut), and
      // made printable only if a line names it: most are replaced before any line does.
      seen.last_feature.assign(feature.substr(0, kPrintableMax + 1));
      return std::nullopt;
    }
    stands_for = seen.since;
    seen = Seen{at, 0, {}};
  }
  return Line(event, Printable(feature), stands_for);
}

std::vector<std::string> DenialSampler::Flush(Instant now) {
  std::vector<std::string> lines;
  std::lock_guard lock(mu_);
  for (auto& [event, seen] : events_) {
    if (seen.since == 0 || now - seen.logged_at < every_) continue;
    lines.push_back(Line(event, Printable(seen.last_feature), seen.since));
    seen = Seen{now, 0, {}};
  }
  return lines;
}

std::string DenialSampler::Line(std::string_view event, std::string_view printable_feature,
                                uint64_t stands_for) {
  return fmt::format("denied: {} \"{}\" ({} denial{} of {} since the last such line)",
                     Printable(event), printable_feature, stands_for, stands_for == 1 ? "" : "s",
                     Printable(event));
}

}  // namespace hourglass
