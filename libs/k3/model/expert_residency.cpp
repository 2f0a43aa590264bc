#include "k3/model/expert_residency.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "k3/io/error.h"
#include "k3/io/file_io.h"

namespace k3::model {

namespace {
// O_DIRECT needs file offset, length and buffer aligned to the logical block
// size; a page satisfies every block size up to 4 KiB.
constexpr uint64_t kAlign = 4096;
uint64_t alignDown(uint64_t v) { return v & ~(kAlign - 1); }
uint64_t alignUp(uint64_t v) { return alignDown(v + kAlign - 1); }
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

ExpertLease& ExpertLease::operator=(ExpertLease&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    weights_ = o.weights_;
    index_ = o.index_;
    slot_ = o.slot_;
    o.owner_ = nullptr;
    o.weights_ = nullptr;
    o.slot_ = -1;
  }
  return *this;
}

void ExpertLease::reset() {
  if (owner_ && slot_ >= 0) owner_->release(slot_);
  owner_ = nullptr;
  weights_ = nullptr;
  slot_ = -1;
}

ExpertResidency::ExpertResidency(const ModelWeights& w, uint64_t budgetBytes, ResidencyOptions opts)
    : w_(w), budget_(budgetBytes), opts_(opts), numExperts_(w.config().numExperts),
      firstMoe_(w.config().firstKDenseReplace) {
  const int moeLayers = std::max(0, w.config().numLayers - firstMoe_);
  const size_t keys = static_cast<size_t>(moeLayers) * static_cast<size_t>(numExperts_);
  if (!bounded() || w.bytesPerExpert() == 0) {
    budget_ = 0;
    seen_.assign(keys, 0);
    handOrder_.reserve(static_cast<size_t>(numExperts_));
    return;
  }
  // An expert's range starts anywhere inside a page: widened to pages it
  // spans at most one page more than its own bytes rounded up.
  stride_ = alignUp(w.bytesPerExpert()) + kAlign;
  const size_t slots = std::max<uint64_t>(1, budget_ / stride_);
  // Not touched here: a slot's pages become resident when first read into.
  void* p = std::aligned_alloc(kAlign, slots * stride_);
  if (!p) fail(ErrorKind::Io, w.dir(), ": cannot allocate ", slots * stride_, " bytes of expert slots");
  pool_ = {static_cast<uint8_t*>(p), std::free};
  slots_.resize(slots);
  for (size_t s = slots; s-- > 0;) freeSlots_.push_back(static_cast<int32_t>(s));
  slotOf_.assign(keys, -1);
  everRead_.assign(keys, 0);
  std::vector<dev_t> devices;  // the file systems the shards are on, in first-seen order
  for (const auto& s : w.shards()) {
    const int fd = ::open(s.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      closeFiles();
      failErrno(err, s.path(), "cannot open for expert reads");
    }
    fds_.push_back(fd);
    // tmpfs and some others refuse O_DIRECT: those shards read through the page cache.
    directFds_.push_back(opts_.direct ? ::open(s.path().c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT) : -1);
    struct stat st {};
    const dev_t dev = ::fstat(fd, &st) == 0 ? st.st_dev : 0;
    auto it = std::find(devices.begin(), devices.end(), dev);
    queueOf_.push_back(static_cast<size_t>(it - devices.begin()));
    if (it == devices.end()) devices.push_back(dev);
  }
  directRefused_.assign(fds_.size(), 0);
  dropCachedExperts();
  loadQueues_.resize(devices.size());
  queuedTo_.assign(devices.size(), 0);
  for (size_t q = 0; q < devices.size(); ++q) loadCvs_.emplace_back();
  stats_.readQueues = devices.size();
  const size_t loaders = std::max<size_t>(1, opts_.loaders);
  for (size_t q = 0; q < devices.size(); ++q)
    for (size_t i = 0; i < loaders; ++i) loaders_.emplace_back([this, q] { loaderLoop(q); });
}

ExpertResidency::~ExpertResidency() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  for (auto& cv : loadCvs_) cv.notify_all();
  for (auto& t : loaders_) t.join();
  closeFiles();
}

void ExpertResidency::closeFiles() {
  for (int fd : fds_) ::close(fd);
  for (int fd : directFds_)
    if (fd >= 0) ::close(fd);
  fds_.clear();
  directFds_.clear();
}

