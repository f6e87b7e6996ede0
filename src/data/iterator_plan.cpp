// SPDX-License-Identifier: MIT
#include "data/iterator_plan.hpp"

#include <numeric>
#include <string>
#include <utility>

#include "data/rng.hpp"
#include "base/usage_error.hpp"

namespace towers::data {

void check_sharding(std::size_t examples, int num_towers, int batch_size) {
  if (num_towers < 1) {
    throw UsageError("the input needs at least one tower, not " + std::to_string(num_towers) +
                     ". Use 1 or more towers.");
  }
  if (batch_size < 1) {
    throw UsageError("a batch size of " + std::to_string(batch_size) +
                     " holds no images. Use a --batch-size of 1 or more.");
  }
  if (examples < static_cast<std::size_t>(num_towers)) {
    throw UsageError(std::to_string(num_towers) + " towers cannot share " +
                     std::to_string(examples) + " examples: some tower would get none. " +
                     "Use at most " + std::to_string(examples) + " towers, or a larger dataset.");
  }
  const std::size_t shard = examples / static_cast<std::size_t>(num_towers);
  if (static_cast<std::size_t>(batch_size) > shard) {
    throw UsageError("a batch of " + std::to_string(batch_size) +
                     " is larger than a tower's shard: " + std::to_string(examples) +
                     " examples over " + std::to_string(num_towers) + " towers give each " +
                     std::to_string(shard) + ". Use a --batch-size of at most " +
                     std::to_string(shard) + ", or fewer towers.");
  }
}

std::size_t batches_per_epoch(std::size_t examples, int num_towers, int batch_size) {
  return examples / (static_cast<std::size_t>(num_towers) * static_cast<std::size_t>(batch_size));
}

std::vector<std::size_t> epoch_order(std::size_t examples, std::uint64_t seed,
                                     std::uint64_t epoch) {
  std::vector<std::size_t> order(examples);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // A stream of its own, apart from the per-example distortion streams
  // example_rng(seed, epoch, index); the tag is the same as InputQueue's.
  Rng rng(mix_seed(seed, 0x5368756666ull /* "Shuff" */, epoch));
  for (std::size_t i = examples; i > 1; --i) {  // Fisher-Yates, from the back
    std::swap(order[i - 1], order[rng.below(static_cast<std::uint32_t>(i))]);
  }
  return order;
}

std::span<const std::size_t> shard_batch(std::span<const std::size_t> order, int num_towers,
                                         int tower, int batch_size, std::size_t batch) {
  const auto b = static_cast<std::size_t>(batch_size);
  const std::size_t first = (batch * static_cast<std::size_t>(num_towers) +
                             static_cast<std::size_t>(tower)) * b;
  return order.subspan(first, b);
}

}  // namespace towers::data
