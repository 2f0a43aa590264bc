// k3-run: generate text with Kimi K3 from a memory-mapped k3 container.
// Thin: parses flags, then drives k3::model (Session, ChatSession, Sampler).
#include <CLI/CLI.hpp>
#include "../cli_parse.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "k3/format/spread_layout.h"
#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/line_reader.h"
#include "k3/io/process_memory.h"
#include "k3/io/thread_pool.h"
#include "k3/kernels/cpu_features.h"
#include "k3/model/chat_session.h"
#include "k3/model/context_limits.h"
#include "k3/model/expert_top_p.h"
#include "k3/model/generate.h"
#include "k3/model/logits_writer.h"
#include "k3/model/model_weights.h"
#include "k3/model/sampler.h"
#include "k3/model/session.h"
#include "k3/serve/engine.h"
#include "k3/serve/http_server.h"
#include "k3/serve/stop_signal.h"
#include "k3/tok/id_list_input.h"
#include "k3/tok/tokenizer.h"
#include "k3/verify/container_gate.h"

namespace {

using namespace k3;
using namespace k3::model;

struct Args {
  std::string dir, prompt, system, ids, promptIds, logitsOut, perplexity;
  bool chat = false, think = true, json = false, noBos = false, preload = false;
  size_t maxTokens = 256, threads = 0, chunk = 128, ctx = 4096;
  long long threadsArg = 0;  // signed: -1 is refused, not read as 2^64-1
  bool ctxGiven = false;     // without --ctx, --ids / --perplexity get the context they need
  float temp = 0.0f, topP = 1.0f;
  int topK = 0;
  uint64_t seed = 0;
  double expertGb = 0.0;
  float expertTopP = 1.0f;  // 1 = off
  std::string activations = "f32";
  std::string spread;  // a spread container's other directories, when moved
  // --serve
  bool serve = false;
  k3::serve::ServeOptions srv;
  std::string apiKeyFile;
  double stateCacheGb = 1.0;
};

std::vector<std::string> spreadDirs(const Args& a) {
  return a.spread.empty() ? std::vector<std::string>{} : parseSpreadDirs(a.spread);
}

// --ids / --prompt-ids: a list or a file of ids, each inside the vocabulary.
std::vector<int32_t> readIds(const std::string& spec, const char* flag, const ModelConfig& c) {
  const std::vector<uint32_t> ids = tok::readIdList(spec, flag, static_cast<uint64_t>(c.vocabSize));
  return std::vector<int32_t>(ids.begin(), ids.end());  // < vocab_size <= 2^22
}

// --ctx / --chunk against max_position_embeddings and this machine's memory,
// before the Session allocates anything.
void checkContext(const Args& a, const ModelConfig& c, size_t ctx) {
  model::ContextRequest r;
  r.ctx = ctx;
  r.chunk = a.chunk;
  r.threads = a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency());
  r.ctxGiven = a.ctxGiven;
  model::checkContextLimits(c, r, physicalMemoryBytes());
}

std::vector<int32_t> stopIds(const ModelConfig& c, const tok::Tokenizer* tok) {
  std::vector<int32_t> s;
  for (int64_t e : c.eosTokenIds) s.push_back(static_cast<int32_t>(e));
  if (tok)
    if (auto id = tok->specialId("<|end_of_msg|>")) s.push_back(static_cast<int32_t>(*id));
  return s;
}

// Teacher-forced evaluation: logits for every position, written and/or scored.
struct EvalResult {
  size_t positions = 0;
  double nll = 0.0;  // summed over predicted positions
  size_t predicted = 0;
  std::vector<int32_t> argmax;
};

EvalResult teacherForce(Session& s, const std::vector<int32_t>& ids, LogitsWriter* out, bool score) {
  EvalResult r;
  // One session chunk per feed: larger steps would be split again, smaller
  // ones would cap the chunk --chunk asked for.
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
        float m = l[0];
        for (size_t i = 1; i < V; ++i) m = std::max(m, l[i]);
        double z = 0.0;
        for (size_t i = 0; i < V; ++i) z += std::exp(static_cast<double>(l[i] - m));
        r.nll += std::log(z) + m - l[static_cast<size_t>(ids[pos + 1])];
        ++r.predicted;
      }
    }
  }
  r.positions = ids.size();
  return r;
}

