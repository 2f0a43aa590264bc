// LineReader: lines as written, the last one without '\n' too, and a line
// past the cap refused (not grown) even when no '\n' ever comes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "k3/io/error.h"
#include "k3/io/line_reader.h"

namespace {

// A pipe whose writer sends `bytes` and closes.
struct Pipe {
  int fds[2];
  std::thread writer;
  explicit Pipe(std::string bytes) {
    EXPECT_EQ(::pipe(fds), 0);
    writer = std::thread([this, b = std::move(bytes)] {
      size_t at = 0;
      while (at < b.size()) {
        const ssize_t n = ::write(fds[1], b.data() + at, b.size() - at);
        if (n <= 0) break;  // the reader stopped (EPIPE)
        at += static_cast<size_t>(n);
      }
      ::close(fds[1]);
    });
  }
  ~Pipe() {
    ::close(fds[0]);
    writer.join();
  }
};

constexpr k3::InputCap kSmall{"chat line", 100};

TEST(IoLineReader, LinesThenTheLastWithoutNewline) {
  Pipe p("one\n\ntwo words\nlast");
  k3::LineReader r(p.fds[0], "<stdin>", kSmall);
  EXPECT_EQ(r.next(), "one");
  EXPECT_EQ(r.next(), "");
  EXPECT_EQ(r.next(), "two words");
  EXPECT_EQ(r.next(), "last");
  EXPECT_EQ(r.next(), std::nullopt);
}

TEST(IoLineReader, ALineAtTheCapPassesOnePastItIsRefused) {
  // Appended, not `+`: GCC 12 warns falsely (-Warray-bounds) on the temporaries' `+`.
  Pipe p(std::string(100, 'a').append("\n").append(101, 'b').append("\nnever"));
  k3::LineReader r(p.fds[0], "<stdin>", kSmall);
  EXPECT_EQ(r.next(), std::string(100, 'a'));
  try {
    r.next();
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::Format);
    EXPECT_STREQ(e.what(), "<stdin>: a chat line is more than the limit of 100 bytes");
  }
}

TEST(IoLineReader, AnEndlessLineEndsAtTheCap) {
  Pipe p(std::string(5000, 'z'));  // no newline at all, 50 x the cap
  k3::LineReader r(p.fds[0], "<stdin>", kSmall);
  EXPECT_THROW(r.next(), k3::Error);
}

}  // namespace
