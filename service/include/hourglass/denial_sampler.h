// A log line per denial would let a flood write the disk full; this samples them: at most one
// line per event per `every` seconds, naming the denied feature of that moment and how many
// denials of the event it stands for. Denials a line did not stand for yet (the rest of a burst)
// are told by Flush, which the caller runs every `every`: so each denial is in a line within
// two periods, even when no denial follows.
//
//   DenialSampler sampler(std::chrono::seconds{1});
//   if (std::optional<std::string> line = sampler.Offer("signup", "ann@example.com", now)) {
//     log->info("{}", *line);
//   }
//   for (const std::string& line : sampler.Flush(now)) log->info("{}", line);  // every second
//
// Features appear escaped (control bytes, quotes and backslashes as \xNN), cut at 128 bytes: a
// hostile feature cannot forge or break a line.
//
// Thread-safety: Offer may be called from many threads at once.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/clock.h"

namespace hourglass {

class DenialSampler {
 public:
  explicit DenialSampler(std::chrono::seconds every) : every_(every) {}

  // A denial of `feature` of `event` at `at`: the line to log, or nullopt while the event's
  // last line is younger than `every`.
  std::optional<std::string> Offer(std::string_view event, std::string_view feature, Instant at);
  // The lines of the events with denials no line stood for yet whose last line is at least
  // `every` old at `now`, each naming the last denied feature; those denials are then told.
  std::vector<std::string> Flush(Instant now);

 private:
  struct Seen {
    Instant logged_at{};
    uint64_t since = 0;        // denials since that line
    std::string last_feature;  // the latest of them, raw, at most kPrintableMax + 1 bytes
  };
  static std::string Line(std::string_view event, std::string_view printable_feature,
                          uint64_t stands_for);
  std::chrono::seconds every_;
  std::mutex mu_;
  std::map<std::string, Seen, std::less<>> events_;  // guarded by mu_
};

// `text` with bytes below 0x20, 0x7f and above, '"' and '\\' as \xNN, cut at `max` bytes ("...").
constexpr size_t kPrintableMax = 128;
std::string Printable(std::string_view text, size_t max = kPrintableMax);

}  // namespace hourglass
