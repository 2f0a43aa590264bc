// The HTTP side of `k3-run --serve` (cpp-httplib): routes, authentication,
// CORS, limits, per-request log lines, and the bridge from a request to an
// engine job (non-stream answers, SSE streams, disconnect → cancel).
// It listens before the model is loaded (GET /health answers 503 until
// attach()), so supervisors can watch a 1.5 TB model come up.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "k3/serve/engine.h"
#include "k3/serve/metrics.h"
#include "k3/serve/serve_options.h"
#include "k3/tok/tokenizer.h"

namespace httplib {
class Server;
}

namespace k3::serve {

class HttpServer {
 public:
  explicit HttpServer(const ServeOptions& opts);  // checks opts (throws Usage)
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts answering (503 for the model routes); returns the port.
  int start();
  // The model is ready: generation routes open.
  void attach(const tok::Tokenizer& tok, Engine& engine);
  // Stops accepting, waits for the listener thread.
  void stop();

 private:
  void routes();
  struct Ready {
    const tok::Tokenizer* tok = nullptr;
    Engine* engine = nullptr;
  };
  Ready ready() const;
  ServeOptions opts_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  std::atomic<const tok::Tokenizer*> tok_{nullptr};
  std::atomic<Engine*> engine_{nullptr};
  RequestCounters counters_;
  int64_t startedAt_ = 0;
};

}  // namespace k3::serve
