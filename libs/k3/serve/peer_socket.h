// Noticing that an HTTP client went away while its request is still being
// worked on. cpp-httplib 0.11.4 gives a handler neither the socket nor a
// "connection closed" query, so the handler looks its connection up once
// (the socket whose peer and local ports are the request's) and then asks
// the kernel whether the peer has closed it.
// Thread-safety: stateless functions over a socket; safe from any thread.
#pragma once

#include <string>

namespace k3::serve {

// The descriptor of this process's TCP socket connected to
// remoteAddr:remotePort from localPort; -1 if none is found.
int findPeerSocket(const std::string& remoteAddr, int remotePort, int localPort);

// True once the peer closed (FIN or reset); false while it is open.
bool peerClosed(int fd);

}  // namespace k3::serve
