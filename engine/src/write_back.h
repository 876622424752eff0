// Internal to the engine: writing back the hits a StoreFallback decided locally while the store
// failed (EngineOptions::fallback), at their own seconds.
//
//   std::vector<std::optional<Error>> failed = WriteBackGroups(core, groups, now, &hits);
//
// Thread-safety: as the fallback's: many threads may write back at once; a group's hits are
// claimed by one of them.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine_core.h"

namespace hourglass::internal {

// Claims the local hits of each of `groups` and writes them back, one batch per group, all in
// one Store::ApplyMany; a batch that fails leaves its hits pending. Per group, the failure
// (nullopt: written, or nothing to write). `hits`, if given, gains the hits written back and
// `written` the groups.
std::vector<std::optional<Error>> WriteBackGroups(const EngineCore& core,
                                                  std::span<const std::string> groups, Instant now,
                                                  uint64_t* hits = nullptr,
                                                  uint64_t* written = nullptr);

}  // namespace hourglass::internal
