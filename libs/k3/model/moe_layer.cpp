#include "k3/model/moe_layer.h"

#include <algorithm>
#include <exception>
#include <mutex>

#include "k3/io/error.h"
#include "k3/model/expert_top_p.h"
#include "k3/model/linear.h"
#include "k3/kernels/ops.h"
#include "k3/kernels/act_q8.h"

namespace k3::model {

void routeToken(const float* routerLogits, const float* scoreBias, int numExperts, int topK, int* ids,
                float* weights, float* sel) {
  // One pass keeping the topK best seen so far in descending order (the
  // same pick as topK rounds of argmax with ties to the lower id: an equal
  // score never passes an entry already held, which has the lower id).
  // Most experts fail the first comparison; topK argmax rounds were ~16 x
  // as many comparisons, a serial stretch on every MoE layer of every token.
  int held = 0;
  for (int e = 0; e < numExperts; ++e) {
    const float v = kernels::sigmoid(routerLogits[e]) + scoreBias[e];
    sel[e] = v;
    if (held == topK && !(v > sel[ids[topK - 1]])) continue;
    int i = held < topK ? held++ : topK - 1;
    for (; i > 0 && v > sel[ids[i - 1]]; --i) ids[i] = ids[i - 1];
    ids[i] = e;
  }
  float sum = 0.0f;
  for (int k = 0; k < topK; ++k) {
    weights[k] = kernels::sigmoid(routerLogits[ids[k]]);
    sum += weights[k];
  }
  for (int k = 0; k < topK; ++k) weights[k] /= (sum + 1e-20f);
}

MoeLayer::MoeLayer(const ModelConfig& c, size_t maxChunk, size_t threads, bool int8Activations, float expertTopP)
    : D_(c.hiddenSize), E_(c.numExperts), k_(c.numExpertsPerToken), lat_(c.latentSize),
      inter_(c.moeIntermediateSize), ish_(c.sharedIntermediate()), b1_(c.situBeta),
      b2_(c.situLinearBeta), eps_(c.rmsNormEps),
      q8_(int8Activations && c.latentSize % kernels::kQ8Group == 0), topP_(expertTopP) {
  checkExpertTopP(expertTopP, "expert top-p");
  router_.resize(maxChunk * E_);
  scores_.resize(maxChunk * E_);
  topW_.resize(maxChunk * k_);
  topIds_.resize(maxChunk * k_);
  kept_.resize(maxChunk);
  z_.resize(maxChunk * lat_);
  u_.resize(maxChunk * lat_);
  unique_.reserve(E_);
  slot_.resize(E_);
  const size_t pairs = maxChunk * k_;
  rowBegin_.resize(E_ + 1);
  rowCount_.resize(E_);
  rowCursor_.resize(E_);
  rowWeight_.resize(pairs);
  pairOf_.resize(pairs);
  if (q8_) {
    zq_.resize(pairs * lat_);
    zs_.resize(pairs * lat_ / kernels::kQ8Group);
  } else {
    zg_.resize(pairs * lat_);
  }
  hPerThread_ = maxChunk * inter_;
  h1_.resize(threads * hPerThread_);
  h3_.resize(threads * hPerThread_);
  y2_.resize(pairs * lat_);
  sg_.resize(maxChunk * ish_);
  su_.resize(maxChunk * ish_);
  sy_.resize(maxChunk * D_);
}

void MoeLayer::forward(const MoeWeights& w, int layer, const float* x, size_t n, float* out,
                       ThreadPool& pool, ExpertResidency& residency, PhaseTimes* times) {
  if (pool.size() * hPerThread_ > h1_.size())
    fail(ErrorKind::Internal, "MoeLayer::forward: a pool of ", pool.size(), " threads for ", h1_.size() / hPerThread_);
  PhaseClock clock(times);
  // The projections of x that do not depend on the routing: with every
  // expert mapped they share the router's fork-join; with a residency budget
  // they run after willUse() instead, while the expert reads it starts are in
  // flight. Only when they run differs, not what they compute.
  const bool projectDuringReads = residency.bounded();
  // 1–3. Route every token of the chunk and list the experts it uses.
  if (projectDuringReads)
    linear(pool, w.router, x, n, router_.data());
  else
    projectInputs(w, x, n, pool, /*withRouter=*/true);
  clock.lap(Phase::kMoeInput);
  route(w, n, pool);
  const size_t pairs = listExperts(n);
  residency.willUse(layer, unique_.data(), unique_.size(), rowCount_.data());
  if (times) {
    times->expertBytes += static_cast<double>(unique_.size() * residency.bytesPerExpert());
    times->expertPairs += static_cast<double>(pairs);
    times->moeRows += static_cast<double>(n);
  }
  clock.lap(Phase::kMoeRouting);
  if (projectDuringReads) {
    projectInputs(w, x, n, pool, /*withRouter=*/false);
    clock.lap(Phase::kMoeInput);
  }
  // 4–5. Gather each expert's tokens and run the experts (threads take whole
  // experts in turn); 6. add in ascending id, normalise, project back up.
  gatherPairs(n, pool);
  clock.lap(Phase::kMoeRouting);
  runExperts(pool, residency);
  clock.lap(Phase::kMoeExperts);
  combine(w, n, out, pool);
  clock.lap(Phase::kMoeCombine);
}

void MoeLayer::projectInputs(const MoeWeights& w, const float* x, size_t n, ThreadPool& pool, bool withRouter) {
  if (withRouter)
    linear(pool, {LinearJob{&w.router, x, router_.data()}, LinearJob{&w.downLatent, x, z_.data()},
                  LinearJob{&w.sharedGate, x, sg_.data()}, LinearJob{&w.sharedUp, x, su_.data()}},
           n);
  else
    linear(pool, {LinearJob{&w.downLatent, x, z_.data()}, LinearJob{&w.sharedGate, x, sg_.data()},
                  LinearJob{&w.sharedUp, x, su_.data()}},
           n);
}

void MoeLayer::route(const MoeWeights& w, size_t n, ThreadPool& pool) {
  // A chunk's tokens route independently (each its own scratch scores): one
  // fork-join over the tokens (one token: no fork-join).
  pool.forEach(n, [&](size_t t) {
    routeToken(&router_[t * E_], w.scoreBias.data(), static_cast<int>(E_), static_cast<int>(k_),
               &topIds_[t * k_], &topW_[t * k_], &scores_[t * E_]);
    kept_[t] = topP_ < 1.0f ? keepExpertTopP(&topIds_[t * k_], &topW_[t * k_], static_cast<int>(k_), topP_)
                            : static_cast<int>(k_);
  });
}

size_t MoeLayer::listExperts(size_t n) {
  // The used experts ascending, slot_[e] = the position of expert e, and
  // rowCount_[u] = the tokens routed to unique_[u].
  std::fill(slot_.begin(), slot_.end(), -1);
  size_t pairs = 0;
  for (size_t t = 0; t < n; ++t) {
    pairs += static_cast<size_t>(kept_[t]);
    for (size_t j = 0; j < static_cast<size_t>(kept_[t]); ++j) slot_[static_cast<size_t>(topIds_[t * k_ + j])] = 0;
  }
  unique_.clear();
  for (size_t e = 0; e < E_; ++e)
    if (slot_[e] == 0) {
      slot_[e] = static_cast<int>(unique_.size());
      unique_.push_back(static_cast<int>(e));
    }
  std::fill_n(rowCount_.begin(), unique_.size(), 0);
  for (size_t t = 0; t < n; ++t)
    for (size_t j = 0; j < static_cast<size_t>(kept_[t]); ++j)
      ++rowCount_[static_cast<size_t>(slot_[static_cast<size_t>(topIds_[t * k_ + j])])];
  return pairs;
}

void MoeLayer::gatherPairs(size_t n, ThreadPool& pool) {
  // Pairs grouped by expert (a counting sort on slot_), tokens ascending within one.
  const size_t U = unique_.size();
  rowBegin_[0] = 0;
  for (size_t u = 0; u < U; ++u) rowBegin_[u + 1] = rowBegin_[u] + rowCount_[u];
  std::copy_n(rowBegin_.begin(), U, rowCursor_.begin());
  for (size_t t = 0; t < n; ++t)
    for (size_t j = 0; j < static_cast<size_t>(kept_[t]); ++j) {
      const size_t p = rowCursor_[static_cast<size_t>(slot_[static_cast<size_t>(topIds_[t * k_ + j])])]++;
      rowWeight_[p] = topW_[t * k_ + j];
      pairOf_[t * k_ + j] = p;
    }
  // Each token's pairs ascending (= its experts by id, the order its outputs
  // are added in), and its latent row copied to them (int8: quantised into
  // its first pair's row, then copied: a quarter of the bytes, and one
  // quantisation where w1 and w3 of every expert each made one); and its
  // shared experts' SiTU-GLU; tokens in parallel.
  const size_t G = lat_ / kernels::kQ8Group;
  pool.forEach(n, [&](size_t t) {
    kernels::situGlu(&sg_[t * ish_], &su_[t * ish_], ish_, b1_, b2_, &sg_[t * ish_]);
    size_t* q = &pairOf_[t * k_];
    const size_t kt = static_cast<size_t>(kept_[t]);
    std::sort(q, q + kt);
    if (!q8_) {
      for (size_t j = 0; j < kt; ++j) std::copy_n(&z_[t * lat_], lat_, &zg_[q[j] * lat_]);
      return;
    }
    kernels::quantizeActivationsQ8_32(&z_[t * lat_], lat_, &zq_[q[0] * lat_], &zs_[q[0] * G]);
    for (size_t j = 1; j < kt; ++j) {
      std::copy_n(&zq_[q[0] * lat_], lat_, &zq_[q[j] * lat_]);
      std::copy_n(&zs_[q[0] * G], G, &zs_[q[j] * G]);
    }
  });
}

void MoeLayer::runExperts(ThreadPool& pool, ExpertResidency& residency) {
  // Threads take whole experts as the residency hands them out (mapped: the
  // most rows first; streamed: as their reads finish, so compute overlaps
  // I/O); a worker that comes when none are left is not waited for. The
  // pool cannot carry an exception across threads: keep the first.
  std::exception_ptr failed;
  std::mutex failedMu;
  const uint64_t macs = uint64_t{rowBegin_[unique_.size()]} * 3 * inter_ * lat_;  // w1, w3, w2 per (token, expert) pair
  pool.runJoinable([&](size_t tid, size_t) {
    try {
      while (ExpertLease l = residency.next()) runExpert(l.weights(), l.index(), tid);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failedMu);
      if (!failed) failed = std::current_exception();
    }
  }, threadsForMacs(pool, macs));
  if (failed) std::rethrow_exception(failed);
}

