// SPDX-License-Identifier: MIT
#include "harness/input_queue.hpp"

#include <cstdio>
#include <span>
#include <string>

#include "data/iterator_plan.hpp"
#include "data/preprocess.hpp"
#include "data/synthetic.hpp"
#include "runtime/backend.hpp"

namespace towers {

InputQueue::InputQueue(const data::Dataset& train, int global_batch, std::uint64_t seed)
    : train_(train), global_batch_(global_batch), seed_(seed) {
  if (global_batch < 1 || static_cast<std::size_t>(global_batch) > train.size()) {
    throw UsageError("a global batch of " + std::to_string(global_batch) + " does not fit a " +
                     "training set of " + std::to_string(train.size()) +
                     " images. Use a smaller --batch-size or fewer towers.");
  }
  shuffle();
}

void InputQueue::shuffle() {
  // The same per-epoch order as chapter 4's iterators, so all chapters see the same data.
  order_ = data::epoch_order(train_.size(), seed_, epoch_);
  position_ = 0;
}

void InputQueue::dequeue(float* images, std::int32_t* labels) {
  if (position_ + global_batch_ > order_.size()) {
    ++epoch_;
    shuffle();
  }
  std::span<const std::size_t> indices(order_.data() + position_, global_batch_);
  data::fill_batch(train_, indices, data::Mode::kTrain, seed_, epoch_, images, labels);
  position_ += global_batch_;
}

data::InputPosition InputQueue::position() const {
  return {seed_, train_.size(), static_cast<std::uint64_t>(global_batch_), epoch_, position_};
}

void InputQueue::restore(const data::InputPosition& saved) {
  // The towers' iterators' check, in their words: the same seed, set and global batch,
  // and a position at the start of one of the epoch's global batches. A queue is the
  // input of one tower whose batch is the global batch, so the two positions agree.
  data::steps_before(saved, train_.size(), /*num_towers=*/1, global_batch_, seed_);
  epoch_ = saved.epoch;
  shuffle();  // the order of the saved epoch, from (seed, epoch)
  position_ = static_cast<std::size_t>(saved.position);
}

namespace {

std::filesystem::path data_folder(const std::string& data_dir) {
  if (!data_dir.empty()) return data_dir;
  auto dir = data::ensure_synthetic_cifar10(data::kDefaultSyntheticSeed);
  return dir;
}

// Reads a set with `load`. The synthetic set is our own cache: when it fails to read, the
// fix is to delete it (it is regenerated), not to download CIFAR-10 as the reader's hint says.
data::Dataset read_set(const std::filesystem::path& dir, const std::string& data_dir,
                       data::Dataset (*load)(const std::filesystem::path&)) {
  if (!data_dir.empty()) return load(dir);
  try {
    return load(dir);
  } catch (const UsageError& e) {
    std::string what = e.what();
    what = what.substr(0, what.find("\n  HINT:"));
    throw UsageError(what + "\n  The embedded synthetic set's cache at " + dir.string() +
                     " is damaged.\n  HINT: delete it (rm -r " + dir.string() +
                     ") and run again: it is regenerated from the seed.");
  }
}

}  // namespace

data::Dataset load_training_set(const std::string& data_dir) {
  auto dir = data_folder(data_dir);
  data::Dataset train = read_set(dir, data_dir, data::load_train);
  std::printf("data: %zu training images from %s%s\n", train.size(), dir.string().c_str(),
              data_dir.empty() ? " (embedded synthetic CIFAR-10)" : "");
  return train;
}

data::Dataset load_test_set(const std::string& data_dir) {
  const auto dir = data_folder(data_dir);
  return read_set(dir, data_dir, data::load_test);
}

}  // namespace towers
