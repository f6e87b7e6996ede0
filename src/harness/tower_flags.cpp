// SPDX-License-Identifier: MIT
#include "harness/tower_flags.hpp"

#include "harness/checkpoint_dir.hpp"
#include "harness/evaluate.hpp"
#include "harness/lesson_flags.hpp"
#include "harness/training_run.hpp"

namespace towers {

TowerFlags::TowerFlags(const std::string& description) : app(description) {
  add_training_flags(app, *this, /*with_towers=*/true);
  app.add_flag("--probe", probe,
               "prove concurrency with a rendezvous across the towers in step 1, after "
               "step 0 has warmed up (step 0 with --steps 1; summary key "
               "rendezvous=met|timeout; none when that step did not run)");
  add_save_params_flag(app, save_params);
  // Chapter 1's, kept in every tower chapter.
  add_checkpoint_flags(app, checkpoints);
  add_eval_flag(app, eval);
  resumable = true;
}

AllReduceTowerFlags::AllReduceTowerFlags(const std::string& description)
    : TowerFlags(description) {
  add_allreduce_flag(app, allreduce);
  add_input_flags(app, input);
  add_check_flags(app, check);
}

}  // namespace towers
