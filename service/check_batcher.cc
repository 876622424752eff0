#include "hourglass/check_batcher.h"

namespace hourglass {

CheckBatcher::CheckBatcher(const Engine& engine, size_t max_checks,
                           std::function<void(size_t)> on_batch)
    : engine_(engine),
      max_checks_(max_checks),
      on_batch_(std::move(on_batch)),
      thread_([this] { SendHandedOver(); }) {}

CheckBatcher::~CheckBatcher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void CheckBatcher::Submit(CheckJob job) {
  std::unique_lock lock(mu_);
  waiting_.push_back(std::move(job));
  if (sending_) return;  // the sending thread takes it after its round trip
  sending_ = true;
  std::vector<CheckJob> jobs = TakeJobs();
  lock.unlock();
  Send(jobs);
  lock.lock();
  if (waiting_.empty()) {
    sending_ = false;
    return;
  }
  handed_over_ = true;  // sending_ stays set: the batcher's thread goes on
  lock.unlock();
  wake_.notify_one();
}

void CheckBatcher::SendHandedOver() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return handed_over_ || stopping_; });
    if (!handed_over_) return;  // stopping, and nothing handed over
    handed_over_ = false;
    while (!waiting_.empty()) {
      std::vector<CheckJob> jobs = TakeJobs();
      lock.unlock();
      Send(jobs);
      lock.lock();
    }
    sending_ = false;
  }
}

std::vector<CheckJob> CheckBatcher::TakeJobs() {
  std::vector<CheckJob> jobs;
  size_t checks = 0;
  while (!waiting_.empty() &&
         (jobs.empty() || checks + waiting_.front().checks.size() <= max_checks_)) {
    checks += waiting_.front().checks.size();
    jobs.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
  return jobs;
}

void CheckBatcher::Send(std::vector<CheckJob>& jobs) {
  std::vector<Engine::CheckRequest> checks;
  for (const CheckJob& job : jobs) {
    for (const OwnedCheck& c : job.checks) checks.push_back(c.Request());
  }
  if (on_batch_) on_batch_(checks.size());
  std::vector<Result<Decision>> decisions = engine_.CheckMany(checks);
  size_t next = 0;
  for (CheckJob& job : jobs) {
    std::vector<Result<Decision>> own;
    own.reserve(job.checks.size());
    for (size_t i = 0; i < job.checks.size(); ++i) own.push_back(std::move(decisions[next++]));
    try {
      job.done(std::move(job.checks), std::move(own));
    } catch (...) {  // one callback's failure must not stop the others or the batcher
    }
  }
}

}  // namespace hourglass
