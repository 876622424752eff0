#include "hourglass/policy_source.h"

#include <fmt/format.h>

namespace hourglass {

Result<PolicySource> PolicySource::FromLimits(std::span<const std::string> specs,
                                              std::optional<CountingMode> mode) {
  PolicySource source;
  source.mode_ = mode;
  for (const std::string& spec : specs) {
    Result<std::vector<Limit>> parsed = ParseLimits(spec);
    if (!parsed.ok()) return parsed.error();
    source.inline_.limits.insert(source.inline_.limits.end(), parsed->begin(), parsed->end());
  }
  return source;
}

Result<PolicySource> PolicySource::FromFile(const std::string& path,
                                            std::optional<CountingMode> mode) {
  Result<PolicyFile> file = PolicyFile::Load(path);
  if (!file.ok()) return file.error();
  PolicySource source;
  source.mode_ = mode;
  source.file_ = std::move(*file);
  return source;
}

Result<Policy> PolicySource::For(std::string_view event, std::string_view feature) const {
  Result<Resolved> resolved = Resolve(event, feature);
  if (!resolved.ok()) return resolved.error();
  return std::move(resolved->policy);
}

Result<Resolved> PolicySource::Resolve(std::string_view event, std::string_view feature,
                                       std::span<const Limit> carried) const {
  if (!file_ && !carried.empty()) {
    return InvalidArgument(
        "limits carried by a request need a policy file whose event allows them "
        "(request_limits)");
  }
  Result<Resolved> resolved = file_ ? file_->Resolve(event, feature, carried)
                                    : Result<Resolved>(Resolved{inline_, std::string(feature)});
  if (resolved.ok() && mode_) resolved->policy.mode = *mode_;
  return resolved;
}

Status PolicySource::CheckWindows(Seconds retention) const {
  if (file_) return file_->CheckWindows(retention);
  return ValidateLimits(inline_.limits, retention);
}

Status PolicySource::HasEvent(std::string_view event) const {
  if (!file_ || file_->events().contains(std::string(event))) return {};
  return file_->Resolve(event, "").error();
}

bool PolicySource::IsShadow(std::string_view event) const {
  const EventPolicy* entry = EntryOf(event);
  return entry != nullptr && entry->shadow;
}

bool PolicySource::Settles(std::string_view event) const {
  const EventPolicy* entry = EntryOf(event);
  return entry != nullptr && entry->settle;
}

const EventPolicy* PolicySource::EntryOf(std::string_view event) const {
  if (!file_) return nullptr;
  const auto it = file_->events().find(event);
  return it == file_->events().end() ? nullptr : &it->second;
}

namespace {

std::string SummaryOf(const Policy& policy, const EventPolicy& entry) {
  std::string text =
      fmt::format("{} ({}, fail {}{}", DescribeLimits(policy.limits), CountingModeName(policy.mode),
                  FailureModeName(policy.on_store_failure), entry.shadow ? ", shadow" : "");
  if (entry.request_limits) {
    text += fmt::format(", request limits up to {}/{}", entry.request_limits->max_hits,
                        FormatDuration(entry.request_limits->max_window));
  }
  if (entry.settle) text += ", settled";
  if (policy.block_for > Seconds{0}) {
    text += fmt::format(", a denial blocks for {}", FormatDuration(policy.block_for));
  }
  const std::map<std::string, Policy>& overrides = entry.overrides;
  const char* separator = "; overrides: ";
  for (const auto& [feature, limits] : overrides) {
    text += fmt::format("{}{}: {}", separator, feature, DescribeLimits(limits.limits));
    separator = "; ";
  }
  return text + ")";
}

}  // namespace

std::map<std::string, std::string> PolicySource::Summary() const {
  std::map<std::string, std::string> summary;
  if (!file_) {
    if (inline_.limits.empty()) return summary;
    Policy policy = inline_;
    if (mode_) policy.mode = *mode_;
    summary.emplace("*", SummaryOf(policy, EventPolicy{}));
    return summary;
  }
  for (const auto& [event, entry] : file_->events()) {
    Policy policy = entry.policy;
    if (mode_) policy.mode = *mode_;
    summary.emplace(event, SummaryOf(policy, entry));
  }
  return summary;
}

std::vector<std::string> PolicyChanges(const PolicySource& before, const PolicySource& after) {
  const std::map<std::string, std::string> old_events = before.Summary();
  const std::map<std::string, std::string> new_events = after.Summary();
  std::vector<std::string> changes;
  for (const auto& [event, summary] : old_events) {
    const auto now = new_events.find(event);
    if (now == new_events.end()) {
      changes.push_back(fmt::format("removed {}: {}", event, summary));
    } else if (now->second != summary) {
      changes.push_back(fmt::format("changed {}: {} -> {}", event, summary, now->second));
    }
  }
  for (const auto& [event, summary] : new_events) {
    if (!old_events.contains(event)) changes.push_back(fmt::format("added {}: {}", event, summary));
  }
  return changes;
}

}  // namespace hourglass
