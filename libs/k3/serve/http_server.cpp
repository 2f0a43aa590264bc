#include "k3/serve/http_server.h"

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>

#include "k3/io/error.h"
#include "k3/io/json_text.h"
#include "k3/serve/api_error.h"
#include "k3/serve/delta_reader.h"
#include "k3/serve/json_body.h"
#include "k3/serve/peer_socket.h"
#include "k3/serve/prompt_render.h"
#include "k3/serve/request_stream.h"
#include "k3/serve/response_json.h"
#include "k3/serve/web_page.h"

namespace k3::serve {

// cpp-httplib's server without its sockets: ConnectionLoop hands it one
// complete request at a time (process_request is the per-request step its
// own accept loop would run).
class RequestRouter : public httplib::Server {
 public:
  using httplib::Server::process_request;
  // httplib's chunked writer stops once the listening socket is invalid.
  void setListening(int fd) { svr_sock_ = fd; }
};

namespace {

// Set on each request by the worker (any copy the client sent is dropped
// first): the connection's socket, for noticing a client that went away.
constexpr char kSocketHeader[] = "X-K3-Connection-Socket";

int socketOf(const httplib::Request& req) {
  const std::string v = req.get_header_value(kSocketHeader);
  return v.empty() ? -1 : std::atoi(v.c_str());
}

// Whether the client went away while its answer is being made. A FIN alone
// is settled once by `probe` (something the client must accept): a client
// that closed completely answers it with a reset, a half-closed one reads it.
class ClientWatch {
 public:
  ClientWatch(int fd, std::function<void()> probe) : fd_(fd), probe_(std::move(probe)) {}
  bool gone() {
    const PeerState s = peerState(fd_);
    if (s == PeerState::HalfClosed && !probed_) {
      probed_ = true;
      if (probe_) probe_();
    }
    return s == PeerState::Gone;
  }

