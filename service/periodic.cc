#include "hourglass/periodic.h"

namespace hourglass {

Periodic::Periodic(std::chrono::milliseconds interval, std::function<void()> task) {
  thread_ = std::thread([this, interval, task = std::move(task)] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      wake_.wait_for(lock, interval, [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      task();
      lock.lock();
    }
  });
}

Periodic::~Periodic() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

}  // namespace hourglass
