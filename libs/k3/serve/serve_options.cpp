#include "k3/serve/serve_options.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "k3/io/error.h"

namespace k3::serve {

bool isLoopbackAddress(const std::string& host) {
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

namespace {

bool isIpAddress(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Every connection may need a descriptor twice over (open, then lingering
// after its answer), plus the listener, epoll, the workers' and the model's files.
void checkDescriptors(size_t connections) {
  const rlim_t need = static_cast<rlim_t>(2 * connections + 256);
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= need) return;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need)
    fail(ErrorKind::Usage, "--max-connections ", connections, " needs ", need, " file descriptors; this process may open ",
         lim.rlim_max, " (ulimit -Hn): lower --max-connections");
  lim.rlim_cur = need;
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
    fail(ErrorKind::Usage, "--max-connections ", connections, ": cannot raise the descriptor limit to ", need, ": ",
         std::strerror(errno));
}

}  // namespace

void checkServeOptions(const ServeOptions& o) {
  if (!isIpAddress(o.host))
    fail(ErrorKind::Usage, "--host ", o.host, " is not an IP address (e.g. 127.0.0.1, ::1, 0.0.0.0)");
  if (!isLoopbackAddress(o.host) && o.apiKey.empty())
    fail(ErrorKind::Usage, "--host ", o.host,
         " is not a loopback address: give --api-key or --api-key-file (refusing to serve without a key)");
  if (o.port < 0 || o.port > 65535) fail(ErrorKind::Usage, "--port ", o.port, " is not a TCP port");
  if (o.streamIntervalMs < 0 || o.streamIntervalMs > 1000)
    fail(ErrorKind::Usage, "--stream-interval-ms ", o.streamIntervalMs, " is outside [0, 1000]");
  if (o.engine.queue == 0) fail(ErrorKind::Usage, "--queue must be at least 1");
  if (o.maxConnections < 1 || o.maxConnections > 100000)
    fail(ErrorKind::Usage, "--max-connections ", o.maxConnections, " is outside [1, 100000]");
  if (o.requestTimeoutSeconds < 1 || o.requestTimeoutSeconds > 3600)
    fail(ErrorKind::Usage, "--request-timeout ", o.requestTimeoutSeconds, " is outside [1, 3600] seconds");
  if (o.keepAliveSeconds < 1 || o.keepAliveSeconds > 3600)
    fail(ErrorKind::Usage, "--keep-alive-timeout ", o.keepAliveSeconds, " is outside [1, 3600] seconds");
  if (o.writeTimeoutSeconds < 1 || o.writeTimeoutSeconds > 3600)
    fail(ErrorKind::Usage, "write timeout ", o.writeTimeoutSeconds, " is outside [1, 3600] seconds");
  checkDescriptors(o.maxConnections);
}

std::string bearerToken(const std::string& authorization) {
  static constexpr char kScheme[] = "bearer";
  const size_t n = sizeof kScheme - 1;
  if (authorization.size() <= n || (authorization[n] != ' ' && authorization[n] != '\t')) return {};
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  size_t b = n;
  while (b < authorization.size() && (authorization[b] == ' ' || authorization[b] == '\t')) ++b;
  size_t e = authorization.size();
  while (e > b && (authorization[e - 1] == ' ' || authorization[e - 1] == '\t')) --e;
  return authorization.substr(b, e - b);
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
