#include "k3/serve/connection_loop.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "k3/io/error.h"
#include "k3/serve/api_error.h"

namespace k3::serve {

struct ConnectionLoop::Connection {
  enum class State { Reading, Busy, Lingering };
  int fd = -1;
  State state = State::Reading;
  PeerAddress peer;
  std::string buf;       // read, not yet handed to a worker
  std::string current;   // the request a worker is answering
  bool peerShut = false; // read EOF: the client sends no more
  bool continueSent = false;
  bool watched = false;  // in the epoll set
  bool counted = false;  // one of the open connections (the limit counts it)
  unsigned served = 0;
  Clock::time_point requestStart, idleSince, lingerUntil;
};

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kLinger = std::chrono::seconds(2);
constexpr size_t kReadPiece = 64 << 10;
constexpr size_t kTrimAfterBytes = 1 << 20;

const char* reasonPhrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// A whole answer written by the loop itself (never more than a socket
// buffer holds, so one non-blocking send).
void sendClosingAnswer(int fd, int status, const std::string& message) {
  const std::string body = errorEnvelope(status, message);
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reasonPhrase(status) +
                    "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n";
  if (status == 503) out += "Retry-After: 1\r\n";
  out += "\r\n" + body;
  (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

std::string ipOf(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
  else if (a.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
  return buf;
}

int portOf(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

}  // namespace

ConnectionLoop::ConnectionLoop(const ConnectionLimits& lim, Handler handler, RefusalCounter refused)
    : lim_(lim), handler_(std::move(handler)), refused_(std::move(refused)) {}

ConnectionLoop::~ConnectionLoop() {
  stop();
  if (listenFd_ >= 0) ::close(listenFd_);
}

int ConnectionLoop::bind(const std::string& host, int port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof *v6;
  } else {
    fail(ErrorKind::Usage, "--host ", host, " is not an IP address");
  }
  host_ = host;
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(ErrorKind::Io, "cannot open a socket: ", std::strerror(errno));
  const int one = 1;
  // SO_REUSEADDR only (a restart may bind over TIME_WAIT); never SO_REUSEPORT,
  // with which a second server would share the port and answer every other request.
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const int e = errno;
    ::close(fd);
    if (e == EADDRINUSE) fail(ErrorKind::Usage, "--port ", port, ": ", host, ":", port, " is already in use");
    fail(ErrorKind::Usage, "--host ", host, " --port ", port, ": cannot listen there (", std::strerror(e), ")");
  }
  if (::listen(fd, 1024) != 0) {
    const int e = errno;
    ::close(fd);
    fail(ErrorKind::Io, "cannot listen on ", host, ":", port, ": ", std::strerror(e));
  }
  sockaddr_storage bound{};
  socklen_t bl = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bl);
  listenFd_ = fd;
  return portOf(bound);
}

void ConnectionLoop::start() {
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epollFd_ < 0 || wakeFd_ < 0) fail(ErrorKind::Io, "cannot create the connection loop: ", std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listenFd_;
  ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, listenFd_, &ev);
  ev.data.fd = wakeFd_;
  ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, wakeFd_, &ev);
  workers_ = std::make_unique<httplib::ThreadPool>(lim_.workers);
  thread_ = std::thread([this] { run(); });
}

void ConnectionLoop::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  const uint64_t one = 1;
  (void)::write(wakeFd_, &one, sizeof one);
  thread_.join();
  workers_->shutdown();  // runs what was queued, then joins
  for (auto& [fd, c] : conns_) ::close(fd);
  conns_.clear();
  open_ = 0;
  ::close(epollFd_);
  ::close(wakeFd_);
  epollFd_ = wakeFd_ = -1;
}

ConnectionStats ConnectionLoop::stats() const {
  return {accepted_.load(), refusedAtLimit_.load(), timedOut_.load(), idleClosed_.load(), open_.load()};
}

void ConnectionLoop::run() {
  std::vector<epoll_event> events(256);
  auto lastSweep = Clock::now();
  while (!stopping_) {
    const int n = ::epoll_wait(epollFd_, events.data(), static_cast<int>(events.size()), 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listenFd_) {
        acceptAll();
      } else if (fd == wakeFd_) {
        uint64_t v;
        (void)::read(wakeFd_, &v, sizeof v);
        std::vector<std::pair<Connection*, bool>> back;
        {
          std::lock_guard<std::mutex> lock(returnedMutex_);
          back.swap(returned_);
        }
        for (auto& [c, keep] : back) finished(*c, keep);
      } else if (auto it = conns_.find(fd); it != conns_.end()) {
        onReadable(*it->second);
      }
    }
    const auto now = Clock::now();
    if (now - lastSweep >= std::chrono::milliseconds(100)) {
      sweep(now);
      lastSweep = now;
    }
  }
  // Stopping: idle, reading and lingering connections close now; busy ones
  // close once their worker is done (stop() after the pool joins).
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (it->second->state != Connection::State::Busy) {
      ::close(it->first);
      it = conns_.erase(it);
    } else {
      ++it;
    }
  }
}

