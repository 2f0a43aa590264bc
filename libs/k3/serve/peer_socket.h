// Noticing that an HTTP client went away while its request is still being
// worked on, without mistaking a half-closed client for a gone one: a FIN
// alone (the client shut its sending side) may still be a client waiting for
// its answer; only a reset or an error is certain. The handler settles a FIN
// by sending something the client must accept (an interim `102 Processing`
// before a non-stream answer, an SSE comment inside a stream): a client that
// closed completely answers that with a reset, a half-closed one reads it.
// Thread-safety: stateless functions over a socket; safe from any thread.
#pragma once

namespace k3::serve {

enum class PeerState { Open, HalfClosed, Gone };

// What the kernel knows of the peer of connected socket `fd`, without
// consuming input (pipelined bytes waiting count as Open).
PeerState peerState(int fd);

}  // namespace k3::serve
