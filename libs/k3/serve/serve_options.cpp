#include "k3/serve/serve_options.h"

#include "k3/io/error.h"

namespace k3::serve {

namespace {
bool isLoopback(const std::string& h) {
  return h == "127.0.0.1" || h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}
}  // namespace

void checkServeOptions(const ServeOptions& o) {
  if (!isLoopback(o.host) && o.apiKey.empty())
    fail(ErrorKind::Usage, "--host ", o.host,
         " is not a loopback address: give --api-key or --api-key-file (refusing to serve without a key)");
  if (o.port < 0 || o.port > 65535) fail(ErrorKind::Usage, "--port ", o.port, " is not a TCP port");
  if (o.streamIntervalMs < 0 || o.streamIntervalMs > 1000)
    fail(ErrorKind::Usage, "--stream-interval-ms ", o.streamIntervalMs, " is outside [0, 1000]");
  if (o.engine.queue == 0) fail(ErrorKind::Usage, "--queue must be at least 1");
}

bool sameKey(const std::string& given, const std::string& expected) {
  // Every byte of the longer string is looked at; the lengths enter the result last.
  const size_t n = std::max(given.size(), expected.size());
  unsigned char diff = 0;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    const unsigned char b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    diff |= static_cast<unsigned char>(a ^ b);
  }
  return diff == 0 && given.size() == expected.size() && !expected.empty();
}

}  // namespace k3::serve
