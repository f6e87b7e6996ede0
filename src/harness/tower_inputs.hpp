// SPDX-License-Identifier: MIT
// TowerInputs: one TowerIterator per tower, the way chapter 4 feeds its towers.
//
// Tower i pulls from iterator i, which delivers shard i of every global batch (the same
// examples and distortions the InputQueue of chapters 1-3 gives slice i), prefetched and
// copied to tower i's device on a stream of that device tagged with the tower ("copy
// input" in the trace). The iterators share one ThreadPool for the distortions and run
// without end: at the last step they are already preparing the next batches, as a real
// input pipeline is, and the destructor stops them.
//
// Make it after the TowerTraining whose dataset and towers it reads (so it is destroyed
// first); use it from the training thread. It is an InputSource: handed to
// TowerTraining::start(), it is restored to a resumed checkpoint's position (its
// iterators start again at the global batch the position stood before), and the
// checkpoints record where it stands. Introduced in chapter 4.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/thread_pool.hpp"
#include "data/iterator.hpp"
#include "harness/input_source.hpp"
#include "harness/tower_training.hpp"
#include "parallel/tower.hpp"

namespace towers {

/// Flags of the input pipeline.
struct InputFlags {
  int prefetch = 2;       ///< --prefetch: batches each tower's iterator makes ahead
  int input_threads = 4;  ///< --input-threads: distortion threads shared by the towers
};

/// Adds --prefetch and --input-threads to `app`.
void add_input_flags(CLI::App& app, InputFlags& flags);

/// The towers' iterators and the pool they distort on.
class TowerInputs : public InputSource {
 public:
  /// Starts one iterator per tower over `train` (kept by reference), seeded by `seed`,
  /// batches of each tower's batch size. Throws UsageError when the training set cannot
  /// give every tower a batch (see data::check_sharding). `towers_in_job` is how many
  /// towers share each global batch: 0 means towers.size(); chapter 5 gives the rank
  /// count, so its one tower (index = rank) reads the rank's shard. `first_step`: the
  /// global batch to start at (a resumed run's, see data::steps_before).
  TowerInputs(const data::Dataset& train, const std::vector<std::unique_ptr<Tower>>& towers,
              const InputFlags& flags, std::uint64_t seed, int towers_in_job = 0,
              std::int64_t first_step = 0);
  /// The iterators of `training`'s towers (chapters 4 and 6): over its training set and
  /// --seed, as many towers in the job as it has.
  TowerInputs(TowerTraining& training, const InputFlags& flags);
  /// Stops the producers and waits for the work that reads their buffers.
  ~TowerInputs();

  /// Where the towers' input stands (every tower at the same place: tower 0's).
  data::InputPosition position() const override;
  /// Starts every iterator again at the global batch `position` stood before
  /// (data::steps_before): call before the first next(). Throws UsageError, naming the
  /// flag that differs, for a position of another data set, batch, tower count or seed.
  void restore(const data::InputPosition& position) override;

  /// Tower `tower`'s iterator: next() and release() are the training loop's.
  data::TowerIterator& operator[](int tower) { return *iterators_[tower]; }
  /// Milliseconds the training thread spent blocked in next(), all towers together.
  double input_wait_ms() const;

 private:
  // Starts the iterators at global batch `first_step`.
  void make_iterators(std::int64_t first_step);
  const data::Dataset& train_;
  const std::vector<std::unique_ptr<Tower>>& towers_;
  InputFlags flags_;
  std::uint64_t seed_;
  int towers_in_job_;
  base::ThreadPool pool_;
  std::vector<std::unique_ptr<data::TowerIterator>> iterators_;  // after pool_: stopped first
};

}  // namespace towers
