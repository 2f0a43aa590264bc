// k3-run: generate text with Kimi K3 from a memory-mapped k3 container.
// Thin: parses flags, then drives k3::model (Session, ChatSession, Sampler,
// teacher forcing, the run report) and prints.
#include <CLI/CLI.hpp>
#include "../cli_parse.h"
#include "../isa_option.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "k3/format/spread_layout.h"
#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/json_text.h"
#include "k3/io/line_reader.h"
#include "k3/io/process_memory.h"
#include "k3/io/thread_pool.h"
#include "k3/model/chat_session.h"
#include "k3/model/context_limits.h"
#include "k3/model/expert_top_p.h"
#include "k3/model/generate.h"
#include "k3/model/generation_defaults.h"
#include "k3/model/logit_processors.h"
#include "k3/model/logits_writer.h"
#include "k3/model/model_weights.h"
#include "k3/model/run_report.h"
#include "k3/model/sampler.h"
#include "k3/model/session.h"
#include "k3/model/teacher_forcing.h"
#include "k3/serve/engine.h"
#include "k3/serve/http_server.h"
#include "k3/serve/state_directory.h"
#include "k3/serve/stop_signal.h"
#include "k3/tok/chat_output_message.h"
#include "k3/tok/chat_request.h"
#include "k3/tok/id_list_input.h"
#include "k3/tok/tokenizer.h"
#include "k3/verify/container_gate.h"

namespace {

using namespace k3;
using namespace k3::model;

// The sampling flags. Each one given overrides the container's default
// (model/generation_defaults: generation_config.json, else T = 1, top_p = 1);
// a sampled run without --seed draws one. New sampler flags go here.
struct SamplingFlags {
  SamplerOptions given;
  CLI::Option *temp = nullptr, *topK = nullptr, *topP = nullptr, *minP = nullptr, *seed = nullptr;

