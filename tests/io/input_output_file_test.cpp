// The input-opening and output-publishing helpers on their own: special files
// refused without blocking, caps, confined names, outputs that never replace
// an input or a special file and leave no temp behind.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/output_file.h"
#include "support/error_of.h"
#include "support/test_env.h"

namespace {

namespace fs = std::filesystem;

using k3test::errorOf;

TEST(InputFile, RefusesSpecialFilesAtOnceAndNamesThem) {
  const std::string d = k3test::freshDir("input-special");
  ASSERT_EQ(::mkfifo((d + "/fifo").c_str(), 0644), 0);
  fs::create_directory(d + "/dir");
  fs::create_symlink("/dev/zero", d + "/zero");
  const k3::InputCap cap{"config", 1000};
  // A FIFO with no writer: the non-blocking open returns, the type is refused.
  EXPECT_EQ(errorOf([&] { k3::readInputFile(d + "/fifo", cap); }), "format: " + d + "/fifo: config is a FIFO, not a regular file");
  EXPECT_EQ(errorOf([&] { k3::readInputFile(d + "/dir", cap); }), "format: " + d + "/dir: config is a directory, not a regular file");
  EXPECT_EQ(errorOf([&] { k3::readInputFile(d + "/zero", cap); }),
            "format: " + d + "/zero: config is a character device, not a regular file");
  EXPECT_EQ(errorOf([&] { k3::readInputFile(d + "/absent", cap); }), "missing: " + d + "/absent: file does not exist");
}

TEST(InputFile, CapIsCheckedBeforeReading) {
  const std::string d = k3test::freshDir("input-cap");
  k3test::writeFile(d + "/ok", std::string(1000, 'x'));
  k3test::writeFile(d + "/big", std::string(1001, 'x'));
  const k3::InputCap cap{"id list", 1000};
  EXPECT_EQ(k3::readInputFile(d + "/ok", cap).size(), 1000u);
  EXPECT_EQ(errorOf([&] { k3::readInputFile(d + "/big", cap); }),
            "format: " + d + "/big: id list is 1001 bytes, more than the limit of 1000 bytes");
}

TEST(InputFile, StreamReadStopsAtTheCap) {
  const int fd = ::open("/dev/zero", O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(errorOf([&] { k3::readStreamCapped(fd, "stdin", k3::InputCap{"chat line", 1 << 20}); }),
            "format: stdin: chat line is more than the limit of 1048576 bytes");
  ::close(fd);
}

TEST(InputFile, ConfinedNames) {
  for (const char* ok : {"a", "config.json", "model-00001-of-000002.safetensors", "sub/x", "a..b", ".hidden"})
    EXPECT_TRUE(k3::isConfinedName(ok)) << ok;
  for (const char* bad : {"", "/etc/passwd", "/dev/zero", "..", ".", "../x", "a/../../x", "a//b", "a/", "a/./b"})
    EXPECT_FALSE(k3::isConfinedName(bad)) << bad;
  EXPECT_FALSE(k3::isConfinedName(std::string("a\0b", 3)));
}

TEST(InputFile, ContainedFileRefusesSymlinksOut) {
  const std::string d = k3test::freshDir("input-contained");
  const std::string out = k3test::freshDir("input-outside");
  k3test::writeFile(out + "/secret", "s");
  k3test::writeFile(d + "/inside", "i");
  fs::create_symlink(out + "/secret", d + "/link-out");
  fs::create_symlink("inside", d + "/link-in");
  fs::create_symlink("/dev/zero", d + "/zero");
  EXPECT_EQ(k3::openContainedFile(d, "inside", k3::kHashedInput).size, 1u);
  EXPECT_EQ(k3::openContainedFile(d, "link-in", k3::kHashedInput).size, 1u);  // inside: fine
  EXPECT_NE(errorOf([&] { k3::openContainedFile(d, "link-out", k3::kHashedInput); }).find(", outside " + d), std::string::npos);
  EXPECT_NE(errorOf([&] { k3::openContainedFile(d, "zero", k3::kHashedInput); }).find("resolves to /dev/zero, outside"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { k3::openContainedFile(d, "../input-outside/secret", k3::kHashedInput); })
                .find("is not a file name inside"),
            std::string::npos);
}

TEST(AtomicOutput, RefusesInputsAndSpecialFilesAndLeavesNoTemp) {
  const std::string d = k3test::freshDir("output");
  k3test::writeFile(d + "/input", "precious");
  const std::vector<k3::FileId> inputs{k3::fileIdOf(d + "/input")};
  fs::create_symlink(d + "/input", d + "/alias");  // the same file by another name
  EXPECT_EQ(errorOf([&] { k3::AtomicOutput o(d + "/input", inputs); }),
            "usage: " + d + "/input: output is a file this run reads; refusing to overwrite it");
  EXPECT_NE(errorOf([&] { k3::AtomicOutput o(d + "/alias", inputs); }).find("output is a file this run reads"),
            std::string::npos);
  EXPECT_EQ(errorOf([&] { k3::AtomicOutput o("/dev/null", inputs); }),
            "usage: /dev/null: output exists and is not a regular file; refusing to replace it");
  EXPECT_EQ(k3test::readFile(d + "/input"), "precious");
  {
    k3::AtomicOutput o(d + "/new", inputs);
    o.write("partial");
  }  // dropped without commit: nothing published, temp gone
  EXPECT_FALSE(fs::exists(d + "/new"));
  {
    k3::AtomicOutput o(d + "/new", inputs);
    o.write("whole");
    o.commit();
  }
  EXPECT_EQ(k3test::readFile(d + "/new"), "whole");
  for (const auto& e : fs::directory_iterator(d))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

}  // namespace
