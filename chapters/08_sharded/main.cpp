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
// ZeRO-2 also keeps only the shard of the mean gradients: the backward pass runs bucket by
// bucket, each bucket reduce-scattered as soon as every tower has computed it, so a tower
// holds its shard and one bucket of whole gradients (src/parallel/zero_gradients.hpp;
// --bucket-mb as chapter 6's); ZeRO-3 also keeps only the shard of the
// parameters, and gathers each layer just before it runs, in the forward pass and again in
// the backward pass (src/parallel/layer_gather.hpp): no all-gather after the update.
// --zero 0 is chapter 4's step (the all-reduce, every tower updating its whole copy).
// Who holds what at each stage, and the step that keeps it so, is one type the loop below
// calls, as chapter 4's loop calls tower_loss: ShardedVariables (src/parallel).
// Chapter 1's checkpoints and --eval, as in chapter 4: a checkpoint holds the moving
// averages (and with ZeRO-3 the parameters) whole, the towers' shards put together, and
// --resume hands each its shards back. With --optimizer momentum|adam it holds their state
// too (the velocity; the two moments), put together the same way, and --resume refuses a
// checkpoint of another optimizer.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/hash.hpp"
#include "cli/options.hpp"  // finite_number
#include "harness/memory_report.hpp"
#include "harness/overlap_trace.hpp"
#include "harness/parameter_check.hpp"
#include "harness/pipeline_trace.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/tower_flags.hpp"
#include "harness/tower_training.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/buckets.hpp"  // kMaxBucketMb
#include "parallel/sharded_variables.hpp"
#include "trace/span_names.hpp"

using namespace towers;
using namespace towers::model;

namespace {

// 64-bit FNV-1a of `values`, as hex: the summary's averages_hash.
std::string hash_of(const std::vector<float>& values) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(base::fnv1a64(values.data(), values.size() * sizeof(float))));
  return hex;
}

}  // namespace

