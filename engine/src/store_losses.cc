#include "hourglass/store_losses.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>

namespace hourglass {

std::string_view LossCauseName(LossCause cause) {
  switch (cause) {
    case LossCause::kRestart:
      return "restarted";
    case LossCause::kFlush:
      return "flushed";
    case LossCause::kEviction:
      return "evicted";
  }
  return "lost its data";
}

std::string StoreLoss::Describe() const {
  if (cause == LossCause::kEviction) {
    return fmt::format("{} {} evicted counts last used at {:%FT%TZ} or before", kind, server, at);
  }
  return fmt::format("{} {} {} at {:%FT%TZ}", kind, server, LossCauseName(cause), at);
}

bool StoreLosses::Record(StoreLoss loss) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(latest_.begin(), latest_.end(),
                         [&](const StoreLoss& l) { return l.server == loss.server; });
  if (it != latest_.end() && it->at >= loss.at) return false;
  const int64_t at = ToUnix(loss.at);
  if (it == latest_.end()) {
    latest_.push_back(std::move(loss));
  } else {
    *it = std::move(loss);
  }
  // Writers hold mu_: the load and store cannot interleave with another Record's.
  if (at > newest_.load(std::memory_order_relaxed)) newest_.store(at, std::memory_order_release);
  return true;
}

std::optional<StoreLoss> StoreLosses::Since(std::span<const std::string> servers, int64_t first,
                                            bool copies) const {
  std::lock_guard lock(mu_);
  std::optional<StoreLoss> found;
  size_t lost = 0;
  for (const StoreLoss& loss : latest_) {
    if (ToUnix(loss.at) <= first) continue;  // the window starts after it: nothing missing
    if (std::find(servers.begin(), servers.end(), loss.server) == servers.end()) continue;
    ++lost;
    if (!found || (copies ? loss.at < found->at : loss.at > found->at)) found = loss;
  }
  if (copies && lost < servers.size()) return std::nullopt;  // a copy kept them
  return found;
}

}  // namespace hourglass
