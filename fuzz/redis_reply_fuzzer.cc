// Fuzzes the Redis store's reply reader with arbitrary server bytes: the bytes are written into
// one end of a socketpair and read through a real connection from the other, reply after reply,
// as the store reads a pipeline's replies; each reply is also read as CLUSTER SLOTS' answer. Every
// read is a reply or an error; nothing crashes, hangs past the I/O timeout or reads past the bytes
// sent; a slot map read names a valid node for every slot it gives.
#include <cstddef>
#include <cstdint>

#include "fuzz_check.h"
#include "placement.h"
#include "resp.h"
#include "socket_answer.h"

using namespace hourglass;
using fuzz::Answering;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<net::Connection> c = Answering(data, size);
  if (c == nullptr) return 0;
  redis::ReplyReader reader;
  c->BeginExchange();
  for (int i = 0; i < 64; ++i) {
    Result<redis::Reply> reply = reader.Read(*c);
    if (!reply.ok()) {
      FUZZ_CHECK(!reply.error().message().empty());
      break;
    }
    FUZZ_CHECK(reply->error() == (reply->type == redis::Reply::Type::kError));
    Result<redis::SlotMap> map = redis::ParseClusterSlots(*reply, "127.0.0.1:7000");
    if (!map.ok()) continue;
    for (int16_t owner : map->owner) {
      FUZZ_CHECK(owner < static_cast<int16_t>(map->nodes.size()));
    }
  }
  return 0;
}
