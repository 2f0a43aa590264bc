#include "k3/model/generate.h"

#include <algorithm>
#include <chrono>

#include "k3/io/error.h"

namespace k3::model {

size_t generationRoom(const Session& session, bool feedStopToken) {
  return session.capacity() - session.position() + (feedStopToken ? 0 : 1);
}

GenerateResult generate(Session& session, Sampler& sampler, const GenerateOptions& opts,
                        FunctionRef<void(int32_t)> onToken) {
  if (session.position() == 0) fail(ErrorKind::Usage, "generate: nothing was fed (empty prompt)");
  // -n is clamped to the room left in the context (and nothing is reserved
  // for a limit the context cannot reach): every token but the last is fed
  // back, the stop token too when feedStopToken.
  const size_t room = generationRoom(session, opts.feedStopToken);
  const size_t maxTokens = std::min(opts.maxTokens, room);
  GenerateResult r;
  r.tokens.reserve(maxTokens);
  std::chrono::steady_clock::time_point first, last;
  // Bias and penalties act on a copy; off, the session's logits go straight
  // to the sampler (greedy and seeded runs as before).
  LogitProcessor processor(opts.processing, session.vocabSize());
  std::vector<float> adjusted;
  if (processor.active()) {
    processor.addPrompt(session.history());
    adjusted.resize(session.vocabSize());
  }
  LogprobCalculator logprobs(opts.logprobs >= 0 ? session.vocabSize() : 0);
  for (size_t i = 0; i < maxTokens; ++i) {
    const float* logits = session.lastLogits();
    if (processor.active()) {
      std::copy(logits, logits + adjusted.size(), adjusted.begin());
      processor.apply(adjusted.data());
      logits = adjusted.data();
    }
    const int32_t id = sampler.sample(logits);
    if (opts.logprobs >= 0) r.logprobs.push_back(logprobs.compute(logits, id, static_cast<size_t>(opts.logprobs)));
    processor.addGenerated(id);
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
    if (i + 1 < maxTokens) session.feed({&id, 1});
  }
  r.cutByContext = !r.stopped && r.tokens.size() == maxTokens && maxTokens < opts.maxTokens;
  r.firstToLastSeconds = std::chrono::duration<double>(last - first).count();
  return r;
}

}  // namespace k3::model
