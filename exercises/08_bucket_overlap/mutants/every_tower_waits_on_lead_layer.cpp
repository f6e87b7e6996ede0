// SPDX-License-Identifier: MIT
// mutant: every tower's comm stream waits for tower 0's layer event, not its own
#include <vector>

#include "bucket_overlap.hpp"

namespace towers::exercises {

void overlap_buckets(std::span<const OverlapTower> towers,
                     std::span<const GradientBucket> buckets, const AllReduce& allreduce,
                     const ApplyBucket& apply) {
  std::vector<Stream*> comm;
  for (const OverlapTower& tower : towers) comm.push_back(tower.comm);
  for (std::size_t b = 0; b < buckets.size(); ++b) {  // in the order the backward ends them
    const GradientBucket& bucket = buckets[b];
    std::vector<float*> parts;
    for (const OverlapTower& tower : towers) {
      tower.comm->wait(*towers[0].layer_ready[bucket.last_layer]);  // tower 0's, not its own
      parts.push_back(tower.grads + bucket.offset);
    }
    allreduce(parts, bucket.count, comm);  // once for all towers: it is a collective
    for (const OverlapTower& tower : towers) tower.comm->record(*tower.bucket_reduced[b]);
  }
  for (std::size_t i = 0; i < towers.size(); ++i) {
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      // The update of bucket b reads only bucket b: it need not wait for later buckets.
      towers[i].compute->wait(*towers[i].bucket_reduced[b]);
      apply(static_cast<int>(i), static_cast<int>(b));
    }
  }
}

}  // namespace towers::exercises