// Expert streaming figures (--expert-gb): bytes, reads, time with a read in
// flight (throughput = disk bytes over it), time compute waited for a read.
std::string residencyJson(const ResidencyStats& r) {
  const double gbs = r.readSeconds > 0 ? static_cast<double>(r.diskBytes) / r.readSeconds / 1e9 : 0.0;
  return cat(",\"expert_budget_bytes\":", r.budgetBytes, ",\"expert_resident_bytes\":", r.residentBytes,
             ",\"expert_reads\":", r.reads, ",\"expert_unique_reads\":", r.uniqueReads,
             ",\"expert_direct_reads\":", r.directReads,
             ",\"expert_disk_bytes\":", r.diskBytes, ",\"expert_read_s\":", r.readSeconds,
             ",\"expert_read_gb_s\":", gbs, ",\"expert_wait_s\":", r.waitSeconds,
             ",\"expert_read_queues\":", r.readQueues);
}

// Seconds by forward phase, then the routed-expert weight bytes the
// experts phase used: ,"<pass>_phases_s":{"kda":...,...},"<pass>_expert_weight_bytes":N
std::string phasesJson(const char* pass, const k3::model::PhaseTimes& t) {
  std::string s = cat(",\"", pass, "_phases_s\":{");
  for (size_t p = 0; p < k3::model::kPhaseCount; ++p) {
    const auto phase = static_cast<k3::model::Phase>(p);
    s += cat(p ? "," : "", "\"", k3::model::phaseName(phase), "\":", t[phase]);
  }
  return s + cat("},\"", pass, "_expert_weight_bytes\":", static_cast<unsigned long long>(t.expertBytes));
}

void printStats(const Args& a, const Session& s, const std::string& callerJson) {
  const ResidencyStats rs = s.residency().stats();
  const std::string extraJson = residencyJson(rs) + phasesJson("prefill", s.stats().prefillPhases) +
                                phasesJson("decode", s.stats().decodePhases) +
                                cat(",\"expert_top_p\":", a.expertTopP, ",\"experts_kept_mean\":",
                                    s.expertsKeptPerTokenLayer(), ",\"expert_bytes_per_token\":",
                                    s.expertBytesPerToken()) +
                                callerJson;
  const SessionStats& st = s.stats();
  const double pf = st.prefillSeconds > 0 ? st.prefillTokens / st.prefillSeconds : 0.0;
  const double dc = st.decodeSeconds > 0 ? st.decodeTokens / st.decodeSeconds : 0.0;
  const double rssMiB = peakRssBytes() / 1048576.0;
  const double expertMiB = s.residency().bytesRead() / 1048576.0;
  if (a.json) {
    std::printf(
        "{\"prefill_tokens\":%llu,\"prefill_passes\":%llu,\"prefill_tok_s\":%.3f,\"decode_tokens\":%llu,"
        "\"decode_tok_s\":%.3f,"
        "\"peak_rss_bytes\":%llu,\"expert_bytes_read\":%llu,\"activations\":\"%s\",\"isa\":\"%s\"%s}\n",
        static_cast<unsigned long long>(st.prefillTokens), static_cast<unsigned long long>(st.prefillPasses), pf,
        static_cast<unsigned long long>(st.decodeTokens), dc,
        static_cast<unsigned long long>(peakRssBytes()),
        static_cast<unsigned long long>(s.residency().bytesRead()), a.activations.c_str(),
        k3::kernels::isaName(k3::kernels::bestIsa()), extraJson.c_str());
  } else {
    std::fprintf(stderr,
                 "[k3-run] prefill %llu tok @ %.2f tok/s | decode %llu tok @ %.2f tok/s | peak RSS %.1f MiB | "
                 "expert bytes read %.1f MiB | %s kernels\n",
                 static_cast<unsigned long long>(st.prefillTokens), pf,
                 static_cast<unsigned long long>(st.decodeTokens), dc, rssMiB, expertMiB,
                 k3::kernels::isaName(k3::kernels::bestIsa()));
    if (s.residency().bounded())
      std::fprintf(stderr, "[k3-run] experts: budget %.1f MiB, resident %.1f MiB, %llu reads (%llu O_DIRECT) "
                   "@ %.2f GB/s, compute waited %.2f s\n",
                   rs.budgetBytes / 1048576.0, rs.residentBytes / 1048576.0,
                   static_cast<unsigned long long>(rs.reads), static_cast<unsigned long long>(rs.directReads),
                   rs.readSeconds > 0 ? rs.diskBytes / rs.readSeconds / 1e9 : 0.0, rs.waitSeconds);
    if (a.expertTopP < 1.0f)
      std::fprintf(stderr, "[k3-run] expert top-p %g: %.2f experts kept per token and MoE layer, %.1f MiB expert "
                   "bytes per token\n", a.expertTopP, s.expertsKeptPerTokenLayer(), s.expertBytesPerToken() / 1048576.0);
  }
}

