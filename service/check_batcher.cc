#include "hourglass/check_batcher.h"

#include <pthread.h>

#include <algorithm>

namespace hourglass {

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
  for (CheckJob& job : jobs_submitted) waiting_.push_back(std::move(job));
  if (senders_ == max_in_flight_) return;  // a sending thread takes them after its round trip
  ++senders_;
  if (send_here) {
    std::vector<CheckJob> jobs = TakeJobs();
    lock.unlock();
    Send(jobs);
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
      std::vector<CheckJob> jobs = TakeJobs();
      lock.unlock();
      Send(jobs);
      lock.lock();
    }
    --senders_;
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
  std::vector<std::vector<Engine::CheckRequest>> requests;
  requests.reserve(jobs.size());
  size_t checks = 0;
  for (const CheckJob& job : jobs) {
    requests.push_back(RequestsOf(job.checks));
    checks += job.checks.size();
  }
  std::vector<std::span<const Engine::CheckRequest>> spans(requests.begin(), requests.end());
  if (on_batch_) on_batch_(checks);
  std::vector<Result<Engine::RequestDecision>> decided = engine_.CheckAllMany(spans);
  for (size_t k = 0; k < jobs.size(); ++k) {
    try {
      jobs[k].done(std::move(jobs[k].checks), std::move(decided[k]));
    } catch (...) {  // one callback's failure must not stop the others or the batcher
    }
  }
}

}  // namespace hourglass
