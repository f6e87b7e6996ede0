// SPDX-License-Identifier: MIT
// Chapter 8: the towers stop keeping copies of everything (ZeRO).
// One change from chapter 4: --zero. After chapter 4 every tower holds the parameters,
// the gradients and the moving averages whole. The ring all-reduce is a reduce-scatter
// (tower r ends with the mean of one shard) followed by an all-gather (every shard goes
// to every tower). ZeRO-1 puts the update between the two halves: each tower updates only
// the shard it owns, and keeps the moving averages of that shard only; then the all-gather
// sends the updated parameters around instead of the mean gradients. Same math, same
// bytes on the wire, 1/N of the optimizer state per device. Every device's memory ledger
// is printed beside ZeRO's closed form (src/parallel/zero_memory.hpp).
// --zero 0 is chapter 4's step (the all-reduce, every tower updating its whole copy).
// Chapter 1's checkpoints and --eval, as in chapter 4: a checkpoint holds the moving
// averages whole, the towers' shards put together, and --resume hands each its shard back.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/hash.hpp"
#include "harness/memory_report.hpp"
#include "harness/parameter_check.hpp"
#include "harness/pipeline_trace.hpp"
#include "harness/shard_reader.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/tower_training.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/optimizer_state.hpp"
#include "model/parameters.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/tower_loss_batch.hpp"

using namespace towers;
using namespace towers::model;