void MoeLayer::combine(const MoeWeights& w, size_t n, float* out, ThreadPool& pool) {
  // A token's expert outputs added in ascending expert id, then normalised
  // (6.); tokens in parallel.
  pool.forEach(n, [&](size_t t) {
    float* u = &u_[t * lat_];
    std::fill(u, u + lat_, 0.0f);
    for (size_t j = 0; j < static_cast<size_t>(kept_[t]); ++j) {
      const size_t p = pairOf_[t * k_ + j];
      kernels::axpy(rowWeight_[p], &y2_[p * lat_], u, lat_);
    }
    kernels::rmsNorm(u, w.expertNorm.data(), lat_, eps_, u);
  });
  // 6. Project back up; 7. the shared experts' down-projection (full width)
  // in the same fork-join.
  linear(pool, {LinearJob{&w.upLatent, u_.data(), out}, LinearJob{&w.sharedDown, sg_.data(), sy_.data()}}, n);
  for (size_t i = 0; i < n * D_; ++i) out[i] += sy_[i];
}

void MoeLayer::runExpert(const ExpertWeights& e, size_t u, size_t tid) {
  const size_t r0 = rowBegin_[u], m = rowBegin_[u + 1] - r0;
  float* h1 = &h1_[tid * hPerThread_];
  float* h3 = &h3_[tid * hPerThread_];
  auto apply = [&](const WeightView& w, const float* X, float* Y) { linearRows(w, X, m, Y, 0, w.rows); };
  if (q8_) {
    const int8_t* xq = &zq_[r0 * lat_];
    const float* xs = &zs_[r0 * lat_ / kernels::kQ8Group];
    linearRowsQ8(e.w1, xq, xs, m, h1, 0, e.w1.rows);
    linearRowsQ8(e.w3, xq, xs, m, h3, 0, e.w3.rows);
  } else {
    apply(e.w1, &zg_[r0 * lat_], h1);
    apply(e.w3, &zg_[r0 * lat_], h3);
  }
  kernels::situGlu(h1, h3, m * inter_, b1_, b2_, h1);
  apply(e.w2, h1, &y2_[r0 * lat_]);
}

}  // namespace k3::model
