// k3-repack on malformed sources: each damaged snapshot (made by
// malform_snapshot.py from the tiny synth) gives exactly one error line with
// the expected error class and a non-zero exit, no crash, and leaves DST
// without a manifest or any shard that differs from a sound conversion;
// nothing is written outside DST and the source is not modified.
#include <gtest/gtest.h>

#include <filesystem>

#include "apps/container_fixture.h"
#include "k3/format/safetensors_file.h"

namespace {

using namespace k3test::container;
namespace fs = std::filesystem;

struct Malformed {
  const char* name;
  const char* kind;  // k3::errorKindName of the expected error
};

class RepackMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(RepackMalformed, OneLineErrorOfTheRightClassAndNoBrokenFile) {
  const Malformed& c = GetParam();
  const std::string reference = tinyContainer(4);
  const std::string root = k3test::freshDir(std::string("malformed-") + c.name);
  const std::string src = root + "/src", dst = root + "/out/dst";
  copyDir(k3test::synthSnapshot("tiny", 1), src);
  fs::create_directories(root + "/out");
  k3test::RunResult m = k3test::run({"/usr/bin/python3", k3test::sourceDir() + "/tests/apps/malform_snapshot.py", c.name, src});
  ASSERT_EQ(m.exitCode, 0) << m.err;
  const auto srcBefore = snapshotDir(src);

  k3test::RunResult r = k3test::runTool("k3-repack", {src, dst, "--bits", "4"});
  EXPECT_EQ(r.signal, 0) << "crashed";
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.exitCode, 2) << "not a usage error";
  EXPECT_EQ(r.err.rfind("k3-repack: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;

  // --json carries the class, and the same message.
  k3test::RunResult j = k3test::runTool("k3-repack", {src, dst, "--bits", "4", "--json"});
  EXPECT_NE(j.out.find(std::string("\"error_kind\":\"") + c.kind + "\""), std::string::npos)
      << "expected class " << c.kind << ", got: " << j.out;
  EXPECT_EQ(j.err, r.err);

  // Nothing broken is published: no manifest, and any shard under a final
  // name is complete and equal to the sound conversion's.
  if (fs::exists(dst)) {
    EXPECT_FALSE(fs::exists(dst + "/k3-manifest.json"));
    for (const auto& e : fs::directory_iterator(dst)) {
      const std::string name = e.path().filename().string();
      if (e.path().extension() != ".safetensors") continue;
      EXPECT_NO_THROW(k3::SafetensorsFile::open(e.path().string(), k3::SafetensorsFile::Access::HeaderOnly)) << name;
      EXPECT_EQ(k3test::readFile(e.path().string()), k3test::readFile(reference + "/" + name)) << name;
    }
  }
  // Nothing outside DST: the output parent holds at most DST, the source is unchanged.
  for (const auto& e : fs::directory_iterator(root + "/out")) EXPECT_EQ(e.path().string(), dst);
  EXPECT_TRUE(snapshotDir(src) == srcBefore) << "source modified";
  fs::remove_all(root);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RepackMalformed,
    ::testing::Values(Malformed{"truncated_shard", "format"},
                      Malformed{"header_length_beyond_file", "format"},
                      Malformed{"invalid_header_json", "format"},
                      Malformed{"unknown_dtype", "format"},
                      Malformed{"overlapping_offsets", "format"},
                      Malformed{"offsets_out_of_range", "format"},
                      Malformed{"hole", "format"},
                      Malformed{"duplicate_key_in_header", "format"},
                      Malformed{"invalid_index_json", "format"},
                      Malformed{"index_names_wrong_shard", "format"},
                      Malformed{"missing_expert_tensor", "missing"},
                      Malformed{"missing_index_entry", "missing"},
                      Malformed{"missing_shard", "missing"},
                      Malformed{"wrong_packed_shape", "config"},
                      Malformed{"wrong_scale_shape", "config"},
                      Malformed{"expert_wrong_byte_count", "config"},
                      Malformed{"config_disagrees_with_tensors", "config"},
                      Malformed{"invalid_config_json", "config"},
                      Malformed{"duplicate_tensor_across_shards", "duplicate"},
                      Malformed{"quant_tensor_not_bf16", "unsupported"}),
    [](const ::testing::TestParamInfo<Malformed>& i) { return std::string(i.param.name); });

}  // namespace