namespace {

// The moving averages of tower i, whole (ZeRO-0) or its shard only (ZeRO-1), gathered into
// one host copy of all kNumParameters: the same bytes whatever the stage, if the math is.
std::string hash_of_averages(const std::vector<float*>& averages, const std::vector<Chunk>& held,
                               const std::vector<Stream*>& streams) {
  std::vector<float> host(kNumParameters);
  read_shards(host.data(), kNumParameters, averages, held, streams);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(base::fnv1a64(host.data(), host.size() * sizeof(float))));
  return hex;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 8: chapter 4's towers, with the optimizer state sharded over them "
               "(ZeRO-1): reduce-scatter, each tower updates its shard, all-gather; the memory "
               "ledger of every device beside ZeRO's formula."};
  TrainingFlags flags;
  bool probe = false;
  int zero = 1;
  std::string optimizer_flag = "sgd";
  InputFlags input_flags;
  CheckFlags check_flags;
  TowerTraining::add_flags(app, flags, probe);
  TowerTraining::add_checkpoint_flags(app, flags);  // chapter 1's: --checkpoint-dir, --eval
  add_input_flags(app, input_flags);
  add_check_flags(app, check_flags);
  app.add_option("--zero", zero,
                 "ZeRO stage: 0 (chapter 4: all-reduce, every tower holds everything) or 1 "
                 "(moving averages sharded: each tower updates only its shard)")
      ->capture_default_str();
  app.add_option("--optimizer", optimizer_flag,
                 "sgd (the tutorial's), momentum (+1 float of state per parameter) or adam (+2); "
                 "all keep the moving averages, and --zero 1 shards all of their state")
      ->capture_default_str();

  return run_program(app, argc, argv, [&] {
    if (zero == 2 || zero == 3) {
      throw UsageError("--zero " + std::to_string(zero) + " is not yet in this chapter: stage 2 "
                       "needs the backward pass to reduce-scatter each layer's gradients into a "
                       "shard as it goes (chapter 6's buckets), stage 3 also gathers each layer's "
                       "parameters before it runs. Use --zero 0 or --zero 1.");
    }
    if (zero != 0 && zero != 1) {
      throw UsageError("--zero " + std::to_string(zero) + " is not a ZeRO stage. Use --zero 0 "
                       "(no sharding) or --zero 1 (optimizer state sharded).");
    }
    const Optimizer optimizer = parse_optimizer(optimizer_flag);
    TowerTraining training(flags, probe, TowerInput::kOwnIterators);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();
    // Every tower owns its parameters, as in chapter 4; the per-device copy chapters 2-3
    // read is not used here, so it goes before the ledger counts a byte of the step.
    for (auto& replica : training.replicas()) replica->params = Buffer();
    TowerInputs inputs(training, input_flags);  // resumes with the training
    constexpr std::size_t kAll = kNumParameters;
    // The ring on every backend, for both stages: --zero 0 and --zero 1 then add the same
    // numbers in the same order, and end with the same bits.
    std::vector<int> device_of_tower;
    for (const auto& tower : towers) device_of_tower.push_back(tower->device->index());
    // Only the collective the stage uses, so the ledger's communication line is its own.
    std::unique_ptr<AllReduce> allreduce;
    std::unique_ptr<ShardedCollectives> halves;
    if (zero == 0) allreduce = make_ring_allreduce(training.runtime(), device_of_tower, kAll);
    if (zero == 1) halves = make_ring_collectives(training.runtime(), device_of_tower, kAll);

    // docs-begin: sharded-state
    // Who holds what. Parameters and gradients: whole, on every tower. Moving averages:
    // whole with --zero 0; with --zero 1 only the shard the tower owns after the
    // reduce-scatter (halves->shard), 1/N of them. --optimizer's own state (momentum's
    // velocity, Adam's moments) covers the same range as the moving averages.
    std::vector<float*> params, grads, averages;
    std::vector<Stream*> streams;
    std::vector<Chunk> held;  // the range of the moving averages tower i keeps
    std::vector<Buffer> owned;
    std::vector<OptimizerState> optimizers;  // --optimizer's own state for the same range
    optimizers.reserve(num_gpus);
    for (int i = 0; i < num_gpus; ++i) {
      Tower& tower = *towers[i];
      held.push_back(zero == 0 ? Chunk{0, kAll} : halves->shard(kAll, i));
      owned.push_back(tower.device->allocate(kAll * sizeof(float), MemoryCategory::kParameters));
      params.push_back(owned.back().as<float>());
      owned.push_back(tower.device->allocate(held[i].size * sizeof(float),
                                             MemoryCategory::kOptimizerState));
      averages.push_back(owned.back().as<float>());
      optimizers.emplace_back(optimizer, *tower.device, *tower.stream, held[i].size);
      grads.push_back(tower.grads.as<float>());
      streams.push_back(tower.stream.get());
      tower.stream->copy(params[i], training.initial_params(), kAll * sizeof(float), "copy params");
      // From --seed, or the resumed checkpoint's averages: this tower's range of them.
      tower.stream->copy(averages[i], training.initial_averages() + held[i].offset,
                         held[i].size * sizeof(float), "copy averages");
    }
    // docs-end: sharded-state
    training.runtime().synchronize();
    training.read_params_with(
        [&](float* out) {
          streams[0]->copy(out, params[0], kAll * sizeof(float));
          streams[0]->synchronize();
        },
        // Checkpoints and --eval need the averages whole: each tower's shard, put together.
        [&](float* out) { read_shards(out, kAll, averages, held, streams); });
    ParameterCheck check(towers, kAll, check_flags, flags.steps);
    PipelineTrace pipeline;
    training.watch_trace([&](const std::vector<TraceEvent>& events) { pipeline.collect(events); });
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);

    for (int run_step = 0; run_step < flags.steps && !training.stop_requested(); ++run_step) {
      StepScope step = training.step(run_step);
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      for (int i = 0; i < num_gpus; ++i) {  // chapter 4's tower loop, unchanged
        Tower& tower = *towers[i];
        const data::Batch batch = inputs[i].next();
        step.probe(tower);
        tower.stream->wait(*batch.ready);
        tower_loss(tower, params[i], batch);
        inputs[i].release(batch, *tower.stream);
      }
      const float lr = learning_rate(global_step, steps_per_decay);
      const float decay = moving_average_decay(global_step);
      // docs-begin: sharded-update
      if (zero == 0) {  // chapter 4: all-reduce, every tower updates its whole copy
        allreduce->average(grads, kAll, streams);
        for (int i = 0; i < num_gpus; ++i) {
          optimizers[i].apply(*streams[i], global_step, lr, grads[i], params[i]);
          update_moving_averages(*streams[i], decay, params[i], averages[i]);
        }
      } else {  // ZeRO-1: the update between the all-reduce's two halves
        halves->reduce_scatter(grads, kAll, streams);  // tower i: the mean of its shard only
        for (int i = 0; i < num_gpus; ++i) {
          const Chunk mine = halves->shard(kAll, i);
          const int n = static_cast<int>(mine.size);
          optimizers[i].apply(*streams[i], global_step, lr, grads[i] + mine.offset,
                              params[i] + mine.offset);
          ops::ema_update(*streams[i], n, decay, params[i] + mine.offset, averages[i]);
        }
        halves->all_gather(params, kAll, streams);  // every tower gets every updated shard
      }
      // docs-end: sharded-update
      step.enqueued();
      training.runtime().synchronize();
      step.end(towers.back()->losses.as<float>()[kTotalLoss]);
      check.after_step(run_step, params);
    }
    Summary extra;
    extra.add("zero", zero)
        .add("optimizer", optimizer_name(optimizer))
        .add("collectives", zero == 0 ? "allreduce" : "reduce_scatter+all_gather")
        .add("allreduce_ms", pipeline.mean_allreduce_ms(), 3)
        .add("param_checks", check.checks())
        .add("averages_hash", hash_of_averages(averages, held, streams))
        .append(report_memory(training.runtime(), static_cast<int>(training.replicas().size()),
                              num_gpus / static_cast<int>(training.replicas().size()), zero,
                              ZeroSizes{static_cast<double>(kAll), num_gpus, 4, 4,
                                        optimizer_state_bytes(optimizer)}));
    return training.finish("chapter 8: sharded (ZeRO-" + std::to_string(zero) + ")",
                           zero == 0 ? "allreduce" : "reduce_scatter+all_gather", extra);
  });
}
