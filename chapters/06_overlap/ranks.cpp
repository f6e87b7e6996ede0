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
#include "harness/lesson_flags.hpp"
#include "harness/rank_placement.hpp"
#include "harness/rank_program.hpp"
#include "harness/rank_step.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/tower_training.hpp"
#include "model/gradient_layers.hpp"
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
  CLI::App app{"Chapter 6 across ranks: one process per device (mpirun -n N), the gradients "
               "all-reduced between ranks in buckets on a communication stream, each as soon "
               "as the backward pass has finished it. Run: mpirun -n N 06_overlap_ranks ..."};
  TrainingFlags flags;
  std::string allreduce_choice = "auto";
  InputFlags input_flags;
  CheckFlags check_flags;
  FaultFlags fault_flags;
  OverlapFlags overlap_flags;
  RankCheckpointFlags checkpoint_flags;
  double collective_timeout_s = 30;
  add_training_flags(app, flags, /*with_towers=*/false);  // the towers are the ranks
  add_save_params_flag(app, flags.save_params, " (rank 0 writes it)");
  add_rank_allreduce_flag(app, allreduce_choice);
  add_input_flags(app, input_flags);
  add_check_flags(app, check_flags);
  add_overlap_flags(app, overlap_flags);
  app.add_option("--collective-timeout", collective_timeout_s,
                 "seconds any one collective may wait for the other ranks before the job ends")
      ->capture_default_str()->check(finite_number(0.1, 86400, " seconds (a day at most)"));
  add_rank_checkpoint_flags(app, checkpoint_flags);
  add_fault_flags(app, fault_flags);

  return run_rank_program(app, argc, argv, [&](MpiJob& job) {
    if (flags.runtime.link.asked()) {  // as in chapter 5: the ranks' link is real
      throw UsageError("--link-gbps and --link-latency-us model the link between the "
                       "simulated devices of one process (06_overlap --devices 2 or more); "
                       "these ranks talk over MPI on a real link. Leave them out; to slow it, "
                       "run the ranks on two machines: scripts/two-hosts up --rate 500mbit.");
    }
    // As chapter 5: rank 0 settles the checkpoint folder; every rank resumes its state.
    const RankCheckpoints checkpoints(job, checkpoint_flags, flags.data_dir);
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
    Watchdog watchdog(job, std::chrono::milliseconds(static_cast<long>(collective_timeout_s * 1000)));
    TowerInputs inputs(training.train_set(), training.towers(), input_flags, flags.seed, num_gpus);
    const std::vector<Bucket> buckets = make_buckets(overlap_flags.bucket_mb);
    std::size_t largest_bucket = 0;
    for (const Bucket& bucket : buckets) largest_bucket = std::max(largest_bucket, bucket.count);
    auto allreduce = make_rank_allreduce(training.runtime(), *tower.device, allreduce_choice, job,
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
    RankParameterCheck check(tower, kNumParameters, check_flags, flags.steps, job, watchdog);
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
      maybe_fail(fault_flags, job, run_step);  // test hook; nothing unless --fail-rank
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
      apply_gradients(*tower.stream, learning_rate(global_step, steps_per_decay), grads,
                      vars.params());
      update_moving_averages(*tower.stream, moving_average_decay(global_step), vars.params(),
                             vars.averages());
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
    extra.add("allreduce", std::string(allreduce->name()))
        .add("allreduce_ms", pipeline.mean_allreduce_ms(), 3)
        .add("overlap_mode", std::string(overlap_flags.overlap ? "on" : "off"))
        .add("buckets", static_cast<long long>(overlap_flags.overlap ? buckets.size() : 1))
        .add("overlap_comm", overlap.overlap_comm(), 3)
        .add("exposed_comm_ms", overlap.exposed_comm_ms(), 3)
        .add("param_checks", check.checks())
        .add("ranks", job.size())
        .add("global_step", static_cast<long long>(first_step + training.steps_run()));
    return training.write_outputs_and_summary("allreduce", extra);
  });
}
