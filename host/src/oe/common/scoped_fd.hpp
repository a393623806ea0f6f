// A file descriptor closed when it goes out of scope: for the host's own short-lived opens (a
// lock file, a log read). proc-kit has its own, movable one for the pipes of child processes.
#pragma once

#include <unistd.h>

namespace oe {

class ScopedFd {
 public:
  explicit ScopedFd(int fd) noexcept : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }

 private:
  int fd_;
};

}  // namespace oe
