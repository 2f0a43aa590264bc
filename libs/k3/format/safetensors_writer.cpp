#include "k3/format/safetensors_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_set>

#include "k3/io/error.h"
#include "k3/io/json_text.h"
#include "k3/io/output_file.h"
#include "k3/io/sha256.h"

namespace k3 {
namespace {

template <typename T>
class BlockingQueue {
 public:
  void push(T v) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      q_.push_back(std::move(v));
    }
    cv_.notify_one();
  }
  // False once the queue is closed and drained.
  bool pop(T& out) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return closed_ || !q_.empty(); });
    if (q_.empty()) return false;
    out = std::move(q_.front());
    q_.pop_front();
    return true;
  }
  void close() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> q_;
  bool closed_ = false;
};

constexpr size_t kNone = ~size_t{0};

}  // namespace

uint64_t TensorSpec::nbytes() const {
  unsigned __int128 bits = dtypeBits(dtype);
  for (uint64_t d : shape) bits *= d;
  return static_cast<uint64_t>(bits / 8);
}

WriteBufferPool::WriteBufferPool(size_t chunkBytes, size_t chunkCount) try
    : chunks_(chunkBytes, std::max<size_t>(chunkCount, 2)) {
} catch (const std::bad_alloc&) {
  fail(ErrorKind::Internal, "write buffer pool: out of memory");
}

struct SafetensorsWriter::Pipeline {
  struct Chunk {
    size_t buf = kNone;
    uint64_t offset = 0;
    size_t len = 0;
  };

  WriteBufferPool* pool = nullptr;
  int fd = -1;
  std::atomic<bool> direct{false};
  std::string tmp;
  std::function<void(uint64_t, const uint8_t*, size_t)> observer;
  bool hashFile = true;
  WriterPhases* phases = nullptr;
  Sha256 sha;

  BlockingQueue<size_t> freeQ;
  BlockingQueue<Chunk> hashQ, observeQ, writeQ;
  std::thread hashThread, observeThread;
  std::vector<std::thread> ioThreads;
  bool joined = false;

  std::mutex errMu;
  std::exception_ptr error;
  std::atomic<bool> failed{false};

  Chunk cur;

  void setError(std::exception_ptr e) {
    std::lock_guard<std::mutex> lk(errMu);
    if (!error) error = e;
    failed = true;
  }
  void rethrowIfFailed() {
    if (!failed) return;
    std::lock_guard<std::mutex> lk(errMu);
    std::rethrow_exception(error);
  }

  void hashLoop() {
    Chunk c;
    while (hashQ.pop(c)) {
      if (!failed && hashFile) {
        try {
          const PhaseScope t(phases ? &phases->hash : nullptr);
          sha.update(pool->buffer(c.buf), c.len);
        } catch (...) {
          setError(std::current_exception());
        }
      }
      observeQ.push(c);
    }
  }
  void observeLoop() {
    Chunk c;
    while (observeQ.pop(c)) {
      if (!failed && observer) {
        try {
          const PhaseScope t(phases ? &phases->observe : nullptr);
          observer(c.offset, pool->buffer(c.buf), c.len);
        } catch (...) {
          setError(std::current_exception());
        }
      }
      writeQ.push(c);
    }
  }
  void writeLoop() {
    Chunk c;
    while (writeQ.pop(c)) {
      if (!failed) {
        try {
          const PhaseScope t(phases ? &phases->write : nullptr);
          writeChunk(c);
        } catch (...) {
          setError(std::current_exception());
        }
      }
      freeQ.push(c.buf);
    }
  }
  void writeChunk(const Chunk& c) {
    uint8_t* p = pool->buffer(c.buf);
    size_t len = c.len;
    if (direct) {
      // O_DIRECT needs block-multiple lengths: zero-pad the tail; finish()
      // truncates the file back to its exact size.
      const size_t padded = (len + WriteBufferPool::kAlign - 1) / WriteBufferPool::kAlign *
                            WriteBufferPool::kAlign;
      std::memset(p + len, 0, padded - len);
      len = padded;
    }
    size_t done = 0;
    while (done < len) {
      ssize_t n = ::pwrite(fd, p + done, len - done, static_cast<off_t>(c.offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EINVAL && direct) {
          // Filesystem accepted O_DIRECT at open but not for this write: go buffered.
          direct = false;
          ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT);
          len = c.len;
          continue;
        }
        failErrno(errno, tmp, "write failed");
      }
      done += static_cast<size_t>(n);
    }
  }

  void start(size_t nio) {
    for (size_t i = 0; i < pool->chunkCount(); ++i) freeQ.push(i);
    hashThread = std::thread([this] { hashLoop(); });
    observeThread = std::thread([this] { observeLoop(); });
    for (size_t i = 0; i < std::max<size_t>(nio, 1); ++i)
      ioThreads.emplace_back([this] { writeLoop(); });
  }
  void drain() {
    if (joined) return;
    joined = true;
    hashQ.close();
    if (hashThread.joinable()) hashThread.join();
    observeQ.close();
    if (observeThread.joinable()) observeThread.join();
    writeQ.close();
    for (auto& t : ioThreads)
      if (t.joinable()) t.join();
    freeQ.close();
  }
  ~Pipeline() {
    failed = true;
    drain();
    if (fd >= 0) ::close(fd);
  }
};

std::string SafetensorsWriter::encodeHeader(const std::vector<TensorSpec>& tensors) {
  std::string json = "{";
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    if (i) json += ',';
    appendJsonString(json, t.name);
    json += ":{\"dtype\":";
    appendJsonString(json, dtypeName(t.dtype));
    json += ",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (d) json += ',';
      json += std::to_string(t.shape[d]);
    }
    const uint64_t end = offset + t.nbytes();
    json += cat("],\"data_offsets\":[", offset, ",", end, "]}");
    offset = end;
  }
  json += '}';
  while ((8 + json.size()) % 8 != 0) json += ' ';
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + json;
}

