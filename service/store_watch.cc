#include "hourglass/store_watch.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace hourglass {
namespace {

std::string MiB(uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / 1048576.0);
}

}  // namespace

void StoreWatch::Poll() {
  std::vector<ClockOffset> offsets;
  const Instant now = loss_clock_ != nullptr ? loss_clock_->Now() : Instant{};
  for (Result<ServerStats>& stats : store_.Stats()) {
    if (!stats.ok()) {
      metrics_.CountStoreError(stats.error());
      // A store that lost its data for good (an LMDB file deleted under it) is told once.
      if (stats.error().code() == ErrorCode::kDataLoss &&
          told_.insert(stats.error().message()).second) {
        warn_(stats.error().message());
      }
      continue;
    }
    if (local_ != nullptr && stats->time > 0) {
      offsets.push_back({stats->server, ToUnix(local_->Now()) - static_cast<int64_t>(stats->time)});
      metrics_.SetClock(stats->server, offsets.back().seconds);
    }
    Look(*stats, now);
  }
  if (losses_ != nullptr) PollNotes(now);
  if (follow_ == nullptr) return;
  const ClockFollower::Step step = follower_.Update(offsets);
  follow_->SetOffset(step.correction);
  metrics_.SetClockCorrection(step.correction.count());
  if (step.warning) warn_(*step.warning);
}

void StoreWatch::Look(const ServerStats& stats, Instant now) {
  const Seen look{stats.pid,   stats.evictions, stats.flushes, stats.started(),
                  ToUnix(now), stats.classes,   false,         true,
                  false};
  auto [at, first] = seen_.try_emplace(stats.server, Seen{look.pid, 0, 0, look.started, 0, {}});
  Seen& seen = at->second;
  std::optional<StoreLoss> loss;
  if (!first) loss = LossOf(seen, stats, now);
  if (loss) {
    metrics_.CountStoreLoss(*loss);
    // Told once: a store's new connection may have seen it since the last look (LossLog).
    const std::vector<std::string> server = {stats.server};
    const bool told = losses_ != nullptr && losses_->Since(server, seen.polled - 1).has_value();
    if (!told) {
      if (losses_ != nullptr) losses_->Record(*loss);
      warn_(LossWarning(*loss));
    }
  }
  std::optional<StoreLoss> evicted;
  if (!first && seen.pid == stats.pid) {
    evicted = EvictionLoss(seen.evictions, seen.classes, stats, now);
  }
  if (evicted && losses_ != nullptr && losses_->Record(*evicted)) {
    metrics_.CountStoreLoss(*evicted);
  }
  // Another process (a restart) counts from zero again.
  if (seen.pid != stats.pid || stats.evictions < seen.evictions) seen.evictions = 0;
  const uint64_t rise = stats.evictions - seen.evictions;
  // The note stays known to be there while nothing could have taken it: the same process, no
  // loss, nothing evicted.
  const bool noted = !first && seen.noted && !loss && rise == 0;
  seen = look;
  seen.noted = noted;
  seen.lost = loss.has_value() || evicted.has_value();
  metrics_.SetServerStats(stats, rise);
  if (rise > 0) warn_(EvictionWarning(stats, rise, first, losses_ ? evicted : std::nullopt));
}

void StoreWatch::PollNotes(Instant now) {
  for (Result<ServerNote>& note : store_.Notes()) {
    if (!note.ok()) continue;  // its error is the Stats' one, counted there
    auto at = seen_.find(note->server);
    if (at == seen_.end() || !at->second.fresh) continue;  // its figures did not answer this poll
    Seen& seen = at->second;
    seen.fresh = false;
    std::optional<StoreLoss> told;
    std::string_view source = "";
    if (note->text) {
      source = "; told by the note an hourglass process that saw it left on the server";
      Result<std::optional<StoreLoss>> parsed =
          ParseLossNote(*note->text, note->kind, note->server);
      if (parsed.ok()) {
        told = *parsed;
      } else if (told_.insert(parsed.error().message()).second) {
        warn_(parsed.error().message() + "; it is written again");
      }
    } else if (seen.noted) {
      // The note vanished while the same process kept running and evicted nothing: its data was
      // flushed (Redis FLUSHALL tells no figure), some time since the last look.
      told = StoreLoss{note->kind, note->server, now, LossCause::kFlush};
    }
    // Another process's watch saw it (or this one's before a restart of this process); one this
    // poll saw too is told once, as seen here.
    if (told && losses_->Record(*told) && !seen.lost) {
      metrics_.CountStoreLoss(*told);
      warn_(LossWarning(*told) + std::string(source));
    }
    const std::string text = LossNote(losses_->Latest(note->server));
    seen.noted = true;
    if (note->text == text) continue;
    if (Status s = store_.WriteNote(note->server, text); !s.ok()) {
      seen.noted = false;
      metrics_.CountStoreError(s.error());
      if (told_.insert(s.error().message()).second) {
        warn_(fmt::format("cannot note the latest loss on {} {} for its other clients: {}",
                          note->kind, note->server, s.error().message()));
      }
    }
  }
}