 private:
  int fd_;
  std::function<void()> probe_;
  bool probed_ = false;
};

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(50);  // disconnect check while waiting

int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string randomId(const char* prefix) {
  std::random_device rd;
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s = prefix;
  for (int i = 0; i < 24; ++i) s += digits[rd() % 36];
  return s;
}

void sendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_content(errorEnvelope(e), "application/json");
}

// One log line per request, on stderr: a generation's token counts and how
// it ended; the reason of every 4xx/5xx (and of a stream that ended in an
// error event).
void logLine(const std::string& method, const std::string& path, int status, const GenerationUsage* u,
             Clock::time_point t0, const std::string& reason = "") {
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const std::string why = reason.empty() ? "" : " — " + reason;
  if (u)
    std::fprintf(stderr, "[k3-serve] %s %s %d prompt=%zu cached=%zu generated=%zu %.0f ms%s\n", method.c_str(),
                 path.c_str(), status, u->promptTokens, u->cachedTokens, u->completionTokens, ms, why.c_str());
  else
    std::fprintf(stderr, "[k3-serve] %s %s %d %.0f ms%s\n", method.c_str(), path.c_str(), status, ms, why.c_str());
}
void logLine(const httplib::Request& req, int status, const GenerationUsage* u, Clock::time_point t0,
             const std::string& reason = "") {
  logLine(req.method, req.path, status, u, t0, reason);
}

std::string finishFor(const GenerationJob& job) {
  return job.finishReason == "cancelled" ? "stop" : job.finishReason;
}

// How a generation ended, for its log line.
std::string endingOf(const GenerationJob& job) {
  if (!job.error.empty()) return "error: " + job.error;
  std::string s = "finish=" + job.finishReason;
  if (!job.malformed.empty()) s += ": model output off the XTML grammar: " + job.malformed;
  return s;
}

ApiError jobError(const GenerationJob& job) {
  return ApiError(job.errorStatus, job.errorStatus == 503 ? "service_unavailable" : "server_error", "", "", job.error);
}

// A non-stream answer: every delta gathered into one message, then one body.
void answerWhole(GenerationJob& job, httplib::Response& res, const ResponseMeta& meta, bool chat,
                 ClientWatch& client, std::chrono::milliseconds interval) {
  std::vector<OutputDelta> deltas;
  std::vector<LogprobEntry> logprobs;
  tok::ChatMessage msg;
  DeltaReader reader(job, interval, kPoll);
  bool done = false;
  while (!done) {
    done = reader.take(deltas);
    for (auto& d : deltas) {
      if (d.kind == OutputDelta::Kind::Logprob) logprobs.push_back(std::move(d.logprob));
      else addDelta(msg, d);
    }
    if (!done && client.gone()) job.cancel = true;  // keep waiting: the engine stops within a step
  }
  size_t offset = 0;
  const std::string lp = !job.params.logprobs ? "null" : chat ? chatLogprobsJson(logprobs)
                                                              : completionLogprobsJson(logprobs, offset);
  if (!job.error.empty()) {
    sendError(res, jobError(job));
  } else if (chat) {
    res.set_content(chatCompletionJson(meta, msg, finishFor(job), job.usage, lp), "application/json");
  } else {
    res.set_content(completionJson(meta, contentOf(msg), finishFor(job), job.usage, lp), "application/json");
  }
}

// An SSE answer, one event per delta as the engine makes them; false when the
// client went away.
bool streamAnswer(GenerationJob& job, httplib::DataSink& sink, const ResponseMeta& meta, bool chat, int fd,
                  std::chrono::milliseconds interval) {
  auto send = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
  ClientWatch client(fd, [&] { send(": still working\n\n"); });  // an SSE comment: readers skip it
  if (chat && !send(sseEvent(chatChunkJson(meta, "{\"role\":\"assistant\",\"content\":\"\"}", "")))) return false;
  std::vector<OutputDelta> deltas;
  // Logprob entries wait for the next chunk sent: each chunk carries those of
  // the tokens produced since the previous one.
  std::vector<LogprobEntry> logprobs;
  size_t offset = 0;  // completions' text_offset
  auto takeLogprobs = [&] {
    if (!job.params.logprobs) return std::string("null");
    std::string j = chat ? chatLogprobsJson(logprobs) : completionLogprobsJson(logprobs, offset);
    logprobs.clear();
    return j;
  };
  DeltaReader reader(job, interval, kPoll);
  bool done = false;
  while (!done) {
    done = reader.take(deltas);
    for (auto& d : deltas) {
      if (d.kind == OutputDelta::Kind::Logprob) {
        logprobs.push_back(std::move(d.logprob));
        continue;
      }
      const std::string lp = takeLogprobs();
      const std::string ev =
          chat ? chatChunkJson(meta, chatDeltaJson(d), "", lp) : completionChunkJson(meta, d.text, "", lp);
      if (!send(sseEvent(ev))) return false;
    }
    if (!done && deltas.empty() && client.gone()) return false;
  }
  if (!job.error.empty()) {
    // Cut (shutdown) or failed: an error event and no finish_reason chunk.
    send(sseEvent(errorEnvelope(jobError(job))));
  } else {
    const std::string fin = finishFor(job), lp = takeLogprobs();
    if (!send(sseEvent(chat ? chatChunkJson(meta, "{}", fin, lp) : completionChunkJson(meta, "", fin, lp))))
      return false;
    if (job.params.includeUsage &&
        !send(sseEvent(chat ? chatUsageChunkJson(meta, job.usage) : completionUsageChunkJson(meta, job.usage))))
      return false;
  }
  send(sseDone());
  sink.done();
  return true;
}

}  // namespace

HttpServer::HttpServer(const ServeOptions& opts) : opts_(opts), http_(std::make_unique<RequestRouter>()) {
  checkServeOptions(opts_);
  startedAt_ = unixNow();
}

HttpServer::~HttpServer() { stop(); }

HttpServer::Ready HttpServer::ready() const { return {tok_.load(), engine_.load()}; }

void HttpServer::attach(const tok::Tokenizer& tok, Engine& engine) {
  tok_ = &tok;
  engine_ = &engine;
}

