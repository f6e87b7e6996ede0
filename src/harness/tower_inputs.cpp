// SPDX-License-Identifier: MIT
#include "harness/tower_inputs.hpp"

#include "cli/options.hpp"
#include "data/iterator_plan.hpp"

namespace towers {

void add_input_flags(CLI::App& app, InputFlags& flags) {
  app.add_option("--prefetch", flags.prefetch, "batches each tower's iterator prepares ahead")
      ->capture_default_str()->check(whole_number(1, 64));
  app.add_option("--input-threads", flags.input_threads,
                 "threads that distort images, shared by the towers' iterators")
      ->capture_default_str()->check(whole_number(1, 256));
}

TowerInputs::TowerInputs(const data::Dataset& train,
                         const std::vector<std::unique_ptr<Tower>>& towers,
                         const InputFlags& flags, std::uint64_t seed, int towers_in_job,
                         std::int64_t first_step)
    : train_(train),
      towers_(towers),
      flags_(flags),
      seed_(seed),
      towers_in_job_(towers_in_job > 0 ? towers_in_job : static_cast<int>(towers.size())),
      pool_(flags.input_threads) {
  make_iterators(first_step);
}

TowerInputs::TowerInputs(TowerTraining& training, const InputFlags& flags)
    : TowerInputs(training.train_set(), training.towers(), flags, training.seed(),
                  training.job_towers()) {}

TowerInputs::~TowerInputs() = default;

void TowerInputs::make_iterators(std::int64_t first_step) {
  iterators_.clear();  // stops the old producers first
  for (const auto& tower : towers_) {
    // Endless (steps = 0): the destructor stops the producer wherever it is. Distortion
    // spans are not traced: the timeline's host row is for enqueueing; the copies to the
    // device are traced by the iterator's stream as "copy input".
    const data::IteratorOptions options{.num_towers = towers_in_job_,
                                        .batch_size = tower->batch_size(),
                                        .seed = seed_,
                                        .prefetch_depth = flags_.prefetch,
                                        .first_step = first_step};
    iterators_.push_back(
        std::make_unique<data::TowerIterator>(train_, options, tower->index, *tower->device, pool_));
  }
}

data::InputPosition TowerInputs::position() const { return iterators_[0]->position(); }

void TowerInputs::restore(const data::InputPosition& position) {
  make_iterators(data::steps_before(position, train_.size(), towers_in_job_,
                                    towers_[0]->batch_size(), seed_));
}

double TowerInputs::input_wait_ms() const {
  double sum = 0;
  for (const auto& iterator : iterators_) sum += iterator->input_wait_ms();
  return sum;
}

}  // namespace towers
