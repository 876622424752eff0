// Runs this process out of file descriptors, as a connection flood would: lowers the soft open
// file limit to at most 1024 and duplicates `fd` until EMFILE. Release() (or the destructor)
// closes the duplicates and restores the limit.
//
//   DescriptorsTaken taken(STDERR_FILENO);
//   ASSERT_TRUE(taken.exhausted());
//   ... what needs a descriptor fails with EMFILE ...
//   taken.Release();
//
// Thread-safety: one thread; the limit is the whole process's.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace hourglass::testing {

class DescriptorsTaken {
 public:
  explicit DescriptorsTaken(int fd) {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = std::min<rlim_t>(saved_.rlim_cur, 1024);
    setrlimit(RLIMIT_NOFILE, &low);
    for (int d; (d = dup(fd)) >= 0;) taken_.push_back(d);
    exhausted_ = errno == EMFILE;
  }
  ~DescriptorsTaken() { Release(); }
  DescriptorsTaken(const DescriptorsTaken&) = delete;
  DescriptorsTaken& operator=(const DescriptorsTaken&) = delete;

  bool exhausted() const { return exhausted_; }
  void Release() {
    for (int d : taken_) close(d);
    if (!taken_.empty()) setrlimit(RLIMIT_NOFILE, &saved_);
    taken_.clear();
  }

 private:
  rlimit saved_{};
  std::vector<int> taken_;
  bool exhausted_ = false;
};

}  // namespace hourglass::testing