int HttpServer::start() {
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error code, not a signal
  ConnectionLimits lim;
  lim.maxConnections = opts_.maxConnections;
  lim.requestTimeoutMs = opts_.requestTimeoutSeconds * 1000;
  lim.keepAliveMs = opts_.keepAliveSeconds * 1000;
  lim.writeTimeoutMs = opts_.writeTimeoutSeconds * 1000;
  // Every generation in flight (running or queued) holds a worker while it
  // answers; 16 more keep /health, /metrics and refusals answered meanwhile.
  lim.workers = opts_.httpThreads ? opts_.httpThreads : opts_.engine.parallel + opts_.engine.queue + 16;
  lim.framing.bodyBytes = opts_.bodyLimit;
  http_->set_payload_max_length(opts_.bodyLimit);
  http_->set_keep_alive_timeout(opts_.keepAliveSeconds);  // what the Keep-Alive header says
  http_->set_keep_alive_max_count(lim.maxRequestsPerConnection);
  routes();
  loop_ = std::make_unique<ConnectionLoop>(
      lim, [this](const IncomingRequest& in) { return handle(in); },
      [this](int status) { counters_.count("(unread)", status); });
  const int port = loop_->bind(opts_.host, opts_.port);
  http_->setListening(loop_->listenFd());
  loop_->start();
  return port;
}

bool HttpServer::handle(const IncomingRequest& in) {
  RequestStream strm(in.bytes, in.fd, *in.peer, opts_.writeTimeoutSeconds * 1000);
  bool closed = false;
  const bool ok = http_->process_request(strm, in.last, closed, [&in](httplib::Request& req) {
    req.headers.erase(kSocketHeader);
    req.set_header(kSocketHeader, std::to_string(in.fd));
  });
  return ok && !closed && !strm.writeFailed();
}

void HttpServer::stop() {
  if (http_) http_->setListening(INVALID_SOCKET);  // streams stop writing
  if (loop_) loop_->stop();
}

