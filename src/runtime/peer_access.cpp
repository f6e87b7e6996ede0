// SPDX-License-Identifier: MIT
#include "runtime/peer_access.hpp"

namespace towers {

std::vector<PeerFailure> enable_peer_access(int count, PeerLinks& links, std::FILE* log) {
  std::vector<PeerFailure> failures;
  for (int from = 0; from < count; ++from) {
    for (int to = 0; to < count; ++to) {
      if (from == to || !links.can_access(from, to)) continue;
      std::string reason = links.enable(from, to);
      if (!reason.empty()) failures.push_back({from, to, std::move(reason)});
    }
  }
  if (log != nullptr && !failures.empty()) {
    // One line for all pairs: a machine that refuses one pair usually refuses many.
    std::string pairs;
    for (const PeerFailure& f : failures) {
      pairs += (pairs.empty() ? "" : ", ") + std::to_string(f.from) + "->" + std::to_string(f.to) +
               " (" + f.reason + ")";
    }
    std::fprintf(log,
                 "towers: warning: peer access could not be enabled for %zu device pair(s): %s. "
                 "Copies between those devices go through host memory instead: correct, but "
                 "slower.\n",
                 failures.size(), pairs.c_str());
  }
  return failures;
}

}  // namespace towers
