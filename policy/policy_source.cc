#include "hourglass/policy_source.h"

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

Result<Resolved> PolicySource::Resolve(std::string_view event, std::string_view feature) const {
  Result<Resolved> resolved = file_ ? file_->Resolve(event, feature)
                                    : Result<Resolved>(Resolved{inline_, std::string(feature)});
  if (resolved.ok() && mode_) resolved->policy.mode = *mode_;
  return resolved;
}

Status PolicySource::CheckWindows(Seconds retention) const {
  if (file_) return file_->CheckWindows(retention);
  return ValidateLimits(inline_.limits, retention);
}

bool PolicySource::IsShadow(std::string_view event) const {
  if (!file_) return false;
  const auto it = file_->events().find(std::string(event));
  return it != file_->events().end() && it->second.shadow;
}

}  // namespace hourglass
