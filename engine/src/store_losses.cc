#include "hourglass/store_losses.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "hourglass/store.h"

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

std::string LossNote(const std::optional<StoreLoss>& loss) {
  if (!loss) return "loss none";
  return fmt::format("loss {} {}", ToUnix(loss->at), LossCauseName(loss->cause));
}

Result<std::optional<StoreLoss>> ParseLossNote(std::string_view text, std::string kind,
                                               std::string server) {
  if (text == "loss none") return std::optional<StoreLoss>{};
  const auto malformed = [&] {
    return InvalidArgument(
        fmt::format("{} {}: its note \"{}\" is no loss note (\"loss <Unix "
                    "seconds> <cause>\"); another program wrote {}?",
                    kind, server, text.substr(0, 60), kNoteKey));
  };
  if (!text.starts_with("loss ")) return malformed();
  text.remove_prefix(5);
  int64_t at = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), at);
  if (ec != std::errc{} || at <= 0 || end == text.data() + text.size() || *end != ' ') {
    return malformed();
  }
  const std::string_view cause = text.substr(end - text.data() + 1);
  for (LossCause c : {LossCause::kRestart, LossCause::kFlush, LossCause::kEviction}) {
    if (cause == LossCauseName(c)) {
      return std::optional<StoreLoss>{
          StoreLoss{std::move(kind), std::move(server), FromUnix(at), c}};
    }
  }
  return malformed();
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

std::optional<StoreLoss> StoreLosses::Latest(std::string_view server) const {
  std::lock_guard lock(mu_);
  for (const StoreLoss& loss : latest_) {
    if (loss.server == server) return loss;
  }
  return std::nullopt;
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
