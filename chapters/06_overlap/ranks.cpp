// SPDX-License-Identifier: MIT
// Chapter 6 across processes: chapter 5's ranks (one process per device, started by
// mpirun) with chapter 6's step. The backward pass records an event as each layer's
// gradients become final; each bucket's all-reduce between the ranks (MPI_Allreduce or the
// ring over MPI_Sendrecv, as in chapter 5) runs on the rank's communication stream, its own
// thread, as soon as its event fires, while the backward pass goes on with earlier layers.
// This is how DDP and Horovod train. --overlap off is chapter 5's step. Checkpoints,
// --resume and --eval are chapter 5's (harness/rank_checkpoints.hpp): rank 0 saves.
#include <algorithm>
#include <chrono>
#include <memory>

#include "harness/overlap_trace.hpp"
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
#include "model/gradient_layers.hpp"
#include "overlap_keys.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "mpi/fault_injection.hpp"
#include "mpi/mpi_job.hpp"
#include "mpi/watchdog.hpp"
#include "parallel/allreduce_mpi.hpp"
#include "parallel/one_device_variables.hpp"
#include "parallel/buckets.hpp"
#include "parallel/tower_loss_batch.hpp"
#include "runtime/backend.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  RankFlags flags{"Chapter 6 across ranks: one process per device (mpirun -n N), the "
                  "gradients all-reduced between ranks in buckets on a communication stream, "
                  "each as soon as the backward pass has finished it. Run: mpirun -n N "
                  "06_overlap_ranks ..."};
  OverlapFlags overlap_flags;
  add_overlap_flags(flags.app, overlap_flags);

  return run_rank_program(flags.app, argc, argv, [&](MpiJob& job) {
    refuse_simulated_link(flags, "06_overlap_ranks");  // as in chapter 5: the link is real
    // As chapter 5: rank 0 settles the checkpoint folder; every rank resumes its state.
    const RankCheckpoints checkpoints(job, flags.rank_checkpoints, flags.data_dir);
    flags.eval = checkpoints.evaluate_here();
    // One tower per process, as chapter 5: tower index = rank, one device per rank.
    place_one_tower_per_rank(flags, job.rank(), job.local_rank());
    flags.trace_files.process_label = "rank";
    if (job.rank() != 0) flags.save_params.clear();
    TowerTraining training(flags, /*probe=*/false, TowerInput::kOwnIterators, job.size());
    checkpoints.resume(training);
    const std::int64_t first_step = training.first_global_step();
    Tower& tower = *training.towers()[0];
    const int num_gpus = job.size();
    Watchdog watchdog(job, flags.collective_timeout());
    TowerInputs inputs(training.train_set(), training.towers(), flags.input, flags.seed, num_gpus);
    const std::vector<Bucket> buckets = make_buckets(overlap_flags.bucket_mb);
    std::size_t largest_bucket = 0;
    for (const Bucket& bucket : buckets) largest_bucket = std::max(largest_bucket, bucket.count);
    auto allreduce = make_rank_allreduce(training.runtime(), *tower.device, flags.allreduce, job,
                                         watchdog, overlap_flags.overlap ? largest_bucket : kNumParameters);
    // From --seed, or the checkpoint's, as chapter 5.
    RankVariables vars(*tower.device, *tower.stream);
    training.start(vars, &inputs);
    float* grads = tower.grads.as<float>();
    // Chapter 6's additions, for this rank's one tower: the communication stream (its own
    // worker: the MPI calls run there), an event per layer, one for "every bucket averaged".
    std::unique_ptr<Stream> comm = tower.device->create_stream();
    comm->set_tower(tower.index);
    std::vector<std::unique_ptr<Event>> layer_ready;  // backward order
    for (std::size_t k = 0; k < gradient_layers().size(); ++k) {
      layer_ready.push_back(tower.device->create_wait_event());
    }
    std::unique_ptr<Event> reduced = tower.device->create_wait_event();
    RankParameterCheck check(tower, kNumParameters, flags.check, flags.steps, job, watchdog);
    PipelineTrace pipeline;
    OverlapTrace overlap;
    training.watch_trace([&](const std::vector<TraceEvent>& events) {
      pipeline.collect(events);
      overlap.collect(events);
    });
    merge_rank_traces(training, job);
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);

    bool stop = false;
    for (int run_step = 0; run_step < flags.steps && !stop; ++run_step) {
      const std::int64_t global_step = first_step + run_step;  // since --seed, resumes too
      StepScope step = training.step(run_step);
      maybe_fail(flags.faults, job, run_step);  // test hook; nothing unless --fail-rank
      const data::Batch batch = inputs[0].next();
      tower.stream->wait(*batch.ready);
      // docs-begin: rank-buckets
      tower_loss(tower, vars.params(), batch, [&](int layer) {
        tower.stream->record(*layer_ready[layer]);  // this layer's gradients are final
      });
      inputs[0].release(batch, *tower.stream);
      if (overlap_flags.overlap) {
        for (const Bucket& bucket : buckets) {  // in the order the backward pass ends them
          comm->wait(*layer_ready[bucket.last_layer]);
          allreduce->average(grads + bucket.offset, bucket.count, *comm, run_step);
        }
        comm->record(*reduced);
        tower.stream->wait(*reduced);  // the optimizer reads every bucket's mean
      } else {
        allreduce->average(grads, kNumParameters, *tower.stream, run_step);  // chapter 5
      }
      // docs-end: rank-buckets
      apply_update(*tower.stream, global_step, steps_per_decay, grads, vars.params(),
                   vars.averages());  // SGD, then the moving averages: chapter 4's update
      step.enqueued();
      if (overlap_flags.overlap) allreduce->wait(*comm);
      allreduce->wait(*tower.stream);  // fails rather than hangs
      training.runtime().synchronize();
      step.end(last_rank_loss(job, watchdog, tower, run_step));  // as chapter 5
      check.after_step(run_step, vars.params());
      stop = ranks_agree_to_stop(job, watchdog, training.stop_requested(), run_step);
      if (checkpoints.due(global_step + 1, run_step + 1 == flags.steps || stop)) {
        checkpoints.save(global_step + 1, inputs.position(), watchdog, run_step, vars);
      }
    }
    training.print_timeline("chapter 6: overlap across ranks");
    Summary extra;
    add_overlap_keys(extra, allreduce->name(), pipeline, overlap, overlap_flags.overlap,
                     buckets.size(), check.checks())  // as 06_overlap's
        .add("ranks", job.size())
        .add("global_step", static_cast<long long>(first_step + training.steps_run()));
    return training.write_outputs_and_summary("allreduce", extra);
  });
}
