// SPDX-License-Identifier: MIT
// InputQueue: the tutorial's batch queue, as chapters 1-3 use it.
//
// Each step the host draws one global batch of towers x batch_size distorted images
// from a per-epoch shuffle of the training set; tower i takes slice i, as each tower
// of cifar10_multi_gpu_train.py dequeues its own batch. Because the global batch does not
// depend on the number of towers, N towers of batch B see exactly the images that one
// tower of batch N*B sees — the equivalence the chapter 2/3 tests rely on.
// Chapter 4 replaces this with one iterator per tower. Used from one host thread.
#pragma once

#include <cstdint>
#include <vector>

#include "data/cifar10.hpp"
#include "data/input_position.hpp"
#include "harness/input_source.hpp"

namespace towers {

/// Shuffled, distorted global batches from a training set. Introduced in chapter 1.
class InputQueue : public InputSource {
 public:
  /// Batches of `global_batch` examples of `train` (kept by reference), shuffled and
  /// distorted with randomness derived from `seed`.
  InputQueue(const data::Dataset& train, int global_batch, std::uint64_t seed);

  /// Fills images [global_batch, 24, 24, 3] and labels [global_batch] (host memory) with
  /// the next batch. Starts a new, reshuffled epoch when fewer examples than a batch remain.
  void dequeue(float* images, std::int32_t* labels);

  /// Where the queue stands: what a checkpoint stores so that a resumed run dequeues
  /// exactly the batches an uninterrupted run would have.
  data::InputPosition position() const override;

  /// Continues from `saved`, a position() of a queue (or of the towers' iterators) over the
  /// same training set, global batch and seed. Throws UsageError with data::steps_before()'s
  /// words, saying which flag differs from the checkpoint, when they do not match, or when
  /// `saved` is not the start of a global batch of its epoch (a damaged record).
  void restore(const data::InputPosition& saved) override;

 private:
  void shuffle();
  const data::Dataset& train_;
  int global_batch_;
  std::uint64_t seed_;
  std::uint64_t epoch_ = 0;
  std::size_t position_ = 0;
  std::vector<std::size_t> order_;
};

/// The training set: real CIFAR-10 from `data_dir`, or when it is empty the embedded
/// synthetic set (generated into the cache folder on first use). Prints where it came from.
data::Dataset load_training_set(const std::string& data_dir);
/// The test set, from the same place as load_training_set.
data::Dataset load_test_set(const std::string& data_dir);

}  // namespace towers