bool ConnectionLoop::tooManyOpen() const { return open_.load() >= lim_.maxConnections; }

void ConnectionLoop::acceptAll() {
  if (Clock::now() < acceptPausedUntil_) return;
  for (;;) {
    sockaddr_storage peer{};
    socklen_t pl = sizeof peer;
    const int fd = ::accept4(listenFd_, reinterpret_cast<sockaddr*>(&peer), &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting for a moment instead of spinning on the listener.
        acceptPausedUntil_ = Clock::now() + std::chrono::milliseconds(100);
        epoll_event ev{};
        ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, listenFd_, &ev);
      }
      return;
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->peer.remoteIp = ipOf(peer);
    c->peer.remotePort = portOf(peer);
    sockaddr_storage local{};
    socklen_t ll = sizeof local;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll);
    c->peer.localIp = ipOf(local);
    c->peer.localPort = portOf(local);
    c->idleSince = Clock::now();
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // SSE events go out as written
    Connection& ref = *c;
    conns_.emplace(fd, std::move(c));
    if (tooManyOpen()) {
      ++refusedAtLimit_;
      ++refusedSinceLog_;
      const auto now = Clock::now();
      if (now - lastLimitLog_ >= std::chrono::seconds(1)) {
        std::fprintf(stderr, "[k3-serve] connection limit %zu reached (--max-connections): refused %llu connection(s)\n",
                     lim_.maxConnections, static_cast<unsigned long long>(refusedSinceLog_));
        lastLimitLog_ = now;
        refusedSinceLog_ = 0;
      }
      if (refused_) refused_(503);
      sendClosingAnswer(fd, 503,
                        "the server holds its limit of " + std::to_string(lim_.maxConnections) +
                            " open connections (--max-connections); retry later");
      lingerClose(ref);
      continue;
    }
    ++accepted_;
    ++open_;
    ref.counted = true;
    watch(ref, true);
  }
}

void ConnectionLoop::watch(Connection& c, bool on) {
  if (c.watched == on) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = c.fd;
  ::epoll_ctl(epollFd_, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, c.fd, &ev);
  c.watched = on;
}

