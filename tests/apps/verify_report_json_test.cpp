// VerifyReport::json(), the k3-verify --json report, against its exact bytes
// (scripts and the app tests parse it, so the layout is part of its contract):
// compact, summary nested, problems in the order held, seconds to 3 decimals.
// peak_rss_bytes is the process's own, so only the text around it is pinned.
#include <gtest/gtest.h>

#include <string>

#include "k3/verify/verify_report.h"

namespace {

// j is head + a decimal number + tail.
void expectAroundRss(const std::string& j, const std::string& head, const std::string& tail) {
  ASSERT_GT(j.size(), head.size() + tail.size()) << j;
  EXPECT_EQ(j.substr(0, head.size()), head);
  EXPECT_EQ(j.substr(j.size() - tail.size()), tail);
  const std::string rss = j.substr(head.size(), j.size() - head.size() - tail.size());
  EXPECT_EQ(rss.find_first_not_of("0123456789"), std::string::npos) << rss;
}

constexpr const char* kZeroPhases =
    ",\"phases\":{\"check_s\":0,\"read_wait_s\":0,\"hash_s\":0,\"hash_wall_s\":0,\"source_wall_s\":0}}";

TEST(VerifyReportJson, ExactBytesWithProblems) {
  k3::verify::VerifyReport r;
  r.summary() = {"fast", 2, 5, 3, 100, 1.23456, {}, 2};
  r.add(k3::verify::ProblemKind::Hash, "a.safetensors", "t\"x", "sha mismatch", 3, 7);
  r.add(k3::verify::ProblemKind::Unreadable, "b.safetensors", "", "cannot open");
  // append, not `+`: GCC 12 warns falsely (-Warray-bounds) on a temporary's `+`.
  expectAroundRss(r.json(),
                  "{\"sound\":false,\"incomplete\":true,\"summary\":{\"mode\":\"fast\",\"shards\":2,\"tensors\":5,"
                  "\"experts\":3,\"bytes_hashed\":100,\"seconds\":1.235,\"problems\":2,\"threads\":2,"
                  "\"peak_rss_bytes\":",
                  std::string(kZeroPhases).append(",\"problems\":["
            "{\"kind\":\"hash\",\"shard\":\"a.safetensors\",\"tensor\":\"t\\\"x\",\"layer\":3,\"expert\":7,"
            "\"what\":\"sha mismatch\",\"line\":\"[hash] shard a.safetensors: expert (layer 3, id 7): "
            "tensor 't\\\"x': sha mismatch\"},"
            "{\"kind\":\"unreadable\",\"shard\":\"b.safetensors\",\"tensor\":\"\",\"layer\":-1,\"expert\":-1,"
            "\"what\":\"cannot open\",\"line\":\"[unreadable] shard b.safetensors: cannot open\"}]}\n"));
}

TEST(VerifyReportJson, ExactBytesWhenSound) {
  k3::verify::VerifyReport r;
  r.summary() = {"full", 1, 0, 0, 0, 0.0, {0.5, 0.25, 1.5, 2, 0}, 1};
  expectAroundRss(r.json(),
                  "{\"sound\":true,\"incomplete\":false,\"summary\":{\"mode\":\"full\",\"shards\":1,\"tensors\":0,"
                  "\"experts\":0,\"bytes_hashed\":0,\"seconds\":0.000,\"problems\":0,\"threads\":1,"
                  "\"peak_rss_bytes\":",
                  ",\"phases\":{\"check_s\":0.5,\"read_wait_s\":0.25,\"hash_s\":1.5,\"hash_wall_s\":2,"
                  "\"source_wall_s\":0}},\"problems\":[]}\n");
}

}  // namespace
