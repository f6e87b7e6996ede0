// SPDX-License-Identifier: MIT
// Chapter 5: one process per device.
// One change from chapter 4: the towers are processes. Each MPI rank holds one tower on
// one device, pulls its own shard from its iterator, runs forward and backward, and meets
// the other ranks in one all-reduce, now a message between processes (MPI on the host,
// NCCL on GPUs) instead of copies between buffers of one process. Then every rank updates
// its own copy of the parameters, as in chapter 4. Start it with `mpirun -n N`; started
// alone it is a job of one rank. Rank 0 alone logs, saves checkpoints and the summary.
#include <algorithm>
#include <chrono>
#include <memory>

#include "harness/pipeline_trace.hpp"
#include "harness/rank_check.hpp"
#include "harness/rank_checkpoints.hpp"
#include "harness/rank_flags.hpp"
#include "harness/lesson_flags.hpp"
#include "harness/rank_placement.hpp"
#include "harness/rank_program.hpp"
#include "harness/rank_step.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/tower_training.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "mpi/fault_injection.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/allreduce_mpi.hpp"
#include "parallel/one_device_variables.hpp"
#include "parallel/tower_loss_batch.hpp"
#include "runtime/backend.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  RankFlags flags{"Chapter 5: one process per device. Each MPI rank trains one tower on its "
                  "own shard; ranks average gradients with one all-reduce (MPI_Allreduce, a ring "
                  "over MPI_Sendrecv, or NCCL). Run: mpirun -n N 05_ranks ..."};

  return run_rank_program(flags.app, argc, argv, [&](MpiJob& job) {
    // --link-gbps slows one process's simulated link; the ranks' link is real: refused.
    refuse_simulated_link(flags, "05_ranks");
    // Rank 0 alone settles --checkpoint-dir (and --eval's test set) and reads the
    // checkpoint to resume; a refusal there ends every rank before step 0, with rank 0's
    // message. The resumed state is then every rank's.
    const RankCheckpoints checkpoints(job, flags.rank_checkpoints, flags.data_dir);
    flags.eval = checkpoints.evaluate_here();
    // docs-begin: rank-device
    // One tower per process: tower index = rank (so it reads the rank's shard), on a
    // device of its own: GPU (local rank), the only one the process is shown
    // (CUDA_VISIBLE_DEVICES), or on the host backend one simulated device per rank.
    place_one_tower_per_rank(flags, job.rank(), job.local_rank());
    // docs-end: rank-device
    flags.trace_files.process_label = "rank";
    if (job.rank() != 0) flags.save_params.clear();  // one file for the job, from rank 0
    TowerTraining training(flags, /*probe=*/false, TowerInput::kOwnIterators, job.size());
    checkpoints.resume(training);  // every rank from what rank 0 read, or from --seed
    const std::int64_t first_step = training.first_global_step();
    Tower& tower = *training.towers()[0];
    const int num_gpus = job.size();  // the tutorial's name: how many towers train together
    std::printf("%d rank(s), %d on this machine; rank 0 trains tower 0 on %s device %d\n",
                job.size(), job.local_size(), std::string(to_string(training.runtime().backend())).c_str(),
                tower.device->index());
    Watchdog watchdog(job, flags.collective_timeout());
    TowerInputs inputs(training.train_set(), training.towers(), flags.input, flags.seed, num_gpus);
    auto allreduce = make_rank_allreduce(training.runtime(), *tower.device, flags.allreduce, job,
                                         watchdog, kNumParameters);
    // This rank's variables: parameters and moving averages, on its device: from --seed,
    // or the resumed checkpoint's; the input from where that checkpoint's stood.
    RankVariables vars(*tower.device, *tower.stream);
    training.start(vars, &inputs);
    float* grads = tower.grads.as<float>();
    RankParameterCheck check(tower, kNumParameters, flags.check, flags.steps, job, watchdog);
    PipelineTrace pipeline;
    training.watch_trace([&](const std::vector<TraceEvent>& events) { pipeline.collect(events); });
    merge_rank_traces(training, job);  // one job-wide trace at the end, on rank 0's clock
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);

    bool stop = false;
    for (int run_step = 0; run_step < flags.steps && !stop; ++run_step) {
      // `run_step` counts this run's steps; `global_step` the job's since --seed (resumes too).
      const std::int64_t global_step = first_step + run_step;
      StepScope step = training.step(run_step);
      maybe_fail(flags.faults, job, run_step);  // test hook; nothing unless --fail-rank
      // docs-begin: rank-step
      const data::Batch batch = inputs[0].next();       // this rank's shard of the step
      tower.stream->wait(*batch.ready);
      tower_loss(tower, vars.params(), batch);         // returns at once
      inputs[0].release(batch, *tower.stream);
      allreduce->average(grads, kNumParameters, *tower.stream, run_step);  // ranks meet
      apply_update(*tower.stream, global_step, steps_per_decay, grads, vars.params(),
                   vars.averages());  // SGD, then the moving averages: chapter 4's update
      // docs-end: rank-step
      step.enqueued();
      allreduce->wait(*tower.stream);  // the one wait of the step; fails rather than hangs
      training.runtime().synchronize();
      // Log the last rank's loss, as chapter 4 logs its last tower's (and TF its last tower's).
      step.end(last_rank_loss(job, watchdog, tower, run_step));
      check.after_step(run_step, vars.params());  // are the ranks' copies identical?
      // Ctrl-C reaches every rank, but maybe in different steps: the ranks agree to stop
      // after the same step, or one would wait alone in the next all-reduce.
      stop = ranks_agree_to_stop(job, watchdog, training.stop_requested(), run_step);
      // Every rank takes part in a save: rank 0 writes what every rank's input adds up to.
      if (checkpoints.due(global_step + 1, run_step + 1 == flags.steps || stop)) {
        checkpoints.save(global_step + 1, inputs.position(), watchdog, run_step, vars);
      }
    }
    training.print_timeline("chapter 5: ranks");
    // Ranks that computed at once, read off the merged trace of the last step (rank 0).
    const StepAnalysis merged = analyze_step(training.drawn_events(), training.steps_run() - 1);
    Summary extra;
    extra.add("allreduce", std::string(allreduce->name()))
        .add("allreduce_ms", pipeline.mean_allreduce_ms(), 3)
        .add("input_wait_ms", inputs.input_wait_ms() / std::max(1, training.steps_run()), 3)
        .add("input_overlap", pipeline.input_overlap(), 3)
        .add("param_checks", check.checks())
        .add("ranks", job.size())
        .add("global_step", static_cast<long long>(first_step + training.steps_run()))
        .add("max_concurrent_ranks", merged.max_concurrent_towers);
    return training.write_outputs_and_summary("allreduce", extra);
  });
}
