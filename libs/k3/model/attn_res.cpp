#include "k3/model/attn_res.h"

#include <algorithm>
#include <cmath>

#include "k3/io/error.h"
#include "k3/kernels/ops.h"

namespace k3::model {

void AttnResState::push(const float* v) {
  if (count_ == cap_) fail(ErrorKind::Internal, "AttnRes: more than ", cap_, " block snapshots");
  std::copy_n(v, D_, snapshots_.data() + count_ * D_);
  ++count_;
}

void AttnResState::mix(const float* prefix, const float* scorer, float eps, float* out) const {
  constexpr size_t kMaxCandidates = 64;
  const size_t n = count_ + 1;
  if (n > kMaxCandidates) fail(ErrorKind::Internal, "AttnRes: too many candidates");
  float p[kMaxCandidates];
  for (size_t e = 0; e < n; ++e) {
    const float* v = e < count_ ? snapshot(e) : prefix;
    double num = 0.0, ss = 0.0;
    kernels::dotAndSquaresF64(v, scorer, D_, &num, &ss);
    p[e] = static_cast<float>(num / std::sqrt(ss / static_cast<double>(D_) + eps));
  }
  kernels::softmax(p, n);
  for (size_t d = 0; d < D_; ++d) out[d] = 0.0f;
  for (size_t e = 0; e < n; ++e) kernels::axpy(p[e], e < count_ ? snapshot(e) : prefix, out, D_);
}

}  // namespace k3::model