std::string jsonIds(const char* key, const std::vector<int32_t>& ids) {
  std::string s = std::string(",\"") + key + "\":[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

// --serve: the OpenAI-compatible server (k3/serve) over one loaded model.
int serveMain(Args a) {
  k3::serve::blockStopSignals();  // before any thread starts: SIGINT/SIGTERM reach sigwait only
  if (!a.apiKeyFile.empty()) {
    a.srv.apiKey = readInputFile(a.apiKeyFile, kSecretInput);
    while (!a.srv.apiKey.empty() && std::isspace(static_cast<unsigned char>(a.srv.apiKey.back()))) a.srv.apiKey.pop_back();
    if (a.srv.apiKey.empty()) fail(ErrorKind::Usage, a.apiKeyFile, ": the API key file is empty");
  }
  a.srv.engine.stateCacheBytes = static_cast<uint64_t>(a.stateCacheGb * 1e9);
  k3::serve::HttpServer http(a.srv);
  const int port = http.start();  // /health answers 503 while the model loads
  auto checked = verify::checkContainerGate(a.dir, spreadDirs(a));  // k3-verify's fast checks before mapping anything
  WeightOptions wo;
  wo.int8Activations = a.activations == "int8";
  auto weights = ModelWeights::open(a.dir, wo, spreadDirs(a), std::move(checked));
  checkContext(a, weights->config(), a.ctx);
  if (a.preload) weights->prefault(a.expertGb <= 0.0);
  const tok::Tokenizer tok = tok::Tokenizer::fromDirectory(a.dir);
  SessionOptions so;
  so.threads = a.threads;
  so.chunk = std::min(a.chunk, a.ctx);
  so.maxContext = a.ctx;
  so.expertBudget = static_cast<uint64_t>(a.expertGb * 1e9);
  so.expertTopP = a.expertTopP;
  k3::serve::Engine engine(*weights, tok, so, a.srv.engine);
  http.attach(tok, engine);
  std::printf("listening on http://%s:%d\n", a.srv.host.c_str(), port);
  std::fflush(stdout);
  const int sig = k3::serve::waitForStopSignal();
  std::fprintf(stderr, "[k3-serve] signal %d: stopping\n", sig);
  engine.shutdown();
  http.stop();
  return 0;
}

int runMain(const Args& a) {
  auto checked = verify::checkContainerGate(a.dir, spreadDirs(a));  // k3-verify's fast checks before mapping anything
  WeightOptions wo;
  wo.int8Activations = a.activations == "int8";
  auto weights = ModelWeights::open(a.dir, wo, spreadDirs(a), std::move(checked));
  const ModelConfig& cfg = weights->config();
  // Experts stay on demand when their memory is bounded.
  if (a.preload) weights->prefault(a.expertGb <= 0.0);
  if (!a.promptIds.empty() && (!a.prompt.empty() || a.chat || !a.ids.empty() || !a.perplexity.empty()))
    fail(ErrorKind::Usage, "--prompt-ids goes alone: not with -p, --chat, --ids or --perplexity");
  if (!a.ids.empty() && (!a.prompt.empty() || a.chat || !a.perplexity.empty()))
    fail(ErrorKind::Usage, "--ids goes alone: not with -p, --chat or --perplexity");
  if (!a.perplexity.empty() && (!a.prompt.empty() || a.chat))
    fail(ErrorKind::Usage, "--perplexity goes alone: not with -p or --chat");
  if (!a.logitsOut.empty() && a.ids.empty() && a.perplexity.empty())
    fail(ErrorKind::Usage, "--logits-out writes teacher-forced logits: it needs --ids or --perplexity");
  const bool needTokenizer = !a.prompt.empty() || a.chat || !a.perplexity.empty() || (!a.promptIds.empty() && !a.json);
  std::optional<tok::Tokenizer> tok;
  if (needTokenizer) tok.emplace(tok::Tokenizer::fromDirectory(a.dir));

  std::vector<int32_t> forced;
  if (!a.ids.empty()) forced = readIds(a.ids, "--ids", cfg);
  std::vector<int32_t> promptIds;
  if (!a.promptIds.empty()) promptIds = readIds(a.promptIds, "--prompt-ids", cfg);
  if (!a.perplexity.empty()) {
    const auto enc = tok->encode(readInputFile(a.perplexity, kTextInput), false);
    if (cfg.bosTokenId && !a.noBos) forced.push_back(static_cast<int32_t>(*cfg.bosTokenId));
    forced.insert(forced.end(), enc.begin(), enc.end());
  }

  // --ctx holds in every mode; without it the teacher-forced ids get the
  // context they need (still bounded by the model and the memory).
  const size_t ctx = a.ctxGiven ? a.ctx : std::max(a.ctx, forced.size());
  if (forced.size() > ctx)
    fail(ErrorKind::Usage, a.ids.empty() ? "--perplexity: the text is " : "--ids: ", forced.size(),
         a.ids.empty() ? " tokens" : " ids", ", more than --ctx ", ctx);
  if (promptIds.size() > ctx)
    fail(ErrorKind::Usage, "--prompt-ids: ", promptIds.size(), " ids, more than --ctx ", ctx);
  checkContext(a, cfg, ctx);
  SessionOptions so;
  so.threads = a.threads;
  so.chunk = std::min(a.chunk, ctx);  // a chunk longer than the context is never filled
  so.maxContext = ctx;
  so.expertBudget = static_cast<uint64_t>(a.expertGb * 1e9);
  so.expertTopP = a.expertTopP;
  Session session(*weights, so);

  // Evaluation modes: teacher-forced ids or a perplexity text.
  if (!forced.empty()) {
    std::unique_ptr<LogitsWriter> out;
    if (!a.logitsOut.empty()) out = std::make_unique<LogitsWriter>(a.logitsOut, weights->inputFiles());
    EvalResult r = teacherForce(session, forced, out.get(), !a.perplexity.empty());
    if (out) out->close();
    std::string extra = cat(",\"positions\":", r.positions) + jsonIds("argmax", r.argmax);
    if (r.predicted) {
      const double ppl = std::exp(r.nll / static_cast<double>(r.predicted));
      extra += cat(",\"perplexity\":", ppl, ",\"predicted\":", r.predicted);
      if (!a.json) std::printf("perplexity %.6f over %zu predicted tokens\n", ppl, r.predicted);
    } else if (!a.json) {
      std::printf("%zu positions teacher-forced%s\n", r.positions,
                  a.logitsOut.empty() ? "" : cat(", logits written to ", a.logitsOut).c_str());
    }
    printStats(a, session, extra);
    return 0;
  }

  SamplerOptions sopt{a.temp, a.topK, a.topP, a.seed};
  Sampler sampler(sopt, session.vocabSize());
  GenerateOptions gen;
  gen.maxTokens = a.maxTokens;
  gen.sampling = sopt;
  gen.stopIds = stopIds(cfg, tok ? &*tok : nullptr);

  if (a.chat) {
    ChatSession chat(session, *tok, a.think, a.system);
    const bool tty = isatty(fileno(stdout));
    std::string lastSection;
    std::vector<int32_t> allTokens;
    auto show = [&](ChatChannel ch, const std::string& bytes) {
      const std::string section = ch == ChatChannel::Thinking ? "thinking" : "answer";
      if (section != lastSection) {
        if (!a.json) std::fputs(tty ? (ch == ChatChannel::Thinking ? "\x1b[2m" : "\x1b[0m\n")
                                    : (ch == ChatChannel::Thinking ? "[thinking]\n" : "\n[answer]\n"),
                                stdout);
        lastSection = section;
      }
      if (!a.json) {
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
        std::fflush(stdout);
      }
    };
    auto oneTurn = [&](const std::string& user) {
      lastSection.clear();
      ChatReply r = chat.turn(user, sampler, gen, show);
      if (!a.json) std::fputs(tty ? "\x1b[0m\n" : "\n", stdout);
      allTokens.insert(allTokens.end(), r.tokens.begin(), r.tokens.end());
      return r;
    };
    if (!a.prompt.empty()) {
      ChatReply r = oneTurn(a.prompt);
      std::string extra = jsonIds("prompt_ids", chat.lastPrompt()) + jsonIds("tokens", r.tokens) +
                          cat(",\"stopped\":", r.stopped ? "true" : "false");
      printStats(a, session, extra);
      return 0;
    }
    // Interactive: one user message per line, state kept across turns.
    LineReader lines(STDIN_FILENO, "<stdin>", kChatLineInput);
    for (;;) {
      std::fputs("> ", stderr);
      const std::optional<std::string> next = lines.next();
      if (!next) break;
      const std::string& line = *next;
      if (line.empty()) continue;
      if (line == "/exit" || line == "/quit") break;
      oneTurn(line);
    }
    printStats(a, session, "");
    return 0;
  }

  if (a.prompt.empty() && promptIds.empty())
    fail(ErrorKind::Usage, "nothing to do: give -p PROMPT, --prompt-ids, --chat, --ids or --perplexity");
  std::vector<int32_t> ids = promptIds;  // --prompt-ids: fed as given, no BOS added
  if (ids.empty()) {
    if (cfg.bosTokenId && !a.noBos) ids.push_back(static_cast<int32_t>(*cfg.bosTokenId));
    for (uint32_t id : tok->encode(a.prompt, false)) ids.push_back(static_cast<int32_t>(id));
  }
  session.feed(ids);
  GenerateResult g = generate(session, sampler, gen, [&](int32_t id) {
    if (std::find(gen.stopIds.begin(), gen.stopIds.end(), id) != gen.stopIds.end()) return;
    if (a.json) return;
    const std::string b = tok->tokenBytes(static_cast<uint32_t>(id));
    std::fwrite(b.data(), 1, b.size(), stdout);
    std::fflush(stdout);
  });
  if (!a.json) std::fputc('\n', stdout);
  printStats(a, session, jsonIds("prompt_ids", ids) + jsonIds("tokens", g.tokens) +
                             cat(",\"stopped\":", g.stopped ? "true" : "false") +
                             cat(",\"decode_wall_tok_s\":", g.wallTokensPerSecond()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"k3-run: run Kimi K3 from a k3 container (made by k3-repack)"};
  app.set_version_flag("--version", std::string("k3-run ") + K3KIT_VERSION);
  app.add_option("container", a.dir, "container directory written by k3-repack")->required();
  app.add_option("-p,--prompt", a.prompt, "prompt text (raw, or the user message with --chat)");
  app.add_flag("--chat", a.chat, "XTML chat; without -p an interactive multi-turn session");
  app.add_option("--system", a.system, "system message (chat)");
  app.add_flag("--think,!--no-think", a.think, "chat: thinking channel on (default) or off");
  app.add_option("--ids", a.ids, "teacher-forced token ids: comma list or a file");
  app.add_option("--prompt-ids", a.promptIds,
                 "prompt as token ids (comma list or a file, fed as given), then generate like -p");
  app.add_option("--logits-out", a.logitsOut,
                 "with --ids or --perplexity: write f32 logits [positions x vocab] (.zst: zstd)");
  app.add_option("--perplexity", a.perplexity, "text file: teacher-forced perplexity");
  app.add_option("-n,--max-tokens", a.maxTokens, "tokens to generate (default 256; at most what the context holds)")
      ->check(k3app::notNegative());
  app.add_option("--temp", a.temp, "temperature; 0 = greedy (default)");
  app.add_option("--top-k", a.topK, "keep the k most likely tokens (0 = all)");
  app.add_option("--top-p", a.topP, "nucleus mass to keep (1 = all)");
  app.add_option("--seed", a.seed, "sampling seed (same seed, same sample)");
  app.add_option("--expert-gb", a.expertGb, "bound on resident routed-expert memory, GB (0 = none)");
  app.add_option("--expert-top-p", a.expertTopP,
                 "keep a token's highest-weight routed experts up to this cumulative weight, drop the "
                 "rest (0 < P <= 1; 1 = all, default): fewer expert bytes per token, see docs/QUALITY.md");
  CLI::Option* threadsOpt = app.add_option("--threads", a.threadsArg, "threads (0 = all cores)");
  // Ranges only against typos and signs here; the model and memory limits are checked once the config is read.
  const CLI::Range tokens(uint64_t{1}, uint64_t{1} << 40);
  app.add_option("--chunk", a.chunk, "prefill chunk size in tokens (default 128)")->check(tokens);
  CLI::Option* ctxOpt = app.add_option("--ctx", a.ctx,
                                       "context capacity in tokens (default 4096; --ids/--perplexity: what they need)")
                            ->check(tokens);
  app.add_option("--activations", a.activations,
                 "f32 (default, exact) or int8: activations quantised per 32 values into integer-dot "
                 "kernels for the MXFP4/int4/int8 matrices (faster, approximate)")
      ->check(CLI::IsMember({"f32", "int8"}));
  app.add_option("--spread", a.spread,
                 "a container made with k3-repack --spread: its other directories, in order, where they are "
                 "now (default: as recorded, relative to the container)");
  app.add_flag("--preload", a.preload, "map every weight page at start (warm page cache; experts too unless --expert-gb)");
  app.add_flag("--no-bos", a.noBos, "do not prepend the config's BOS to a raw prompt");
  app.add_flag("--json", a.json, "print results and stats as one JSON object");
  app.add_flag("--serve", a.serve, "serve the OpenAI API (/v1/chat/completions, ...) and the web chat at /");
  app.add_option("--host", a.srv.host, "--serve: address to bind (default 127.0.0.1; others need an API key)");
  app.add_option("--port", a.srv.port, "--serve: TCP port (default 8080; 0 = any free one)");
  app.add_option("--api-key", a.srv.apiKey, "--serve: require Authorization: Bearer KEY");
  app.add_option("--api-key-file", a.apiKeyFile, "--serve: read the API key from a file");
  app.add_option("--model-name", a.srv.modelName, "--serve: model id in /v1/models (default k3)");
  app.add_option("--queue", a.srv.engine.queue, "--serve: requests that may wait for the engine (default 8)");
  app.add_option("--state-cache-gb", a.stateCacheGb, "--serve: state checkpoints kept for reuse, GB (0 = no reuse; default 1)");
  app.add_option("--stream-interval-ms", a.srv.streamIntervalMs,
                 "--serve: send streamed output at most this often, ms (default 10; 0 = every token)");
  app.add_option("--cors", a.srv.corsOrigin, "--serve: allow this browser origin (CORS off by default)");
  if (const auto rc = k3app::parseCommandLine(app, "k3-run", argc, argv)) return *rc;
  try {
    k3::model::checkExpertTopP(a.expertTopP, "--expert-top-p");
    a.ctxGiven = ctxOpt->count() > 0;
    if (threadsOpt->count() && a.threadsArg != 0) a.threads = k3::checkThreadCount(a.threadsArg);
    k3::model::checkSamplerOptions({a.temp, a.topK, a.topP, a.seed});
    if (a.serve) {
      if (!a.prompt.empty() || a.chat || !a.ids.empty() || !a.promptIds.empty() || !a.perplexity.empty())
        k3::fail(k3::ErrorKind::Usage, "--serve goes alone: not with -p, --chat, --ids, --prompt-ids or --perplexity");
      return serveMain(a);
    }
    return runMain(a);
  } catch (const k3::Error& e) {
    std::fprintf(stderr, "k3-run: %s\n", e.what());
    return e.kind() == k3::ErrorKind::Usage ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "k3-run: %s\n", e.what());
    return 1;
  }
}
