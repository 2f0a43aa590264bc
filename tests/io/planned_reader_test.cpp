// PlannedReader against the file's own bytes: shuffled ranges of every size
// (tiny, touching, longer than a request, ending at an unaligned end of
// file) read in plan order in uneven pieces must give exactly the bytes a
// plain pread of each range gives, direct and buffered, at several depths;
// a file that shrinks, reads past the plan and ranges outside the file fail
// with the right error.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "k3/io/error.h"
#include "k3/io/file_io.h"
#include "k3/io/input_file.h"
#include "k3/io/page_cache.h"
#include "k3/io/phase_time.h"
#include "k3/io/planned_reader.h"
#include "support/error_of.h"
#include "support/test_env.h"

namespace {

std::string patternFile(const std::string& path, size_t bytes, uint32_t seed) {
  std::string s(bytes, '\0');
  std::mt19937 rng(seed);
  for (auto& c : s) c = static_cast<char>(rng());
  k3test::writeFile(path, s);
  return s;
}

// Non-overlapping ranges covering parts of [0, size), shuffled, with some
// runs kept in file order so that they touch and merge.
std::vector<k3::ByteRange> shuffledRanges(uint64_t size, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<k3::ByteRange> r;
  for (uint64_t at = 0; at < size;) {
    const uint64_t kinds[] = {1, 7, 4096, 5000, 65536, 300000};
    const uint64_t len = std::min(size - at, kinds[rng() % 6] + rng() % 100);
    if (rng() % 5 != 0 || at + len == size) r.push_back({at, len});  // some gaps: bytes nobody reads
    at += len;
  }
  // Shuffle blocks of up to 3 neighbours, so touching runs survive.
  std::vector<std::vector<k3::ByteRange>> blocks;
  for (size_t i = 0; i < r.size();) {
    const size_t n = std::min<size_t>(r.size() - i, 1 + rng() % 3);
    blocks.emplace_back(r.begin() + static_cast<long>(i), r.begin() + static_cast<long>(i + n));
    i += n;
  }
  std::shuffle(blocks.begin(), blocks.end(), rng);
  std::vector<k3::ByteRange> out;
  for (auto& b : blocks) out.insert(out.end(), b.begin(), b.end());
  return out;
}

using k3test::errorOf;

struct Case {
  bool direct;
  size_t block, depth;
};

TEST(PlannedReader, GivesThePlannedBytesInOrderDirectAndBuffered) {
  const std::string dir = k3test::freshDir("planned-reader");
  const std::string path = dir + "/src.bin";
  const size_t size = 3 * 1048576 + 12345;  // unaligned end of file
  const std::string bytes = patternFile(path, size, 7);
  const std::vector<k3::ByteRange> ranges = shuffledRanges(size, 11);
  std::string want;
  uint64_t planned = 0;
  for (const auto& r : ranges) {
    want.append(bytes, r.offset, r.length);
    planned += r.length;
  }
  ASSERT_TRUE(std::any_of(ranges.begin(), ranges.end(), [&](auto& r) { return r.offset + r.length == size; }));
  const Case cases[] = {{true, 65536, 1}, {true, 65536, 3}, {true, 1 << 20, 2}, {true, 4096, 4},
                        {false, 65536, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "direct " << c.direct << " block " << c.block << " depth " << c.depth);
    k3::InputFile f = k3::openInputFile(path, k3::kShardInput);
    k3::PlannedReadBuffers buffers(c.block, c.depth);
    k3::PlannedReadPhases phases;
    k3::PlannedReader reader(f.fd.fd, path, f.size, ranges, c.direct, buffers, &phases);
    EXPECT_EQ(reader.direct(), c.direct);  // the test directory is on a disk that takes O_DIRECT
    std::string got(planned, '\0');
    std::mt19937 rng(3);
    for (uint64_t at = 0; at < planned;) {
      const uint64_t n = std::min<uint64_t>(planned - at, 1 + rng() % 200000);
      reader.read(got.data() + at, n);
      at += n;
    }
    EXPECT_TRUE(got == want);
    EXPECT_EQ(errorOf([&] {
                char c1;
                reader.read(&c1, 1);
              }).rfind("internal: " + path + ": read past the planned bytes", 0),
              0u);
    if (c.direct) {
      EXPECT_GT(reader.requests(), 0u);
      EXPECT_EQ(phases.io.calls(), reader.requests());
    } else {
      EXPECT_EQ(reader.requests(), 0u);
    }
  }
}

TEST(PlannedReader, ShrunkFileIsSourceChangedNamingTheFile) {
  const std::string dir = k3test::freshDir("planned-reader-shrink");
  const std::string path = dir + "/src.bin";
  patternFile(path, 1 << 20, 5);
  for (bool direct : {true, false}) {
    k3::InputFile f = k3::openInputFile(path, k3::kShardInput);
    const uint64_t size = f.size;
    ASSERT_EQ(::truncate(path.c_str(), 300000), 0);  // after the plan was made
    k3::PlannedReadBuffers buffers(65536, 2);
    k3::PlannedReader reader(f.fd.fd, path, size, {{0, 100000}, {500000, 200000}}, direct, buffers);
    std::string got(300000, '\0');
    reader.read(got.data(), 100000);
    const std::string e = errorOf([&] { reader.read(got.data(), 200000); });
    EXPECT_EQ(e.rfind("source-changed: " + path + ": unexpected end of file at byte ", 0), 0u) << e;
    EXPECT_NE(e.find("shrank"), std::string::npos) << e;
    patternFile(path, 1 << 20, 5);
  }
}

TEST(PlannedReader, RangeOutsideTheFileIsRefusedAtOnce) {
  const std::string dir = k3test::freshDir("planned-reader-outside");
  const std::string path = dir + "/src.bin";
  patternFile(path, 10000, 1);
  k3::InputFile f = k3::openInputFile(path, k3::kShardInput);
  k3::PlannedReadBuffers buffers(65536, 2);
  EXPECT_EQ(errorOf([&] { k3::PlannedReader r(f.fd.fd, path, f.size, {{9000, 1001}}, true, buffers); }),
            "internal: " + path + ": planned read [9000, +1001) beyond its 10000 bytes");
}

TEST(PlannedReader, StopsCleanlyWhenLeftUnread) {
  // Reader threads blocked on a full ring must wake and exit when the
  // consumer gives up (an error elsewhere): no hang, no leak (ASan).
  const std::string dir = k3test::freshDir("planned-reader-early");
  const std::string path = dir + "/src.bin";
  patternFile(path, 2 << 20, 9);
  k3::InputFile f = k3::openInputFile(path, k3::kShardInput);
  k3::PlannedReadBuffers buffers(16384, 3);
  std::vector<k3::ByteRange> ranges;
  for (uint64_t i = 0; i < 100; ++i) ranges.push_back({(99 - i) * 20000, 20000});
  for (int consumed : {0, 1, 5}) {
    k3::PlannedReader reader(f.fd.fd, path, f.size, ranges, true, buffers);
    std::string got(20000, '\0');
    for (int i = 0; i < consumed; ++i) reader.read(got.data(), got.size());
    if (consumed) {
      const k3::InputFile other = k3::openInputFile(path, k3::kShardInput);  // the reader's is O_DIRECT now
      std::string raw(20000, '\0');
      ASSERT_EQ(k3::preadFull(other.fd.fd, raw.data(), raw.size(), (100 - static_cast<uint64_t>(consumed)) * 20000,
                              path),
                raw.size());
      EXPECT_TRUE(got == raw);
    }
  }
  // The descriptor is buffered again once the readers are gone.
  EXPECT_EQ(::fcntl(f.fd.fd, F_GETFL) & O_DIRECT, 0);
}

TEST(PlannedReader, FileSystemWithoutODirectIsReadBuffered) {
  // tmpfs refuses O_DIRECT: the reader says so and reads the same bytes.
  const std::string path = "/dev/shm/k3-planned-reader-" + std::to_string(::getpid());
  const int probe = ::open("/dev/shm", O_RDONLY | O_DIRECTORY);
  if (probe < 0) GTEST_SKIP() << "no /dev/shm here";
  ::close(probe);
  const std::string bytes = patternFile(path, 100000, 2);
  {
    const int d = ::open(path.c_str(), O_RDONLY | O_DIRECT);
    if (d >= 0) {
      ::close(d);
      ::unlink(path.c_str());
      GTEST_SKIP() << "/dev/shm takes O_DIRECT here";
    }
  }
  k3::InputFile f = k3::openInputFile(path, k3::kShardInput);
  k3::PlannedReadBuffers buffers(65536, 2);
  k3::PlannedReader reader(f.fd.fd, path, f.size, {{50000, 50000}, {0, 50000}}, true, buffers);
  EXPECT_FALSE(reader.direct());
  std::string got(100000, '\0');
  reader.read(got.data(), got.size());
  EXPECT_TRUE(got == bytes.substr(50000) + bytes.substr(0, 50000));
  ::unlink(path.c_str());
}

TEST(PageCache, ReadModeParsesAndAutoFollowsTheCache) {
  EXPECT_EQ(k3::parseReadMode("auto"), k3::ReadMode::Auto);
  EXPECT_EQ(k3::parseReadMode("direct"), k3::ReadMode::Direct);
  EXPECT_EQ(k3::parseReadMode("buffered"), k3::ReadMode::Buffered);
  EXPECT_EQ(errorOf([] { k3::parseReadMode("fast", "--io"); }),
            "usage: --io 'fast': expected auto, buffered or direct");
  const std::string dir = k3test::freshDir("page-cache");
  const std::string path = dir + "/f.bin";
  patternFile(path, 1 << 20, 4);
  k3::InputFile f = k3::openInputFile(path, k3::kShardInput);
  // Just written: in the cache. Dropped with fadvise after a sync: not.
  EXPECT_GT(k3::pageCacheFraction(path), 0.9);
  EXPECT_FALSE(k3::readsDirect(k3::ReadMode::Auto, f.fd.fd, f.size));
  EXPECT_FALSE(k3::readsDirect(k3::ReadMode::Auto, path));
  ::fdatasync(f.fd.fd);
  ::posix_fadvise(f.fd.fd, 0, 0, POSIX_FADV_DONTNEED);
  EXPECT_LT(k3::pageCacheFraction(f.fd.fd, f.size), 0.1);
  EXPECT_TRUE(k3::readsDirect(k3::ReadMode::Auto, f.fd.fd, f.size));
  EXPECT_TRUE(k3::readsDirect(k3::ReadMode::Auto, path));
  EXPECT_FALSE(k3::readsDirect(k3::ReadMode::Buffered, path));
  EXPECT_TRUE(k3::readsDirect(k3::ReadMode::Direct, f.fd.fd, f.size));
  EXPECT_FALSE(k3::readsDirect(k3::ReadMode::Buffered, f.fd.fd, f.size));
}

// k3-run --recache: a written file's pages leave the cache (read again, they
// come back in the pages the reader's mapping asks for); a missing file is an
// Io error naming it.
TEST(PageCache, DropFromPageCacheEmptiesItAndNamesAMissingFile) {
  const std::string dir = k3test::freshDir("page-cache-drop");
  const std::string path = dir + "/f.bin";
  patternFile(path, 1 << 20, 5);
  {
    k3::InputFile f = k3::openInputFile(path, k3::kShardInput);
    ::fdatasync(f.fd.fd);
  }
  EXPECT_GT(k3::pageCacheFraction(path), 0.9);
  k3::dropFromPageCache(path);
  EXPECT_LT(k3::pageCacheFraction(path), 0.1);
  const std::string missing = errorOf([&] { k3::dropFromPageCache(dir + "/gone.bin"); });
  EXPECT_NE(missing.find("gone.bin"), std::string::npos) << missing;
}

TEST(PhaseTime, SumsTimeAndCallsOverThreadsAndIgnoresNull) {
  k3::PhaseTime t;
  { const k3::PhaseScope none(nullptr); }
  EXPECT_EQ(t.calls(), 0u);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 5; ++k) {
        const k3::PhaseScope s(&t);
        std::this_thread::sleep_for(std::chrono::milliseconds(4));
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.calls(), 20u);
  EXPECT_GE(t.seconds(), 20 * 0.004);  // every scope slept at least 4 ms
  EXPECT_LT(t.seconds(), 20.0);
}

}  // namespace
