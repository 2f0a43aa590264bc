#include "k3/model/expert_top_p.h"

#include "k3/io/error.h"

namespace k3::model {

void checkExpertTopP(float p, const char* what) {
  if (!(p > 0.0f && p <= 1.0f)) fail(ErrorKind::Usage, what, " must be in (0, 1], got ", p);
}

int keepExpertTopP(int* ids, float* weights, int k, float p) {
  // Insertion sort: k is at most 64, and the order of equal weights must not
  // depend on the selection order routeToken left them in.
  for (int i = 1; i < k; ++i) {
    const int id = ids[i];
    const float w = weights[i];
    int j = i;
    for (; j > 0 && (w > weights[j - 1] || (w == weights[j - 1] && id < ids[j - 1])); --j) {
      ids[j] = ids[j - 1];
      weights[j] = weights[j - 1];
    }
    ids[j] = id;
    weights[j] = w;
  }
  float sum = 0.0f;
  int kept = 0;
  while (kept < k) {
    sum += weights[kept++];
    if (sum >= p) break;
  }
  for (int j = 0; j < kept; ++j) weights[j] /= (sum + 1e-20f);
  return kept;
}

}  // namespace k3::model
