// Where a check's policy comes from: limits given inline ("5/m" specs), or a policy file's entry
// for the event (with its per-feature overrides). An optional counting mode overrides either.
// The CLI and the services resolve every check's policy through it.
//
//   Result<PolicySource> source = PolicySource::FromFile("policies/example.yaml");
//   Result<Policy> policy = source->For("url_shorten", "203.0.113.7");
//
// Thread-safety: immutable after creation.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/limit.h"
#include "hourglass/policy_file.h"
#include "hourglass/status.h"

namespace hourglass {

class PolicySource {
 public:
  // No limits at all (empty() is true): hits are only recorded.
  PolicySource() = default;
  // Every spec as in ParseLimits ("2/s, 5/m" or one limit each), for every event.
  static Result<PolicySource> FromLimits(std::span<const std::string> specs,
                                         std::optional<CountingMode> mode = std::nullopt);
  // The file's entries; errors name the file and line.
  static Result<PolicySource> FromFile(const std::string& path,
                                       std::optional<CountingMode> mode = std::nullopt);

  bool empty() const { return !file_ && inline_.limits.empty(); }
  // kNotFound naming the known events when a policy file has no entry for `event`.
  Result<Policy> For(std::string_view event, std::string_view feature) const;
  // The policy and the feature to count (an IP event's feature is its network; inline limits
  // count features as given). kInvalidArgument when an IP event's feature is not an address.
  // With `carried` limits, as PolicyFile::Resolve (inline limits take none: kInvalidArgument).
  Result<Resolved> Resolve(std::string_view event, std::string_view feature,
                           std::span<const Limit> carried = {}) const;
  // Every limit against an engine keeping `retention` (PolicyFile::CheckWindows; inline limits
  // too): an error naming the first that could never be answered.
  Status CheckWindows(Seconds retention) const;
  // OK when checks of `event` have a policy (every event, with inline limits); kNotFound naming
  // the known events otherwise.
  Status HasEvent(std::string_view event) const;
  // The file's entries, or nullptr for inline limits (inline_policy()).
  const PolicyFile* file() const { return file_ ? &*file_ : nullptr; }
  const Policy& inline_policy() const { return inline_; }
  // Whether the policy file marks `event` shadow (decide and report, allow every hit).
  bool IsShadow(std::string_view event) const;
  // Whether the policy file lets `event`'s charges be settled after the fact (`settle: true`).
  bool Settles(std::string_view event) const;
  // One line per event, by name: "2/s, 5/m (admitted, fail open; overrides: 10.0.0.0/8: 100/s)";
  // inline limits are the event "*". For logs and for telling two versions apart.
  std::map<std::string, std::string> Summary() const;

 private:
  // The file's entry for `event`, or nullptr.
  const EventPolicy* EntryOf(std::string_view event) const;

  std::optional<PolicyFile> file_;
  Policy inline_;
  std::optional<CountingMode> mode_;
};

// What changed from `before` to `after`, a line per event added, removed or changed
// ("changed signup: 3/h (...) -> 5/h (...)"); empty when nothing did.
std::vector<std::string> PolicyChanges(const PolicySource& before, const PolicySource& after);

}  // namespace hourglass