void HttpServer::routes() {
  auto& s = *http_;
  guardRoutes();

  // Wraps a handler: ApiError → envelope, counting and the log line.
  auto simple = [this](auto body) {
    return [this, body](const httplib::Request& req, httplib::Response& res) {
      const auto t0 = Clock::now();
      std::string reason;
      try {
        body(req, res);
      } catch (const ApiError& e) {
        sendError(res, e);
        reason = e.what();
      } catch (const std::exception& e) {
        sendError(res, ApiError(500, "server_error", "", "", e.what()));
        reason = e.what();
      }
      if (res.status == -1) res.status = 200;
      if (reason.empty() && res.status >= 400) reason = res.body;  // e.g. /health while loading
      counters_.count(req.path, res.status);
      logLine(req, res.status, nullptr, t0, reason);
    };
  };

  s.Get("/", simple([](const httplib::Request&, httplib::Response& res) {
          const std::string_view page = webPage();
          res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
        }));
  s.Get("/health", simple([this](const httplib::Request&, httplib::Response& res) {
          if (ready().engine) {
            res.set_content("{\"status\":\"ok\"}", "application/json");
          } else {
            res.status = 503;
            res.set_content("{\"status\":\"loading\"}", "application/json");
          }
        }));
  s.Get("/v1/models", simple([this](const httplib::Request&, httplib::Response& res) {
          needReady();
          res.set_content(modelListJson(opts_.modelName, startedAt_), "application/json");
        }));
  s.Get("/metrics", simple([this](const httplib::Request&, httplib::Response& res) {
          Ready r = ready();
          const EngineStats es = r.engine ? r.engine->stats() : EngineStats{};
          res.set_content(prometheusText(counters_, es, r.engine ? r.engine->queueDepth() : 0, opts_.engine.queue) +
                              connectionMetricsText(loop_->stats(), opts_.maxConnections),
                          "text/plain; version=0.0.4");
        }));
  s.Get("/slots", simple([this](const httplib::Request&, httplib::Response& res) {
          res.set_content(slotsJson(needReady().engine->stats()), "application/json");
        }));
  s.Post("/tokenize", simple([this](const httplib::Request& req, httplib::Response& res) {
           Ready r = needReady();
           simdjson::dom::parser parser;
           const auto root = parseJsonBody(parser, req.body, opts_.jsonDepth);
           std::vector<int32_t> ids;
           simdjson::dom::element v;
           // Bounded like a prompt: encoding stops once the text passes the context.
           const size_t ctx = r.engine->contextSize();
           if (!root["content"].get(v)) {
             std::vector<uint32_t> enc;
             if (!r.tok->encodeAppendUpTo(readString(v, "content"), false, enc, ctx))
               throw ApiError(400, "invalid_request_error", "content", "context_length_exceeded",
                              "'content' has more than " + std::to_string(ctx) +
                                  " tokens, the model's context (--ctx)");
             ids.assign(enc.begin(), enc.end());
           } else if (!root["messages"].get(v)) {  // the prompt a chat completion would feed
             RequestLimits lim{ctx, opts_.jsonDepth, 4};
             ids = renderChatPrompt(*r.tok, parseChatCompletionRequest(req.body, lim).chat, ctx, &r.engine->replyIds());
           } else {
             invalidRequest("content", "give 'content' (text) or 'messages' (a chat)");
           }
           std::string out = "{\"tokens\":[";
           for (size_t i = 0; i < ids.size(); ++i) {
             if (i) out += ',';
             out += std::to_string(ids[i]);
           }
           res.set_content(out + "]}", "application/json");
         }));
  s.Post("/detokenize", simple([this](const httplib::Request& req, httplib::Response& res) {
           Ready r = needReady();
           simdjson::dom::parser parser;
           const auto root = parseJsonBody(parser, req.body, opts_.jsonDepth);
           simdjson::dom::array arr;
           if (root["tokens"].get_array().get(arr)) invalidRequest("tokens", "'tokens' must be an array of ids");
           std::vector<uint32_t> ids;
           for (auto e : arr) {
             const int64_t id = readInteger(e, "tokens", 0, INT32_MAX);
             if (static_cast<size_t>(id) >= r.engine->vocabSize())
               invalidRequest("tokens", "token id " + std::to_string(id) + " is outside the vocabulary");
             ids.push_back(static_cast<uint32_t>(id));
           }
           res.set_content("{\"content\":" + jsonString(r.tok->decode(ids)) + "}", "application/json");
         }));

  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, true); });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, false); });
}

HttpServer::Ready HttpServer::needReady() const {
  Ready r = ready();
  if (!r.engine) throw ApiError(503, "service_unavailable", "", "loading", "the model is still loading");
  return r;
}

