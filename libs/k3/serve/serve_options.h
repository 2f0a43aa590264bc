// What `k3-run --serve` is told: where to listen, who may talk to it, and
// the limits that keep one model process safe to expose.
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <cstddef>
#include <string>

#include "k3/serve/engine.h"

namespace k3::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";   // an IP address; not loopback requires apiKey
  int port = 8080;                  // 0: any free port (tests)
  std::string apiKey;               // "" = no authentication (loopback only)
  std::string modelName = "k3";     // id in /v1/models and in responses
  std::string corsOrigin;           // "" = no CORS headers
  size_t bodyLimit = 8u << 20;      // request body bytes
  size_t jsonDepth = 64;            // JSON nesting levels
  size_t maxConnections = 512;      // open client connections; past it a 503 and close
  int requestTimeoutSeconds = 10;   // a request's headers and body, whole (slowloris: 408)
  int keepAliveSeconds = 5;         // an idle connection between requests
  int writeTimeoutSeconds = 10;     // per write of an answer (a client that stops reading)
  size_t maxTokens = 0;             // clamp on max_tokens; 0 = the context size
  size_t httpThreads = 0;           // 0: parallel + queue + 16
  int streamIntervalMs = 10;        // output handed to the client at most this often (0: every token)
  model::SamplerOptions samplingDefaults{1.0f, 0, 1.0f, 0};  // a request's sampling without the fields: generation_config.json
  EngineOptions engine;
};

// Throws k3::Error(Usage) for a configuration that must not start: a host
// that is not an IP address, a non-loopback one without an API key, a bad
// port or limit, more connections than this process may open descriptors
// for (it raises its soft RLIMIT_NOFILE up to the hard one first).
void checkServeOptions(const ServeOptions& o);

// Whether `host` (an IP address) is a loopback one: 127.0.0.0/8, ::1, or
// ::ffff:127.x.y.z. False for anything that does not parse as an address.
bool isLoopbackAddress(const std::string& host);

// The credentials of an `Authorization: Bearer KEY` header (the scheme in
// any letter case, RFC 9110 11.1); "" when the header is not that.
std::string bearerToken(const std::string& authorization);

// Constant-time comparison (no early exit on the first differing byte).
bool sameKey(const std::string& given, const std::string& expected);

}  // namespace k3::serve
