// SPDX-License-Identifier: MIT
// base/hash.hpp: FNV-1a 64 against the published test vectors, so the checkpoint format's
// checksum cannot drift silently.
#include "base/hash.hpp"

#include <gtest/gtest.h>

#include <string>

namespace towers::base {
namespace {

TEST(Fnv1a64, MatchesThePublishedVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);  // the offset basis
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(Fnv1a64, BytesAndTextAgreeAndEveryBitCounts) {
  const std::string text = "towers";
  EXPECT_EQ(fnv1a64(text.data(), text.size()), fnv1a64(text));
  std::string flipped = text;
  flipped[3] ^= 1;
  EXPECT_NE(fnv1a64(flipped), fnv1a64(text));
}

}  // namespace
}  // namespace towers::base
