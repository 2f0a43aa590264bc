#include "k3/model/teacher_forcing.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "k3/model/sampler.h"

namespace k3::model {

double TeacherForcedResult::perplexity() const { return std::exp(nll / static_cast<double>(predicted)); }

double nextTokenNll(const float* l, size_t vocab, size_t target) {
  float m = l[0];
  for (size_t i = 1; i < vocab; ++i) m = std::max(m, l[i]);
  double z = 0.0;
  for (size_t i = 0; i < vocab; ++i) z += std::exp(static_cast<double>(l[i] - m));
  return std::log(z) + m - l[target];
}

TeacherForcedResult teacherForce(Session& s, const std::vector<int32_t>& ids, LogitsWriter* out, bool score) {
  TeacherForcedResult r;
  // One session chunk per feed: larger steps would be split again, smaller
  // ones would cap the chunk the session was opened with.
  const size_t V = s.vocabSize(), step = s.chunk();
  std::vector<float> buf(step * V);
  for (size_t b = 0; b < ids.size(); b += step) {
    const size_t n = std::min(step, ids.size() - b);
    s.feed(std::span<const int32_t>(ids).subspan(b, n), buf.data());
    if (out) out->write(buf.data(), n * V);
    for (size_t t = 0; t < n; ++t) {
      const float* l = &buf[t * V];
      r.argmax.push_back(Sampler::argmax(l, V));
      const size_t pos = b + t;
      if (score && pos + 1 < ids.size()) {
        r.nll += nextTokenNll(l, V, static_cast<size_t>(ids[pos + 1]));
        ++r.predicted;
      }
    }
  }
  r.positions = ids.size();
  return r;
}

}  // namespace k3::model