void HttpServer::guardRoutes() {
  auto& s = *http_;
  const std::string cors = opts_.corsOrigin;

  s.set_pre_routing_handler([this, cors](const httplib::Request& req, httplib::Response& res) {
    if (!cors.empty()) res.set_header("Access-Control-Allow-Origin", cors);
    if (req.method == "OPTIONS") {
      if (cors.empty()) {
        sendError(res, ApiError(405, "invalid_request_error", "", "", "CORS is off (start with --cors ORIGIN)"));
      } else {
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      }
      counters_.count(req.path, res.status);
      logLine(req, res.status, nullptr, Clock::now(), cors.empty() ? "CORS is off" : "");
      return httplib::Server::HandlerResponse::Handled;
    }
    // The page and the health probe are public; everything else needs the key.
    const bool open = req.path == "/" || req.path == "/health";
    if (!opts_.apiKey.empty() && !open) {
      const bool ok = sameKey(bearerToken(req.get_header_value("Authorization")), opts_.apiKey);
      if (!ok) {
        sendError(res, ApiError(401, "authentication_error", "", "invalid_api_key",
                                "missing or wrong API key (Authorization: Bearer KEY)"));
        counters_.count(req.path, 401);
        logLine(req, 401, nullptr, Clock::now(), "missing or wrong API key");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Errors httplib produces itself (404 route, 413 body, 400 request line).
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours
    std::string msg = res.status == 404   ? "no route " + req.method + " " + req.path
                      : res.status == 413 ? "request body exceeds " + std::to_string(opts_.bodyLimit) + " bytes"
                                          : "bad HTTP request";
    res.set_content(errorEnvelope(res.status, msg), "application/json");
    counters_.count(res.status == 404 ? "(unknown)" : req.path, res.status);
    logLine(req, res.status, nullptr, Clock::now(), msg);
    return httplib::Server::HandlerResponse::Handled;
  }));
}

std::shared_ptr<GenerationJob> HttpServer::submitJob(const httplib::Request& req, httplib::Response& res, bool chat) {
  auto job = std::make_shared<GenerationJob>();
  Ready r = needReady();
  const size_t ctx = r.engine->contextSize();
  RequestLimits lim{opts_.maxTokens ? std::min(opts_.maxTokens, ctx) : ctx, opts_.jsonDepth, 4};
  lim.vocabSize = r.engine->vocabSize();
  lim.sampling = opts_.samplingDefaults;
  if (chat) {
    ChatCompletionRequest cr = parseChatCompletionRequest(req.body, lim);
    job->mode = GenerationJob::Mode::Chat;
    job->prompt = renderChatPrompt(*r.tok, cr.chat, ctx, &r.engine->replyIds());
    job->thinking = chatPromptThinks(cr.chat);
    job->tools = cr.chat.tools;
    job->grammar = std::move(cr.grammar);
    job->params = std::move(cr.params);
  } else {
    CompletionRequest cr = parseCompletionRequest(req.body, lim);
    job->prompt = completionPrompt(*r.tok, cr, r.engine->bosId(), r.engine->vocabSize(), ctx);
    job->params = std::move(cr.params);
  }
  if (job->prompt.size() >= ctx) contextExceeded(chat ? "messages" : "prompt", ctx, job->prompt.size(), false);
  if (!job->params.seeded) job->params.sampling.seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  job->callIdPrefix = randomId("call_") + "_";
  if (!r.engine->submit(job)) {
    res.set_header("Retry-After", "1");
    throw ApiError(429, "rate_limit_error", "", "queue_full",
                   "the request queue is full (" + std::to_string(opts_.engine.queue) + " waiting); retry later");
  }
  return job;
}

void HttpServer::generate(const httplib::Request& req, httplib::Response& res, bool chat) {
  const auto t0 = Clock::now();
  std::shared_ptr<GenerationJob> job;
  try {
    job = submitJob(req, res, chat);
  } catch (const ApiError& e) {
    sendError(res, e);
    counters_.count(req.path, res.status);
    logLine(req, res.status, nullptr, t0, e.what());
    return;
  }
  const int fd = socketOf(req);
  const std::chrono::milliseconds interval(opts_.streamIntervalMs);
  ResponseMeta meta{randomId(chat ? "chatcmpl-" : "cmpl-"), unixNow(),
                    job->params.model.empty() ? opts_.modelName : job->params.model};

  if (!job->params.stream) {
    ClientWatch client(fd, [fd, http11 = req.version == "HTTP/1.1"] {
      static constexpr char kProcessing[] = "HTTP/1.1 102 Processing\r\n\r\n";  // HTTP/1.0 clients get no 1xx
      if (http11) (void)::send(fd, kProcessing, sizeof kProcessing - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    });
    answerWhole(*job, res, meta, chat, client, interval);
    counters_.count(req.path, res.status == -1 ? 200 : res.status);
    logLine(req, res.status == -1 ? 200 : res.status, &job->usage, t0, endingOf(*job));
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, meta, chat, fd, interval](size_t, httplib::DataSink& sink) {
        return streamAnswer(*job, sink, meta, chat, fd, interval);
      },
      [this, job, method = req.method, path = req.path, t0](bool success) {
        if (!success) job->cancel = true;  // the client went away: stop its work
        counters_.count(path, 200);
        logLine(method, path, 200, &job->usage, t0, success ? endingOf(*job) : "the client went away");
      });
}

}  // namespace k3::serve