  void add(CLI::App& app) {
    temp = app.add_option("--temp", given.temperature,
                          "temperature; 0 = greedy (default: the container's generation_config.json, else 1)");
    topK = app.add_option("--top-k", given.topK, "keep the k most likely tokens (0 = all; default as --temp, else 0)");
    topP = app.add_option("--top-p", given.topP, "nucleus mass to keep (1 = all; default as --temp, else 1)");
    minP = app.add_option("--min-p", given.minP,
                          "keep tokens with p >= MIN_P x the top token's p (0 = off; default as --temp, else 0)");
    seed = app.add_option("--seed", given.seed, "sampling seed, 0..2^64-1 (same seed, same sample; default: drawn)")
               ->check(k3app::notNegative());
  }
  // The options in effect: the flags given over the defaults.
  SamplerOptions resolve(const SamplerOptions& defaults) const {
    SamplerOptions s = defaults;
    if (temp->count()) s.temperature = given.temperature;
    if (topK->count()) s.topK = given.topK;
    if (topP->count()) s.topP = given.topP;
    if (minP->count()) s.minP = given.minP;
    s.seed = seed->count() ? given.seed : 0;
    return s;
  }
  bool seeded() const { return seed->count() > 0; }
};

// What sampling a run used: the --json fields and the stats line.
struct SamplingReport {
  SamplerOptions options;
  bool seedDrawn = false;
  std::string defaults;  // where the defaults came from
};

struct Args {
  std::string dir, prompt, system, ids, promptIds, logitsOut, perplexity, tools;
  bool chat = false, think = true, json = false, noBos = false, preload = false, recache = false;
  size_t maxTokens = 256, threads = 0, chunk = 128, ctx = 4096;
  long long threadsArg = 0;  // signed: -1 is refused, not read as 2^64-1
  bool ctxGiven = false;     // without --ctx, --ids / --perplexity get the context they need
  SamplingFlags sampling;
  LogitProcessorOptions processing;  // --presence-penalty, --frequency-penalty, --repeat-penalty
  std::vector<std::string> logitBias;  // ID=V
  int logprobs = -1;                   // --logprobs N (with --json)
  double expertGb = 0.0;
  float expertTopP = 1.0f;  // 1 = off
  std::string activations = "f32";
  std::string spread;  // a spread container's other directories, when moved
  // --serve
  bool serve = false;
  k3::serve::ServeOptions srv;
  std::string apiKeyFile;
  double stateCacheGb = 1.0, stateCacheDiskGb = 16.0;
};

std::vector<std::string> spreadDirs(const Args& a) {
  return a.spread.empty() ? std::vector<std::string>{} : parseSpreadDirs(a.spread);
}

// --ids / --prompt-ids: a list or a file of ids, each inside the vocabulary.
std::vector<int32_t> readIds(const std::string& spec, const char* flag, const ModelConfig& c) {
  const std::vector<uint32_t> ids = tok::readIdList(spec, flag, static_cast<uint64_t>(c.vocabSize));
  return std::vector<int32_t>(ids.begin(), ids.end());  // < vocab_size <= 2^22
}

// --logit-bias ID=V entries (ranges checked with the vocabulary, in runMain).
std::vector<std::pair<int32_t, float>> parseLogitBias(const std::vector<std::string>& specs) {
  std::map<int32_t, float> bias;  // a repeated id: the last one holds
  for (const std::string& s : specs) {
    const size_t eq = s.find('=');
    size_t used = 0, usedV = 0;
    long long id = -1;
    float v = 0;
    try {
      if (eq == std::string::npos) throw std::invalid_argument("no =");
      id = std::stoll(s.substr(0, eq), &used);
      v = std::stof(s.substr(eq + 1), &usedV);
    } catch (const std::exception&) {
      used = 0;
    }
    if (eq == std::string::npos || used != eq || usedV != s.size() - eq - 1 || id < 0 || id > INT32_MAX)
      fail(ErrorKind::Usage, "--logit-bias ", s, ": expected TOKEN_ID=BIAS (e.g. 2050=-100)");
    bias[static_cast<int32_t>(id)] = v;
  }
  return {bias.begin(), bias.end()};
}

// --logprobs: per generated token {"id", "logprob", "top": [[id, logprob], ...]}.
void addLogprobs(JsonObject& j, const std::vector<TokenLogprob>& lps) {
  auto num = [](float v) {
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
  };
  std::string arr = "[";
  for (size_t i = 0; i < lps.size(); ++i) {
    arr += (i ? ",{\"id\":" : "{\"id\":") + std::to_string(lps[i].id) + ",\"logprob\":" + num(lps[i].logprob) + ",\"top\":[";
    for (size_t k = 0; k < lps[i].top.size(); ++k)
      arr += (k ? ",[" : "[") + std::to_string(lps[i].top[k].first) + "," + num(lps[i].top[k].second) + "]";
    arr += "]}";
  }
  j.raw("logprobs", arr + "]");
}

// --ctx / --chunk against max_position_embeddings and this machine's memory,
// before the Session allocates anything.
void checkContext(const Args& a, const ModelConfig& c, size_t ctx) {
  model::ContextRequest r;
  r.ctx = ctx;
  r.chunk = a.chunk;
  if (a.serve) {  // --parallel sequences, --batch-tokens rows per step
    r.parallel = a.srv.engine.parallel;
    if (a.srv.engine.batchTokens) r.chunk = a.srv.engine.batchTokens;
    r.stateCacheBytes = k3::serve::StateCache::residentBound(a.srv.engine.stateCache);
  }
  r.threads = a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency());
  r.ctxGiven = a.ctxGiven;
  model::checkContextLimits(c, r, physicalMemoryBytes());
}

// The sampling in effect: the flags over the container's defaults; a sampled
// run without --seed draws its seed (reported, so the run can be repeated).
SamplingReport resolveSampling(const Args& a) {
  const GenerationDefaults d = readGenerationDefaults(a.dir);
  SamplingReport r;
  r.options = a.sampling.resolve(d.sampling);
  r.defaults = d.source;
  if (r.options.temperature > 0.0f && !a.sampling.seeded()) {
    r.options.seed = drawSeed();
    r.seedDrawn = true;
  }
  return r;
}

void addSampling(JsonObject& j, const SamplingReport& s) {
  j.add("temperature", static_cast<double>(s.options.temperature))
      .add("top_p", static_cast<double>(s.options.topP))
      .add("top_k", s.options.topK)
      .add("seed", s.options.seed)
      .add("seed_drawn", s.seedDrawn)
      .add("sampling_defaults", s.defaults);
}

