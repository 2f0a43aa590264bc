#include "k3/model/model_runner.h"

#include <algorithm>
#include <thread>

namespace k3::model {

namespace {
size_t poolSize(size_t t) { return t ? t : std::max<size_t>(1, std::thread::hardware_concurrency()); }
}  // namespace

ModelRunner::ModelRunner(const ModelWeights& w, const RunnerOptions& o)
    : w_(w), pool_(poolSize(o.threads)),
      forward_(w, std::max<size_t>(1, o.maxRows), poolSize(o.threads), o.maxContext, o.expertTopP),
      residency_(std::make_unique<ExpertResidency>(w, o.expertBudget)) {}

double expertsKeptPerTokenLayer(const PhaseTimes& phases) {
  return phases.moeRows > 0 ? phases.expertPairs / phases.moeRows : 0.0;
}

double expertBytesPerToken(const ModelWeights& w, const PhaseTimes& phases) {
  const ModelConfig& c = w.config();
  int moeLayers = 0;
  for (int l = 0; l < c.numLayers; ++l) moeLayers += c.isMoeLayer(l) ? 1 : 0;
  return expertsKeptPerTokenLayer(phases) * moeLayers * static_cast<double>(w.bytesPerExpert());
}

}  // namespace k3::model
