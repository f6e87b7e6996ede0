// SPDX-License-Identifier: MIT
// Exercise 09 — your code goes here. See README.md and sharded_update.hpp.
#include "sharded_update.hpp"

#include "exercises/todo.hpp"

namespace towers::exercises {

Shard shard_of(std::size_t count, int towers, int tower) {
  // TODO(1): which chunk tower `tower` owns (the ring's: (tower + 1) mod towers), then
  //   that chunk's bounds: count / towers elements each, one more for each of the first
  //   count % towers chunks. Where does chunk c start, when the chunks before it are of
  //   both sizes?
  (void)count;
  (void)towers;
  (void)tower;
  todo("exercise 09: write shard_of() in exercises/09_sharded_update/stub.cpp");
}

void sharded_step(Collectives& collectives, std::span<const ShardedTower> towers,
                  std::size_t count, float learning_rate, float decay) {
  // TODO(2): reduce-scatter every tower's gradients.
  // TODO(3): for every tower, with its shard from shard_of(): sgd() on that range of its
  //   parameters from that range of its gradients, then moving_average() of that range
  //   into its averages (which hold the shard only: index them from 0).
  // TODO(4): all-gather every tower's parameters.
  (void)collectives;
  (void)towers;
  (void)count;
  (void)learning_rate;
  (void)decay;
  todo("exercise 09: write sharded_step() in exercises/09_sharded_update/stub.cpp");
}

}  // namespace towers::exercises
