// SPDX-License-Identifier: MIT
#include "harness/rank_checkpoints.hpp"

#include <cstdio>
#include <exception>
#include <vector>

#include "data/iterator_plan.hpp"
#include "harness/divergence.hpp"
#include "harness/evaluate.hpp"
#include "harness/input_queue.hpp"
#include "model/parameters.hpp"
#include "mpi/rank_state.hpp"

namespace towers {

void add_rank_checkpoint_flags(CLI::App& app, RankCheckpointFlags& flags) {
  add_checkpoint_flags(app, flags.checkpoints);
  add_eval_flag(app, flags.eval);
}

RankCheckpoints::RankCheckpoints(const MpiJob& job, const RankCheckpointFlags& flags,
                                 const std::string& data_dir)
    : job_(job),
      enabled_(!flags.checkpoints.dir.empty()),
      eval_(flags.eval),
      every_(flags.checkpoints.every) {
  // Rank 0 alone: the other ranks may be on machines that do not see the folder or the
  // data. Reading the test set here, before step 0, turns a missing one into a refusal
  // instead of an error after the training it was meant to measure.
  settle_on_rank_zero(job, [&] {
    dir_ = std::make_unique<CheckpointDir>(flags.checkpoints);
    if (flags.eval) load_test_set(data_dir);
  });
  if (dir_) resumed_ = dir_->resumed();
  broadcast_state(job, resumed_);
}

RankCheckpoints::~RankCheckpoints() = default;

std::int64_t RankCheckpoints::resume_input(TowerTraining& training, int ranks) const {
  if (!resumed_) return 0;
  std::printf("resumed from %s at step %lld\n", dir_ ? dir_->resumed_from().c_str() : "",
              static_cast<long long>(resumed_->global_step));
  training.set_first_global_step(resumed_->global_step);
  if (!resumed_->input) {  // only rank 0 read the file: the others say it plainly
    std::printf("%s", missing_input_note(*resumed_, dir_ ? dir_->resumed_from().string()
                                                         : "the checkpoint").c_str());
    return 0;
  }
  // Every rank's iterator restarts at the global batch the checkpoint's input stood at.
  return data::steps_before(*resumed_->input, training.train_set().size(), ranks,
                            training.batch_size(), training.seed());
}

void RankCheckpoints::save(std::int64_t steps_taken, const data::InputPosition& mine,
                           Watchdog& watchdog, int run_step, Tower& tower, const Buffer& params,
                           const Buffer& averages) const {
  // docs-begin: rank-checkpoint
  // The ranks' parameters are equal (RankParameterCheck), so rank 0's are the job's;
  // the input position must cover every rank, so it is gathered (and checked equal).
  const data::InputPosition input = job_input_position(job_, mine, watchdog, run_step);
  if (job_.rank() != 0) return;
  const std::size_t bytes = model::kNumParameters * sizeof(float);
  model::TrainingState state{.global_step = steps_taken,
                             .params = std::vector<float>(model::kNumParameters),
                             .moving_averages = std::vector<float>(model::kNumParameters),
                             .input = input};
  tower.stream->copy(state.params.data(), params.data(), bytes);
  tower.stream->copy(state.moving_averages.data(), averages.data(), bytes);
  tower.stream->synchronize();
  try {  // a failed save ends the job now: the others must not wait for rank 0
    check_parameters(state.params.data(), steps_taken - 1);
    std::printf("saved %s\n", dir_->save(state).string().c_str());
  } catch (const std::exception& e) {
    job_.abort("checkpoint of step " + std::to_string(steps_taken) + " not saved: " + e.what());
  }
  // docs-end: rank-checkpoint
}

}  // namespace towers
