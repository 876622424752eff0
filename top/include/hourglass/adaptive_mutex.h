// A mutex that spins briefly before it sleeps (glibc's adaptive kind): for a lock held for a
// fraction of a microsecond by threads that each run on a core of their own, where sleeping and
// being woken cost far more than the wait. A Lockable: std::lock_guard and std::unique_lock take
// it.
//
//   AdaptiveMutex mu;
//   std::lock_guard lock(mu);
//
// Thread-safety: as std::mutex. Neither copied nor moved.
#pragma once

#include <pthread.h>

namespace hourglass {

class AdaptiveMutex {
 public:
  AdaptiveMutex() {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&mu_, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&mu_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() { pthread_mutex_lock(&mu_); }
  bool try_lock() { return pthread_mutex_trylock(&mu_) == 0; }
  void unlock() { pthread_mutex_unlock(&mu_); }

 private:
  pthread_mutex_t mu_;
};

}  // namespace hourglass