std::string samplingText(const SamplingReport& s) {
  if (s.options.temperature <= 0.0f) return cat("[k3-run] sampling greedy (defaults: ", s.defaults, ")\n");
  return cat("[k3-run] sampling temperature ", s.options.temperature, " top_p ", s.options.topP, " top_k ",
             s.options.topK, " seed ", s.options.seed, s.seedDrawn ? " (drawn; --seed repeats it)" : "",
             " (defaults: ", s.defaults, ")\n");
}

// The run's figures and the mode's fields: one JSON object on stdout with
// --json, else the "[k3-run] ..." lines on stderr. The text written before
// is flushed first, so with 2>&1 the stats start on their own line.
void printStats(const Args& a, const Session& s, const SamplingReport* sampling = nullptr,
                const std::function<void(JsonObject&)>& modeFields = {}) {
  const RunReportOptions ro{a.activations, a.expertTopP};
  std::fflush(stdout);
  if (a.json) {
    JsonObject j = runStatsJson(s, ro);
    if (sampling) addSampling(j, *sampling);
    if (modeFields) modeFields(j);
    std::printf("%s\n", j.str().c_str());
    std::fflush(stdout);
  } else {
    std::string text = runStatsText(s, ro);
    if (sampling) text += samplingText(*sampling);
    std::fputs(text.c_str(), stderr);
  }
}

void warn(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "k3-run: warning: %s\n", what.c_str());
}

// -n above what the context can still hold: said once, before generating.
void warnIfCapped(const Session& s, const GenerateOptions& gen) {
  const size_t room = generationRoom(s, gen.feedStopToken);
  if (gen.maxTokens > room)
    warn(cat("-n ", gen.maxTokens, " is more than the context holds: at most ", room, " tokens (--ctx ", s.capacity(),
             ", ", s.position(), " taken by the prompt)"));
}

// --serve: the OpenAI-compatible server (k3/serve) over one loaded model.
int serveMain(Args a) {
  k3::serve::blockStopSignals();  // before any thread starts: SIGINT/SIGTERM reach sigwait only
  if (!a.apiKeyFile.empty()) {
    a.srv.apiKey = readInputFile(a.apiKeyFile, kSecretInput);
    while (!a.srv.apiKey.empty() && std::isspace(static_cast<unsigned char>(a.srv.apiKey.back()))) a.srv.apiKey.pop_back();
    if (a.srv.apiKey.empty()) fail(ErrorKind::Usage, a.apiKeyFile, ": the API key file is empty");
  }
  a.srv.engine.stateCache.ramBytes = static_cast<uint64_t>(a.stateCacheGb * 1e9);
  a.srv.engine.stateCache.diskBytes = static_cast<uint64_t>(a.stateCacheDiskGb * 1e9);
  if (!(a.stateCacheGb >= 0) || !(a.stateCacheDiskGb >= 0))
    fail(ErrorKind::Usage, "--state-cache-gb ", a.stateCacheGb, " / --state-cache-disk-gb ", a.stateCacheDiskGb,
         ": must be 0 or more");
  if (a.srv.engine.stateCache.ramBytes > 0 && !a.srv.engine.stateCache.dir.empty())
    k3::serve::StateDirectory::checkUsable(a.srv.engine.stateCache.dir);  // before the model loads
  a.srv.samplingDefaults = readGenerationDefaults(a.dir).sampling;  // what a request without the fields gets
  a.srv.engine.logBatches = true;
  if (a.srv.engine.parallel == 0) fail(ErrorKind::Usage, "--parallel 0: must be at least 1");
  if (a.srv.engine.batchTokens && a.srv.engine.batchTokens < a.srv.engine.parallel)
    fail(ErrorKind::Usage, "--batch-tokens ", a.srv.engine.batchTokens, " is less than --parallel ",
         a.srv.engine.parallel, ": every sequence in flight feeds a token each step");
  k3::serve::HttpServer http(a.srv);
  const int port = http.start();  // /health answers 503 while the model loads
  auto checked = verify::checkContainerGate(a.dir, spreadDirs(a));  // k3-verify's fast checks before mapping anything
  WeightOptions wo;
  wo.int8Activations = a.activations == "int8";
  auto weights = ModelWeights::open(a.dir, wo, spreadDirs(a), std::move(checked));
  checkContext(a, weights->config(), a.ctx);
  if (a.recache) weights->dropCachedPages();
  if (a.preload) {
    weights->prefault(a.expertGb <= 0.0);
    const uint64_t huge = weights->hugePageBytesTotal(), mapped = weights->mappedBytesTotal();
    std::fprintf(stderr, "[k3-serve] weights mapped: %.2f of %.2f GB in 2 MiB pages%s\n",
                 static_cast<double>(huge) / 1e9, static_cast<double>(mapped) / 1e9,
                 huge * 2 < mapped
                     ? " (the page cache holds the rest in small pages, read more slowly: --recache once)"
                     : "");
  }
  const tok::Tokenizer tok = tok::Tokenizer::fromDirectory(a.dir);
  SessionOptions so;
  so.threads = a.threads;
  so.chunk = std::max(std::min(a.chunk, a.ctx), a.srv.engine.parallel);  // a step holds a row per sequence
  so.maxContext = a.ctx;
  so.expertBudget = static_cast<uint64_t>(a.expertGb * 1e9);
  so.expertTopP = a.expertTopP;
  k3::serve::Engine engine(*weights, tok, so, a.srv.engine);
  http.attach(tok, engine);
  const bool v6 = a.srv.host.find(':') != std::string::npos;
  std::printf("listening on http://%s%s%s:%d\n", v6 ? "[" : "", a.srv.host.c_str(), v6 ? "]" : "", port);
  std::fflush(stdout);
  const int sig = k3::serve::waitForStopSignal();
  std::fprintf(stderr, "[k3-serve] signal %d: stopping\n", sig);
  engine.shutdown();
  http.stop();
  return 0;
}

