// SPDX-License-Identifier: MIT
// Chapter 6: the all-reduce overlapped with the backward pass.
// One change from chapter 4: the towers no longer meet once, after the whole backward pass.
// The backward pass records an event as each layer's gradients become final (softmax_linear
// first, conv1 last); the gradients are cut into buckets of whole layers, and each
// bucket's all-reduce starts on a second stream of the tower's device, the communication
// stream, as soon as its event fires, while the backward pass goes on with earlier layers.
// The optimizer waits for every bucket. --overlap off is chapter 4's step, in this program.
// With simulated devices copies cost almost nothing; --link-gbps gives them a link to wait on.
#include <algorithm>

#include "harness/lesson_flags.hpp"
#include "harness/overlap_trace.hpp"
#include "harness/parameter_check.hpp"
#include "harness/pipeline_trace.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/tower_flags.hpp"
#include "harness/tower_training.hpp"
#include "model/gradient_layers.hpp"
#include "overlap_keys.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/allreduce_choice.hpp"
#include "parallel/buckets.hpp"
#include "parallel/tower_variables.hpp"
#include "parallel/tower_loss_batch.hpp"
#include "runtime/rendezvous.hpp"

using namespace towers;
using namespace towers::model;

int main(int argc, char** argv) {
  AllReduceTowerFlags flags{"Chapter 6: chapter 4's step with the gradients all-reduced in buckets "
                            "on a communication stream, each as soon as the backward pass has "
                            "finished it."};
  OverlapFlags overlap_flags;
  add_overlap_flags(flags.app, overlap_flags);

  return run_program(flags.app, argc, argv, [&] {
    TowerTraining training(flags, TowerInput::kOwnIterators);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();
    TowerInputs inputs(training, flags.input);
    const std::vector<Bucket> buckets = make_buckets(overlap_flags.bucket_mb);
    std::size_t largest_bucket = 0;
    for (const Bucket& bucket : buckets) largest_bucket = std::max(largest_bucket, bucket.count);
    auto allreduce = make_tower_allreduce(training.runtime(), towers, flags.allreduce,
                                          overlap_flags.overlap ? largest_bucket : kNumParameters);
    // As chapter 4, every tower owns its variables. New: a communication stream per tower,
    // an event per layer that the backward pass records, and one for "all buckets done".
    TowerVariables vars(towers);
    training.start(vars, &inputs);  // from --seed, or where a checkpoint stood
    std::vector<Stream*> comm_streams;
    std::vector<std::unique_ptr<Stream>> comm_owned;
    std::vector<std::vector<std::unique_ptr<Event>>> layer_ready_owned;
    std::vector<std::vector<Event*>> layer_ready;  // [tower][layer], backward order
    std::vector<std::unique_ptr<Event>> reduced;   // [tower]: every bucket averaged
    for (auto& tower : towers) {
      comm_owned.push_back(tower->device->create_stream());
      comm_owned.back()->set_tower(tower->index);
      comm_streams.push_back(comm_owned.back().get());
      layer_ready_owned.emplace_back();
      layer_ready.emplace_back();
      for (std::size_t k = 0; k < gradient_layers().size(); ++k) {
        layer_ready_owned.back().push_back(tower->device->create_wait_event());
        layer_ready.back().push_back(layer_ready_owned.back().back().get());
      }
      reduced.push_back(tower->device->create_wait_event());
    }
    ParameterCheck check(towers, kNumParameters, flags.check, flags.steps);
    PipelineTrace pipeline;
    OverlapTrace overlap;
    training.watch_trace([&](const std::vector<TraceEvent>& events) {
      pipeline.collect(events);
      overlap.collect(events);
    });
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);
    // --probe with overlap on: a rendezvous of tower 0's compute stream, right after the
    // layer that completes the first bucket (the backward pass not yet done), and its
    // communication stream at the start of that bucket. It meets only if both run at once.
    // The compute side must not stop earlier: the bucket waits for its last layer, which a
    // compute stream held in the probe never reaches (a 2 s timeout, every time, with a
    // bucket of several layers). With one bucket nothing of the backward pass is left to
    // overlap, so there is no probe.
    std::unique_ptr<Rendezvous> comm_probe;
    const int probe_step = flags.steps > 1 ? 1 : 0;
    const int probe_layer = buckets.front().last_layer;
    if (flags.probe && overlap_flags.overlap && buckets.size() > 1) {
      comm_probe = std::make_unique<Rendezvous>(training.runtime(), 2);
    }
    // Tower 0's backward pass in the probe's step: the lesson's one below, held in the
    // rendezvous after probe_layer until the communication stream reaches the first bucket.
    auto probed_tower_loss = [&](Tower& tower, const data::Batch& batch) {
      tower_loss(tower, vars.params[0], batch, [&](int layer) {
        tower.stream->record(*layer_ready[0][layer]);
        if (layer == probe_layer) comm_probe->enqueue(*tower.stream);  // the rest waits here
      });
    };

    for (int run_step = 0; run_step < flags.steps && !training.stop_requested(); ++run_step) {
      StepScope step = training.step(run_step);
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      for (int i = 0; i < num_gpus; ++i) {
        Tower& tower = *towers[i];
        const data::Batch batch = inputs[i].next();
        step.probe(tower);
        tower.stream->wait(*batch.ready);
        if (comm_probe && i == 0 && run_step == probe_step) {
          probed_tower_loss(tower, batch);  // --probe: as below, plus the rendezvous
        } else {
          // docs-begin: layer-events
          tower_loss(tower, vars.params[i], batch, [&](int layer) {
            tower.stream->record(*layer_ready[i][layer]);  // this layer's gradients are final
          });
          // docs-end: layer-events
        }
        inputs[i].release(batch, *tower.stream);
      }
      if (comm_probe && run_step == probe_step) {  // --probe: where the first bucket starts
        comm_streams[0]->wait(*layer_ready[0][buckets.front().last_layer]);
        comm_probe->enqueue(*comm_streams[0]);
      }
      if (overlap_flags.overlap) {
        // docs-begin: bucket-allreduce
        for (const Bucket& bucket : buckets) {  // in the order the backward pass ends them
          for (int i = 0; i < num_gpus; ++i) {
            comm_streams[i]->wait(*layer_ready[i][bucket.last_layer]);  // not the whole pass
          }
          allreduce->average(bucket_of(vars.grads, bucket), bucket.count, comm_streams);
        }
        for (int i = 0; i < num_gpus; ++i) {  // the optimizer reads every bucket's mean
          comm_streams[i]->record(*reduced[i]);
          vars.streams[i]->wait(*reduced[i]);
        }
        // docs-end: bucket-allreduce
      } else {
        // Chapter 4: one all-reduce after the whole backward pass.
        allreduce->average(vars.grads, kNumParameters, vars.streams);
      }
      for (int i = 0; i < num_gpus; ++i) {  // as chapter 4: each tower its own copy
        apply_update(*vars.streams[i], global_step, steps_per_decay, vars.grads[i],
                     vars.params[i], vars.averages[i]);
      }
      step.enqueued();
      training.runtime().synchronize();  // the one wait of the step: read the loss
      step.end(towers.back()->losses.as<float>()[kTotalLoss]);
      check.after_step(run_step, vars.params);
    }
    Summary extra;
    add_overlap_keys(extra, allreduce->name(), pipeline, overlap, overlap_flags.overlap,
                     buckets.size(), check.checks());
    if (comm_probe && training.steps_run() > probe_step) {
      extra.add("comm_rendezvous", std::string(comm_probe->all_met() ? "met" : "timeout"));
    }
    return training.finish("chapter 6: overlap", "allreduce", extra);
  });
}
