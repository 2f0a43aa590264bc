#include "k3/model/generate.h"

#include <algorithm>
#include <chrono>

#include "k3/io/error.h"

namespace k3::model {

GenerateResult generate(Session& session, Sampler& sampler, const GenerateOptions& opts,
                        FunctionRef<void(int32_t)> onToken) {
  if (session.position() == 0) fail(ErrorKind::Usage, "generate: nothing was fed (empty prompt)");
  GenerateResult r;
  r.tokens.reserve(opts.maxTokens);
  std::chrono::steady_clock::time_point first, last;
  for (size_t i = 0; i < opts.maxTokens; ++i) {
    const int32_t id = sampler.sample(session.lastLogits());
    r.tokens.push_back(id);
    onToken(id);
    last = std::chrono::steady_clock::now();
    if (i == 0) first = last;
    const bool stop = std::find(opts.stopIds.begin(), opts.stopIds.end(), id) != opts.stopIds.end();
    if (stop) {
      r.stopped = true;
      if (opts.feedStopToken) session.feed({&id, 1});
      break;
    }
    // The last token of the limit is not fed: nobody will read its logits.
    if (i + 1 < opts.maxTokens) session.feed({&id, 1});
  }
  r.firstToLastSeconds = std::chrono::duration<double>(last - first).count();
  return r;
}

}  // namespace k3::model