void ExpertResidency::dropCachedExperts() const {
  // Merged runs of adjacent experts, one fadvise each.
  std::vector<const ExpertWeights*> all;
  for (int l = firstMoe_; l < w_.config().numLayers; ++l)
    for (const auto& e : w_.layer(l).moeW.experts) all.push_back(&e);
  std::sort(all.begin(), all.end(), [](const ExpertWeights* a, const ExpertWeights* b) {
    return a->shard != b->shard ? a->shard < b->shard : a->offset < b->offset;
  });
  for (size_t i = 0; i < all.size();) {
    const uint32_t shard = all[i]->shard;
    const uint64_t begin = all[i]->offset;
    uint64_t end = begin + all[i]->bytes;
    for (++i; i < all.size() && all[i]->shard == shard && all[i]->offset == end; ++i) end += all[i]->bytes;
    // Advice only: whole unmapped clean pages inside the range go, nothing else.
    ::posix_fadvise(fds_[shard], static_cast<off_t>(begin), static_cast<off_t>(end - begin), POSIX_FADV_DONTNEED);
  }
}

size_t ExpertResidency::key(int layer, int id) const {
  return static_cast<size_t>(layer - firstMoe_) * static_cast<size_t>(numExperts_) + static_cast<size_t>(id);
}

const ExpertWeights& ExpertResidency::expert(size_t k) const {
  const int layer = static_cast<int>(k / static_cast<size_t>(numExperts_)) + firstMoe_;
  return w_.layer(layer).moeW.experts[k % static_cast<size_t>(numExperts_)];
}

void ExpertResidency::willUse(int layer, const int* ids, size_t n, const size_t* rows) {
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= numExperts_ || (i > 0 && ids[i] <= ids[i - 1]))
      fail(ErrorKind::Internal, "ExpertResidency::willUse: layer ", layer, ": expert ids not unique ascending in [0, ",
           numExperts_, ")");
    const ExpertWeights& e = w_.layer(layer).moeW.experts[static_cast<size_t>(ids[i])];
    if (bounded() && e.bytes != w_.bytesPerExpert())
      fail(ErrorKind::Unsupported, w_.dir(), ": layer ", layer, " expert ", ids[i],
           ": its six tensors are not one contiguous range; run without --expert-gb");
  }
  std::lock_guard<std::mutex> lock(mu_);
  // The previous list's experts not handed out are owed no more.
  for (size_t k : list_) {
    const int32_t s = bounded() ? slotOf_[k] : -1;
    if (s >= 0 && slots_[static_cast<size_t>(s)].owed) {
      slots_[static_cast<size_t>(s)].owed = false;
      refreshLocked(s);
    }
  }
  list_.clear();
  pending_.clear();
  readyQueue_.clear();
  pendingFrom_ = handedOut_ = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = key(layer, ids[i]);
    list_.push_back(k);
    if (!bounded()) continue;
    const int32_t s = slotOf_[k];
    if (s < 0) {
      pending_.push_back(i);
      continue;
    }
    Slot& sl = slots_[static_cast<size_t>(s)];
    sl.owed = true;
    sl.listIndex = i;
    unlinkLocked(s);
    if (sl.state != SlotState::Loading) readyQueue_.push_back(s);  // a loading one queues itself when done
  }
  if (bounded()) {
    interleavePendingLocked();
    scheduleLocked();
    return;
  }
  handOrder_.resize(n);
  for (size_t i = 0; i < n; ++i) handOrder_[i] = i;
  auto heavier = [rows](size_t a, size_t b) { return rows[a] > rows[b]; };
  // Already in order (a decode step: one row each) needs no sort, nor its buffer.
  if (rows && !std::is_sorted(handOrder_.begin(), handOrder_.end(), heavier))
    std::stable_sort(handOrder_.begin(), handOrder_.end(), heavier);
}

void ExpertResidency::interleavePendingLocked() {
  // A spread container holds each layer's experts as one id range per drive:
  // in id order, a budget of fewer slots than the list would read the first
  // drive's range before the second's. Round-robin over the queues instead,
  // each in id order, so every drive has reads from the start.
  if (loadQueues_.size() < 2 || pending_.size() < 2) return;
  std::vector<std::vector<size_t>>& byQueue = pendingByQueue_;  // kept: no allocation per token
  byQueue.resize(loadQueues_.size());
  for (auto& q : byQueue) q.clear();
  for (size_t i : pending_) byQueue[queueOf_[expert(list_[i]).shard]].push_back(i);
  pending_.clear();
  for (size_t at = 0, added = 1; added; ++at) {
    added = 0;
    for (const auto& q : byQueue)
      if (at < q.size()) {
        pending_.push_back(q[at]);
        ++added;
      }
  }
}

