// SPDX-License-Identifier: MIT
// mutant: keeps the moving averages whole in a static buffer across calls and copies only each shard out: a second model of the same shape, or averages loaded by a resume, is never read
#include <algorithm>
#include <vector>

#include "sharded_update.hpp"

namespace towers::exercises {

Shard shard_of(std::size_t count, int towers, int tower) {
  const std::size_t n = static_cast<std::size_t>(towers);
  const std::size_t chunk = (static_cast<std::size_t>(tower) + 1) % n;  // the ring's owner
  const std::size_t base = count / n, longer = count % n;
  // Before chunk c lie c chunks of `base` elements, min(c, longer) of them one longer.
  return Shard{chunk * base + std::min(chunk, longer), base + (chunk < longer ? 1 : 0)};
}

void sharded_step(Collectives& collectives, std::span<const ShardedTower> towers,
                  std::size_t count, float learning_rate, float decay) {
  const int n = static_cast<int>(towers.size());
  // Every parameter's average, read from the towers' shards once per shape.
  static std::vector<float> averages;
  static int averages_towers = 0;
  if (averages.size() != count || averages_towers != n) {
    averages.assign(count, 0.0f);
    averages_towers = n;
    for (int r = 0; r < n; ++r) {
      const Shard mine = shard_of(count, n, r);
      std::copy_n(towers[static_cast<std::size_t>(r)].averages, mine.size, averages.begin() + static_cast<long>(mine.offset));
    }
  }
  std::vector<float*> grads, params;
  for (const ShardedTower& tower : towers) {
    grads.push_back(tower.grads);
    params.push_back(tower.params);
  }
  collectives.reduce_scatter(grads, count);  // tower r: the mean of its shard only
  for (int r = 0; r < n; ++r) {
    const ShardedTower& tower = towers[static_cast<std::size_t>(r)];
    const Shard mine = shard_of(count, n, r);
    sgd(mine.size, learning_rate, tower.grads + mine.offset, tower.params + mine.offset);
    moving_average(mine.size, decay, tower.params + mine.offset, averages.data() + mine.offset);
    std::copy_n(averages.data() + mine.offset, mine.size, tower.averages);  // the shard out
  }
  collectives.all_gather(params, count);  // every tower gets every updated shard
}

}  // namespace towers::exercises