SafetensorsWriter::SafetensorsWriter(std::string finalPath, std::vector<TensorSpec> tensors)
    : SafetensorsWriter(std::move(finalPath), std::move(tensors), Options{}) {}

SafetensorsWriter::SafetensorsWriter(std::string finalPath, std::vector<TensorSpec> tensors,
                                     Options options)
    : finalPath_(std::move(finalPath)), tensors_(std::move(tensors)) {
  tempPath_ = options.tempPath.empty() ? finalPath_ + ".tmp" : options.tempPath;
  {
    std::unordered_set<std::string_view> names;
    for (const TensorSpec& t : tensors_)
      if (!names.insert(t.name).second)
        fail(ErrorKind::Duplicate, finalPath_, ": tensor '", t.name, "' declared twice");
  }
  header_ = encodeHeader(tensors_);
  uint64_t offset = header_.size();
  for (const TensorSpec& t : tensors_) {
    offsets_.push_back(offset);
    offset += t.nbytes();
  }
  fileSize_ = offset;

  pipe_ = std::make_unique<Pipeline>();
  if (!options.pool) {
    ownedPool_ = std::make_unique<WriteBufferPool>();
    options.pool = ownedPool_.get();
  }
  pipe_->pool = options.pool;
  pipe_->tmp = tempPath_;
  pipe_->observer = std::move(options.observer);
  pipe_->hashFile = options.hashFile;
  pipe_->phases = options.phases;
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  int fd = -1;
  if (options.directIo) {
    fd = ::open(tempPath_.c_str(), flags | O_DIRECT, 0644);
    pipe_->direct = fd >= 0;
  }
  if (fd < 0) fd = ::open(tempPath_.c_str(), flags, 0644);
  if (fd < 0) failErrno(errno, tempPath_, "cannot create");
  pipe_->fd = fd;
  // Reserve the space now: a full disk fails here, before any work.
  if (fileSize_ > 0) {
    int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(fileSize_));
    if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
      pipe_.reset();
      ::unlink(tempPath_.c_str());
      failErrno(rc, tempPath_, cat("cannot reserve ", fileSize_, " bytes"));
    }
  }
  pipe_->start(options.ioThreads);
  write(header_.data(), header_.size());
}

SafetensorsWriter::~SafetensorsWriter() { abort(); }

std::span<uint8_t> SafetensorsWriter::reserve(size_t maxBytes) {
  Pipeline& p = *pipe_;
  if (written_ >= fileSize_)
    fail(ErrorKind::Internal, tempPath_, ": write beyond the declared size of ", fileSize_, " bytes");
  if (p.cur.buf == kNone) {
    p.rethrowIfFailed();
    size_t b = kNone;
    const PhaseScope t(p.phases ? &p.phases->freeWait : nullptr);
    if (!p.freeQ.pop(b)) fail(ErrorKind::Internal, tempPath_, ": writer pipeline closed");
    p.rethrowIfFailed();
    p.cur = {b, written_, 0};
  }
  const size_t room = p.pool->chunkBytes() - p.cur.len;
  const uint64_t left = fileSize_ - written_;
  const size_t n = static_cast<size_t>(std::min<uint64_t>({room, left, maxBytes}));
  return {p.pool->buffer(p.cur.buf) + p.cur.len, n};
}

void SafetensorsWriter::commit(size_t n) {
  Pipeline& p = *pipe_;
  p.cur.len += n;
  written_ += n;
  if (p.cur.len == p.pool->chunkBytes() || written_ == fileSize_) submitCurrent();
}

void SafetensorsWriter::submitCurrent() {
  Pipeline& p = *pipe_;
  if (p.cur.buf == kNone) return;
  p.hashQ.push(p.cur);
  p.cur = {};
}

void SafetensorsWriter::write(const void* data, size_t n) {
  const auto* src = static_cast<const uint8_t*>(data);
  while (n > 0) {
    auto span = reserve(n);
    std::memcpy(span.data(), src, span.size());
    commit(span.size());
    src += span.size();
    n -= span.size();
  }
}

void SafetensorsWriter::finish() {
  if (!pipe_) fail(ErrorKind::Internal, finalPath_, ": writer already finished or aborted");
  if (written_ != fileSize_)
    fail(ErrorKind::Internal, tempPath_, ": streamed ", written_, " of ", fileSize_, " declared bytes");
  Pipeline& p = *pipe_;
  submitCurrent();
  {
    const PhaseScope t(p.phases ? &p.phases->drain : nullptr);
    p.drain();
  }
  p.rethrowIfFailed();
  if (p.hashFile) sha256_ = p.sha.finishHex();
  auto bail = [&](int e, const std::string& path, const char* what) {
    abort();
    failErrno(e, path, what);
  };
  if (::ftruncate(p.fd, static_cast<off_t>(fileSize_)) != 0) bail(errno, tempPath_, "truncate failed");
  {
    const PhaseScope t(p.phases ? &p.phases->sync : nullptr);
    if (::fdatasync(p.fd) != 0) bail(errno, tempPath_, "fsync failed");
  }
  if (::close(p.fd) != 0) {
    p.fd = -1;
    bail(errno, tempPath_, "close failed");
  }
  p.fd = -1;
  if (::rename(tempPath_.c_str(), finalPath_.c_str()) != 0) bail(errno, finalPath_, "rename failed");
  pipe_.reset();
  fsyncDirectory(parentDirectory(finalPath_));
}

void SafetensorsWriter::abort() noexcept {
  if (!pipe_) return;
  pipe_.reset();
  ::unlink(tempPath_.c_str());
}

}  // namespace k3
