#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "k3/io/error.h"
#include "k3/io/mapped_file.h"
#include "support/test_env.h"

TEST(Error, ENOSPCIsNoSpace) {
  try {
    k3::failErrno(ENOSPC, "/x/y", "write");
    FAIL();
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::NoSpace);
    EXPECT_STREQ(e.what(), "/x/y: write: No space left on device");
  }
}

TEST(MappedFile, MapsContentAndNamesMissingFile) {
  std::string dir = k3test::freshDir("mapped");
  k3test::writeFile(dir + "/a.bin", "hello");
  auto m = k3::MappedFile::open(dir + "/a.bin");
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), 5), "hello");
  try {
    k3::MappedFile::open(dir + "/nope.bin");
    FAIL();
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("nope.bin"), std::string::npos);
  }
}

// Weights are streamed once per token: a file of 2 MiB or more is mapped at a
// 2 MiB-aligned address and advised MADV_HUGEPAGE (the kernel's VmFlags
// "hg"), so a page cache with 2 MiB folios maps it with huge pages. A
// smaller file is mapped as before. Both read back their bytes.
TEST(MappedFile, LargeFilesAreMappedTwoMiBAlignedWithHugePagesAdvised) {
  std::string dir = k3test::freshDir("mapped_huge");
  std::string big(size_t(5) << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  k3test::writeFile(dir + "/big.bin", big);
  k3test::writeFile(dir + "/small.bin", "tiny");
  auto m = k3::MappedFile::open(dir + "/big.bin");
  ASSERT_EQ(m.size(), big.size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % (uintptr_t(2) << 20), 0u);
  // A kernel built without transparent huge pages refuses the advice (the
  // mapping then works as before): only where it exists can it be asked for.
  const bool thp = std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
  EXPECT_EQ(m.hugePagesAdvised(), thp);
  EXPECT_EQ(std::memcmp(m.data(), big.data(), big.size()), 0);
  EXPECT_LE(m.hugePageBytes(), m.size());
  auto s = k3::MappedFile::open(dir + "/small.bin");
  // Several mappings in one read of smaps: the sum of each one's.
  const k3::MappedFile* both[] = {&m, &s};
  EXPECT_EQ(k3::MappedFile::hugePageBytes(both), m.hugePageBytes() + s.hugePageBytes());
  EXPECT_FALSE(s.hugePagesAdvised());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(s.data()), 4), "tiny");
  // Moving the mapping keeps it (one owner unmaps it once).
  k3::MappedFile moved = std::move(m);
  EXPECT_EQ(moved.hugePagesAdvised(), thp);
  EXPECT_EQ(std::memcmp(moved.data() + big.size() - 4096, big.data() + big.size() - 4096, 4096), 0);
}