ExpertLease ExpertResidency::next() {
  std::unique_lock<std::mutex> lock(mu_);
  ExpertLease l;
  if (!bounded()) {
    if (handedOut_ == list_.size()) return l;
    const size_t i = handOrder_[handedOut_++];
    const size_t k = list_[i];
    if (!seen_[k]) {
      seen_[k] = 1;
      stats_.expertBytes += w_.bytesPerExpert();
      stats_.residentBytes += w_.bytesPerExpert();
    }
    l.weights_ = &expert(k);
    l.index_ = i;
    return l;
  }
  while (readyQueue_.empty()) {
    if (handedOut_ == list_.size()) return l;
    if (waiting_++ == 0) waitingSince_ = Clock::now();
    readyCv_.wait(lock);
    if (--waiting_ == 0) stats_.waitSeconds += since(waitingSince_);
  }
  const int32_t s = readyQueue_.front();
  readyQueue_.pop_front();
  if (++handedOut_ == list_.size()) readyCv_.notify_all();  // the other takers are done
  Slot& sl = slots_[static_cast<size_t>(s)];
  sl.owed = false;
  if (sl.state == SlotState::Failed) {
    const std::exception_ptr err = sl.error;
    refreshLocked(s);  // frees it
    scheduleLocked();
    lock.unlock();
    std::rethrow_exception(err);
  }
  ++sl.pins;
  l.owner_ = this;
  l.weights_ = &sl.view;
  l.index_ = sl.listIndex;
  l.slot_ = s;
  return l;
}

uint64_t ExpertResidency::bytesPerExpert() const { return w_.bytesPerExpert(); }

void ExpertResidency::release(int32_t s) {
  std::lock_guard<std::mutex> lock(mu_);
  --slots_[static_cast<size_t>(s)].pins;
  unlinkLocked(s);  // re-linked at the most recently used end
  refreshLocked(s);
  scheduleLocked();
}

ResidencyStats ExpertResidency::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ResidencyStats r = stats_;
  r.budgetBytes = budget_;
  return r;
}

void ExpertResidency::unlinkLocked(int32_t s) {
  Slot& sl = slots_[static_cast<size_t>(s)];
  if (!sl.linked) return;
  (sl.prev >= 0 ? slots_[static_cast<size_t>(sl.prev)].next : lruHead_) = sl.next;
  (sl.next >= 0 ? slots_[static_cast<size_t>(sl.next)].prev : lruTail_) = sl.prev;
  sl.prev = sl.next = -1;
  sl.linked = false;
}

void ExpertResidency::refreshLocked(int32_t s) {
  Slot& sl = slots_[static_cast<size_t>(s)];
  if (sl.state == SlotState::Failed && !sl.owed && sl.pins == 0) {
    unlinkLocked(s);
    slotOf_[static_cast<size_t>(sl.key)] = -1;
    sl.key = -1;
    sl.state = SlotState::Free;
    sl.error = nullptr;
    stats_.residentBytes -= stride_;
    freeSlots_.push_back(s);
    return;
  }
  const bool evictable = sl.state == SlotState::Ready && !sl.owed && sl.pins == 0;
  if (!evictable) {
    unlinkLocked(s);
  } else if (!sl.linked) {
    sl.prev = lruTail_;
    sl.next = -1;
    (lruTail_ >= 0 ? slots_[static_cast<size_t>(lruTail_)].next : lruHead_) = s;
    lruTail_ = s;
    sl.linked = true;
  }
}

