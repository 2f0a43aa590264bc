// Where one HTTP/1.x request ends in the bytes read so far, without parsing
// it for meaning: the connection loop reads a whole request (headers and
// body, under one deadline) before a worker sees it, so a slow or silent
// client holds a socket, never a thread. cpp-httplib then parses the
// complete request from memory.
// Refusals name the status the client gets: 431 headers too large, 413 body
// too large, 400 ambiguous framing (both Content-Length and
// Transfer-Encoding, two lengths, a bad chunk), 501 a transfer coding other
// than chunked.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace k3::serve {

struct RequestFrame {
  enum class State { NeedMore, Complete, Refused };
  State state = State::NeedMore;
  size_t length = 0;            // Complete: bytes of this request (pipelined ones follow)
  size_t headerLength = 0;      // once the headers are in: through the blank line
  bool expectContinue = false;  // the headers ask for `100 Continue` before the body
  bool bodyPending = false;     // the headers are in, the body is not (yet)
  int status = 0;               // Refused: the HTTP status to answer
  std::string reason;           // Refused: one line for the client and the log
};

struct FramingLimits {
  size_t headerBytes = 64 << 10;  // request line + headers
  size_t bodyBytes = 8u << 20;    // decoded body (chunked: the data only)
};

// Frames the request at the start of `buf` (leading blank lines are the
// caller's to skip, see skipBlankLines).
RequestFrame frameRequest(std::string_view buf, const FramingLimits& lim);

// Bytes of CRLF/LF at the start of `buf` (RFC 9112 2.2: ignored before a request line).
size_t skipBlankLines(std::string_view buf);

// Removes the `Expect` header line(s) from the first `headerLength` bytes of
// `request` once the loop has answered `100 Continue` itself; returns the
// bytes removed.
size_t dropExpectHeader(std::string& request, size_t headerLength);

}  // namespace k3::serve
