#include "k3/serve/request_framing.h"

#include <cctype>
#include <cstdint>

namespace k3::serve {

namespace {

using State = RequestFrame::State;

RequestFrame refused(int status, std::string reason) {
  RequestFrame f;
  f.state = State::Refused;
  f.status = status;
  f.reason = std::move(reason);
  return f;
}

bool sameWord(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A decimal length; false for anything else (signs, spaces inside, overflow).
bool parseLength(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

// The chunked body starting at `body`: NeedMore, Complete (length = bytes
// through the last trailer's blank line) or Refused.
RequestFrame frameChunked(std::string_view body, const FramingLimits& lim) {
  size_t pos = 0;
  uint64_t data = 0;
  for (;;) {
    const size_t eol = body.find("\r\n", pos);
    if (eol == std::string_view::npos) {
      if (body.size() - pos > 1024) return refused(400, "a chunk-size line longer than 1024 bytes");
      return {};
    }
    std::string_view line = body.substr(pos, eol - pos);
    if (const size_t semi = line.find(';'); semi != std::string_view::npos) line = line.substr(0, semi);
    line = trimmed(line);
    if (line.empty() || line.size() > 15) return refused(400, "a malformed chunk size");
    uint64_t size = 0;
    for (char c : line) {
      const int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                : -1;
      if (v < 0) return refused(400, "a malformed chunk size");
      size = size * 16 + static_cast<uint64_t>(v);
    }
    data += size;
    if (data > lim.bodyBytes)
      return refused(413, "request body exceeds " + std::to_string(lim.bodyBytes) + " bytes");
    pos = eol + 2;
    if (size == 0) break;
    if (body.size() < pos + size + 2) return {};
    if (body.substr(pos + size, 2) != "\r\n") return refused(400, "a chunk not followed by CRLF");
    pos += size + 2;
  }
  // Trailer lines, then the blank line.
  for (;;) {
    const size_t eol = body.find("\r\n", pos);
    if (eol == std::string_view::npos) {
      if (body.size() - pos > lim.headerBytes) return refused(431, "chunked trailers too large");
      return {};
    }
    if (eol == pos) {
      RequestFrame f;
      f.state = State::Complete;
      f.length = pos + 2;
      return f;
    }
    pos = eol + 2;
  }
}

}  // namespace

size_t skipBlankLines(std::string_view buf) {
  size_t i = 0;
  while (i < buf.size() && (buf[i] == '\r' || buf[i] == '\n')) ++i;
  return i;
}

RequestFrame frameRequest(std::string_view buf, const FramingLimits& lim) {
  const size_t end = buf.find("\r\n\r\n");
  if (end == std::string_view::npos || end + 4 > lim.headerBytes) {
    if (buf.size() >= lim.headerBytes || (end != std::string_view::npos))
      return refused(431, "request line and headers exceed " + std::to_string(lim.headerBytes) + " bytes");
    return {};
  }
  const size_t headerLength = end + 4;
  bool chunked = false, haveLength = false, expectContinue = false;
  uint64_t length = 0;
  size_t pos = buf.find("\r\n") + 2;  // past the request line
  while (pos < end + 2) {
    const size_t eol = buf.find("\r\n", pos);
    const std::string_view line = buf.substr(pos, eol - pos);
    pos = eol + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;  // httplib skips it too
    const std::string_view name = line.substr(0, colon), value = trimmed(line.substr(colon + 1));
    if (sameWord(name, "Content-Length")) {
      uint64_t v = 0;
      if (!parseLength(value, v)) return refused(400, "Content-Length '" + std::string(value) + "' is not a length");
      if (haveLength) return refused(400, "two Content-Length headers");
      haveLength = true;
      length = v;
    } else if (sameWord(name, "Transfer-Encoding")) {
      if (!sameWord(value, "chunked"))
        return refused(501, "Transfer-Encoding '" + std::string(value) + "' (only chunked is read)");
      if (chunked) return refused(400, "two Transfer-Encoding headers");
      chunked = true;
    } else if (sameWord(name, "Expect")) {
      expectContinue = sameWord(value, "100-continue");
    }
  }
  if (chunked && haveLength) return refused(400, "both Content-Length and Transfer-Encoding");
  if (haveLength && length > lim.bodyBytes)
    return refused(413, "request body exceeds " + std::to_string(lim.bodyBytes) + " bytes");

  RequestFrame f;
  f.headerLength = headerLength;
  f.expectContinue = expectContinue;
  if (chunked) {
    RequestFrame body = frameChunked(buf.substr(headerLength), lim);
    if (body.state == State::Refused) return body;
    if (body.state == State::Complete) {
      f.state = State::Complete;
      f.length = headerLength + body.length;
    } else {
      f.bodyPending = true;
    }
    return f;
  }
  if (buf.size() >= headerLength + length) {
    f.state = State::Complete;
    f.length = headerLength + static_cast<size_t>(length);
  } else {
    f.bodyPending = true;
  }
  return f;
}

size_t dropExpectHeader(std::string& request, size_t headerLength) {
  size_t removed = 0;
  size_t pos = request.find("\r\n") + 2;
  while (pos + 2 <= headerLength - removed) {
    const size_t eol = request.find("\r\n", pos);
    if (eol == pos) break;  // the blank line
    const std::string_view line(request.data() + pos, eol - pos);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && sameWord(line.substr(0, colon), "Expect")) {
      request.erase(pos, eol + 2 - pos);
      removed += eol + 2 - pos;
      continue;
    }
    pos = eol + 2;
  }
  return removed;
}

}  // namespace k3::serve
