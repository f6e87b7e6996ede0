// SPDX-License-Identifier: MIT
#include "data/iterator_plan.hpp"

#include <cstdint>
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

InputPosition position_after(std::int64_t steps, std::size_t examples, int num_towers,
                             int batch_size, std::uint64_t seed) {
  const std::size_t per_epoch = batches_per_epoch(examples, num_towers, batch_size);
  const auto global_batch = static_cast<std::uint64_t>(num_towers) * static_cast<std::uint64_t>(batch_size);
  const auto taken = static_cast<std::uint64_t>(steps);
  return {seed, examples, global_batch, taken / per_epoch, taken % per_epoch * global_batch};
}

std::int64_t steps_before(const InputPosition& saved, std::size_t examples, int num_towers,
                          int batch_size, std::uint64_t seed) {
  const InputPosition now = position_after(0, examples, num_towers, batch_size, seed);
  auto refuse = [](const std::string& what, std::uint64_t was, std::uint64_t is,
                   const std::string& hint) {
    throw UsageError("cannot resume the input exactly: the checkpoint was made with " + what +
                     " " + std::to_string(was) + ", this run has " + std::to_string(is) + ". " +
                     hint);
  };
  if (saved.seed != now.seed) refuse("--seed", saved.seed, now.seed, "Resume with the same --seed.");
  if (saved.examples != now.examples) {
    refuse("a training set of", saved.examples, now.examples, "Resume with the same --data-dir.");
  }
  if (saved.global_batch != now.global_batch) {
    refuse("a global batch of", saved.global_batch, now.global_batch,
           "Resume with the same --batch-size and number of towers (ranks: mpirun -n).");
  }
  const std::uint64_t per_epoch = batches_per_epoch(examples, num_towers, batch_size);
  if (saved.position % saved.global_batch != 0 || saved.position / saved.global_batch > per_epoch) {
    throw UsageError("cannot resume the input: position " + std::to_string(saved.position) +
                     " is not the start of one of the " + std::to_string(per_epoch) +
                     " global batches of " + std::to_string(saved.global_batch) +
                     " in an epoch (a damaged checkpoint?)");
  }
  // An epoch so large that the step count would not fit is damage as well.
  if (saved.epoch > static_cast<std::uint64_t>(INT64_MAX) / (per_epoch + 1)) {
    throw UsageError("cannot resume the input: epoch " + std::to_string(saved.epoch) +
                     " is beyond any run (a damaged checkpoint?)");
  }
  return static_cast<std::int64_t>(saved.epoch * per_epoch + saved.position / saved.global_batch);
}

}  // namespace towers::data
