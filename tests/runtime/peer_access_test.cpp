// SPDX-License-Identifier: MIT
// A device pair that refuses peer access is not fatal (issue 17): the others are still
// enabled, and the failure is reported once, on one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>

#include "runtime/peer_access.hpp"

namespace towers {
namespace {

// Four devices that all can access each other; enabling 1 -> 2 and 2 -> 1 fails.
class FakeLinks final : public PeerLinks {
 public:
  bool can_access(int from, int to) override { return !(from == 3 || to == 3) || from == to; }
  std::string enable(int from, int to) override {
    asked.insert({from, to});
    if ((from == 1 && to == 2) || (from == 2 && to == 1)) return "cudaErrorTooManyPeers";
    return "";
  }
  std::set<std::pair<int, int>> asked;
};

std::string read_all(std::FILE* file) {
  std::rewind(file);
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, file) != nullptr) text += buffer;
  return text;
}

TEST(PeerAccess, AFailedEnableIsReportedOnceAndTheOtherPairsAreStillEnabled) {
  FakeLinks links;
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  std::vector<PeerFailure> failures;
  ASSERT_NO_THROW(failures = enable_peer_access(4, links, log));

  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].from, 1);
  EXPECT_EQ(failures[0].to, 2);
  EXPECT_EQ(failures[0].reason, "cudaErrorTooManyPeers");
  // Every pair among devices 0-2 was tried, after the failure too; device 3 never.
  const std::set<std::pair<int, int>> expected = {{0, 1}, {0, 2}, {1, 0}, {1, 2}, {2, 0}, {2, 1}};
  EXPECT_EQ(links.asked, expected);

  const std::string text = read_all(log);
  std::fclose(log);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << "one line, however many pairs:\n" << text;
  EXPECT_NE(text.find("1->2 (cudaErrorTooManyPeers)"), std::string::npos) << text;
  EXPECT_NE(text.find("2->1"), std::string::npos) << text;
  EXPECT_NE(text.find("slower"), std::string::npos) << text;
}

TEST(PeerAccess, NothingIsLoggedWhenEveryPairIsEnabled) {
  class AllGood final : public PeerLinks {
    bool can_access(int, int) override { return true; }
    std::string enable(int, int) override { return ""; }
  } links;
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  EXPECT_TRUE(enable_peer_access(2, links, log).empty());
  EXPECT_EQ(read_all(log), "");
  std::fclose(log);
}

}  // namespace
}  // namespace towers