void ConnectionLoop::onReadable(Connection& c) {
  char piece[kReadPiece];
  const size_t most = lim_.framing.headerBytes + lim_.framing.bodyBytes + kReadPiece;
  for (;;) {
    if (c.state == Connection::State::Reading && c.buf.size() >= most) break;  // framing refuses or completes
    const ssize_t n = ::recv(c.fd, piece, sizeof piece, 0);
    if (n > 0) {
      if (c.state == Connection::State::Lingering) continue;  // drained, dropped
      if (c.buf.empty()) c.requestStart = Clock::now();
      c.buf.append(piece, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      c.peerShut = true;
      watch(c, false);  // EOF stays readable
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    close(c);  // reset
    return;
  }
  if (c.state == Connection::State::Lingering) {
    if (c.peerShut) close(c);
    return;
  }
  advance(c);
}

void ConnectionLoop::advance(Connection& c) {
  if (const size_t blank = skipBlankLines(c.buf)) c.buf.erase(0, blank);
  if (c.buf.empty()) {
    if (c.peerShut) close(c);
    return;
  }
  const RequestFrame f = frameRequest(c.buf, lim_.framing);
  switch (f.state) {
    case RequestFrame::State::Refused:
      refuse(c, f.status, f.reason);
      return;
    case RequestFrame::State::NeedMore:
      if (c.peerShut) {
        close(c);  // the rest can never come
      } else if (f.expectContinue && f.bodyPending && !c.continueSent) {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        (void)::send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        c.continueSent = true;
      }
      return;
    case RequestFrame::State::Complete:
      dispatch(c, f.length, f.headerLength, f.expectContinue);
      return;
  }
}

void ConnectionLoop::dispatch(Connection& c, size_t length, size_t headerLength, bool hasExpect) {
  if (length == c.buf.size()) {
    c.current.swap(c.buf);  // the usual case: no copy of a large body
    c.buf.clear();
    c.buf.shrink_to_fit();
  } else {
    c.current.assign(c.buf, 0, length);
    c.buf.erase(0, length);
  }
  // The loop answered (or made moot) `Expect: 100-continue`; httplib must not answer it again.
  if (hasExpect) dropExpectHeader(c.current, headerLength);
  c.continueSent = false;
  c.state = Connection::State::Busy;
  watch(c, false);
  IncomingRequest in;
  in.bytes = c.current;
  in.fd = c.fd;
  in.peer = &c.peer;
  in.last = c.peerShut || c.served + 1 >= lim_.maxRequestsPerConnection || stopping_;
  Connection* cp = &c;
  workers_->enqueue([this, cp, in] {
    bool keep = false;
    try {
      keep = handler_(in);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[k3-serve] request failed: %s\n", e.what());
    }

    {
      std::lock_guard<std::mutex> lock(returnedMutex_);
      returned_.emplace_back(cp, keep && !in.last);
    }
    const uint64_t one = 1;
    (void)::write(wakeFd_, &one, sizeof one);
  });
}

void ConnectionLoop::finished(Connection& c, bool keep) {
  const bool large = c.current.size() >= kTrimAfterBytes;
  std::string().swap(c.current);
  // A large body's copies (these bytes, httplib's body, the parsed JSON) are
  // free now but held by malloc's arenas; hand them back to the system
  // instead of keeping the peak of a burst of large requests resident.
  if (large) ::malloc_trim(0);
  ++c.served;
  if (!keep || stopping_) {
    lingerClose(c);
    return;
  }
  c.state = Connection::State::Reading;
  c.idleSince = c.requestStart = Clock::now();  // a pipelined request's clock starts now
  if (!c.peerShut) watch(c, true);
  advance(c);  // a pipelined request may be waiting already
}

void ConnectionLoop::refuse(Connection& c, int status, const std::string& reason) {
  std::fprintf(stderr, "[k3-serve] %s:%d %d %s\n", c.peer.remoteIp.c_str(), c.peer.remotePort, status, reason.c_str());
  if (refused_) refused_(status);
  sendClosingAnswer(c.fd, status, reason);
  lingerClose(c);
}

// Shut our side (the client reads the answer, then EOF), drain what it still
// sends for a moment, then close: closing with unread input would reset the
// connection and could destroy the answer in flight.
void ConnectionLoop::lingerClose(Connection& c) {
  ::shutdown(c.fd, SHUT_WR);
  if (c.peerShut || lingering_ >= lim_.maxConnections) {
    close(c);
    return;
  }
  uncount(c);
  c.state = Connection::State::Lingering;
  ++lingering_;
  c.lingerUntil = Clock::now() + kLinger;
  c.buf.clear();
  watch(c, true);
}

void ConnectionLoop::uncount(Connection& c) {
  if (c.counted) --open_;
  c.counted = false;
}

void ConnectionLoop::close(Connection& c) {
  const int fd = c.fd;
  if (c.state == Connection::State::Lingering) --lingering_;
  uncount(c);
  watch(c, false);
  ::close(fd);
  conns_.erase(fd);  // destroys c
}

void ConnectionLoop::sweep(Clock::time_point now) {
  if (acceptPausedUntil_ != Clock::time_point{} && now >= acceptPausedUntil_) {
    acceptPausedUntil_ = {};
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listenFd_;
    ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, listenFd_, &ev);
  }
  const auto requestLimit = std::chrono::milliseconds(lim_.requestTimeoutMs);
  const auto idleLimit = std::chrono::milliseconds(lim_.keepAliveMs);
  std::vector<Connection*> due;
  for (auto& [fd, c] : conns_) {
    if (c->state == Connection::State::Lingering ? now >= c->lingerUntil
        : c->state == Connection::State::Reading
            // A new connection's first request has the request deadline from
            // the accept; between requests the keep-alive one applies.
            ? (c->buf.empty() ? now - c->idleSince >= (c->served ? idleLimit : requestLimit)
                              : now - c->requestStart >= requestLimit)
                                                  : false)
      due.push_back(c.get());
  }
  for (Connection* c : due) {
    if (c->state == Connection::State::Lingering) {
      close(*c);
    } else if (c->buf.empty()) {
      ++idleClosed_;
      close(*c);
    } else {
      ++timedOut_;
      refuse(*c, 408,
             "the request was not complete within " + std::to_string(lim_.requestTimeoutMs / 1000) +
                 " s (--request-timeout)");
    }
  }
}

}  // namespace k3::serve
