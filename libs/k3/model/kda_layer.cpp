#include "k3/model/kda_layer.h"

#include <algorithm>
#include <cmath>

#include "k3/io/error.h"
#include "k3/kernels/kda_kernels.h"
#include "k3/model/linear.h"
#include "k3/kernels/ops.h"

namespace k3::model {

KdaState::KdaState(const ModelConfig& c)
    : S(static_cast<size_t>(c.kdaNumHeads) * c.kdaHeadDim * c.kdaHeadDim),
      conv(3 * static_cast<size_t>(c.kdaProjDim()) * c.kdaConvKernel) {}

void KdaState::reset() {
  std::fill(S.begin(), S.end(), 0.0f);
  std::fill(conv.begin(), conv.end(), 0.0f);
}

KdaLayer::KdaLayer(const ModelConfig& c, size_t maxChunk, size_t threads)
    : maxChunk_(maxChunk), D_(c.hiddenSize), P_(c.kdaProjDim()), d_(c.kdaHeadDim), H_(c.kdaNumHeads), K_(c.kdaConvKernel),
      eps_(c.rmsNormEps), gMin_(c.kdaGateLowerBound) {
  for (auto* b : {&q_, &k_, &v_, &g_, &f_, &o_}) b->resize(maxChunk * P_);
  fa_.resize(maxChunk * d_);
  b_.resize(maxChunk * H_);
  tmp_.resize(threads * tmpPerThread(maxChunk));
  if (d_ > kernels::kKdaMaxHeadDim) fail(ErrorKind::Unsupported, "KDA head_dim ", d_, " > ", kernels::kKdaMaxHeadDim);
}

void KdaLayer::forward(const KdaWeights& w, std::span<const KdaRows> seqs, const float* x, size_t n,
                       float* out, ThreadPool& pool) {
  // Every projection of x in one fork-join.
  linear(pool, {LinearJob{&w.q, x, q_.data()}, LinearJob{&w.k, x, k_.data()}, LinearJob{&w.v, x, v_.data()},
                LinearJob{&w.g, x, g_.data()}, LinearJob{&w.fa, x, fa_.data()}, LinearJob{&w.b, x, b_.data()}},
         n);
  // Heads are independent: each thread owns a range of heads for the batch,
  // and first computes those heads' rows of the decay's second factor
  // f = f_b · f_a (head h reads rows [h·d, (h+1)·d)): one fork-join less.
  // Then the sequences one after another, each on its own state.
  pool.run([&](size_t tid, size_t nt) {
    const size_t h0 = H_ * tid / nt, h1 = H_ * (tid + 1) / nt;
    if (h0 >= h1) return;
    linearRows(w.fb, fa_.data(), n, f_.data(), h0 * d_, h1 * d_);
    // Each thread's scratch at a fixed stride: threads reach different sequences at different times.
    float* tmp = tmp_.data() + tid * tmpPerThread(maxChunk_);
    for (const KdaRows& seq : seqs) heads(w, seq, h0, h1, tmp);
  }, threadsForMacs(pool, uint64_t{n} * H_ * d_ * (w.fb.cols + 4 * d_)));  // f rows, then the delta rule's passes over S
  linear(pool, w.o, o_.data(), n, out);
}

void KdaLayer::heads(const KdaWeights& w, const KdaRows& seq, size_t h0, size_t h1, float* tmp) {
  const size_t d = d_, K = K_, n = seq.n, r0 = seq.row0;
  KdaState& st = *seq.state;
  // Per token of the sequence's rows: the decay, normalised q and k, and β.
  float* alpha = tmp;
  float* qn = alpha + n * d;
  float* kn = qn + n * d;
  float* beta = kn + n * d;
  for (size_t h = h0; h < h1; ++h) {
    float* S = st.S.data() + h * d * d;
    const float aExp = std::exp(w.aLog[h]);
    for (size_t t = 0; t < n; ++t) {
      // Short causal conv of this head's q, k, v channels (in place), SiLU.
      const size_t row = r0 + t;
      float* streams[3] = {q_.data() + row * P_, k_.data() + row * P_, v_.data() + row * P_};
      const float* taps[3] = {w.qConv.data(), w.kConv.data(), w.vConv.data()};
      for (size_t s = 0; s < 3; ++s) {
        float* win = st.conv.data() + (s * P_ + h * d) * K;
        const float* tap = taps[s] + h * d * K;
        float* x = streams[s] + h * d;
        kernels::shortConvSilu(win, tap, x, d, K);
      }
      // L2-normalised q (scaled by d^-1/2) and k; per-channel decay in
      // (g_min, 0) and the per-head write strength β.
      const float* q = streams[0] + h * d;
      const float* k = streams[1] + h * d;
      const float* f = f_.data() + row * P_ + h * d;
      const float* dt = w.dtBias.data() + h * d;
      beta[t] = kernels::sigmoid(b_[row * H_ + h]);
      kernels::normalizeQk(q, k, d, qn + t * d, kn + t * d);
      kernels::decay(f, dt, aExp, gMin_, d, alpha + t * d);
    }
    // Delta rule over the sequence's tokens in order: decay rows, read kS,
    // write β(v − kS) along k, read with q.
    const float* v = v_.data() + r0 * P_ + h * d;
    float* o = o_.data() + r0 * P_ + h * d;
    kernels::deltaRuleTokens(S, d, n, alpha, kn, qn, v, P_, beta, o);
    // Per-head RMSNorm, then the sigmoid output gate.
    for (size_t t = 0; t < n; ++t) {
      float* ot = o + t * P_;
      kernels::rmsNorm(ot, w.oNorm.data(), d, eps_, ot);
      kernels::mulSigmoid(ot, g_.data() + (r0 + t) * P_ + h * d, d);
    }
  }
}

}  // namespace k3::model
