// k3_grammar_mask_rates: what the grammar mask costs per token on a real
// vocabulary (issue 30: under 5 % of a bench-preset decode step), measured
// by scripts/bench_serve beside the decode time of the same run.
//
//   k3_grammar_mask_rates TIKTOKEN_MODEL ADDED_TOKENS_JSON [--answers N] [--tokens N]
//   (the real vocabulary: tests/data/kimi/tiktoken.model and
//   tests/data/kimi/k3_added_tokens.reconstructed.json)
//
// Decodes N answers (default 6) of each constrained kind — a json_schema
// object, a json_object, a named strict tool call — with random logits under
// the mask and a token budget (--tokens, default 160), timing every mask.
// Prints one JSON object: the vocabulary size, the masks timed, the mean,
// median, 99th percentile and maximum milliseconds per mask, overall and by
// kind. Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID): on a
// shared machine wall time mostly measures the scheduler.
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "k3/tok/chat_request.h"
#include "k3/tok/grammar_mask.h"
#include "k3/tok/grammar_output.h"
#include "k3/tok/tokenizer.h"

namespace {

using namespace k3::tok;

struct Kind {
  const char* name;
  const char* request;
};

const Kind kKinds[] = {
    {"json_schema", R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"thinking":false},
      "response_format":{"type":"json_schema","json_schema":{"name":"r","strict":true,"schema":{"type":"object",
      "properties":{"title":{"type":"string","maxLength":80},"year":{"type":"integer"},"tags":{"type":"array",
      "items":{"type":"string","maxLength":20},"maxItems":4},"rating":{"anyOf":[{"type":"number"},{"type":"null"}]}},
      "required":["title","year","tags","rating"],"additionalProperties":false}}}})"},
    {"json_object", R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"thinking":false},
      "response_format":{"type":"json_object"}})"},
    {"tool_call", R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"thinking":false},
      "tools":[{"type":"function","function":{"name":"search","strict":true,"parameters":{"type":"object",
      "properties":{"query":{"type":"string","maxLength":60},"limit":{"type":"integer"},"lang":{"enum":["en","fr","de"]}},
      "required":["query","limit","lang"],"additionalProperties":false}}}],
      "tool_choice":{"type":"function","function":{"name":"search"}}})"},
};

double cpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

void stats(std::string& out, const char* name, const std::vector<double>& ms) {
  double sum = 0, max = 0;
  for (double x : ms) sum += x, max = std::max(max, x);
  char buf[256];
  std::snprintf(buf, sizeof buf, "\"%s\":{\"masks\":%zu,\"mean_ms\":%.4f,\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f}",
                name, ms.size(), ms.empty() ? 0 : sum / static_cast<double>(ms.size()), percentile(ms, 0.5),
                percentile(ms, 0.99), max);
  out += buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: k3_grammar_mask_rates TIKTOKEN_MODEL ADDED_TOKENS_JSON [--answers N] [--tokens N]\n");
    return 2;
  }
  size_t answers = 6, tokens = 160;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if ((flag != "--answers" && flag != "--tokens") || v <= 0) {
      std::fprintf(stderr, "k3_grammar_mask_rates: bad option %s %s\n", argv[i], argv[i + 1]);
      return 2;
    }
    (flag == "--answers" ? answers : tokens) = static_cast<size_t>(v);
  }
  try {
    const Tokenizer tok = Tokenizer::fromFiles(argv[1], argv[2]);
    const GrammarVocab vocab(tok);
    std::vector<double> all;
    std::string byKind;
    std::vector<float> logits(vocab.vocabSize());
    for (const Kind& kind : kKinds) {
      const auto grammar = chatOutputGrammar(parseChatRequest(kind.request, kind.name));
      std::vector<double> ms;
      for (size_t a = 0; a < answers; ++a) {
        GrammarMask mask(vocab, grammar);
        std::mt19937 rng(static_cast<uint32_t>(a + 1));
        std::normal_distribution<float> noise(0.0f, 1.0f);
        for (size_t n = 0; n < tokens; ++n) {
          for (float& l : logits) l = noise(rng);
          mask.setBudget(tokens - n);
          const double t0 = cpuMs();
          const bool any = mask.apply(logits.data(), logits.size());
          ms.push_back(cpuMs() - t0);
          if (!any) break;
          const uint32_t pick = static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
          mask.accept(pick);
          if (mask.complete() && tok.specialId("<|end_of_msg|>") == pick) break;
        }
      }
      all.insert(all.end(), ms.begin(), ms.end());
      byKind += byKind.empty() ? "" : ",";
      stats(byKind, kind.name, ms);
    }
    std::string out = "{\"vocab\":" + std::to_string(vocab.vocabSize()) + ",";
    stats(out, "all", all);
    out += ",\"by_kind\":{" + byKind + "}}";
    std::printf("%s\n", out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "k3_grammar_mask_rates: %s\n", e.what());
    return 1;
  }
  return 0;
}
