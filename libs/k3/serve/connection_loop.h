// The server's sockets: one epoll thread accepts connections and reads each
// request whole (headers and body under one deadline) before a worker sees
// it; idle keep-alive connections wait in epoll, holding no worker. So a
// slow, silent or half-open client costs a socket and a small buffer, and
// the connection cap bounds those: past it a new connection gets a 503 and
// is closed. Pipelined requests are answered one after another; a client
// that half-closed its side after sending gets its answer, then the close.
// Refusals (400/408/413/431/501) go out with `Connection: close`; every
// close after data flows lingers briefly (write side shut, reads drained) so
// the answer is not lost to a reset.
// Thread-safety: start() and stop() from the owning thread; the handler runs
// on the worker threads (one request of a connection at a time); stats() from
// any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "k3/serve/request_framing.h"
#include "k3/serve/request_stream.h"

namespace httplib {
class ThreadPool;
}

namespace k3::serve {

struct ConnectionLimits {
  size_t maxConnections = 512;     // open client connections (idle, reading, answering)
  int requestTimeoutMs = 10000;    // a request's headers and body, from its first byte (a new connection: from the accept)
  int keepAliveMs = 5000;          // idle between requests
  int writeTimeoutMs = 10000;      // per write of an answer
  unsigned maxRequestsPerConnection = 100;
  size_t workers = 24;             // threads that run complete requests
  FramingLimits framing;
};

struct ConnectionStats {
  uint64_t accepted = 0, refusedAtLimit = 0, timedOut = 0, idleClosed = 0;
  size_t open = 0;
};

// One complete request for a worker.
struct IncomingRequest {
  std::string_view bytes;
  int fd = -1;
  const PeerAddress* peer = nullptr;
  bool last = false;  // the connection closes after it (client half-closed, or its request budget is spent)
};

class ConnectionLoop {
 public:
  // Runs one request; returns whether the connection may carry another.
  using Handler = std::function<bool(const IncomingRequest&)>;
  // A request refused before a worker saw it (status), for /metrics.
  using RefusalCounter = std::function<void(int status)>;

  ConnectionLoop(const ConnectionLimits& lim, Handler handler, RefusalCounter refused);
  ~ConnectionLoop();
  ConnectionLoop(const ConnectionLoop&) = delete;
  ConnectionLoop& operator=(const ConnectionLoop&) = delete;

  // Binds host:port (0 = any free port; no SO_REUSEPORT, so a port in use
  // is an error) and returns the port; throws k3::Error (Usage) naming it.
  int bind(const std::string& host, int port);
  int listenFd() const { return listenFd_; }
  void start();
  // Stops accepting, closes idle connections, waits for running requests.
  void stop();
  ConnectionStats stats() const;

 private:
  struct Connection;
  using Clock = std::chrono::steady_clock;
  void run();
  void acceptAll();
  void onReadable(Connection& c);
  void advance(Connection& c);  // frames what is buffered: wait, refuse, or dispatch
  void dispatch(Connection& c, size_t length, size_t headerLength, bool droppedExpect);
  void finished(Connection& c, bool keep);
  void refuse(Connection& c, int status, const std::string& reason);
  void lingerClose(Connection& c);
  void close(Connection& c);
  void uncount(Connection& c);  // no longer one of the open connections
  void sweep(Clock::time_point now);
  void watch(Connection& c, bool on);
  bool tooManyOpen() const;

  ConnectionLimits lim_;
  Handler handler_;
  RefusalCounter refused_;
  int listenFd_ = -1, epollFd_ = -1, wakeFd_ = -1;
  std::string host_;
  std::thread thread_;
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::atomic<bool> stopping_{false};
  // Loop thread only: every connection by descriptor.
  std::unordered_map<int, std::unique_ptr<Connection>> conns_;
  size_t lingering_ = 0;
  Clock::time_point acceptPausedUntil_{};
  Clock::time_point lastLimitLog_{};
  uint64_t refusedSinceLog_ = 0;
  // Workers hand finished connections back here (then wake the loop).
  std::mutex returnedMutex_;
  std::vector<std::pair<Connection*, bool>> returned_;
  std::atomic<uint64_t> accepted_{0}, refusedAtLimit_{0}, timedOut_{0}, idleClosed_{0};
  std::atomic<size_t> open_{0};
};

}  // namespace k3::serve