void ExpertResidency::scheduleLocked() {
  std::vector<uint8_t>& queued = queuedTo_;  // sized once: no allocation under the lock
  std::fill(queued.begin(), queued.end(), 0);
  while (pendingFrom_ < pending_.size()) {
    int32_t s;
    if (!freeSlots_.empty()) {
      s = freeSlots_.back();
      freeSlots_.pop_back();
      stats_.residentBytes += stride_;
    } else if (lruHead_ >= 0) {
      s = lruHead_;
      unlinkLocked(s);
      slotOf_[static_cast<size_t>(slots_[static_cast<size_t>(s)].key)] = -1;
    } else {
      break;  // every slot is leased, loading or owed: wait for a release
    }
    const size_t i = pending_[pendingFrom_++];
    const size_t k = list_[i];
    Slot& sl = slots_[static_cast<size_t>(s)];
    sl.key = static_cast<int64_t>(k);
    sl.state = SlotState::Loading;
    sl.owed = true;
    sl.listIndex = i;
    sl.error = nullptr;
    // Same views as the mapping's, rebased onto where the read puts the bytes.
    const ExpertWeights& e = expert(k);
    const uint8_t* base = w_.shards()[e.shard].mapping().data() + e.offset;
    uint8_t* dst = pool_.get() + static_cast<size_t>(s) * stride_ + (e.offset - alignDown(e.offset));
    auto rebase = [&](WeightView v) {
      v.data = dst + (static_cast<const uint8_t*>(v.data) - base);
      v.scales = dst + (static_cast<const uint8_t*>(v.scales) - base);
      return v;
    };
    sl.view = e;
    sl.view.w1 = rebase(e.w1);
    sl.view.w2 = rebase(e.w2);
    sl.view.w3 = rebase(e.w3);
    slotOf_[k] = s;
    const size_t q = queueOf_[e.shard];
    loadQueues_[q].push_back(s);
    queued[q] = 1;
  }
  for (size_t q = 0; q < queued.size(); ++q)
    if (queued[q]) loadCvs_[q].notify_all();
}

void ExpertResidency::loaderLoop(size_t queue) {
  std::unique_lock<std::mutex> lock(mu_);
  std::deque<int32_t>& todo = loadQueues_[queue];
  for (;;) {
    loadCvs_[queue].wait(lock, [&] { return stop_ || !todo.empty(); });
    if (stop_) return;
    const int32_t s = todo.front();
    todo.pop_front();
    const size_t k = static_cast<size_t>(slots_[static_cast<size_t>(s)].key);
    const uint32_t shard = expert(k).shard;
    const int directFd = directRefused_[shard] ? -1 : directFds_[shard];
    if (inFlight_++ == 0) inFlightSince_ = Clock::now();
    lock.unlock();
    std::exception_ptr err;
    bool refused = false;
    uint64_t disk = 0;
    try {
      disk = readExpert(static_cast<size_t>(s), k, directFd, refused);
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (--inFlight_ == 0) stats_.readSeconds += since(inFlightSince_);
    if (refused) directRefused_[shard] = 1;
    Slot& sl = slots_[static_cast<size_t>(s)];
    if (err) {
      sl.state = SlotState::Failed;
      sl.error = err;
    } else {
      sl.state = SlotState::Ready;
      ++stats_.reads;
      if (!everRead_[k]) {
        everRead_[k] = 1;
        ++stats_.uniqueReads;
      }
      stats_.directReads += directFd >= 0 && !refused;
      stats_.diskBytes += disk;
      stats_.expertBytes += w_.bytesPerExpert();
    }
    if (sl.owed) {
      readyQueue_.push_back(s);
      readyCv_.notify_one();
    } else {
      refreshLocked(s);  // its list was dropped: evictable (or freed if it failed)
      scheduleLocked();
    }
  }
}

uint64_t ExpertResidency::readExpert(size_t s, size_t k, int directFd, bool& refused) {
  const ExpertWeights& e = expert(k);
  const std::string& path = w_.shards()[e.shard].path();
  const uint64_t start = alignDown(e.offset), lead = e.offset - start;
  uint8_t* slot = pool_.get() + s * stride_;
  auto endOfFile = [&] {
    const size_t layer = k / static_cast<size_t>(numExperts_) + static_cast<size_t>(firstMoe_);
    fail(ErrorKind::Format, path, ": unexpected end of file reading layer ", layer, " expert ",
         k % static_cast<size_t>(numExperts_));
  };
  if (directFd >= 0) {
    // Whole pages around the expert, straight into the slot; a short read
    // happens only at the end of the file, past the expert.
    const uint64_t len = alignUp(e.offset + e.bytes) - start, need = lead + e.bytes;
    uint64_t done = 0;
    while (done < need) {
      const ssize_t r = ::pread(directFd, slot + done, len - done, static_cast<off_t>(start + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && errno == EINVAL && done == 0) {  // alignment this file system will not take
        refused = true;
        break;
      }
      if (r < 0) failErrno(errno, path, "expert read (O_DIRECT) failed");
      if (r == 0) endOfFile();
      done += static_cast<uint64_t>(r);
    }
    if (!refused) return len;
  }
  if (preadFull(fds_[e.shard], slot + lead, e.bytes, e.offset, path) != e.bytes) endOfFile();
  return e.bytes;
}

}  // namespace k3::model
