// One file descriptor held in reserve, so that a listener out of descriptors can still accept a
// waiting connection and refuse it at once, instead of leaving it in the listen queue until the
// client gives up (the remedy libev and nginx use).
//
//   SpareDescriptor spare;
//   if (accept failed with EMFILE) spare.Lend([&] { accept, answer 503, close; });
//
// Thread-safety: one thread at a time (the listener's).
#pragma once

#include <fcntl.h>
#include <unistd.h>

namespace hourglass {

class SpareDescriptor {
 public:
  SpareDescriptor() : fd_(Open()) {}
  ~SpareDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  SpareDescriptor(const SpareDescriptor&) = delete;
  SpareDescriptor& operator=(const SpareDescriptor&) = delete;

  // Frees the spare, runs `use` (which may open one descriptor and must close it), then takes the
  // spare back. False when there was none to free or it could not be taken back. A spare not
  // taken back is tried again at the next Lend (descriptors may have been freed since).
  template <typename Use>
  bool Lend(Use&& use) {
    if (fd_ < 0) fd_ = Open();
    if (fd_ < 0) return false;
    ::close(fd_);
    use();
    fd_ = Open();
    return fd_ >= 0;
  }

 private:
  static int Open() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }
  int fd_;
};

}  // namespace hourglass
