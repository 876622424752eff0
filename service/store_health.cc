#include "hourglass/store_health.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <vector>

namespace hourglass {
namespace {

// The "KIND SERVER" an error message starts with ("memcached 10.0.0.1:11211: ..."), or "store".
std::string ServerNamed(const std::string& message) {
  const size_t colon = message.find(": ");
  return colon == std::string::npos ? "store" : message.substr(0, colon);
}

}  // namespace

void StoreHealth::Observe(const Error& error) {
  if (error.code() != ErrorCode::kStoreFull) return;
  const std::string server = ServerNamed(error.message());
  const MonoTime now = clock_.Monotonic();
  bool filled = false;
  {
    std::lock_guard lock(mu_);
    ForgetQuiet(now);
    auto [it, added] = full_.try_emplace(server, Full{clock_.Now(), now, error.message()});
    if (!added) {
      it->second.last = now;
      it->second.error = error.message();
    }
    filled = added;
  }
  if (filled) {
    log_(LogLevel::kError,
         fmt::format("{} is full and refuses new counts: checks answer per their failure mode "
                     "until it takes them again ({})",
                     server, error.message()));
  }
}

std::optional<std::string> StoreHealth::Why() {
  std::lock_guard lock(mu_);
  ForgetQuiet(clock_.Monotonic());
  if (full_.empty()) return std::nullopt;
  const auto& [server, full] = *full_.begin();
  return fmt::format("{} is full since {:%FT%TZ}: {}", server, full.since, full.error);
}

void StoreHealth::ForgetQuiet(MonoTime now) {
  std::vector<std::string> recovered;
  for (auto it = full_.begin(); it != full_.end();) {
    if (now - it->second.last < quiet_) {
      ++it;
      continue;
    }
    recovered.push_back(it->first);
    it = full_.erase(it);
  }
  for (const std::string& server : recovered) {
    log_(LogLevel::kInfo, fmt::format("{} refused no count for {} s: taken as writable again",
                                      server, quiet_.count()));
  }
}

}  // namespace hourglass
