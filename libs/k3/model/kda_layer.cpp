#include "k3/model/kda_layer.h"

#include <algorithm>
#include <cmath>

#include "k3/model/linear.h"
#include "k3/model/ops.h"

namespace k3::model {

KdaState::KdaState(const ModelConfig& c)
    : S(static_cast<size_t>(c.kdaNumHeads) * c.kdaHeadDim * c.kdaHeadDim),
      conv(3 * static_cast<size_t>(c.kdaProjDim()) * c.kdaConvKernel) {}

void KdaState::reset() {
  std::fill(S.begin(), S.end(), 0.0f);
  std::fill(conv.begin(), conv.end(), 0.0f);
}

KdaLayer::KdaLayer(const ModelConfig& c, size_t maxChunk, size_t threads)
    : D_(c.hiddenSize), P_(c.kdaProjDim()), d_(c.kdaHeadDim), H_(c.kdaNumHeads), K_(c.kdaConvKernel),
      eps_(c.rmsNormEps), gMin_(c.kdaGateLowerBound) {
  for (auto* b : {&q_, &k_, &v_, &g_, &f_, &o_}) b->resize(maxChunk * P_);
  fa_.resize(maxChunk * d_);
  b_.resize(maxChunk * H_);
  tmp_.resize(threads * 4 * d_);
}

void KdaLayer::forward(const KdaWeights& w, KdaState& st, const float* x, size_t n, float* out,
                       ThreadPool& pool) {
  linear(pool, w.q, x, n, q_.data());
  linear(pool, w.k, x, n, k_.data());
  linear(pool, w.v, x, n, v_.data());
  linear(pool, w.g, x, n, g_.data());
  linear(pool, w.fa, x, n, fa_.data());
  linear(pool, w.fb, fa_.data(), n, f_.data());
  linear(pool, w.b, x, n, b_.data());
  // Heads are independent: each thread owns a range of heads for the chunk.
  pool.run([&](size_t tid, size_t nt) {
    heads(w, st, n, H_ * tid / nt, H_ * (tid + 1) / nt, tmp_.data() + tid * 4 * d_);
  });
  linear(pool, w.o, o_.data(), n, out);
}

void KdaLayer::heads(const KdaWeights& w, KdaState& st, size_t n, size_t h0, size_t h1, float* tmp) {
  const size_t d = d_, K = K_;
  float* alpha = tmp;
  float* kS = tmp + d;
  float* qn = tmp + 2 * d;
  float* kn = tmp + 3 * d;
  const float qScale = 1.0f / std::sqrt(static_cast<float>(d));
  for (size_t h = h0; h < h1; ++h) {
    float* S = st.S.data() + h * d * d;
    const float aExp = std::exp(w.aLog[h]);
    for (size_t t = 0; t < n; ++t) {
      // Short causal conv per channel: shift the window, append, SiLU(taps · window).
      float* streams[3] = {q_.data() + t * P_, k_.data() + t * P_, v_.data() + t * P_};
      const float* taps[3] = {w.qConv.data(), w.kConv.data(), w.vConv.data()};
      for (size_t s = 0; s < 3; ++s)
        for (size_t c = h * d; c < (h + 1) * d; ++c) {
          float* win = st.conv.data() + (s * P_ + c) * K;
          std::copy(win + 1, win + K, win);
          win[K - 1] = streams[s][c];
          const float* tap = taps[s] + c * K;
          float acc = 0.0f;
          for (size_t j = 0; j < K; ++j) acc += tap[j] * win[j];
          streams[s][c] = silu(acc);
        }
      const float* q = streams[0] + h * d;
      const float* k = streams[1] + h * d;
      const float* v = streams[2] + h * d;
      // L2-normalised q (scaled by d^-1/2) and k; eps inside the sqrt.
      float qq = 0.0f, kk = 0.0f;
      for (size_t j = 0; j < d; ++j) {
        qq += q[j] * q[j];
        kk += k[j] * k[j];
      }
      const float qInv = 1.0f / std::sqrt(qq + 1e-6f), kInv = 1.0f / std::sqrt(kk + 1e-6f);
      for (size_t j = 0; j < d; ++j) {
        qn[j] = q[j] * qInv * qScale;
        kn[j] = k[j] * kInv;
      }
      // Per-channel decay in (g_min, 0) and the per-head write strength β.
      const float* f = f_.data() + t * P_ + h * d;
      const float* dt = w.dtBias.data() + h * d;
      for (size_t j = 0; j < d; ++j) alpha[j] = std::exp(gMin_ * sigmoid(aExp * (f[j] + dt[j])));
      const float beta = sigmoid(b_[t * H_ + h]);
      // Delta rule: decay rows, read kS, write β(v − kS) along k, read with q.
      std::fill(kS, kS + d, 0.0f);
      for (size_t a = 0; a < d; ++a) {
        float* row = S + a * d;
        for (size_t j = 0; j < d; ++j) row[j] *= alpha[a];
        axpy(kn[a], row, kS, d);
      }
      for (size_t j = 0; j < d; ++j) kS[j] = beta * (v[j] - kS[j]);  // now δ
      float* o = o_.data() + t * P_ + h * d;
      std::fill(o, o + d, 0.0f);
      for (size_t a = 0; a < d; ++a) {
        float* row = S + a * d;
        axpy(kn[a], kS, row, d);
        axpy(qn[a], row, o, d);
      }
      // Per-head RMSNorm, then the sigmoid output gate.
      rmsNorm(o, w.oNorm.data(), d, eps_, o);
      const float* g = g_.data() + t * P_ + h * d;
      for (size_t j = 0; j < d; ++j) o[j] *= sigmoid(g[j]);
    }
  }
}

}  // namespace k3::model
