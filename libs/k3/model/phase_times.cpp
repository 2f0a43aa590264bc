#include "k3/model/phase_times.h"

namespace k3::model {

const char* phaseName(Phase p) {
  switch (p) {
    case Phase::kAttnResMix: return "attn_res_mix";
    case Phase::kKda: return "kda";
    case Phase::kMla: return "mla";
    case Phase::kMoeInput: return "moe_input";
    case Phase::kMoeRouting: return "moe_routing";
    case Phase::kMoeExperts: return "moe_experts";
    case Phase::kMoeCombine: return "moe_combine";
    case Phase::kDenseMlp: return "dense_mlp";
    case Phase::kHead: return "head";
    case Phase::kCount: break;
  }
  return "?";
}

double PhaseTimes::total() const {
  double s = 0;
  for (double v : seconds) s += v;
  return s;
}

}  // namespace k3::model
