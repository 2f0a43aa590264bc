// The HTTP side of `k3-run --serve`: routes, authentication, CORS, limits,
// per-request log lines, and the bridge from a request to an engine job
// (non-stream answers, SSE streams, disconnect → cancel). Sockets belong to
// a ConnectionLoop (whole requests read under a deadline, idle connections
// in epoll, a connection cap); cpp-httplib parses, routes and writes each
// complete request on a worker.
// It listens before the model is loaded (GET /health answers 503 until
// attach()), so supervisors can watch a 1.5 TB model come up.
// Thread-safety: start(), attach() and stop() from the owning thread; handlers
// run on the loop's workers and share only the counters (locked), the engine
// (thread-safe submit) and the immutable tokenizer.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "k3/serve/connection_loop.h"
#include "k3/serve/engine.h"
#include "k3/serve/metrics.h"
#include "k3/serve/serve_options.h"
#include "k3/tok/tokenizer.h"

namespace httplib {
struct Request;
struct Response;
}

namespace k3::serve {

class RequestRouter;

class HttpServer {
 public:
  explicit HttpServer(const ServeOptions& opts);  // checks opts (throws Usage)
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds (throws k3::Error Usage if the port is in use) and starts answering
  // (503 for the model routes); returns the port.
  int start();
  // The model is ready: generation routes open.
  void attach(const tok::Tokenizer& tok, Engine& engine);
  // Stops accepting, waits for the requests being answered.
  void stop();

 private:
  void routes();
  void guardRoutes();  // CORS, the API key, httplib's own errors
  bool handle(const IncomingRequest& in);  // one complete request, on a worker
  // POST /v1/chat/completions (chat) and /v1/completions: the job submitted,
  // then answered whole or as an SSE stream.
  void generate(const httplib::Request& req, httplib::Response& res, bool chat);
  // Parses the request, builds and submits its job; throws ApiError.
  std::shared_ptr<GenerationJob> submitJob(const httplib::Request& req, httplib::Response& res, bool chat);
  struct Ready {
    const tok::Tokenizer* tok = nullptr;
    Engine* engine = nullptr;
  };
  Ready ready() const;
  Ready needReady() const;  // throws ApiError 503 while the model loads
  ServeOptions opts_;
  std::unique_ptr<RequestRouter> http_;
  std::unique_ptr<ConnectionLoop> loop_;
  std::atomic<const tok::Tokenizer*> tok_{nullptr};
  std::atomic<Engine*> engine_{nullptr};
  RequestCounters counters_;
  int64_t startedAt_ = 0;
};

}  // namespace k3::serve