// The mode flags that go alone, and --logits-out's need of a teacher-forced mode.
void checkModeFlags(const Args& a) {
  if (!a.promptIds.empty() && (!a.prompt.empty() || a.chat || !a.ids.empty() || !a.perplexity.empty()))
    fail(ErrorKind::Usage, "--prompt-ids goes alone: not with -p, --chat, --ids or --perplexity");
  if (!a.ids.empty() && (!a.prompt.empty() || a.chat || !a.perplexity.empty()))
    fail(ErrorKind::Usage, "--ids goes alone: not with -p, --chat or --perplexity");
  if (!a.perplexity.empty() && (!a.prompt.empty() || a.chat))
    fail(ErrorKind::Usage, "--perplexity goes alone: not with -p or --chat");
  if (!a.logitsOut.empty() && a.ids.empty() && a.perplexity.empty())
    fail(ErrorKind::Usage, "--logits-out writes teacher-forced logits: it needs --ids or --perplexity");
  if (!a.tools.empty() && !a.chat) fail(ErrorKind::Usage, "--tools declares tools for --chat: it needs --chat");
}

// --ids as given, or --perplexity's text encoded (after the BOS unless --no-bos).
std::vector<int32_t> forcedIds(const Args& a, const ModelConfig& cfg, const std::optional<tok::Tokenizer>& tok) {
  std::vector<int32_t> forced;
  if (!a.ids.empty()) forced = readIds(a.ids, "--ids", cfg);
  if (!a.perplexity.empty()) {
    const auto enc = tok->encode(readInputFile(a.perplexity, kTextInput), false);
    if (cfg.bosTokenId && !a.noBos) forced.push_back(static_cast<int32_t>(*cfg.bosTokenId));
    forced.insert(forced.end(), enc.begin(), enc.end());
    // A score needs one predicted token: two positions, the first predicting the second.
    if (forced.size() < 2)
      fail(ErrorKind::Format, a.perplexity, ": ", enc.empty() ? "no text" : "one token and no BOS",
           ": nothing to score (perplexity needs at least one predicted token)");
  }
  return forced;
}

// --ids / --perplexity: teacher-forced logits, written and/or scored.
int runTeacherForced(const Args& a, const ModelWeights& weights, Session& session, const std::vector<int32_t>& forced) {
  std::unique_ptr<LogitsWriter> out;
  if (!a.logitsOut.empty()) out = std::make_unique<LogitsWriter>(a.logitsOut, weights.inputFiles());
  const TeacherForcedResult r = teacherForce(session, forced, out.get(), !a.perplexity.empty());
  if (out) out->close();
  if (!a.json) {
    if (r.predicted)
      std::printf("perplexity %.6f over %zu predicted tokens\n", r.perplexity(), r.predicted);
    else
      std::printf("%zu positions teacher-forced%s\n", r.positions,
                  a.logitsOut.empty() ? "" : cat(", logits written to ", a.logitsOut).c_str());
  }
  printStats(a, session, nullptr, [&](JsonObject& j) { addTeacherForced(j, r); });
  return 0;
}

