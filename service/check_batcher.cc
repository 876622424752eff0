#include "hourglass/check_batcher.h"

#include <pthread.h>

#include <algorithm>
#include <optional>

namespace hourglass {
namespace {

// A job's waiting is bounded by the batches ahead of it, not by a scan of every job waiting: the
// jobs TakeJobs looks at for one batch.
constexpr size_t kJobsScanned = 1024;

// One key per event and feature, whatever bytes they hold.
std::string FeatureKey(const OwnedCheck& check) {
  std::string key = std::to_string(check.event.size());
  key += ':';
  key += check.event;
  key += check.feature;
  return key;
}

}  // namespace

std::vector<Engine::CheckRequest> RequestsOf(const std::vector<OwnedCheck>& checks) {
  std::vector<Engine::CheckRequest> requests;
  requests.reserve(checks.size());
  for (const OwnedCheck& c : checks) requests.push_back(c.Request());
  return requests;
}

CheckBatcher::CheckBatcher(const Engine& engine, size_t max_checks,
                           std::function<void(size_t)> on_batch, size_t max_in_flight)
    : engine_(engine),
      max_checks_(max_checks),
      on_batch_(std::move(on_batch)),
      max_in_flight_(std::max<size_t>(1, max_in_flight)) {
  for (size_t i = 0; i < max_in_flight_; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "batcher");  // as top -H and perf show it
      SendHandedOver();
    });
  }
}

CheckBatcher::~CheckBatcher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void CheckBatcher::Submit(CheckJob job) {
  std::vector<CheckJob> one;
  one.push_back(std::move(job));
  SubmitAll(std::move(one));
}

void CheckBatcher::SubmitAll(std::vector<CheckJob> jobs_submitted, bool send_here) {
  if (jobs_submitted.empty()) return;
  std::unique_lock lock(mu_);
  for (CheckJob& job : jobs_submitted) waiting_.push_back({std::move(job)});
  if (senders_ == max_in_flight_) return;  // a sending thread takes them after its round trip
  ++senders_;
  if (send_here) {
    Batch batch = TakeJobs();
    if (batch.jobs.empty()) {  // each waits for a batch at the store, whose sender goes on
      --senders_;
      return;
    }
    lock.unlock();
    Send(batch);
    lock.lock();
    if (waiting_.empty()) {
      --senders_;
      return;
    }
  }
  ++handed_over_;  // senders_ stays counted: a batcher's thread goes on in this one's place
  lock.unlock();
  wake_.notify_one();
}

void CheckBatcher::SendHandedOver() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return handed_over_ > 0 || stopping_; });
    if (handed_over_ == 0) return;  // stopping, and nothing handed over
    --handed_over_;
    while (!waiting_.empty()) {
      Batch batch = TakeJobs();
      if (batch.jobs.empty()) break;  // each waits for a batch at the store, whose sender goes on
      lock.unlock();
      Send(batch);
      lock.lock();
    }
    --senders_;
  }
}

CheckBatcher::Batch CheckBatcher::TakeJobs() {
  Batch batch;
  std::unordered_set<std::string> taken, left;  // the features of the jobs taken, and left
  std::deque<Waiting> kept;
  size_t checks = 0, scanned = 0;
  std::vector<std::string> features;
  while (!waiting_.empty() && scanned < kJobsScanned) {
    Waiting& w = waiting_.front();
    if (!batch.jobs.empty() && checks + w.job.checks.size() > max_checks_) break;
    ++scanned;
    features.clear();
    for (const OwnedCheck& check : w.job.checks) features.push_back(FeatureKey(check));
    const bool free = std::none_of(features.begin(), features.end(), [&](const std::string& f) {
      return at_store_.contains(f) || left.contains(f);
    });
    if (free) {
      checks += w.job.checks.size();
      taken.insert(features.begin(), features.end());
      batch.jobs.push_back(std::move(w.job));
      batch.left.push_back(w.left);
    } else {  // no job after it overtakes it on a feature they share
      left.insert(features.begin(), features.end());
      w.left = true;
      kept.push_back(std::move(w));
    }
    waiting_.pop_front();
  }
  while (!kept.empty()) {  // back in front of the jobs not looked at, in their order
    waiting_.push_front(std::move(kept.back()));
    kept.pop_back();
  }
  for (const std::string& f : taken) at_store_.insert(f);
  batch.features.assign(taken.begin(), taken.end());
  return batch;
}

void CheckBatcher::AnswerLeftIfBlocked(Batch& batch) const {
  std::vector<CheckJob>& jobs = batch.jobs;
  size_t kept = 0;
  for (size_t k = 0; k < jobs.size(); ++k) {
    std::optional<Engine::RequestDecision> decided;
    if (batch.left[k])
      decided = engine_.CheckAllIfBlocked(RequestsOf(jobs[k].checks), jobs[k].local);
    if (!decided) {
      if (kept != k) jobs[kept] = std::move(jobs[k]);
      ++kept;
      continue;
    }
    Done(jobs[k], std::move(*decided));
  }
  jobs.resize(kept);
}

void CheckBatcher::Send(Batch& batch) {
  AnswerLeftIfBlocked(batch);
  std::vector<CheckJob>& jobs = batch.jobs;
  std::vector<std::vector<Engine::CheckRequest>> requests;
  requests.reserve(jobs.size());
  size_t checks = 0;
  for (const CheckJob& job : jobs) {
    requests.push_back(RequestsOf(job.checks));
    checks += job.checks.size();
  }
  std::vector<std::span<const Engine::CheckRequest>> spans(requests.begin(), requests.end());
  std::vector<Result<Engine::RequestDecision>> decided;
  if (!jobs.empty()) {
    if (on_batch_) on_batch_(checks);
    decided = engine_.CheckAllMany(spans);
  }
  {
    std::lock_guard lock(mu_);
    for (const std::string& f : batch.features) at_store_.erase(f);
  }
  for (size_t k = 0; k < jobs.size(); ++k) Done(jobs[k], std::move(decided[k]));
}

void CheckBatcher::Done(CheckJob& job, Result<Engine::RequestDecision> decided) {
  try {
    job.done(std::move(job.checks), std::move(decided));
  } catch (...) {  // one callback's failure must not stop the others or the batcher
  }
}

}  // namespace hourglass
