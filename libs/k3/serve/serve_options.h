// What `k3-run --serve` is told: where to listen, who may talk to it, and
// the limits that keep one model process safe to expose.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstddef>
#include <string>

#include "k3/serve/engine.h"

namespace k3::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";   // anything else requires apiKey
  int port = 8080;                  // 0: any free port (tests)
  std::string apiKey;               // "" = no authentication (loopback only)
  std::string modelName = "k3";     // id in /v1/models and in responses
  std::string corsOrigin;           // "" = no CORS headers
  size_t bodyLimit = 8u << 20;      // request body bytes
  size_t jsonDepth = 64;            // JSON nesting levels
  int readTimeoutSeconds = 10;      // per read of headers/body (slowloris)
  size_t maxTokens = 0;             // clamp on max_tokens; 0 = the context size
  size_t httpThreads = 0;           // 0: queue + 16
  int streamIntervalMs = 10;        // output handed to the client at most this often (0: every token)
  model::SamplerOptions samplingDefaults{1.0f, 0, 1.0f, 0};  // a request's sampling without the fields: generation_config.json
  EngineOptions engine;
};

// Throws k3::Error(Usage) for a configuration that must not start: a
// non-loopback address without an API key, a bad port.
void checkServeOptions(const ServeOptions& o);

// Constant-time comparison (no early exit on the first differing byte).
bool sameKey(const std::string& given, const std::string& expected);

}  // namespace k3::serve