// --tools REQUEST.json: the request's tools (and tool_choice) declared in every turn.
ChatOptions chatOptions(const Args& a) {
  ChatOptions o;
  o.thinking = a.think;
  o.system = a.system;
  if (!a.tools.empty()) {
    const tok::ChatRequest r =
        tok::parseChatRequest(readInputFile(a.tools, kChatRequestInput), a.tools, {.developerAsSystem = true});
    if (r.tools.empty()) fail(ErrorKind::Format, a.tools, ": declares no tools (expected an OpenAI request with \"tools\")");
    o.toolsJson = r.toolsJson;
    o.tools = r.tools;
    o.toolChoice = r.toolChoice;
    o.toolChoiceName = r.toolChoiceName;
  }
  return o;
}

// A reply's --json fields: the parsed message (OpenAI's shape) and how it ended.
void addChatReply(JsonObject& j, const ChatReply& r) {
  j.raw("message", tok::assistantMessageJson(r.message)).add("finish_reason", r.finishReason);
  if (r.error) j.add("malformed", r.error->message());
  j.add("cut_by_context", r.cutByContext).add("dropped_turns", r.droppedTurns);
}

// --chat: one turn with -p, else one user message per stdin line, state kept across turns.
int runChat(const Args& a, Session& session, const tok::Tokenizer& tok, Sampler& sampler, const GenerateOptions& gen,
            const SamplingReport& sampling) {
  const ChatOptions options = chatOptions(a);
  std::optional<ChatSession> chat;
  chat.emplace(session, tok, options);
  const bool tty = isatty(fileno(stdout));
  const bool show = !a.json;
  std::string lastSection;
  auto section = [&](const std::string& name) {
    if (name == lastSection) return;
    if (tty) std::fputs(name == "thinking" ? "\x1b[2m" : "\x1b[0m\n", stdout);
    else std::fprintf(stdout, "%s[%s]\n", lastSection.empty() ? "" : "\n", name.c_str());
    lastSection = name;
  };
  auto onEvent = [&](const tok::ChatOutputEvent& e) {
    if (!show) return;
    using K = tok::ChatOutputEvent::Kind;
    if (e.kind == K::Reasoning || e.kind == K::Content) {
      section(e.kind == K::Reasoning ? "thinking" : "answer");
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
    } else if (e.kind == K::ToolCall) {
      section("tool call");
      std::fprintf(stdout, "%s %s %s\n", e.call.id.c_str(), e.call.name.c_str(),
                   e.call.arguments.empty() ? "{}" : e.call.arguments.c_str());
    } else if (e.kind == K::Malformed) {
      // A call of a tool nobody declared is shown as such, never dropped.
      const bool undeclared = e.error.found.rfind("tool=", 0) == 0;
      section(undeclared ? "undeclared tool call" : "malformed output");
      if (undeclared)
        std::fprintf(stdout, "%s (token %zu; %s)\n", e.error.found.substr(5).c_str(), e.error.position,
                     a.tools.empty() ? "no --tools declared any" : cat("expected ", e.error.expected).c_str());
      else
        std::fprintf(stdout, "%s\n", e.error.message().c_str());
    }
    std::fflush(stdout);
  };
  auto oneTurn = [&](const std::string& user) {
    lastSection.clear();
    const ChatReply r = chat->turn(user, sampler, gen, onEvent);
    if (show) {
      std::fputs(tty ? "\x1b[0m\n" : "\n", stdout);
      std::fflush(stdout);
    }
    if (r.droppedTurns)
      warn(cat("the context is full: dropped the ", r.droppedTurns, " oldest turn", r.droppedTurns == 1 ? "" : "s",
               " (--ctx ", session.capacity(), ")"));
    if (r.cutByContext) warn(cat("the answer was cut: the context is full (--ctx ", session.capacity(), ")"));
    else if (!r.stopped && !r.refused) warn(cat("the answer was cut at -n ", gen.maxTokens, " tokens"));
    return r;
  };
  auto refusedText = [&](const ChatReply& r) {
    return cat("the message makes a prompt of ", r.promptTokens,
               " tokens (with the system message, tools and chat format), more than --ctx ", session.capacity(), " holds");
  };
  if (!a.prompt.empty()) {
    const ChatReply r = oneTurn(a.prompt);
    if (r.refused) fail(ErrorKind::Usage, "-p: ", refusedText(r));
    printStats(a, session, &sampling, [&](JsonObject& j) {
      addGenerated(j, chat->lastPrompt(), r.tokens, r.stopped);
      addChatReply(j, r);
    });
    return 0;
  }
  LineReader lines(STDIN_FILENO, "<stdin>", kChatLineInput);
  for (;;) {
    std::fputs("> ", stderr);
    const std::optional<std::string> next = lines.next();
    if (!next) break;
    const std::string& line = *next;
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      chat.emplace(session, tok, options);  // a new conversation: the system message and tools again
      session.reset();
      continue;
    }
    const ChatReply r = oneTurn(line);
    if (r.refused) {
      warn(refusedText(r) + "; not sent (a shorter message, or a larger --ctx)");
      continue;
    }
    if (a.json) {
      JsonObject j;
      addChatReply(j, r);
      std::printf("%s\n", j.str().c_str());
      std::fflush(stdout);
    }
    if (generationRoom(session, true) < chat->replyRoom(gen))
      warn(cat("the context is nearly full (", session.position(), " of ", session.capacity(),
               " tokens): the next turn drops the oldest turns"));
  }
  printStats(a, session, &sampling);
  return 0;
}

