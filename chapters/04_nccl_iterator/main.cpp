// SPDX-License-Identifier: MIT
// Chapter 4: NCCL gradient averaging and iterator input.
// Two changes from chapter 3. Input: each tower pulls next() from its own iterator, which
// has already distorted and copied its batch, and waits for that batch only. Meeting: the
// towers average their gradients with one all-reduce (NCCL on GPUs, a ring elsewhere) and
// then every tower updates its own copy of the parameters, so nothing is broadcast.
// The all-reduce is the one place where towers meet.
// --input queue and --allreduce device0 put chapter 3's input and averaging back, one at a
// time, so each change can be measured alone (the chapter's experiment table).
#include <algorithm>
#include <chrono>

#include "harness/parameter_check.hpp"
#include "harness/pipeline_trace.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/tower_flags.hpp"
#include "harness/tower_training.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/allreduce_choice.hpp"
#include "parallel/tower_variables.hpp"
#include "parallel/tower_loss.hpp"
#include "parallel/tower_loss_batch.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  AllReduceTowerFlags flags{"Chapter 4: N towers fed by their own prefetching iterators; gradients "
                            "averaged by an all-reduce (NCCL or a ring), every tower updating its "
                            "own copy."};
  std::string input_choice = "iterator";
  flags.app.add_option("--input", input_choice,
                       "where towers get their batches: iterator (each its own, made ahead) or "
                       "queue (chapter 3's: the training thread dequeues a global batch, tower i "
                       "copies slice i)")
      ->capture_default_str()
      ->check(CLI::IsMember({"iterator", "queue"}));

  return run_program(flags.app, argc, argv, [&] {
    const bool from_queue = input_choice == "queue";
    for (const char* flag : {"--prefetch", "--input-threads"}) {
      if (from_queue && flags.app.count(flag) > 0) {
        throw UsageError(std::string(flag) + " sets up the iterators, but --input queue has "
                         "none. Drop it, or use --input iterator.");
      }
    }
    TowerTraining training(flags,
                           from_queue ? TowerInput::kGlobalBatch : TowerInput::kOwnIterators);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();
    std::unique_ptr<TowerInputs> inputs;  // none with --input queue
    if (!from_queue) inputs = std::make_unique<TowerInputs>(training, flags.input);
    auto allreduce =
        make_tower_allreduce(training.runtime(), towers, flags.allreduce, kNumParameters);
    // Every tower owns its variables: parameters and moving averages, on its device.
    TowerVariables vars(towers);
    training.start(vars, inputs.get());  // from --seed, or where a checkpoint stood
    ParameterCheck check(towers, kNumParameters, flags.check, flags.steps);
    PipelineTrace pipeline;
    training.watch_trace([&](const std::vector<TraceEvent>& events) { pipeline.collect(events); });
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);
    double dequeue_ms = 0;  // --input queue: the training thread's time making global batches

    for (int run_step = 0; run_step < flags.steps && !training.stop_requested(); ++run_step) {
      const auto dequeue_start = std::chrono::steady_clock::now();
      StepScope step = training.step(run_step);  // with --input queue, dequeues the global batch
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      dequeue_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              dequeue_start).count();
      // docs-begin: iterator-towers
      for (int i = 0; i < num_gpus; ++i) {
        Tower& tower = *towers[i];
        if (from_queue) {  // chapter 3's input: copy slice i of the dequeued global batch
          step.probe(tower);
          tower_loss(tower, vars.params[i], training.images(), training.labels());
          continue;
        }
        const data::Batch batch = (*inputs)[i].next();  // made ahead: blocks only if behind
        step.probe(tower);
        tower.stream->wait(*batch.ready);               // tower i waits for its own batch only
        tower_loss(tower, vars.params[i], batch);       // returns at once
        (*inputs)[i].release(batch, *tower.stream);     // refilled after this step has read it
      }
      // docs-end: iterator-towers
      // docs-begin: allreduce-update
      // Where towers meet: each tower's stream waits for all.
      allreduce->average(vars.grads, kNumParameters, vars.streams);
      // Every tower applies the same mean to its own copy: SGD, then the moving averages.
      for (int i = 0; i < num_gpus; ++i) {
        apply_update(*vars.streams[i], global_step, steps_per_decay, vars.grads[i],
                     vars.params[i], vars.averages[i]);
      }
      // docs-end: allreduce-update
      step.enqueued();
      training.runtime().synchronize();  // the one wait of the step: read the loss
      step.end(towers.back()->losses.as<float>()[kTotalLoss]);
      check.after_step(run_step, vars.params);  // are the towers' copies still identical?
    }
    const double input_wait_ms = inputs ? inputs->input_wait_ms() : dequeue_ms;
    Summary extra;
    extra.add("input", input_choice)
        .add("allreduce", std::string(allreduce->name()))
        .add("allreduce_ms", pipeline.mean_allreduce_ms(), 3)
        .add("input_wait_ms", input_wait_ms / std::max(1, flags.steps), 3)
        .add("input_overlap", pipeline.input_overlap(), 3)
        .add("param_checks", check.checks());
    return training.finish("chapter 4: nccl iterator", "allreduce", extra);
  });
}