int main(int argc, char** argv) {
  TowerFlags flags{"Chapter 8: chapter 4's towers, with the optimizer state sharded over them "
                   "(ZeRO-1; with --zero 2 and 3 the gradients and parameters too): "
                   "reduce-scatter, each tower updates its shard, all-gather; the memory ledger of "
                   "every device beside ZeRO's formula."};
  int zero = 1;
  bool gather_prefetch = true;
  double bucket_mb = 0;
  std::string optimizer_flag = "sgd";
  InputFlags input_flags;
  CheckFlags check_flags;
  add_input_flags(flags.app, input_flags);
  add_check_flags(flags.app, check_flags);
  flags.app.add_option("--zero", zero,
                       "ZeRO stage: 0 (chapter 4: all-reduce, every tower holds everything), 1 "
                       "(moving averages sharded: each tower updates only its shard), 2 (gradients "
                       "sharded too) or 3 (parameters sharded too, each layer gathered before use)")
      ->capture_default_str()
      // Checked like every number flag: CLI11 reads an empty value as 0, so `--zero ''`
      // (an unset shell variable) ran ZeRO-0 without a word.
      ->check(whole_number(0, kMaxZeroStage,
                           "(not a ZeRO stage; use 0: no sharding, 1: the optimizer state "
                           "sharded, 2: and the gradients, 3: and the parameters)"));
  flags.app.add_option("--optimizer", optimizer_flag,
                       "sgd (the tutorial's), momentum (+1 float of state per parameter) or adam (+2); "
                       "all keep the moving averages, and --zero 1 to 3 shard all of their state")
      ->capture_default_str();

  flags.app.add_option_function<std::string>(
         "--gather-prefetch", [&](const std::string& text) { gather_prefetch = text == "on"; },
         "--zero 3 only. on: each layer's gather travels on the communication stream while the "
         "layer before it computes; off: it starts only once that layer is done (nothing "
         "hides it), for comparison")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str("on");
  flags.app.add_option("--bucket-mb", bucket_mb,
                       "--zero 2 only: largest gradient bucket in MiB, as chapter 6's (consecutive "
                       "layers join while they fit; 0: one bucket per layer). Each bucket is "
                       "reduce-scattered as the backward pass finishes it, so a tower holds its "
                       "gradient shard plus the largest bucket")
      ->check(finite_number(0, kMaxBucketMb,
                            " MiB (the whole model is 4.1 MiB, so any cap above it is one bucket)"))
      ->default_str("0");

  return run_program(flags.app, argc, argv, [&] {
    if (zero == 3 && check_flags.inject_divergence >= 0) {
      throw UsageError("--inject-divergence perturbs one tower's copy of the parameters; with "
                       "--zero 3 no tower holds a copy (each parameter lives on one tower), so "
                       "there is nothing to diverge. Use --zero 0, 1 or 2 with it.");
    }
    if (zero != 3 && flags.app.count("--gather-prefetch") > 0) {
      throw UsageError("--gather-prefetch chooses how ZeRO-3 gathers each layer; with --zero " +
                       std::to_string(zero) + " no layer is gathered. Use it with --zero 3.");
    }
    if (zero != 2 && flags.app.count("--bucket-mb") > 0) {
      throw UsageError("--bucket-mb sizes the buckets ZeRO-2 reduce-scatters during the backward "
                       "pass; with --zero " + std::to_string(zero) + " the gradients are "
                       "reduced whole after it. Use it with --zero 2.");
    }
    const Optimizer optimizer = parse_optimizer(optimizer_flag);
    // Checkpoints hold this optimizer's state; --resume refuses one of another optimizer.
    flags.checkpoints.optimizer = optimizer;
    // From --zero 2 on no tower keeps a whole gradient buffer: make none (see
    // TowerLayout::whole_gradients; the ledger's peak would count it).
    flags.layout.whole_gradients = zero < 2;
    // Every tower owns its parameters, as in chapter 4; the per-device copy chapters 2-3
    // read is not used here: make none (TowerLayout::replica_params).
    flags.layout.replica_params = false;
    TowerTraining training(flags, TowerInput::kOwnIterators);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();
    TowerInputs inputs(training, input_flags);
    // Every copy between two devices is counted in `wire` (bytes on the wire).
    WireBytes wire;
    // Who holds what, stage by stage, is ShardedVariables' (src/parallel/sharded_variables).
    ShardedVariables sharded(training.runtime(), towers,
                             {.stage = zero, .optimizer = optimizer, .bucket_mb = bucket_mb,
                              .gather_prefetch = gather_prefetch},
                             &wire);
    training.start(sharded, &inputs);  // from --seed, or the shards of a checkpoint
    ParameterCheck check(towers, kNumParameters, check_flags, flags.steps);
    PipelineTrace pipeline;
    // ZeRO-3: how much of the layer gathers' time the same device spent computing too
    // (chapter 6's measure, for the gathers instead of the all-reduce).
    OverlapTrace gathers(span::is_layer_gather);
    training.watch_trace([&](const std::vector<TraceEvent>& events) {
      pipeline.collect(events);
      gathers.collect(events);
    });
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);

    for (int run_step = 0; run_step < flags.steps && !training.stop_requested(); ++run_step) {
      StepScope step = training.step(run_step);
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      // docs-begin: sharded-step
      std::vector<data::Batch> batches;  // read until the backward passes are done
      for (int i = 0; i < num_gpus; ++i) {  // chapter 4's tower loop
        Tower& tower = *towers[i];
        batches.push_back(inputs[i].next());
        step.probe(tower);
        tower.stream->wait(*batches[i].ready);
        sharded.tower_loss(i, batches[i]);  // ZeRO-2: the forward pass; ZeRO-3 gathers layers
      }
      sharded.backward();  // ZeRO-2: the backward passes, each bucket reduce-scattered in them
      for (int i = 0; i < num_gpus; ++i) inputs[i].release(batches[i], *towers[i]->stream);
      // Where the towers meet: the all-reduce's two halves with the update between them.
      sharded.update(global_step, learning_rate(global_step, steps_per_decay),
                     moving_average_decay(global_step));
      // docs-end: sharded-step
      step.enqueued();
      training.runtime().synchronize();
      step.end(towers.back()->losses.as<float>()[kTotalLoss]);
      if (zero < 3) check.after_step(run_step, sharded.params());  // ZeRO-3: no copies
    }
    // Every moving average, put together from the shards: the same bits at every stage.
    TrainingState whole;
    sharded.state_to_host(whole);
    Summary extra;
    extra.add("zero", zero)
        .add("optimizer", optimizer_name(optimizer))
        .add("collectives", sharded.collectives())
        .add("allreduce_ms", pipeline.mean_allreduce_ms(), 3)
        .add("param_checks", check.checks())
        .add("averages_hash", hash_of(whole.moving_averages));
    if (zero == 2) {
      extra.add("gradient_buckets", static_cast<long long>(sharded.gradient_buckets()));
    }
    if (zero == 3) {
      extra.add("gather_prefetch", std::string(gather_prefetch ? "on" : "off"))
          .add("gather_overlap", gathers.overlap_comm(), 3)
          .add("exposed_gather_ms", gathers.exposed_comm_ms(), 3);
    }
    extra.append(report_zero(training.runtime(), static_cast<int>(training.replicas().size()),
                             num_gpus, zero, optimizer_state_bytes(optimizer),
                             sharded.largest_gradient_block(), wire.total(),
                             training.steps_run()));
    return training.finish("chapter 8: sharded (ZeRO-" + std::to_string(zero) + ")",
                           sharded.collectives(), extra);
  });
}
