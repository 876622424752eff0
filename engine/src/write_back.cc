#include "write_back.h"

#include <algorithm>

namespace hourglass::internal {
namespace {

// A timed-out batch reached the server, which may yet apply it: sent again, it could count twice.
StoreFallback::Landed LandedOf(const Result<std::vector<uint64_t>>& answer) {
  if (answer.ok()) return StoreFallback::Landed::kYes;
  return answer.error().code() == ErrorCode::kDeadlineExceeded ? StoreFallback::Landed::kUnknown
                                                               : StoreFallback::Landed::kNo;
}

}  // namespace

std::vector<std::optional<Error>> WriteBackGroups(const EngineCore& core,
                                                  std::span<const std::string> groups, Instant now,
                                                  uint64_t* hits, uint64_t* written) {
  std::vector<std::optional<Error>> failed(groups.size());
  StoreFallback* fallback = core.options.fallback;
  if (fallback == nullptr || !fallback->AnyPending()) return failed;
  std::vector<size_t> owners;
  std::vector<std::vector<StoreFallback::SecondHits>> claims;
  std::vector<Batch> batches;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<StoreFallback::SecondHits> claimed = fallback->Claim(groups[g]);
    if (claimed.empty()) continue;
    Batch batch{groups[g], {}, {}};
    for (const StoreFallback::SecondHits& s : claimed) {  // never 0 hits: Claim skips those
      std::vector<Increment> increments = core.keys.HitIncrements(groups[g], s.second, s.hits);
      std::move(increments.begin(), increments.end(), std::back_inserter(batch.increments));
    }
    // Written into settled buckets: every process drops its cached buckets of the feature.
    core.AnnounceIfSettled(batch, claimed.front().second, now);
    owners.push_back(g);
    claims.push_back(std::move(claimed));
    batches.push_back(std::move(batch));
  }
  if (batches.empty()) return failed;
  std::vector<Result<std::vector<uint64_t>>> answers = core.store->ApplyMany(batches);
  for (size_t k = 0; k < owners.size(); ++k) {
    const std::string& group = groups[owners[k]];
    core.ForgetCachedIfSettled(group, claims[k].front().second, now);
    fallback->Release(group, claims[k], LandedOf(answers[k]));
    if (!answers[k].ok()) {
      failed[owners[k]] = answers[k].error();
      continue;
    }
    if (written != nullptr) ++*written;
    if (hits == nullptr) continue;
    int64_t net = 0;
    for (const StoreFallback::SecondHits& s : claims[k]) net += s.hits;
    *hits += static_cast<uint64_t>(std::max<int64_t>(net, 0));
  }
  return failed;
}

}  // namespace hourglass::internal
