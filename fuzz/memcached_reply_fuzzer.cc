// Fuzzes the memcached reply reader with arbitrary server bytes: the bytes are written into one
// end of a socketpair and read through a real connection from the other, as the answer to a
// batch of increments and a get, as the answer to the packed layout's gets (each pack value then
// folded and compacted), as the answers to unread no-ops, and as the answer to `stats`; the bytes
// themselves are also folded as one pack, with an empty base when they name one. Every answer is
// values or an error; nothing crashes, hangs past the I/O timeout or reads past the bytes sent; a
// compacted pack folds to the same values and is no shorter than the lower bound that lets the
// store skip building it; a fold without seconds accepts the same bytes and answers the same
// minutes and hour.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "hourglass/packed_layout.h"
#include "protocol.h"
#include "socket_answer.h"

namespace {

using namespace hourglass;
using fuzz::Answering;

Batch CheckBatch() {
  Batch batch{"hg:signup:ann", {}, {}};
  for (const char* width : {"1", "60", "3600"}) {
    const std::string key = std::string("hg:signup:ann:") + width + ":28333333";
    batch.increments.push_back(Increment{key, 1, Seconds{86400}});
    batch.reads.push_back(key);
  }
  return batch;
}

// Folds `value` as a pack; if it is one, its compaction must fold to the same values. A pack that
// names a base is refused alone, and folds with an empty base as its own records do.
void FoldPack(std::string_view value) {
  if (std::optional<packed::BaseRef> ref = packed::BaseRefOf("fuzz", value)) {
    FUZZ_CHECK(!packed::PackFold::Parse("fuzz", value).ok());
    FUZZ_CHECK(ref->tail_at <= value.size());
    FoldPack(packed::WithBase(value.substr(0, packed::kPackHeaderBytes), value, ref->tail_at));
    return;
  }
  Result<packed::PackFold> fold = packed::PackFold::Parse("fuzz", value);
  Result<packed::PackFold> shallow =
      packed::PackFold::Parse("fuzz", value, packed::PackFold::Depth::kMinutesAndHour);
  FUZZ_CHECK(fold.ok() == shallow.ok());
  if (!fold.ok()) {
    FUZZ_CHECK(!fold.error().message().empty());
    return;
  }
  for (uint16_t minute = 0; minute < packed::kPackSeconds; minute += 60) {
    for (packed::PackedLevel level : {packed::PackedLevel::kMinute, packed::PackedLevel::kHour}) {
      const packed::PackedSlot slot{"", level, minute};
      FUZZ_CHECK(shallow->Value(slot) == fold->Value(slot));
    }
  }
  const std::string compacted = fold->Compacted();
  FUZZ_CHECK(fold->CompactedBytesAtLeast() <= compacted.size());
  Result<packed::PackFold> again = packed::PackFold::Parse("fuzz", compacted);
  FUZZ_CHECK(again.ok());
  for (uint16_t offset = 0; offset < packed::kPackSeconds; ++offset) {
    for (packed::PackedLevel level :
         {packed::PackedLevel::kSecond, packed::PackedLevel::kMinute, packed::PackedLevel::kHour}) {
      const packed::PackedSlot slot{"", level, offset};
      FUZZ_CHECK(again->Value(slot) == fold->Value(slot));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Batch batch = CheckBatch();
  if (std::unique_ptr<net::Connection> c = Answering(data, size)) {
    c->BeginExchange();
    Result<memcached::GetAnswer> answer = memcached::ReadGetAnswer("fuzz", *c, batch);
    if (answer.ok()) {
      FUZZ_CHECK(answer->values.size() == batch.reads.size());
    } else {
      FUZZ_CHECK(!answer.error().message().empty());
    }
  }
  static const packed::WireBatch packed = packed::PlanPacked(CheckBatch());
  if (std::unique_ptr<net::Connection> c = Answering(data, size)) {
    c->BeginExchange();
    Result<memcached::GetAnswer> answer =
        memcached::ReadGetAnswer("fuzz", *c, packed.counters, packed.get_is_pack);
    if (answer.ok()) {
      FUZZ_CHECK(answer->packs.size() == packed.counters.reads.size());
      for (const std::optional<std::string>& pack : answer->packs) {
        if (pack) FoldPack(*pack);
      }
    }
  }
  FoldPack(std::string_view(reinterpret_cast<const char*>(data), size));
  if (std::unique_ptr<net::Connection> c = Answering(data, size)) {
    c->BeginExchange();
    memcached::NoopAnswers answers;
    Status s = memcached::ReadNoops("fuzz", *c, 3, /*own_last=*/true, answers);
    FUZZ_CHECK(answers.failures <= size && answers.read <= 3);
    if (s.ok()) FUZZ_CHECK(answers.read == 3);
    if (!s.ok()) FUZZ_CHECK(!s.error().message().empty());
  }
  if (std::unique_ptr<net::Connection> c = Answering(data, size)) {
    c->BeginExchange();
    ServerStats stats;
    Status s = memcached::ReadStats("fuzz", *c, stats);
    if (!s.ok()) FUZZ_CHECK(!s.error().message().empty());
  }
  return 0;
}
