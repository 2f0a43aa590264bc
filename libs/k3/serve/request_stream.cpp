#include "k3/serve/request_stream.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace k3::serve {

namespace {
// Waits until the socket takes more bytes; false on timeout or error.
bool waitWritable(int fd, int timeoutMs) {
  pollfd p{fd, POLLOUT, 0};
  for (;;) {
    const int n = ::poll(&p, 1, timeoutMs);
    if (n < 0 && errno == EINTR) continue;
    return n == 1 && (p.revents & POLLOUT) && !(p.revents & (POLLERR | POLLHUP));
  }
}
}  // namespace

bool RequestStream::is_writable() const { return !writeFailed_ && waitWritable(fd_, writeTimeoutMs_); }

ssize_t RequestStream::read(char* ptr, size_t size) {
  const size_t n = std::min(size, request_.size());
  std::memcpy(ptr, request_.data(), n);
  request_.remove_prefix(n);
  return static_cast<ssize_t>(n);
}

ssize_t RequestStream::write(const char* ptr, size_t size) {
  if (writeFailed_) return -1;
  for (;;) {
    const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && waitWritable(fd_, writeTimeoutMs_)) continue;
    writeFailed_ = true;  // gone, or not reading for a whole write timeout
    return -1;
  }
}

void RequestStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = peer_.remoteIp;
  port = peer_.remotePort;
}

void RequestStream::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = peer_.localIp;
  port = peer_.localPort;
}

}  // namespace k3::serve
