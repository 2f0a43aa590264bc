#include "k3/io/planned_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "k3/io/error.h"
#include "k3/io/file_io.h"

namespace k3 {
namespace {

constexpr uint64_t kAlign = PlannedReadBuffers::kAlign;
uint64_t alignDown(uint64_t v) { return v / kAlign * kAlign; }
uint64_t alignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Buffered mode's hints reach this far ahead of the consumer; a longer range
// is hinted only this far, the kernel's sequential readahead covers its rest.
constexpr uint64_t kAdviseWindow = uint64_t{96} << 20;

[[noreturn]] void shrank(const std::string& path, uint64_t at) {
  fail(ErrorKind::SourceChanged, path, ": unexpected end of file at byte ", at,
       " (the source shard shrank while being read)");
}

}  // namespace

PlannedReadBuffers::PlannedReadBuffers(size_t blockBytes, size_t depth)
    : blockBytes_(std::max<size_t>(kAlign, alignUp(blockBytes))),
      slots_(blockBytes_ + 2 * kAlign, std::max<size_t>(depth, 1) + 1) {}

PlannedReader::PlannedReader(int fd, std::string path, uint64_t size, std::vector<ByteRange> ranges,
                             bool direct, PlannedReadBuffers& buffers, PlannedReadPhases* phases)
    : fd_(fd), path_(std::move(path)), size_(size), ranges_(std::move(ranges)), direct_(false),
      buffers_(buffers), phases_(phases) {
  std::erase_if(ranges_, [](const ByteRange& r) { return r.length == 0; });
  for (const ByteRange& r : ranges_)
    if (r.offset > size_ || r.length > size_ - r.offset)
      fail(ErrorKind::Internal, path_, ": planned read [", r.offset, ", +", r.length, ") beyond its ", size_,
           " bytes");
  if (direct) {
    flags_ = ::fcntl(fd_, F_GETFL);
    direct_ = flags_ >= 0 && ::fcntl(fd_, F_SETFL, flags_ | O_DIRECT) == 0;  // tmpfs refuses: buffered
  }
  if (!direct_) return;
  // Touching ranges merge; each run is cut into near-equal requests of at
  // most blockBytes whose inner boundaries fall on 4 KiB.
  const uint64_t block = buffers_.blockBytes();
  for (size_t i = 0; i < ranges_.size();) {
    const uint64_t begin = ranges_[i].offset;
    uint64_t end = begin + ranges_[i].length;
    for (++i; i < ranges_.size() && ranges_[i].offset == end; ++i) end += ranges_[i].length;
    const uint64_t n = (end - begin + block - 1) / block;
    uint64_t at = begin;
    for (uint64_t j = 1; j <= n; ++j) {
      const uint64_t cut = j == n ? end : alignDown(begin + (end - begin) * j / n);
      if (cut <= at) continue;
      pieces_.push_back({at, cut});
      at = cut;
    }
  }
  slots_.resize(buffers_.depth() + 1);
  const size_t threads = std::min(buffers_.depth(), pieces_.size());
  try {
    for (size_t t = 0; t < threads; ++t) threads_.emplace_back([this] { worker(); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    freed_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

PlannedReader::~PlannedReader() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  freed_.notify_all();
  for (auto& t : threads_) t.join();
  if (direct_) ::fcntl(fd_, F_SETFL, flags_);  // the caller's descriptor as it was
}

void PlannedReader::worker() {
  const size_t ring = slots_.size();
  for (;;) {
    size_t k;
    {
      std::unique_lock<std::mutex> lk(mu_);
      // Piece k reuses the slot of piece k - ring, which the consumer must have left.
      freed_.wait(lk, [&] { return stop_ || nextClaim_ >= pieces_.size() || nextClaim_ < held_ + ring; });
      if (stop_ || nextClaim_ >= pieces_.size()) return;
      k = nextClaim_++;
    }
    Slot got;
    try {
      const PhaseScope t(phases_ ? &phases_->io : nullptr);
      readPiece(pieces_[k], buffers_.slot(k % ring), got);
    } catch (...) {
      got.error = std::current_exception();
    }
    got.piece = k;
    {
      std::lock_guard<std::mutex> lk(mu_);
      slots_[k % ring] = got;
    }
    ready_.notify_all();
  }
}

void PlannedReader::readPiece(const Piece& p, uint8_t* buf, Slot& out) {
  const uint64_t start = alignDown(p.begin);
  const uint64_t want = alignUp(p.end) - start;  // past EOF the read is short
  const uint64_t need = p.end - start;
  uint64_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(fd_, buf + got, want - got, static_cast<off_t>(start + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL) {
        // Accepted O_DIRECT at fcntl but not for this read: read the file buffered from now on.
        const int flags = ::fcntl(fd_, F_GETFL);
        if (flags >= 0 && (flags & O_DIRECT) && ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) == 0) continue;
      }
      failErrno(errno, path_, "read failed");
    }
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
    if (got % kAlign != 0) break;  // short read: end of file
  }
  if (got < need) shrank(path_, start + got);
  out.data = buf + (p.begin - start);
}

void PlannedReader::read(void* dst, size_t n) {
  if (!direct_) return readBuffered(dst, n);
  auto* out = static_cast<uint8_t*>(dst);
  const size_t ring = slots_.size();
  while (n > 0) {
    if (held_ >= pieces_.size()) fail(ErrorKind::Internal, path_, ": read past the planned bytes");
    const Piece& p = pieces_[held_];
    Slot& s = slots_[held_ % ring];
    if (heldAt_ == 0) {
      std::unique_lock<std::mutex> lk(mu_);
      if (s.piece != held_) {
        const PhaseScope t(phases_ ? &phases_->wait : nullptr);
        ready_.wait(lk, [&] { return s.piece == held_; });
      }
    }
    if (s.error) std::rethrow_exception(s.error);
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, p.end - p.begin - heldAt_));
    std::memcpy(out, s.data + heldAt_, take);
    out += take;
    n -= take;
    heldAt_ += take;
    if (heldAt_ == p.end - p.begin) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        ++held_;
      }
      heldAt_ = 0;
      freed_.notify_all();
    }
  }
}

void PlannedReader::readBuffered(void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    if (range_ >= ranges_.size()) fail(ErrorKind::Internal, path_, ": read past the planned bytes");
    const ByteRange& r = ranges_[range_];
    if (inRange_ == 0) {
      consumedBytes_ += r.length;
      for (; advised_ < ranges_.size() && advisedBytes_ < consumedBytes_ + kAdviseWindow; ++advised_) {
        const ByteRange& a = ranges_[advised_];
        ::posix_fadvise(fd_, static_cast<off_t>(a.offset), static_cast<off_t>(std::min(a.length, kAdviseWindow)),
                        POSIX_FADV_WILLNEED);
        advisedBytes_ += a.length;
      }
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, r.length - inRange_));
    const uint64_t at = r.offset + inRange_;
    {
      const PhaseScope t(phases_ ? &phases_->wait : nullptr);
      if (preadFull(fd_, out, take, at, path_) != take) shrank(path_, at);
    }
    out += take;
    n -= take;
    inRange_ += take;
    if (inRange_ == r.length) {
      ++range_;
      inRange_ = 0;
    }
  }
}

}  // namespace k3
