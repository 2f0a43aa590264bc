// VerifyReport::json(), the k3-verify --json report, against its exact bytes
// (scripts and the app tests parse it, so the layout is part of its contract):
// compact, summary nested, problems in the order held, seconds to 3 decimals.
#include <gtest/gtest.h>

#include <string>

#include "k3/verify/verify_report.h"

namespace {

TEST(VerifyReportJson, ExactBytesWithProblems) {
  k3::verify::VerifyReport r;
  r.summary() = {"fast", 2, 5, 3, 100, 1.23456};
  r.add(k3::verify::ProblemKind::Hash, "a.safetensors", "t\"x", "sha mismatch", 3, 7);
  r.add(k3::verify::ProblemKind::Unreadable, "b.safetensors", "", "cannot open");
  EXPECT_EQ(r.json(),
            "{\"sound\":false,\"incomplete\":true,\"summary\":{\"mode\":\"fast\",\"shards\":2,\"tensors\":5,"
            "\"experts\":3,\"bytes_hashed\":100,\"seconds\":1.235,\"problems\":2},\"problems\":["
            "{\"kind\":\"hash\",\"shard\":\"a.safetensors\",\"tensor\":\"t\\\"x\",\"layer\":3,\"expert\":7,"
            "\"what\":\"sha mismatch\",\"line\":\"[hash] shard a.safetensors: expert (layer 3, id 7): "
            "tensor 't\\\"x': sha mismatch\"},"
            "{\"kind\":\"unreadable\",\"shard\":\"b.safetensors\",\"tensor\":\"\",\"layer\":-1,\"expert\":-1,"
            "\"what\":\"cannot open\",\"line\":\"[unreadable] shard b.safetensors: cannot open\"}]}\n");
}

TEST(VerifyReportJson, ExactBytesWhenSound) {
  k3::verify::VerifyReport r;
  r.summary() = {"full", 1, 0, 0, 0, 0.0};
  EXPECT_EQ(r.json(),
            "{\"sound\":true,\"incomplete\":false,\"summary\":{\"mode\":\"full\",\"shards\":1,\"tensors\":0,"
            "\"experts\":0,\"bytes_hashed\":0,\"seconds\":0.000,\"problems\":0},\"problems\":[]}\n");
}

}  // namespace
