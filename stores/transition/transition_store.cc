#include "hourglass/transition_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "hourglass/replicated_store.h"
#include "hourglass/saturating.h"

namespace hourglass {
namespace {

// `batch` without its writes: what the previous servers are asked.
Batch ReadsOnly(const Batch& batch) {
  return Batch{.group = batch.group,
               .increments = {},
               .reads = batch.reads,
               .non_counters_read_as_max = batch.non_counters_read_as_max};
}

bool Contains(const std::vector<std::string>& servers, const std::string& server) {
  return std::find(servers.begin(), servers.end(), server) != servers.end();
}

// Raises each of `into` to the matching one of `values`.
void RaiseTo(std::optional<std::vector<uint64_t>>& into, const std::vector<uint64_t>& values) {
  if (!into) {
    into = values;
    return;
  }
  for (size_t k = 0; k < into->size() && k < values.size(); ++k) {
    (*into)[k] = std::max((*into)[k], values[k]);
  }
}

// One batch's answers from its copies in the two lists, split by where each copy's server is.
struct Sides {
  std::optional<std::vector<uint64_t>> shared, current_only, previous_only;

  // The largest of the shared copies and current-only + previous-only (see the class comment).
  std::vector<uint64_t> Merged() const {
    std::optional<std::vector<uint64_t>> sum = current_only;
    if (sum && previous_only) {
      for (size_t k = 0; k < sum->size() && k < previous_only->size(); ++k) {
        (*sum)[k] = SaturatingAdd((*sum)[k], (*previous_only)[k]);
      }
    } else if (!sum) {
      sum = previous_only;
    }
    std::optional<std::vector<uint64_t>> result = shared;
    if (sum) RaiseTo(result, *sum);
    return result ? *result : std::vector<uint64_t>{};
  }
};

}  // namespace

TransitionStore::TransitionStore(std::unique_ptr<MemcachedStore> current,
                                 std::unique_ptr<MemcachedStore> previous, size_t copies,
                                 size_t previous_copies)
    : current_(std::move(current)),
      previous_(std::move(previous)),
      copies_(copies),
      previous_copies_(previous_copies) {}

std::vector<std::string> TransitionStore::Copies(MemcachedStore& list, size_t copies,
                                                 const std::string& group) {
  std::vector<std::string> servers;
  for (size_t r = 0; r < copies; ++r) {
    Result<std::string> server = list.ServerFor(group, r);
    servers.push_back(server.ok() ? std::move(*server) : std::string());
  }
  return servers;
}

TransitionStore::Placement TransitionStore::PlacementOf(const std::string& group) {
  return {Copies(*current_, copies_, group), Copies(*previous_, previous_copies_, group)};
}

bool TransitionStore::Placement::Moved() const {
  for (const std::string& server : previous) {
    if (!Contains(current, server)) return true;
  }
  return false;
}

bool TransitionStore::Moved(const std::string& group) { return PlacementOf(group).Moved(); }

std::vector<std::string> TransitionStore::ServersOf(const std::string& group) {
  std::vector<std::string> servers = Copies(*current_, copies_, group);
  if (copies_ > 1) return servers;
  for (std::string& server : Copies(*previous_, previous_copies_, group)) {
    if (!Contains(servers, server)) servers.push_back(std::move(server));
  }
  return servers;
}

Result<std::vector<uint64_t>> TransitionStore::Apply(const Batch& batch) {
  return std::move(ApplyMany({&batch, 1}).front());
}

std::vector<Result<std::vector<uint64_t>>> TransitionStore::ApplyMany(
    std::span<const Batch> batches) {
  std::vector<Result<std::vector<uint64_t>>> now = current_->ApplyManyAt(batches, copies_);
  std::vector<Batch> reads;
  std::vector<size_t> of;             // reads[k] is batches[of[k]]'s
  std::vector<Placement> placements;  // placements[k]: where reads[k]'s group lives
  for (size_t i = 0; i < batches.size(); ++i) {
    if (batches[i].reads.empty()) continue;
    Placement placement = PlacementOf(batches[i].group);
    if (!placement.Moved()) continue;
    reads.push_back(ReadsOnly(batches[i]));
    of.push_back(i);
    placements.push_back(std::move(placement));
  }
  if (reads.empty()) return LargestOfCopies(std::move(now), copies_, batches.size());
  // After the current servers answered: see the class comment.
  const std::vector<Result<std::vector<uint64_t>>> before =
      previous_->ApplyManyAt(reads, previous_copies_);
  std::vector<Result<std::vector<uint64_t>>> results =
      LargestOfCopies(now, copies_, batches.size());
  for (size_t k = 0; k < reads.size(); ++k) {
    const size_t i = of[k];
    if (!results[i].ok()) continue;
    const auto& [current, previous] = placements[k];
    Sides sides;
    for (size_t r = 0; r < copies_; ++r) {
      const Result<std::vector<uint64_t>>& answer = now[r * batches.size() + i];
      if (answer.ok())
        RaiseTo(Contains(previous, current[r]) ? sides.shared : sides.current_only, *answer);
    }
    // A previous server that cannot answer reads as empty: its counts are missing, as without us.
    for (size_t r = 0; r < previous_copies_; ++r) {
      const Result<std::vector<uint64_t>>& answer = before[r * reads.size() + k];
      if (answer.ok() && !Contains(current, previous[r])) RaiseTo(sides.previous_only, *answer);
    }
    *results[i] = sides.Merged();
  }
  return results;
}

std::vector<Status> TransitionStore::Send(std::span<const Batch> batches) {
  return SentToACopy(current_->SendAt(batches, copies_), copies_, batches.size());
}

Status TransitionStore::Delete(const std::string& group, std::span<const std::string> keys) {
  // Every copy in the current list, then the previous servers that are not current ones.
  for (size_t r = 0; r < copies_; ++r) {
    if (Status s = current_->DeleteAt(group, keys, r); !s.ok()) return s;
  }
  const Placement placement = PlacementOf(group);
  for (size_t r = 0; r < previous_copies_; ++r) {
    if (Contains(placement.current, placement.previous[r])) continue;
    if (Status s = previous_->DeleteAt(group, keys, r); !s.ok()) return s;
  }
  return {};
}

uint64_t TransitionStore::Flush() { return current_->Flush() + previous_->Flush(); }

uint64_t TransitionStore::unconfirmed_failures() const {
  return current_->unconfirmed_failures() + previous_->unconfirmed_failures();
}

std::string TransitionStore::Describe() const {
  const auto copies = [](size_t n) {
    return n > 1 ? fmt::format(" ({} copies of each count)", n) : std::string();
  };
  return fmt::format("{}{} (also reading moved features on the previous {}{})",
                     current_->Describe(), copies(copies_), previous_->Describe(),
                     copies(previous_copies_));
}

}  // namespace hourglass
