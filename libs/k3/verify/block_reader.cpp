#include "k3/verify/block_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3::verify {

BlockReader::BlockReader(const std::string& path, bool direct, AlignedBuffers& buffers)
    : path_(path), blockBytes_(buffers.bytesEach()), slots_(buffers.count()) {
  InputFile in = openInputFile(path, kShardInput);  // regular files only (a FIFO would block)
  fd_ = std::exchange(in.fd.fd, -1);
  // O_DIRECT set on the checked descriptor; a file system without it stays buffered.
  if (direct) {
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags | O_DIRECT);
  }
  if (!direct) ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  for (size_t i = 0; i < slots_.size(); ++i) slots_[i].data = buffers.at(i);
  thread_ = std::thread([this] { produce(); });
}

BlockReader::~BlockReader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  freed_.notify_all();
  thread_.join();
  ::close(fd_);
}

void BlockReader::produce() {
  uint64_t offset = 0;
  for (size_t at = 0;; at = (at + 1) % slots_.size()) {
    Slot& s = slots_[at];
    {
      std::unique_lock<std::mutex> lock(mu_);
      freed_.wait(lock, [&] { return stop_ || !s.full; });
      if (stop_) return;
    }
    size_t got = 0;
    int err = 0;
    while (got < blockBytes_) {
      ssize_t n = ::pread(fd_, s.data + got, blockBytes_ - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        err = errno;
        break;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
      if (got % 4096 != 0) break;  // short read at EOF (direct reads need aligned offsets)
    }
    std::lock_guard<std::mutex> lock(mu_);
    s.size = got;
    s.offset = offset;
    s.last = err != 0 || got < blockBytes_;
    s.full = true;
    error_ = err;
    filled_.notify_one();
    offset += got;
    if (s.last) return;
  }
}

BlockReader::Block BlockReader::next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (holding_) {
    Slot& prev = slots_[consumeAt_];
    const bool wasLast = prev.last;
    if (wasLast) return Block{nullptr, 0, prev.offset + prev.size};
    prev.full = false;
    holding_ = false;
    consumeAt_ = (consumeAt_ + 1) % slots_.size();
    freed_.notify_one();
  }
  Slot& s = slots_[consumeAt_];
  filled_.wait(lock, [&] { return s.full; });
  if (s.last && error_ != 0) failErrno(error_, path_, "read failed");
  holding_ = true;
  return Block{s.data, s.size, s.offset};
}

}  // namespace k3::verify
