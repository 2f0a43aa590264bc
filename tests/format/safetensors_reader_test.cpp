// The validating safetensors reader refuses malformed files, each with one
// Format error naming the file (and the tensor where there is one).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "k3/format/safetensors_file.h"
#include "k3/io/error.h"
#include "support/test_env.h"

namespace {

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

// 8-byte length + header + `data` zero bytes; `lengthOverride` replaces N.
std::string st(const std::string& header, size_t data, int64_t lengthOverride = -1) {
  const uint64_t n = lengthOverride >= 0 ? static_cast<uint64_t>(lengthOverride) : header.size();
  return le64(n) + header + std::string(data, '\0');
}

struct Case {
  const char* name;
  std::string bytes;
  const char* mustMention;  // tensor or detail the message names
};

class ReaderMalformed : public ::testing::Test {
 protected:
  std::string dir = k3test::freshDir("reader-malformed");

  void expectFormatError(const std::string& file, const std::string& bytes, const std::string& detail) {
    const std::string path = dir + "/" + file + ".safetensors";
    k3test::writeFile(path, bytes);
    try {
      (void)k3::SafetensorsFile::open(path, k3::SafetensorsFile::Access::HeaderOnly);
      ADD_FAILURE() << file << ": accepted a malformed file";
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Format) << file << ": " << e.what();
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << "message does not name the file: " << msg;
      EXPECT_NE(msg.find(detail), std::string::npos) << "message lacks '" << detail << "': " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
    }
  }
};

const std::string kOk = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

TEST_F(ReaderMalformed, WellFormedBaselineOpens) {
  const std::string path = dir + "/ok.safetensors";
  k3test::writeFile(path, st(kOk, 8));
  auto f = k3::SafetensorsFile::open(path);
  ASSERT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensors()[0].name, "a");
  EXPECT_EQ(f.data(f.tensors()[0]).size(), 8u);
}

TEST_F(ReaderMalformed, TruncatedBeforeLength) { expectFormatError("short", "\x10\0\0", "truncated"); }

TEST_F(ReaderMalformed, HeaderLengthBeyondFile) {
  expectFormatError("beyond", st(kOk, 8, 4096), "exceeds the file size");
}

TEST_F(ReaderMalformed, HeaderLengthOverLimit) {
  // A sparse 120 MB file whose header claims 110 MB: within the file, over the limit.
  const std::string path = dir + "/huge.safetensors";
  k3test::writeFile(path, le64(110'000'000) + "{}");
  ASSERT_EQ(::truncate(path.c_str(), 120'000'000), 0);
  try {
    (void)k3::SafetensorsFile::open(path, k3::SafetensorsFile::Access::HeaderOnly);
    ADD_FAILURE() << "accepted a header over the limit";
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::Format);
    EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
  }
}

TEST_F(ReaderMalformed, TableOfBrokenHeaders) {
  const Case cases[] = {
      {"invalid_json", st(R"({"a":{"dtype":"F32",)", 0), "not valid JSON"},
      {"not_object", st(R"([1,2,3])", 0), "not a JSON object"},
      {"unknown_dtype", st(R"({"w":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8), "'w'"},
      {"negative_dim", st(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "negative"},
      {"fractional_dim", st(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,8]}})", 8), "'w'"},
      {"rank_9", st(R"({"w":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1), "rank"},
      {"span_vs_shape", st(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "does not match"},
      {"reversed", st(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", 8), "reversed"},
      {"out_of_range", st(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8), "beyond the data"},
      {"overlap", st(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "overlaps"},
      {"hole", st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12), "hole"},
      {"trailing", st(kOk, 16), "trailing"},
      {"duplicate", st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "duplicate"},
      {"metadata_not_string", st(R"({"__metadata__":{"k":1},)" + kOk.substr(1), 8), "__metadata__"},
      {"offsets_arity", st(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}})", 8), "data_offsets"},
      {"missing_dtype", st(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8), "dtype"},
      {"entry_not_object", st(R"({"w":7})", 0), "'w'"},
      {"shape_overflow", st(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})", 8), "overflow"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    expectFormatError(c.name, c.bytes, c.mustMention);
  }
}

TEST_F(ReaderMalformed, PaddedHeaderAndZeroSizeTensorAreValid) {
  const std::string header = R"({"z":{"dtype":"F32","shape":[2,0],"data_offsets":[0,0]},)"
                             R"("a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}     )";
  const std::string path = dir + "/padded.safetensors";
  k3test::writeFile(path, st(header, 4));
  auto f = k3::SafetensorsFile::open(path);
  EXPECT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.require("z").nbytes(), 0u);
}

TEST_F(ReaderMalformed, HeaderLengthIsReadOnceForEveryReader) {
  const std::string path = dir + "/length.safetensors";
  auto lengthOf = [&](const std::string& bytes) {
    k3test::writeFile(path, bytes);
    const int fd = ::open(path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    try {
      const uint64_t n = k3::readSafetensorsHeaderLength(fd, bytes.size(), path);
      ::close(fd);
      return n;
    } catch (...) {
      ::close(fd);
      throw;
    }
  };
  EXPECT_EQ(lengthOf(st(kOk, 8)), kOk.size());
  EXPECT_EQ(lengthOf(le64(3) + "abc"), 3u);  // only the length: JSON is the parser's business
  for (const std::string& bad : {std::string("1234567"), le64(4) + "abc"}) {
    try {
      lengthOf(bad);
      ADD_FAILURE() << "accepted " << bad.size() << " bytes";
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Format) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST_F(ReaderMalformed, ParsedHeaderIsMappedLaterAndAChangedFileRefused) {
  const std::string path = dir + "/parsed.safetensors";
  k3test::writeFile(path, st(kOk, 8));
  const auto checked = k3::SafetensorsFile::open(path, k3::SafetensorsFile::Access::HeaderOnly);
  auto f = k3::SafetensorsFile::fromParsed(path, checked.fileSize(), checked.headerLength(), checked.header());
  EXPECT_FALSE(f.mapped());
  f.map();
  ASSERT_TRUE(f.mapped());
  EXPECT_EQ(f.data(f.require("a")).size(), 8u);
  EXPECT_EQ(f.dataOffset(), checked.dataOffset());

  auto stale = k3::SafetensorsFile::fromParsed(path, checked.fileSize(), checked.headerLength(), checked.header());
  k3test::writeFile(path, st(kOk, 8) + "extra");  // grown since its header was read
  try {
    stale.map();
    ADD_FAILURE() << "mapped a file that changed";
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::Format) << e.what();
    EXPECT_NE(std::string(e.what()).find("changed"), std::string::npos) << e.what();
  }
}

}  // namespace
