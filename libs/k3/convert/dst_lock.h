// DstLock: one k3-repack writer per DST. Holds an exclusive flock on
// DST/.k3-repack.lock, which carries the holder's PID: a second writer (say
// with other --bits) fails at once with "in use by PID N" instead of both
// leaving mixed fragments. A lock left by a killed run is free (the kernel
// drops flocks with their process) and is simply taken over. Removed on release.
// Thread-safety: not thread-safe; one per run and DST (the lock is the
// process's).
#pragma once

#include <string>

namespace k3::convert {

class DstLock {
 public:
  // Throws k3::Error(Io) "DST: in use by PID N ..." when another process holds it.
  explicit DstLock(const std::string& dst);
  ~DstLock();
  DstLock(const DstLock&) = delete;
  DstLock& operator=(const DstLock&) = delete;

  const std::string& path() const { return path_; }
  // PID written in the lock file before we took it (a dead run's), or 0.
  long previousHolder() const { return previous_; }

 private:
  std::string path_;
  int fd_ = -1;
  long previous_ = 0;
};

}  // namespace k3::convert
