// SnapshotIndex: HF index read/write; the written text is byte-identical to
// Python's json.dump with default separators (spec §5.7).
#include <gtest/gtest.h>

#include <string>

#include "k3/format/snapshot_index.h"
#include "k3/io/error.h"
#include "support/test_env.h"

namespace {

TEST(SnapshotIndex, WritesWhatPythonJsonDumpWrites) {
  k3::SnapshotIndex idx;
  idx.totalSize = 123456789012ull;
  idx.weightMap = {{"b.weight", "model-00002-of-000003.safetensors"},
                   {"a.weight", "model-00001-of-000003.safetensors"},
                   {"caf\xc3\xa9", "model-00001-of-000003.safetensors"}};
  const std::string script =
      "import json,sys\n"
      "d={'metadata':{'total_size':123456789012},'weight_map':{"
      "'b.weight':'model-00002-of-000003.safetensors','a.weight':'model-00001-of-000003.safetensors',"
      "'caf\\u00e9':'model-00001-of-000003.safetensors'}}\n"
      "sys.stdout.write(json.dumps(d))\n";
  auto r = k3test::run({"/usr/bin/python3", "-c", script});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(idx.toJson(), r.out);
}

TEST(SnapshotIndex, RoundTripKeepsOrder) {
  const std::string dir = k3test::freshDir("index");
  k3::SnapshotIndex idx;
  idx.totalSize = 42;
  idx.weightMap = {{"z", "s2"}, {"a", "s1"}, {"m", "s2"}};
  idx.save(dir + "/model.safetensors.index.json");
  auto back = k3::SnapshotIndex::load(dir + "/model.safetensors.index.json");
  EXPECT_EQ(back.totalSize, idx.totalSize);
  EXPECT_EQ(back.weightMap, idx.weightMap);
  EXPECT_EQ(back.shardFiles(), (std::vector<std::string>{"s2", "s1"}));
}

TEST(SnapshotIndex, RefusesMalformedIndexes) {
  struct {
    const char* json;
    k3::ErrorKind kind;
  } cases[] = {
      {"not json", k3::ErrorKind::Format},
      {"[]", k3::ErrorKind::Format},
      {R"({"metadata":{}})", k3::ErrorKind::Format},
      {R"({"weight_map":{"a":1}})", k3::ErrorKind::Format},
      {R"({"weight_map":{"a":"../x"}})", k3::ErrorKind::Format},
      {R"({"weight_map":{"a":"s1","a":"s2"}})", k3::ErrorKind::Duplicate},
      {R"({"weight_map":{},"metadata":{"total_size":-1}})", k3::ErrorKind::Format},
      {R"({"weight_map":{"a":"s1"}} x)", k3::ErrorKind::Format},
      {R"({"weight_map":{"a":"s1"}}{})", k3::ErrorKind::Format},
      {R"({"weight_map": {"a": )", k3::ErrorKind::Format},
      {R"({"weight_map":{"a":"s1",}})", k3::ErrorKind::Format},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    try {
      (void)k3::SnapshotIndex::parse(c.json, "idx.json");
      ADD_FAILURE() << "accepted";
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), c.kind) << e.what();
      EXPECT_NE(std::string(e.what()).find("idx.json"), std::string::npos);
    }
  }
}

}  // namespace
