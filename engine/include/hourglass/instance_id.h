// Ids that tell objects apart for the per-thread caches that outlive them: a thread keeps what it
// found in an object under the object's id, and a later object, even one made at the same address,
// never has that id.
//
//   const uint64_t id_ = NextInstanceId();
//
// Thread-safety: may be called from many threads at once.
#pragma once

#include <cstdint>

namespace hourglass {

// A new id, never 0 and never given before in this process.
uint64_t NextInstanceId();

}  // namespace hourglass
