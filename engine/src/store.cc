#include "hourglass/store.h"

#include <fmt/format.h>

#include "hourglass/key_codec.h"
#include "hourglass/saturating.h"

namespace hourglass {

Status ValidateBatch(const Batch& batch) {
  if (Status s = KeyCodec::CheckKey(batch.group); !s.ok()) return s;
  for (const Increment& inc : batch.increments) {
    if (Status s = KeyCodec::CheckKey(inc.key); !s.ok()) return s;
    if (inc.delta > 0 && inc.ttl < Seconds{1})
      return InvalidArgument("increment TTL must be >= 1s");
  }
  for (const std::string& key : batch.reads) {
    if (Status s = KeyCodec::CheckKey(key); !s.ok()) return s;
  }
  for (const Guard& guard : batch.guards) {
    for (const GuardTerm& term : guard.terms) {
      if (term.read >= batch.reads.size() || (term.sign != 1 && term.sign != -1)) {
        return InvalidArgument("a guard's term names no read of its batch, or its sign is not +-1");
      }
    }
  }
  return {};
}

bool GuardHolds(const Guard& guard, std::span<const uint64_t> values) {
  // base + sum(sign * value) <= max, as plus <= minus + max in saturating unsigned sums.
  const auto magnitude = [](int64_t v) { return v < 0 ? uint64_t(-(v + 1)) + 1 : uint64_t(v); };
  uint64_t plus = guard.base > 0 ? magnitude(guard.base) : 0;
  uint64_t minus = guard.base < 0 ? magnitude(guard.base) : 0;
  for (const GuardTerm& term : guard.terms) {
    uint64_t& side = term.sign > 0 ? plus : minus;
    side = SaturatingAdd(side, values[term.read]);
  }
  return guard.max >= 0 ? plus <= SaturatingAdd(minus, magnitude(guard.max))
                        : SaturatingAdd(plus, magnitude(guard.max)) <= minus;
}

Status ValidateGuards(const Store& store, const Batch& batch) {
  if (batch.guards.empty() || store.conditional_batches()) return {};
  return InvalidArgument(store.Describe() + " cannot apply a batch with guards atomically");
}

Status ValidateSend(const Batch& batch) {
  if (batch.reads.empty()) return {};
  return InvalidArgument("Store::Send takes batches without reads (fire-and-forget writes)");
}

Status ValidateKeys(const std::string& group, std::span<const std::string> keys) {
  if (Status s = KeyCodec::CheckKey(group); !s.ok()) return s;
  for (const std::string& key : keys) {
    if (Status s = KeyCodec::CheckKey(key); !s.ok()) return s;
  }
  return {};
}

Status ValidateNote(std::string_view text) {
  if (text.empty() || text.size() > 200) {
    return InvalidArgument(
        fmt::format("a server's note takes 1 to 200 bytes, not {}", text.size()));
  }
  for (const char c : text) {
    if (c < 0x20 || c > 0x7e) return InvalidArgument("a server's note takes printable ASCII only");
  }
  return {};
}

Status Store::WriteNote(const std::string& server, std::string_view text) {
  static_cast<void>(text);
  return InvalidArgument(
      fmt::format("{} keeps no notes on its servers (asked for {})", Describe(), server));
}

std::vector<Result<std::vector<uint64_t>>> Store::ApplyMany(std::span<const Batch> batches) {
  std::vector<Result<std::vector<uint64_t>>> results;
  results.reserve(batches.size());
  for (const Batch& batch : batches) results.push_back(Apply(batch));
  return results;
}

std::vector<Status> Store::Send(std::span<const Batch> batches) {
  std::vector<Status> results;
  results.reserve(batches.size());
  for (const Batch& batch : batches) {
    if (Status s = ValidateSend(batch); !s.ok()) {
      results.push_back(s);
      continue;
    }
    Result<std::vector<uint64_t>> applied = Apply(batch);
    results.push_back(applied.ok() ? Status() : Status(applied.error()));
  }
  return results;
}

}  // namespace hourglass
