// k3-repack library pieces: --shards syntax and the spec §5.2 bit defaults.
#include <gtest/gtest.h>

#include "k3/convert/repacker.h"
#include "k3/io/error.h"

namespace {

using k3::convert::BitSettings;
using k3::convert::parseShardList;

TEST(RepackOptions, ShardListSyntax) {
  EXPECT_EQ(parseShardList("3"), (std::vector<int>{3}));
  EXPECT_EQ(parseShardList("9,1-3,5"), (std::vector<int>{1, 2, 3, 5, 9}));
  for (const char* bad : {"", "0", "1,", "a", "3-1", "1-3,2", "1;2", "-4", "1--2"}) {
    SCOPED_TRACE(bad);
    try {
      (void)parseShardList(bad);
      ADD_FAILURE() << "accepted";
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Usage);
    }
  }
}

TEST(RepackOptions, BitDefaultsFollowSpec52) {
  auto b4 = BitSettings::resolve(4, 0, 0);
  EXPECT_EQ(b4.bits, 4);
  EXPECT_EQ(b4.mlaBits, 8);
  EXPECT_EQ(b4.headBits, 8);
  auto b16 = BitSettings::resolve(16, 0, 0);
  EXPECT_EQ(b16.mlaBits, 16);
  EXPECT_EQ(b16.headBits, 16);
  auto mixed = BitSettings::resolve(8, 4, 16);
  EXPECT_EQ(mixed.mlaBits, 4);
  EXPECT_EQ(mixed.headBits, 16);
  EXPECT_THROW(BitSettings::resolve(5, 0, 0), k3::Error);
  EXPECT_THROW(BitSettings::resolve(8, 2, 0), k3::Error);
}

}  // namespace
