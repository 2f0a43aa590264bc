#include <gtest/gtest.h>

#include <cerrno>

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
