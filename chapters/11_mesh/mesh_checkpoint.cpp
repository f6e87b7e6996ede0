// SPDX-License-Identifier: MIT
#include "mesh_checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "base/usage_error.hpp"
#include "data/iterator_plan.hpp"
#include "harness/training_run.hpp"
#include "parallel/placement.hpp"

namespace towers {
namespace {

// The state the ranks put together on world rank 0, as the Placement that chapter 1's one
// save (save_state) reads: the same checks and the same file as every other program.
class PutTogether final : public Placement {
 public:
  explicit PutTogether(const model::TrainingState& whole) : whole_(whole) {}
  std::string where() const override { return "the mesh's parts, put together on rank 0"; }
  void state_to_host(model::TrainingState& state) override {
    state.params = whole_.params;
    state.moving_averages = whole_.moving_averages;
    state.optimizer_state = whole_.optimizer_state;
  }
  void params_to_host(float* params) override {
    std::copy(whole_.params.begin(), whole_.params.end(), params);
  }
  void load_from_host(const model::TrainingState&) override {
    throw std::logic_error("a mesh's ranks take their parts of a state when they are made");
  }

 private:
  const model::TrainingState& whole_;
};

// Refuses (UsageError) a checkpoint whose replicas read another number of images per step:
// its input could not continue here. In the mesh's terms, before data::steps_before's
// (which names --batch-size and the rank count, chapter 5's flags).
void check_global_batch(const data::InputPosition& saved, const MeshConfig& c,
                        const std::string& file) {
  const auto here = static_cast<std::uint64_t>(c.dp) * static_cast<std::uint64_t>(c.batch);
  if (saved.global_batch == here) return;
  throw UsageError(
      "--resume: " + file + " was written by a run whose data replicas read " +
      std::to_string(saved.global_batch) + " images per step in all (--dp x --batch-size); "
      "this mesh reads " + std::to_string(here) + " (--dp " + std::to_string(c.dp) +
      " x --batch-size " + std::to_string(c.batch) + "), so its input could not continue. "
      "Resume with a --dp and --batch-size whose product is " +
      std::to_string(saved.global_batch) + "; --tp and --pp may change, since the checkpoint "
      "holds the whole model.");
}

// `flags` for a run of `optimizer`: its saves hold that optimizer's state, and --resume
// refuses a checkpoint of another (CheckpointDir's check, chapter 8's message).
CheckpointFlags with_optimizer(CheckpointFlags flags, model::Optimizer optimizer) {
  flags.optimizer = optimizer;
  return flags;
}

}  // namespace

MeshCheckpoints::MeshCheckpoints(const MpiJob& job, const CheckpointFlags& flags,
                                 const MeshConfig& config, std::size_t examples,
                                 std::uint64_t seed)
    : ranks_(job, RankCheckpointFlags{with_optimizer(flags, config.optimizer), /*eval=*/false},
             /*data_dir=*/""),
      config_(config),
      examples_(examples),
      seed_(seed),
      start_(ranks_.resumed() ? *ranks_.resumed() : fresh_state(seed)) {
  if (!ranks_.resumed()) return;
  const std::string file = job.rank() == 0 ? ranks_.resumed_from() : "the checkpoint";
  // Every rank checks, so every rank refuses alike (run_rank_program: rank 0 says it).
  if (start_.input) {
    check_global_batch(*start_.input, config_, file);
    first_input_step_ = data::steps_before(*start_.input, examples_, config_.dp, config_.batch, seed_);
  }
  if (job.rank() != 0) return;  // said once, by the rank that read the file
  std::printf("resumed from %s at step %lld\n", file.c_str(),
              static_cast<long long>(start_.global_step));
  if (!start_.input) std::printf("%s", missing_input_note(start_, file).c_str());
}

void MeshCheckpoints::save(std::int64_t steps_taken, int run_step, MeshRank& rank,
                           Watchdog& watchdog) const {
  // Every rank sends its part (its copy, slice or range) to world rank 0, which writes
  // chapter 1's file through chapter 5's save; the input stands where the global steps
  // put it, on every rank alike.
  model::TrainingState whole;
  {
    Watchdog::Scope waiting(watchdog, "putting the checkpoint together", run_step);
    rank.put_together(whole);
  }
  PutTogether parts(whole);
  const data::InputPosition input = data::position_after(
      first_input_step_ + run_step + 1, examples_, config_.dp, config_.batch, seed_);
  ranks_.save(steps_taken, input, watchdog, run_step, parts);
}

}  // namespace towers
