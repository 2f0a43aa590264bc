// RepackSummary::toJson(), the k3-repack --json summary, against its exact
// bytes (scripts and the app tests parse it): spaced as Python's json.dumps,
// shard rows in order. peak_rss_bytes is the process's own, so only the text
// around it is pinned.
#include <gtest/gtest.h>

#include <string>

#include "k3/convert/repacker.h"

namespace {

TEST(RepackSummaryJson, ExactBytesAroundPeakRss) {
  k3::convert::RepackOptions opt;
  opt.src = "src/dir";
  opt.dst = "dst\"x";
  k3::convert::RepackSummary sum;
  sum.bits.bits = 4;
  sum.bits.mlaBits = 8;
  sum.bits.headBits = 16;
  sum.textShards = 3;
  sum.bytesRead = 2000000000;
  sum.bytesWritten = 7;
  sum.scaleEdgeBytes = 1;
  sum.seconds = 4;
  sum.finalized = true;
  opt.converter.threads = 3;
  opt.jobs = 2;
  sum.phases.open = 0.5;
  sum.phases.quantize = 1.25;
  sum.phases.hash = 2;
  sum.phases.reads = 9;
  sum.shards.push_back({"a.safetensors", "s1.safetensors", 10, 2, 5, k3::convert::ShardStatus::State::Converted});
  sum.shards.push_back({"b.safetensors", "s2.safetensors", 11, 0, 0, k3::convert::ShardStatus::State::Skipped});
  const std::string j = sum.toJson(opt);
  const std::string head =
      "{\"ok\": true, \"src\": \"src/dir\", \"dst\": \"dst\\\"x\", \"bits\": 4, \"mla_bits\": 8, \"head_bits\": 16, "
      "\"dry_run\": false, \"text_shards\": 3, \"converted\": 1, \"skipped\": 1, \"planned\": 0, \"finalized\": true, "
      "\"bytes_read\": 2000000000, \"bytes_written\": 7, \"expert_scale_edge_bytes\": 1, \"seconds\": 4, "
      "\"gb_per_s\": 0.5, \"peak_rss_bytes\": ";
  const std::string tail =
      ", \"threads\": 3, \"jobs\": 2, \"phases\": {\"open_s\": 0.5, \"plan_s\": 0, \"read_wait_s\": 0, \"read_s\": 0, "
      "\"float_scan_s\": 0, \"quantize_s\": 1.25, \"quantize_wall_s\": 0, \"write_wait_s\": 0, \"hash_s\": 2, "
      "\"write_s\": 0, \"drain_s\": 0, \"sync_s\": 0, \"manifest_s\": 0, \"reads\": 9, \"direct_shards\": 0}"
      ", \"shards\": [{\"file\": \"a.safetensors\", \"source\": \"s1.safetensors\", \"size\": 10, \"experts\": 2, "
      "\"quantized\": 5, \"state\": \"converted\"}, {\"file\": \"b.safetensors\", \"source\": \"s2.safetensors\", "
      "\"size\": 11, \"experts\": 0, \"quantized\": 0, \"state\": \"skipped\"}]}";
  ASSERT_GT(j.size(), head.size() + tail.size());
  EXPECT_EQ(j.substr(0, head.size()), head);
  EXPECT_EQ(j.substr(j.size() - tail.size()), tail);
  const std::string rss = j.substr(head.size(), j.size() - head.size() - tail.size());
  EXPECT_EQ(rss.find_first_not_of("0123456789"), std::string::npos) << rss;
}

// The human line (k3-repack off --json): counts summed over the shards.
TEST(RepackSummaryText, OneLineWithShardsTensorsBytesSeconds) {
  k3::convert::RepackOptions opt;
  opt.dst = "out/c";
  k3::convert::RepackSummary sum;
  sum.bytesWritten = 123;
  sum.seconds = 1.234;
  sum.finalized = true;
  using State = k3::convert::ShardStatus::State;
  sum.shards.push_back({"a", "s1", 10, 2, 5, State::Converted, 7});
  sum.shards.push_back({"b", "s2", 11, 0, 0, State::Skipped, 4});
  sum.shards.push_back({"c", "s3", 12, 0, 0, State::Converted, 1});
  EXPECT_EQ(sum.textLine(opt), "k3-repack: out/c: 3 shards (2 converted, 1 already done), 12 tensors, 123 bytes written, 1.23 s");
  sum.finalized = false;
  EXPECT_EQ(sum.textLine(opt), "k3-repack: out/c: 3 shards (2 converted, 1 already done), 12 tensors, 123 bytes written, 1.23 s"
                               "; not finalized yet (k3-repack SRC DST --finalize once every shard is done)");
}

TEST(RepackSummaryJson, NoShardsIsAnEmptyArrayAndZeroRate) {
  k3::convert::RepackOptions opt;
  opt.dryRun = true;
  const std::string j = k3::convert::RepackSummary{}.toJson(opt);
  EXPECT_NE(j.find("\"dry_run\": true,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"seconds\": 0, \"gb_per_s\": 0, \"peak_rss_bytes\": "), std::string::npos) << j;
  const std::string end = ", \"shards\": []}";
  ASSERT_GT(j.size(), end.size());
  EXPECT_EQ(j.substr(j.size() - end.size()), end) << j;
}

}  // namespace
