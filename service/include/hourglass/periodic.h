// Runs a task on a thread of its own every `interval` until destroyed (the StoreWatch's polls,
// the denial log's flushes).
//
//   Periodic flusher(std::chrono::seconds{1}, [&] { Flush(); });
//
// The first run is one interval after the start. Destruction wakes the thread at once, waits for
// a run in progress to finish, and joins: after it the task never runs again.
//
// Thread-safety: the task runs on the periodic's thread only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace hourglass {

class Periodic {
 public:
  Periodic(std::chrono::milliseconds interval, std::function<void()> task);
  ~Periodic();
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace hourglass
