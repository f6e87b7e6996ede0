// SPDX-License-Identifier: MIT
#include "harness/rank_checkpoints.hpp"

#include <cstdio>
#include <exception>
#include <vector>

#include "harness/evaluate.hpp"
#include "harness/input_queue.hpp"
#include "harness/training_run.hpp"
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
      every_(flags.checkpoints.every),
      optimizer_(flags.checkpoints.optimizer) {
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

void RankCheckpoints::resume(TowerTraining& training) const {
  if (resumed_) training.resume_from(*resumed_, dir_ ? dir_->resumed_from().string() : "");
}

void RankCheckpoints::save(std::int64_t steps_taken, const data::InputPosition& mine,
                           Watchdog& watchdog, int run_step, Placement& variables) const {
  // docs-begin: rank-checkpoint
  // The ranks' parameters are equal (RankParameterCheck), so rank 0's are the job's;
  // the input position must cover every rank, so it is gathered (and checked equal).
  const data::InputPosition input = job_input_position(job_, mine, watchdog, run_step);
  if (job_.rank() != 0) return;
  try {  // a failed save ends the job now: the others must not wait for rank 0
    std::printf("saved %s\n",
                save_state(*dir_, steps_taken, variables, optimizer_, input).string().c_str());
  } catch (const std::exception& e) {
    job_.abort("checkpoint of step " + std::to_string(steps_taken) + " not saved: " + e.what());
  }
  // docs-end: rank-checkpoint
}

}  // namespace towers
