// JsonObject and the apps' error report, against literal expected text
// (what Python's json.dumps prints for the same values, compact and spaced).
#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "k3/io/error_report.h"
#include "k3/io/json_text.h"

namespace {

TEST(JsonObject, FieldsInOrderCompactAndSpaced) {
  const std::vector<int32_t> ids = {3, -1, 70000};
  for (auto spacing : {k3::JsonObject::Spacing::Compact, k3::JsonObject::Spacing::Python}) {
    k3::JsonObject j(spacing);
    j.add("s", "a\"b\n").add("t", true).add("f", false).add("u", uint64_t{18446744073709551615ull});
    j.add("i", -7).add("d", 0.1).add("big", 1e21).fixed("x", 2.0 / 3.0, 3).add("ids", ids).raw("o", "{}");
    if (spacing == k3::JsonObject::Spacing::Compact)
      EXPECT_EQ(j.str(),
                "{\"s\":\"a\\\"b\\n\",\"t\":true,\"f\":false,\"u\":18446744073709551615,\"i\":-7,\"d\":0.1,"
                "\"big\":1e+21,\"x\":0.667,\"ids\":[3,-1,70000],\"o\":{}}");
    else
      EXPECT_EQ(j.str(),
                "{\"s\": \"a\\\"b\\n\", \"t\": true, \"f\": false, \"u\": 18446744073709551615, \"i\": -7, "
                "\"d\": 0.1, \"big\": 1e+21, \"x\": 0.667, \"ids\": [3, -1, 70000], \"o\": {}}");
  }
  EXPECT_EQ(k3::JsonObject().str(), "{}");
  EXPECT_EQ(k3::JsonObject().add("e", std::vector<int32_t>{}).str(), "{\"e\":[]}");
}

TEST(JsonObject, FixedKeepsEveryDigitOfLargeValues) {
  EXPECT_EQ(k3::JsonObject().fixed("v", 1e30, 3).str(), "{\"v\":1000000000000000019884624838656.000}");
}

TEST(JsonObject, NestedObjectsAndArraysOfObjects) {
  // A nested object keeps its own spacing; the array's separators follow the
  // object that holds it (the verify report is compact throughout, the repack
  // summary and corpus check spaced throughout).
  k3::JsonObject inner;
  inner.add("a", 1).add("b", "x");
  std::vector<k3::JsonObject> rows(2, k3::JsonObject(k3::JsonObject::Spacing::Python));
  rows[0].add("n", 0);
  rows[1].add("n", 1).add("ok", true);
  k3::JsonObject spaced(k3::JsonObject::Spacing::Python);
  spaced.add("inner", inner).add("rows", rows).add("none", std::vector<k3::JsonObject>{});
  EXPECT_EQ(spaced.str(),
            "{\"inner\": {\"a\":1,\"b\":\"x\"}, \"rows\": [{\"n\": 0}, {\"n\": 1, \"ok\": true}], \"none\": []}");
  k3::JsonObject compact;
  compact.add("rows", rows).add("inner", inner);
  EXPECT_EQ(compact.str(), "{\"rows\":[{\"n\": 0},{\"n\": 1, \"ok\": true}],\"inner\":{\"a\":1,\"b\":\"x\"}}");
}

TEST(ErrorReport, KErrorKeepsItsKindAndOneLine) {
  const k3::ErrorReport r = k3::errorReport(k3::Error(k3::ErrorKind::Missing, "dst/x.safetensors: gone\nreally"));
  EXPECT_EQ(r.kind, "missing");
  EXPECT_EQ(r.stderrLine("k3-run"), "k3-run: dst/x.safetensors: gone really\n");
  EXPECT_EQ(r.json().str(),
            "{\"ok\":false,\"error\":\"dst/x.safetensors: gone really\",\"error_kind\":\"missing\"}");
}

TEST(ErrorReport, OtherExceptionsAreInternal) {
  const k3::ErrorReport r = k3::errorReport(std::bad_alloc());
  EXPECT_EQ(r.kind, "internal");
  EXPECT_EQ(r.message, "internal error: std::bad_alloc");
  EXPECT_EQ(k3::errorReport(k3::ErrorKind::Usage, "--bits: 5").json().str(),
            "{\"ok\":false,\"error\":\"--bits: 5\",\"error_kind\":\"usage\"}");
}

}  // namespace
