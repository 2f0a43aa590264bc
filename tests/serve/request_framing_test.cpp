// request_framing: where a request ends in the bytes read so far, and the
// refusals made before a worker sees it. Expected lengths are counted from
// the literal requests here (RFC 9112 framing), not from the code.
#include "k3/serve/request_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using k3::serve::dropExpectHeader;
using k3::serve::frameRequest;
using k3::serve::FramingLimits;
using k3::serve::RequestFrame;
using k3::serve::skipBlankLines;
using State = RequestFrame::State;

const FramingLimits kLim{1024, 100};

TEST(RequestFraming, SizedBodiesCompleteAtTheirLengthAndEveryPrefixNeedsMore) {
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\ncontent-length:  5 \r\n\r\n";
  const std::string req = head + "hello";
  const std::string next = "GET /health HTTP/1.1\r\n\r\n";
  for (size_t n = 0; n < req.size(); ++n) {
    const RequestFrame f = frameRequest(req.substr(0, n), kLim);
    EXPECT_EQ(f.state, State::NeedMore) << n;
    EXPECT_EQ(f.bodyPending, n >= head.size()) << n;
  }
  const RequestFrame f = frameRequest(req + next, kLim);  // a pipelined request follows
  ASSERT_EQ(f.state, State::Complete);
  EXPECT_EQ(f.length, req.size());
  EXPECT_EQ(f.headerLength, head.size());
  const RequestFrame g = frameRequest(next, kLim);
  ASSERT_EQ(g.state, State::Complete);
  EXPECT_EQ(g.length, next.size());
}

TEST(RequestFraming, ChunkedBodiesEndAfterTheLastChunkAndTrailers) {
  const std::string req =
      "POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (size_t n = 0; n < req.size(); ++n) EXPECT_EQ(frameRequest(req.substr(0, n), kLim).state, State::NeedMore) << n;
  const RequestFrame f = frameRequest(req + "GET", kLim);
  ASSERT_EQ(f.state, State::Complete);
  EXPECT_EQ(f.length, req.size());
}

TEST(RequestFraming, RefusalsNameTheirStatus) {
  auto statusOf = [](const std::string& s) {
    const RequestFrame f = frameRequest(s, kLim);
    EXPECT_EQ(f.state, State::Refused) << s;
    EXPECT_FALSE(f.reason.empty());
    return f.status;
  };
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n"), 413);  // before any body byte
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n"), 413);  // 0x65 = 101
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'a') +
                     "\r\n40\r\n"),
            413);  // 128 in total
  EXPECT_EQ(statusOf("GET / HTTP/1.1\r\nX: " + std::string(1100, 'a')), 431);  // no blank line within the limit
  EXPECT_EQ(statusOf("GET / HTTP/1.1\r\nX: " + std::string(1100, 'a') + "\r\n\r\n"), 431);
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"), 400);
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n"), 400);
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"), 400);
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"), 400);
  EXPECT_EQ(statusOf("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n"), 400);
}

TEST(RequestFraming, ExpectContinueIsSeenAndDroppedOnceAnswered) {
  const std::string head = "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n";
  const RequestFrame f = frameRequest(head, kLim);
  EXPECT_EQ(f.state, State::NeedMore);
  EXPECT_TRUE(f.expectContinue);
  EXPECT_TRUE(f.bodyPending);
  std::string req = head + "{}";
  const size_t removed = dropExpectHeader(req, head.size());
  EXPECT_EQ(removed, std::string("Expect: 100-Continue\r\n").size());
  EXPECT_EQ(req, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
}

TEST(RequestFraming, BlankLinesBeforeARequestAreSkipped) {
  EXPECT_EQ(skipBlankLines("\r\n\r\nGET"), 4u);
  EXPECT_EQ(skipBlankLines("\nGET"), 1u);
  EXPECT_EQ(skipBlankLines("GET"), 0u);
}

}  // namespace
