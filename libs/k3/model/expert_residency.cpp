#include "k3/model/expert_residency.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "k3/io/error.h"

namespace k3::model {

ExpertResidency::ExpertResidency(const ModelWeights& w, uint64_t budgetBytes)
    : w_(w), budget_(budgetBytes), numExperts_(w.config().numExperts), firstMoe_(w.config().firstKDenseReplace) {
  const int moeLayers = std::max(0, w.config().numLayers - firstMoe_);
  const size_t keys = static_cast<size_t>(moeLayers) * static_cast<size_t>(numExperts_);
  if (!bounded() || w.bytesPerExpert() == 0) {
    budget_ = 0;
    seen_.assign(keys, 0);
    return;
  }
  const size_t slots = std::max<uint64_t>(1, budget_ / w.bytesPerExpert());
  pool_.reset(new uint8_t[slots * w.bytesPerExpert()]);  // default-init: no page touched yet
  slotKey_.assign(slots, -1);
  slotUse_.assign(slots, 0);
  slotView_.resize(slots);
  slotOf_.assign(keys, -1);
  for (const auto& s : w.shards()) {
    const int fd = ::open(s.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) failErrno(errno, s.path(), "cannot open for expert reads");
    fds_.push_back(fd);
  }
}

ExpertResidency::~ExpertResidency() {
  for (int fd : fds_) ::close(fd);
}

size_t ExpertResidency::key(int layer, int id) const {
  return static_cast<size_t>(layer - firstMoe_) * static_cast<size_t>(numExperts_) + static_cast<size_t>(id);
}

void ExpertResidency::willUse(int layer, const int* ids, size_t n) {
  if (!bounded()) return;
  for (size_t i = 0; i < n; ++i) {
    if (slotOf_[key(layer, ids[i])] >= 0) continue;
    const ExpertWeights& e = w_.layer(layer).moeW.experts[static_cast<size_t>(ids[i])];
    if (e.bytes)
      ::posix_fadvise(fds_[e.shard], static_cast<off_t>(e.offset), static_cast<off_t>(e.bytes), POSIX_FADV_WILLNEED);
  }
}

void ExpertResidency::touch(size_t slot) { slotUse_[slot] = ++tick_; }

size_t ExpertResidency::evictOne() {
  size_t best = 0;
  for (size_t s = 1; s < slotKey_.size(); ++s)
    if (slotKey_[s] < 0 || (slotKey_[best] >= 0 && slotUse_[s] < slotUse_[best])) best = s;
  if (slotKey_[best] >= 0) {
    slotOf_[static_cast<size_t>(slotKey_[best])] = -1;
    slotKey_[best] = -1;
    resident_ -= w_.bytesPerExpert();
  }
  return best;
}

const ExpertWeights& ExpertResidency::acquire(int layer, int id) {
  const ExpertWeights& e = w_.layer(layer).moeW.experts[static_cast<size_t>(id)];
  const size_t k = key(layer, id);
  if (!bounded()) {
    if (!seen_[k]) {
      seen_[k] = 1;
      bytesRead_ += w_.bytesPerExpert();
      resident_ += w_.bytesPerExpert();
    }
    return e;
  }
  if (slotOf_[k] >= 0) {
    touch(static_cast<size_t>(slotOf_[k]));
    return slotView_[static_cast<size_t>(slotOf_[k])];
  }
  if (e.bytes != w_.bytesPerExpert())
    fail(ErrorKind::Unsupported, w_.dir(), ": layer ", layer, " expert ", id,
         ": its six tensors are not one contiguous range; run without --expert-gb");
  const size_t slot = evictOne();
  uint8_t* dst = pool_.get() + slot * w_.bytesPerExpert();
  const SafetensorsFile& shard = w_.shards()[e.shard];
  for (uint64_t done = 0; done < e.bytes;) {
    const ssize_t r = ::pread(fds_[e.shard], dst + done, e.bytes - done, static_cast<off_t>(e.offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) failErrno(errno, shard.path(), "expert read failed");
    if (r == 0) fail(ErrorKind::Format, shard.path(), ": unexpected end of file reading layer ", layer, " expert ", id);
    done += static_cast<uint64_t>(r);
  }
  bytesRead_ += e.bytes;
  resident_ += e.bytes;
  // Same views, rebased from the mapping onto the slot.
  const uint8_t* base = shard.mapping().data() + e.offset;
  auto rebase = [&](WeightView v) {
    v.data = dst + (static_cast<const uint8_t*>(v.data) - base);
    v.scales = dst + (static_cast<const uint8_t*>(v.scales) - base);
    return v;
  };
  ExpertWeights& view = slotView_[slot];
  view = e;
  view.w1 = rebase(e.w1);
  view.w2 = rebase(e.w2);
  view.w3 = rebase(e.w3);
  slotKey_[slot] = static_cast<int64_t>(k);
  slotOf_[k] = static_cast<int32_t>(slot);
  touch(slot);
  return view;
}

}  // namespace k3::model