std::optional<StoreLoss> StoreWatch::LossOf(const Seen& seen, const ServerStats& stats,
                                            Instant now) {
  // Both are dated at this poll: hits before the true instant are lost, those after it kept, so
  // a later date only marks more windows. (memcached's `time - uptime` is no start: it sets its
  // start 62 s in the past.)
  // Another process, or the same pid started again (a container's pid 1): its start moved on by
  // more than the second the two figures can disagree by.
  const int64_t started = stats.started();
  if (seen.pid != stats.pid || (started > 0 && seen.started > 0 && started > seen.started + 1)) {
    return StoreLoss{stats.kind, stats.server, now, LossCause::kRestart};
  }
  if (stats.flushes > seen.flushes) {
    return StoreLoss{stats.kind, stats.server, now, LossCause::kFlush};
  }
  return std::nullopt;
}

std::optional<StoreLoss> EvictionLoss(uint64_t evictions_before,
                                      std::span<const ServerStats::ClassEvictions> classes_before,
                                      const ServerStats& stats, Instant now) {
  if (stats.evictions <= evictions_before) return std::nullopt;
  std::optional<Instant> at;
  for (const ServerStats::ClassEvictions& now_class : stats.classes) {
    uint64_t before = 0;
    for (const ServerStats::ClassEvictions& c : classes_before) {
      if (c.id == now_class.id) before = c.evicted;
    }
    if (now_class.evicted <= before) continue;
    // The latest item this class evicted went unused for evicted_time seconds, by its figures;
    // LRU evicts the least recently used first, so the others went unused longer.
    const Instant last_used = std::min(
        now, now - Seconds{static_cast<int64_t>(now_class.evicted_time)} + StoreWatch::kUseLag);
    at = at ? std::max(*at, last_used) : last_used;
  }
  // No class told (Redis), or evictions in classes the last look had not listed: no age known.
  if (!at) at = now;
  return StoreLoss{stats.kind, stats.server, *at, LossCause::kEviction};
}

std::string LossWarning(const StoreLoss& loss) {
  return fmt::format(
      "{}: every count it held before then is lost. Checks whose windows reach back before it "
      "are degraded (data loss) and decided per their policy's on_data_loss until it has left "
      "their windows",
      loss.Describe());
}

std::string EvictionWarning(const ServerStats& stats, uint64_t rise, bool first,
                            const std::optional<StoreLoss>& loss) {
  const std::string_view fix =
      stats.kind == "redis"
          ? "give it more memory (maxmemory), add servers, or set maxmemory-policy noeviction "
            "(full, it then refuses writes and checks answer per their failure mode)"
          : "give it more memory (-m) or add servers";
  // A Redis whose maxmemory was set to 0 (no limit) after it evicted has no limit to name.
  const std::string holds =
      stats.limit_maxbytes > 0
          ? fmt::format("{} of {}", MiB(stats.bytes), MiB(stats.limit_maxbytes))
          : fmt::format("{}, with no memory limit set now", MiB(stats.bytes));
  const std::string told =
      loss ? fmt::format(
                 "; checks whose windows reach back before {:%FT%TZ} are degraded (data "
                 "loss) and decided per their policy's on_data_loss",
                 loss->at)
           : std::string();
  return fmt::format(
      "{} {} evicted {} {} {} ({} since it started; it holds {}): the counts they held are lost, "
      "so limits admit more than they say until their windows pass{}; {}",
      stats.kind, stats.server, rise, stats.kind == "redis" ? "keys" : "items",
      first ? "before this process watched it" : "since the last look", stats.evictions, holds,
      told, fix);
}

void StoreWatch::Start(std::chrono::milliseconds interval) {
  Poll();  // before the caller serves anything: a clock to follow is followed from the start
  polls_.emplace(interval, [this] { Poll(); });
}

}  // namespace hourglass
