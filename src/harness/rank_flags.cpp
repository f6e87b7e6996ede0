// SPDX-License-Identifier: MIT
#include "harness/rank_flags.hpp"

#include "base/usage_error.hpp"
#include "cli/options.hpp"
#include "harness/lesson_flags.hpp"
#include "harness/rank_program.hpp"
#include "harness/training_run.hpp"

namespace towers {

RankFlags::RankFlags(const std::string& description) : app(description) {
  add_training_flags(app, *this, /*with_towers=*/false);  // the towers are the ranks
  add_save_params_flag(app, save_params, " (rank 0 writes it)");
  add_rank_allreduce_flag(app, allreduce);
  add_input_flags(app, input);
  add_check_flags(app, check);
  app.add_option("--collective-timeout", collective_timeout_s,
                 "seconds any one collective may wait for the other ranks before the job ends")
      ->capture_default_str()->check(finite_number(0.1, 86400, " seconds (a day at most)"));
  add_rank_checkpoint_flags(app, rank_checkpoints);
  add_fault_flags(app, faults);
}

std::chrono::milliseconds RankFlags::collective_timeout() const {
  return std::chrono::milliseconds(static_cast<long>(collective_timeout_s * 1000));
}

void refuse_simulated_link(const TrainingFlags& flags, const std::string& program) {
  // The simulated link slows copies between one process's devices; here each rank has
  // one device and the gradients cross a real link (MPI), which the flag cannot slow.
  if (!flags.runtime.link.asked()) return;
  throw UsageError("--link-gbps and --link-latency-us model the link between the simulated "
                   "devices of one process (the other chapters, with --devices 2 or more); "
                   "these ranks talk over MPI on a real link. Leave them out; to slow that "
                   "link, run the ranks on two machines: scripts/two-hosts up --rate 500mbit, "
                   "then scripts/two-hosts run -- build/bin/" + program + " ...");
}

}  // namespace towers