// -p / --prompt-ids: feed the prompt, generate, stream the text. Special
// tokens are never printed by name; BOS and EOS end the document.
int runGenerate(const Args& a, const ModelConfig& cfg, Session& session, const tok::Tokenizer* tok,
                std::vector<int32_t> ids, Sampler& sampler, const GenerateOptions& gen, const SamplingReport& sampling) {
  if (ids.empty()) {  // -p; --prompt-ids are fed as given, no BOS added
    if (cfg.bosTokenId && !a.noBos) ids.push_back(static_cast<int32_t>(*cfg.bosTokenId));
    for (uint32_t id : tok->encode(a.prompt, false)) ids.push_back(static_cast<int32_t>(id));
    if (ids.size() > session.capacity())
      fail(ErrorKind::Usage, "-p: the prompt is ", ids.size(), " tokens, more than --ctx ", session.capacity());
  }
  session.feed(ids);
  warnIfCapped(session, gen);
  std::string text;
  const GenerateResult g = generate(session, sampler, gen, [&](int32_t id) {
    if (!tok || tok->isSpecial(static_cast<uint32_t>(id))) return;
    const std::string b = tok->tokenBytes(static_cast<uint32_t>(id));
    text += b;
    if (a.json) return;
    std::fwrite(b.data(), 1, b.size(), stdout);
    std::fflush(stdout);
  });
  if (!a.json) std::fputc('\n', stdout);
  if (g.cutByContext) warn(cat("the text was cut: the context is full (--ctx ", session.capacity(), ")"));
  printStats(a, session, &sampling, [&](JsonObject& j) {
    addGenerated(j, ids, g.tokens, g.stopped);
    if (tok) j.add("text", text);
    j.add("cut_by_context", g.cutByContext);
    if (a.logprobs >= 0) addLogprobs(j, g.logprobs);
    j.add("decode_wall_tok_s", g.wallTokensPerSecond());
  });
  return 0;
}

// What ends a raw document: the config's BOS and EOS ids (the next document
// would start), and <|end_of_msg|>.
std::vector<int32_t> stopIds(const ModelConfig& c, const tok::Tokenizer* tok) {
  std::vector<int32_t> s;
  for (int64_t e : c.eosTokenIds) s.push_back(static_cast<int32_t>(e));
  if (c.bosTokenId) s.push_back(static_cast<int32_t>(*c.bosTokenId));
  if (tok)
    if (auto id = tok->specialId("<|end_of_msg|>")) s.push_back(static_cast<int32_t>(*id));
  return s;
}

