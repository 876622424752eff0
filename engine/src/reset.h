// Internal to the engine: Reset's walk down the ladder, the deletes, and the generation bump.
//
// Thread-safety: may be called from many threads.
#pragma once

#include <string>

#include "engine_core.h"

namespace hourglass::internal {

// Deletes every bucket of `group` alive around second `t` that holds hits, reading the ladder
// top-down (only the children of buckets that held hits are read), and its day ledgers; then
// bumps the generation so every process drops its cached buckets of the group. With a penalty
// length (block_for > 0), its strikes alive around t are deleted too: the block is lifted.
// `deleted` is set to the number of bucket keys deleted.
Result<Cost> ResetGroup(const EngineCore& core, const std::string& group, int64_t t,
                        Seconds block_for, uint64_t& deleted);

}  // namespace hourglass::internal
