// A denial's answer, rendered once: the JSON body (AppendDecisionJson) and the RateLimit fields
// (RateLimitFieldsFor) of a denied decision, kept for the next equal decision. A client denied
// again within the same second is given the same decision (the blocked-client cache's), and
// rendering it would otherwise be a large part of what answering it costs.
//
//   DenialAnswers answers(4096);
//   if (DenialAnswers::Keeps(d)) {
//     DenialAnswers::Answer a = answers.Render(d);  // a.json, a.fields
//   }
//
// Direct-mapped: a decision's slot is chosen by a hash of its fields; an equal decision (every
// field, operator==) finds its answer there, any other renders its own and takes the slot. So an
// answer given from the memo is byte for byte what rendering the decision gives. At most `slots`
// answers are kept (about 1.5 KiB each).
//
// Thread-safety: Render may be called from many threads at once (a lock per slot).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "hourglass/decision.h"
#include "hourglass/ratelimit_headers.h"

namespace hourglass {

class DenialAnswers {
 public:
  struct Answer {
    std::string json;  // AppendDecisionJson(d, /*shadow_denied=*/false, json)
    RateLimitFields fields;
  };

  // `slots` >= 1.
  explicit DenialAnswers(size_t slots = 4096);

  // Whether Render keeps `d`'s answer: a denial decided on counts (not degraded, not local).
  // Others are rendered by the caller each time.
  static bool Keeps(const Decision& d);
  // `d`'s answer; `d` must be one Keeps() accepts.
  Answer Render(const Decision& d);

 private:
  struct Slot {
    std::mutex mu;
    std::optional<Decision> decision;  // guarded by mu; the decision `answer` renders
    Answer answer;                     // guarded by mu
  };
  static size_t HashOf(const Decision& d);

  size_t slots_;
  std::unique_ptr<Slot[]> slot_;
};

}  // namespace hourglass