int runMain(const Args& a) {
  auto checked = verify::checkContainerGate(a.dir, spreadDirs(a));  // k3-verify's fast checks before mapping anything
  WeightOptions wo;
  wo.int8Activations = a.activations == "int8";
  auto weights = ModelWeights::open(a.dir, wo, spreadDirs(a), std::move(checked));
  const ModelConfig& cfg = weights->config();
  if (a.recache) weights->dropCachedPages();
  // Experts stay on demand when their memory is bounded.
  if (a.preload) weights->prefault(a.expertGb <= 0.0);
  checkModeFlags(a);
  const bool needTokenizer = !a.prompt.empty() || a.chat || !a.perplexity.empty() || (!a.promptIds.empty() && !a.json);
  std::optional<tok::Tokenizer> tok;
  if (needTokenizer) tok.emplace(tok::Tokenizer::fromDirectory(a.dir));

  const std::vector<int32_t> forced = forcedIds(a, cfg, tok);
  std::vector<int32_t> promptIds;
  if (!a.promptIds.empty()) promptIds = readIds(a.promptIds, "--prompt-ids", cfg);

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

  if (!forced.empty()) return runTeacherForced(a, *weights, session, forced);

  const SamplingReport sampling = resolveSampling(a);
  Sampler sampler(sampling.options, session.vocabSize());
  GenerateOptions gen;
  gen.maxTokens = a.maxTokens;
  gen.sampling = sampling.options;
  gen.processing = a.processing;
  gen.logprobs = a.logprobs;
  gen.processing.logitBias = parseLogitBias(a.logitBias);
  checkLogitProcessorOptions(gen.processing, session.vocabSize());
  gen.stopIds = stopIds(cfg, tok ? &*tok : nullptr);
  if (a.chat) return runChat(a, session, *tok, sampler, gen, sampling);
  if (a.prompt.empty() && promptIds.empty())
    fail(ErrorKind::Usage, "nothing to do: give -p PROMPT, --prompt-ids, --chat, --ids or --perplexity");
  return runGenerate(a, cfg, session, tok ? &*tok : nullptr, promptIds, sampler, gen, sampling);
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
  app.add_option("--tools", a.tools,
                 "chat: declare the tools of an OpenAI request file (its \"tools\", \"tool_choice\"); calls are "
                 "checked against them and shown");
  app.add_flag("--think,!--no-think", a.think, "chat: thinking channel on (default) or off");
  app.add_option("--ids", a.ids, "teacher-forced token ids: comma list or a file");
  app.add_option("--prompt-ids", a.promptIds,
                 "prompt as token ids (comma list or a file, fed as given), then generate like -p");
  app.add_option("--logits-out", a.logitsOut,
                 "with --ids or --perplexity: write f32 logits [positions x vocab] (.zst: zstd)");
  app.add_option("--perplexity", a.perplexity, "text file: teacher-forced perplexity");
  app.add_option("-n,--max-tokens", a.maxTokens, "tokens to generate (default 256; at most what the context holds)")
      ->check(k3app::notNegative());
  a.sampling.add(app);
  app.add_option("--presence-penalty", a.processing.presencePenalty,
                 "subtract this from the logit of every token already generated (-2..2, OpenAI's)");
  app.add_option("--frequency-penalty", a.processing.frequencyPenalty,
                 "subtract this x times generated from a token's logit (-2..2, OpenAI's)");
  app.add_option("--repeat-penalty", a.processing.repetitionPenalty,
                 "tokens in the prompt or output: logit / R if > 0, x R otherwise (llama.cpp/vLLM's; 1 = off)");
  app.add_option("--logprobs", a.logprobs,
                 "with --json (-p, --prompt-ids): each token's log-probability (log-softmax after bias and "
                 "penalties, before temperature) and the N most likely alternatives, 0..20")
      ->check(CLI::Range(0, 20));
  app.add_option("--logit-bias", a.logitBias, "ID=V: add V (-100..100) to token ID's logit; repeat or comma-list")
      ->delimiter(',');
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
  app.add_flag("--recache", a.recache,
               "first drop the container's cached pages (those no other process maps) so they are read again, from "
               "disk, in 2 MiB pages: once, when the summary shows few weights in 2 MiB pages (a page cache filled by "
               "cp, cat or an older k3-run; docs/K3_RUN.md)");
  app.add_flag("--no-bos", a.noBos, "do not prepend the config's BOS to a raw prompt");
  app.add_flag("--json", a.json, "print results and stats as one JSON object");
  app.add_flag("--serve", a.serve, "serve the OpenAI API (/v1/chat/completions, ...) and the web chat at /");
  app.add_option("--host", a.srv.host,
                 "--serve: IP address to bind (default 127.0.0.1; not loopback needs an API key)");
  app.add_option("--port", a.srv.port, "--serve: TCP port (default 8080; 0 = any free one)");
  app.add_option("--api-key", a.srv.apiKey, "--serve: require Authorization: Bearer KEY");
  app.add_option("--api-key-file", a.apiKeyFile, "--serve: read the API key from a file");
  app.add_option("--model-name", a.srv.modelName, "--serve: model id in /v1/models (default k3)");
  app.add_option("--queue", a.srv.engine.queue, "--serve: requests that may wait for a free slot (default 8)");
  // At most 256: the HTTP pool is sized by it before the model (and so the memory check) is loaded.
  app.add_option("--parallel", a.srv.engine.parallel,
                 "--serve: sequences generated at once (continuous batching), each with its state at --ctx "
                 "(1-256, default 4)")
      ->check(CLI::Range(size_t{1}, size_t{256}));
  app.add_option("--batch-tokens", a.srv.engine.batchTokens,
                 "--serve: rows per forward step: a token of every running sequence plus pieces of waiting "
                 "prompts (default: --chunk); smaller keeps the running streams' inter-token time lower while "
                 "a long prompt is fed");
  app.add_option("--state-cache-gb", a.stateCacheGb, "--serve: state checkpoints kept in RAM for reuse, GB (0 = no reuse; default 1)");
  app.add_option("--state-cache-dir", a.srv.engine.stateCache.dir,
                 "--serve: also keep checkpoints as files here (restarts and replicas sharing it resume from them)");
  app.add_option("--state-cache-disk-gb", a.stateCacheDiskGb, "--serve: bytes of files in --state-cache-dir, GB (default 16)");
  app.add_option("--stream-interval-ms", a.srv.streamIntervalMs,
                 "--serve: send streamed output at most this often, ms (default 10; 0 = every token)");
  app.add_option("--cors", a.srv.corsOrigin, "--serve: allow this browser origin (CORS off by default)");
  app.add_option("--max-connections", a.srv.maxConnections,
                 "--serve: open client connections; past it a 503 and close (default 512)");
  app.add_option("--request-timeout", a.srv.requestTimeoutSeconds,
                 "--serve: seconds for a request's headers and body, whole (default 10; then 408)");
  app.add_option("--keep-alive-timeout", a.srv.keepAliveSeconds,
                 "--serve: seconds an idle connection stays open between requests (default 5)");
  std::string isa;
  k3app::addIsaOption(app, isa);
  const k3app::ErrorPolicy errors{.app = "k3-run", .json = [&] { return a.json; }};
  if (const auto rc = k3app::parseCommandLine(app, errors, argc, argv)) return *rc;
  return k3app::runReportingErrors(errors, [&] {
    k3app::applyIsaChoice(isa);
    k3::model::checkExpertTopP(a.expertTopP, "--expert-top-p");
    a.ctxGiven = ctxOpt->count() > 0;
    if (threadsOpt->count() && a.threadsArg != 0) a.threads = k3::checkThreadCount(a.threadsArg);
    k3::model::checkSamplerOptions(a.sampling.given);
    k3::model::checkLogitProcessorOptions({a.processing.presencePenalty, a.processing.frequencyPenalty,
                                           a.processing.repetitionPenalty}, SIZE_MAX);
    if (a.logprobs >= 0 && (!a.json || a.chat || a.serve))
      k3::fail(k3::ErrorKind::Usage, "--logprobs goes with --json and -p or --prompt-ids");
    if (a.serve) {
      if (!a.prompt.empty() || a.chat || !a.ids.empty() || !a.promptIds.empty() || !a.perplexity.empty())
        k3::fail(k3::ErrorKind::Usage, "--serve goes alone: not with -p, --chat, --ids, --prompt-ids or --perplexity");
      return serveMain(a);
    }
    return runMain(a);
  });
}
