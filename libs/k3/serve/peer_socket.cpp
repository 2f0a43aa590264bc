#include "k3/serve/peer_socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>

namespace k3::serve {

PeerState peerState(int fd) {
  if (fd < 0) return PeerState::Open;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return PeerState::Open;  // data waiting (a pipelined request)
  if (n == 0) {
    // A reset after the FIN leaves the socket CLOSEd (its error may already have been read).
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && info.tcpi_state == TCP_CLOSE) return PeerState::Gone;
    return PeerState::HalfClosed;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return PeerState::Open;
  return PeerState::Gone;  // reset, or an error
}

}  // namespace k3::serve
