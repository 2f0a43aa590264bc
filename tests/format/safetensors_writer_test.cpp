// SafetensorsWriter: round trip through the validating reader, spec §3.3
// header text, holeless layout, SHA-256 against Python's hashlib, atomic
// publish (temp file + rename, nothing published on error or abort).
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "k3/format/safetensors_file.h"
#include "k3/format/safetensors_writer.h"
#include "k3/io/error.h"
#include "support/test_env.h"

namespace fs = std::filesystem;

namespace {

std::string pythonSha256(const std::string& path) {
  auto r = k3test::run({"/usr/bin/python3", "-c",
                        "import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],'rb').read()).hexdigest())",
                        path});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return r.out.substr(0, 64);
}

std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

TEST(SafetensorsWriter, HeaderTextFollowsSpec33) {
  std::vector<k3::TensorSpec> t = {{"b.weight", k3::Dtype::BF16, {2, 3}}, {"a", k3::Dtype::F32, {1}}};
  const std::string h = k3::SafetensorsWriter::encodeHeader(t);
  const std::string json =
      R"({"b.weight":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
      R"("a":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})";
  ASSERT_EQ(h.size() % 8, 0u);
  EXPECT_EQ(h.substr(8, json.size()), json);
  EXPECT_EQ(h.substr(8 + json.size()), std::string(h.size() - 8 - json.size(), ' '));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(h[static_cast<size_t>(i)]);
  EXPECT_EQ(n, h.size() - 8);
  EXPECT_LT(h.size() - 8 - json.size(), 8u);
}

TEST(SafetensorsWriter, NonAsciiNamesAreEscaped) {
  std::vector<k3::TensorSpec> t = {{"caf\xc3\xa9\"x", k3::Dtype::U8, {1}}};
  const std::string h = k3::SafetensorsWriter::encodeHeader(t);
  EXPECT_NE(h.find(R"("caf\u00e9\"x")"), std::string::npos) << h;
}

void roundTrip(bool direct, size_t chunkBytes, size_t pieces) {
  const std::string dir = k3test::freshDir("writer");
  const std::string path = dir + "/out.safetensors";
  std::vector<k3::TensorSpec> specs = {
      {"embed", k3::Dtype::BF16, {37, 11}},
      {"empty", k3::Dtype::F32, {4, 0}},
      {"q", k3::Dtype::U8, {5000, 3}},
      {"q.qs", k3::Dtype::F32, {5000}},
      {"bias", k3::Dtype::F32, {7}},
  };
  std::vector<std::string> payload;
  for (size_t i = 0; i < specs.size(); ++i) payload.push_back(pattern(specs[i].nbytes(), unsigned(i + 3)));

  k3::WriteBufferPool pool(chunkBytes, 3);
  std::vector<std::pair<uint64_t, size_t>> seen;
  k3::SafetensorsWriter::Options o;
  o.directIo = direct;
  o.pool = &pool;
  o.observer = [&](uint64_t off, const uint8_t*, size_t n) { seen.emplace_back(off, n); };
  {
    k3::SafetensorsWriter w(path, specs, o);
    EXPECT_EQ(w.tempPath(), path + ".tmp");
    for (size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(w.tensorOffset(i), w.written());
      const std::string& p = payload[i];
      const size_t step = std::max<size_t>(1, p.size() / pieces + 1);
      for (size_t at = 0; at < p.size(); at += step) w.write(p.data() + at, std::min(step, p.size() - at));
    }
    EXPECT_FALSE(fs::exists(path)) << "published before finish()";
    w.finish();
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    EXPECT_EQ(w.sha256Hex(), pythonSha256(path));
    EXPECT_EQ(fs::file_size(path), w.fileSize());
  }
  // The observer saw every byte once, in order.
  uint64_t cursor = 0;
  for (auto [off, n] : seen) {
    EXPECT_EQ(off, cursor);
    cursor += n;
  }
  EXPECT_EQ(cursor, fs::file_size(path));

  auto f = k3::SafetensorsFile::open(path);
  ASSERT_EQ(f.tensors().size(), specs.size());
  EXPECT_EQ(f.dataOffset() % 8, 0u);
  for (size_t i = 0; i < specs.size(); ++i) {
    const k3::TensorInfo& t = f.tensors()[i];  // header order = declared order
    EXPECT_EQ(t.name, specs[i].name);
    EXPECT_EQ(t.dtype, specs[i].dtype);
    EXPECT_EQ(t.shape, specs[i].shape);
    auto d = f.data(t);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.data()), d.size()), payload[i]) << t.name;
  }
}

TEST(SafetensorsWriter, RoundTripDirectIoManyChunks) { roundTrip(true, 4096, 7); }
TEST(SafetensorsWriter, RoundTripBufferedOddPieces) { roundTrip(false, 8192, 13); }
TEST(SafetensorsWriter, RoundTripDefaultChunk) { roundTrip(true, size_t{8} << 20, 1); }

TEST(SafetensorsWriter, ShortStreamPublishesNothing) {
  const std::string dir = k3test::freshDir("writer-short");
  const std::string path = dir + "/x.safetensors";
  {
    k3::SafetensorsWriter w(path, {{"a", k3::Dtype::F32, {4}}});
    w.write("12345678", 8);
    try {
      w.finish();
      ADD_FAILURE() << "finish() accepted a short stream";
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Internal);
    }
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(SafetensorsWriter, AbortAndOverflowAndDuplicates) {
  const std::string dir = k3test::freshDir("writer-abort");
  const std::string path = dir + "/x.safetensors";
  {
    k3::SafetensorsWriter w(path, {{"a", k3::Dtype::U8, {2}}});
    EXPECT_TRUE(fs::exists(path + ".tmp"));
    w.write("ab", 2);
    EXPECT_THROW(w.write("c", 1), k3::Error);  // beyond the declared size
    w.abort();
    EXPECT_FALSE(fs::exists(path + ".tmp"));
  }
  EXPECT_FALSE(fs::exists(path));
  try {
    k3::SafetensorsWriter w(path, {{"a", k3::Dtype::U8, {2}}, {"a", k3::Dtype::U8, {1}}});
    ADD_FAILURE() << "duplicate names accepted";
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::Duplicate);
  }
}

TEST(SafetensorsWriter, ReplacesAnExistingFileAtomically) {
  const std::string dir = k3test::freshDir("writer-replace");
  const std::string path = dir + "/x.safetensors";
  k3test::writeFile(path, "old contents");
  k3test::writeFile(path + ".tmp", "stale temp from a killed run");
  k3::SafetensorsWriter w(path, {{"a", k3::Dtype::U8, {3}}});
  w.write("xyz", 3);
  w.finish();
  auto f = k3::SafetensorsFile::open(path);
  EXPECT_EQ(f.tensors().size(), 1u);
}

}  // namespace
