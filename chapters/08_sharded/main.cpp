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
#include "harness/shard_reader.hpp"
#include "harness/tower_inputs.hpp"
#include "harness/tower_training.hpp"
#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/optimizer_state.hpp"
#include "model/parameters.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/buckets.hpp"
#include "parallel/layer_gather.hpp"
#include "parallel/tower_loss_batch.hpp"
#include "parallel/wire_bytes.hpp"
#include "parallel/zero_gradients.hpp"

using namespace towers;
using namespace towers::model;

namespace {

// The moving averages of tower i, whole (ZeRO-0) or its shard only (ZeRO-1..3), gathered
// into one host copy of all kNumParameters: the same bytes whatever the stage, if the math is.
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
               "(ZeRO-1; with --zero 2 and 3 the gradients and parameters too): reduce-scatter, each tower updates its shard, all-gather; the memory "
               "ledger of every device beside ZeRO's formula."};
  TrainingFlags flags;
  bool probe = false;
  int zero = 1;
  bool gather_prefetch = true;
  double bucket_mb = 0;
  std::string optimizer_flag = "sgd";
  InputFlags input_flags;
  CheckFlags check_flags;
  TowerTraining::add_flags(app, flags, probe);
  TowerTraining::add_checkpoint_flags(app, flags);  // chapter 1's: --checkpoint-dir, --eval
  add_input_flags(app, input_flags);
  add_check_flags(app, check_flags);
  app.add_option("--zero", zero,
                 "ZeRO stage: 0 (chapter 4: all-reduce, every tower holds everything), 1 "
                 "(moving averages sharded: each tower updates only its shard), 2 (gradients "
                 "sharded too) or 3 (parameters sharded too, each layer gathered before use)")
      ->capture_default_str()
      // Checked like every number flag: CLI11 reads an empty value as 0, so `--zero ''`
      // (an unset shell variable) ran ZeRO-0 without a word.
      ->check(whole_number(0, kMaxZeroStage,
                           "(not a ZeRO stage; use 0: no sharding, 1: the optimizer state "
                           "sharded, 2: and the gradients, 3: and the parameters)"));
  app.add_option("--optimizer", optimizer_flag,
                 "sgd (the tutorial's), momentum (+1 float of state per parameter) or adam (+2); "
                 "all keep the moving averages, and --zero 1 to 3 shard all of their state")
      ->capture_default_str();

  app.add_option_function<std::string>(
         "--gather-prefetch", [&](const std::string& text) { gather_prefetch = text == "on"; },
         "--zero 3 only. on: each layer's gather travels on the communication stream while the "
         "layer before it computes; off: it starts only once that layer is done (nothing "
         "hides it), for comparison")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str("on");
  app.add_option("--bucket-mb", bucket_mb,
                 "--zero 2 only: largest gradient bucket in MiB, as chapter 6's (consecutive "
                 "layers join while they fit; 0: one bucket per layer). Each bucket is "
                 "reduce-scattered as the backward pass finishes it, so a tower holds its "
                 "gradient shard plus the largest bucket")
      ->check(finite_number(0, kMaxBucketMb,
                            " MiB (the whole model is 4.1 MiB, so any cap above it is one bucket)"))
      ->default_str("0");

  return run_program(app, argc, argv, [&] {
    if (zero == 3 && check_flags.inject_divergence >= 0) {
      throw UsageError("--inject-divergence perturbs one tower's copy of the parameters; with "
                       "--zero 3 no tower holds a copy (each parameter lives on one tower), so "
                       "there is nothing to diverge. Use --zero 0, 1 or 2 with it.");
    }
    if (zero != 3 && app.count("--gather-prefetch") > 0) {
      throw UsageError("--gather-prefetch chooses how ZeRO-3 gathers each layer; with --zero " +
                       std::to_string(zero) + " no layer is gathered. Use it with --zero 3.");
    }
    if (zero != 2 && app.count("--bucket-mb") > 0) {
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
    TowerTraining training(flags, probe, TowerInput::kOwnIterators);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();
    TowerInputs inputs(training, input_flags);  // resumes with the training
    constexpr std::size_t kAll = kNumParameters;
    // The ring on every backend, for both stages: --zero 0 and --zero 1 then add the same
    // numbers in the same order, and end with the same bits.
    std::vector<int> device_of_tower;
    for (const auto& tower : towers) device_of_tower.push_back(tower->device->index());
    // Only the collective the stage uses, so the ledger's communication line is its own.
    // Every copy between two devices is counted in `wire` (bytes on the wire).
    WireBytes wire;
    std::unique_ptr<AllReduce> allreduce;
    std::unique_ptr<ShardedCollectives> halves;
    if (zero == 0) allreduce = make_ring_allreduce(training.runtime(), device_of_tower, kAll, &wire);
    if (zero >= 1) halves = make_ring_collectives(training.runtime(), device_of_tower, kAll, &wire);

    // docs-begin: sharded-state
    // Who holds what. Moving averages: whole with --zero 0; from --zero 1 on only the
    // shard the tower owns after the reduce-scatter (halves->shard), 1/N of them.
    // --optimizer's own state (momentum's velocity, Adam's moments) covers the same range.
    // Gradients: whole with --zero 0 and 1; from --zero 2 on the tower keeps the shard
    // (grad_shard): with --zero 2 it holds one bucket whole at a time (BucketedGradients),
    // with --zero 3 the whole buffer during the step (TransientGradients; both buffers are
    // made at the first step and reused, not freed each step). Parameters:
    // whole up to --zero 2; with --zero 3 the shard only, each layer gathered when used.
    std::vector<float*> params, averages, grad_shard;
    std::vector<Stream*> streams;
    std::vector<Chunk> held;  // the range of the sharded state tower i keeps
    std::vector<Buffer> owned;
    TransientGradients whole_grads(towers, zero == 3);
    std::unique_ptr<BucketedGradients> bucketed;
    if (zero == 2) bucketed = std::make_unique<BucketedGradients>(towers, *halves, bucket_mb);
    std::vector<OptimizerState> optimizers;  // --optimizer's own state for the same range
    optimizers.reserve(num_gpus);
    for (int i = 0; i < num_gpus; ++i) {
      Tower& tower = *towers[i];
      held.push_back(zero == 0 ? Chunk{0, kAll} : halves->shard(kAll, i));
      const Chunk kept = zero == 3 ? held[i] : Chunk{0, kAll};  // of the parameters
      owned.push_back(tower.device->allocate(kept.size * sizeof(float), MemoryCategory::kParameters));
      params.push_back(owned.back().as<float>());
      owned.push_back(tower.device->allocate(held[i].size * sizeof(float),
                                             MemoryCategory::kOptimizerState));
      averages.push_back(owned.back().as<float>());
      if (zero >= 2) {
        owned.push_back(tower.device->allocate(held[i].size * sizeof(float),
                                               MemoryCategory::kGradients));
        grad_shard.push_back(owned.back().as<float>());
      }
      optimizers.emplace_back(optimizer, *tower.device, *tower.stream, held[i].size);
      if (const float* resumed = training.initial_optimizer_state()) {  // else zeroes
        optimizers[i].restore(*tower.stream, resumed, kAll, held[i].offset);
      }
      streams.push_back(tower.stream.get());
      // From --seed, or the resumed checkpoint's: this tower's range of them (all of the
      // parameters below --zero 3).
      tower.stream->copy(params[i], training.initial_params() + kept.offset,
                         kept.size * sizeof(float), "copy params");
      tower.stream->copy(averages[i], training.initial_averages() + held[i].offset,
                         held[i].size * sizeof(float), "copy averages");
    }
    std::unique_ptr<LayerGather> gather;
    if (zero == 3) {
      gather = std::make_unique<LayerGather>(
          towers, std::vector<const float*>(params.begin(), params.end()), held, &wire,
          gather_prefetch);
    }
    // docs-end: sharded-state
    training.runtime().synchronize();
    // Checkpoints, --save-params and --eval need the parameters and the averages whole:
    // with --zero 3 each tower's parameter shard, put together (below, tower 0's copy).
    const std::vector<Chunk> params_held =
        zero == 3 ? held : std::vector<Chunk>(num_gpus, Chunk{0, kAll});
    training.read_params_with(
        [&](float* out) { read_shards(out, kAll, params, params_held, streams); },
        [&](float* out) { read_shards(out, kAll, averages, held, streams); });
    // And the velocity or moments, for checkpoints: sharded like the averages.
    training.read_optimizer_state_with(
        [&](float* out) { read_optimizer_shards(out, kAll, optimizers, held, streams); });
    ParameterCheck check(towers, kAll, check_flags, flags.steps);
    PipelineTrace pipeline;
    // ZeRO-3: how much of the layer gathers' time the same device spent computing too
    // (chapter 6's measure, for the gathers instead of the all-reduce).
    OverlapTrace gathers(span::is_layer_gather);
    training.watch_trace([&](const std::vector<TraceEvent>& events) {
      pipeline.collect(events);
      gathers.collect(events);
    });
    const std::int64_t steps_per_decay = decay_steps(training.batch_size(), num_gpus);
    int steps_run = 0;

    for (int run_step = 0; run_step < flags.steps && !training.stop_requested(); ++run_step) {
      StepScope step = training.step(run_step);
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      const std::vector<float*> grads = whole_grads.begin_step();  // none with --zero 2
      std::vector<data::Batch> batches;  // --zero 2: read until every bucket is computed
      for (int i = 0; i < num_gpus; ++i) {  // chapter 4's tower loop; ZeRO-3 gathers layers
        Tower& tower = *towers[i];
        const data::Batch batch = inputs[i].next();
        step.probe(tower);
        tower.stream->wait(*batch.ready);
        if (zero == 3) {
          tower_loss(tower, gather->hooks(i), batch);
        } else if (zero == 2) {
          tower_forward(tower, params[i], batch);  // the backward pass follows, by bucket
          batches.push_back(batch);
          continue;
        } else {
          tower_loss(tower, params[i], batch);
        }
        inputs[i].release(batch, *tower.stream);
      }
      if (zero == 2) {  // every tower's backward pass, each bucket reduce-scattered in it
        bucketed->backward(std::vector<const float*>(params.begin(), params.end()), grad_shard,
                           streams);
        for (int i = 0; i < num_gpus; ++i) inputs[i].release(batches[i], *streams[i]);
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
      } else {  // ZeRO-1/2/3: the update between the all-reduce's two halves
        // Tower i: the mean of its shard only (--zero 2: already, bucket by bucket).
        if (zero != 2) halves->reduce_scatter(grads, kAll, streams);
        for (int i = 0; i < num_gpus; ++i) {
          const Chunk mine = halves->shard(kAll, i);
          const int n = static_cast<int>(mine.size);
          if (zero == 3) {  // keep the shard; the whole buffer goes at the step's end
            streams[i]->copy(grad_shard[i], grads[i] + mine.offset, mine.size * sizeof(float),
                             "keep gradient shard");
          }
          float* g = zero >= 2 ? grad_shard[i] : grads[i] + mine.offset;
          float* p = zero == 3 ? params[i] : params[i] + mine.offset;
          optimizers[i].apply(*streams[i], global_step, lr, g, p);
          ops::ema_update(*streams[i], n, decay, p, averages[i]);
        }
        // Every tower gets every updated shard; ZeRO-3 gathers each layer when it runs.
        if (zero < 3) halves->all_gather(params, kAll, streams);
      }
      // docs-end: sharded-update
      step.enqueued();
      training.runtime().synchronize();
      step.end(towers.back()->losses.as<float>()[kTotalLoss]);
      if (zero < 3) check.after_step(run_step, params);  // ZeRO-3: no copies to compare
      ++steps_run;
    }
    const std::string collectives = zero == 0   ? "allreduce"
                                    : zero < 3  ? "reduce_scatter+all_gather"
                                                : "reduce_scatter+layer_gathers";
    Summary extra;
    extra.add("zero", zero)
        .add("optimizer", optimizer_name(optimizer))
        .add("collectives", collectives)
        .add("allreduce_ms", pipeline.mean_allreduce_ms(), 3)
        .add("param_checks", check.checks())
        .add("averages_hash", hash_of_averages(averages, held, streams));
    if (zero == 2) {
      extra.add("gradient_buckets", static_cast<long long>(bucketed->buckets().size()));
    }
    if (zero == 3) {
      extra.add("gather_prefetch", std::string(gather_prefetch ? "on" : "off"))
          .add("gather_overlap", gathers.overlap_comm(), 3)
          .add("exposed_gather_ms", gathers.exposed_comm_ms(), 3);
    }
    extra.append(report_zero(training.runtime(), static_cast<int>(training.replicas().size()),
                             num_gpus, zero, optimizer_state_bytes(optimizer),
                             bucketed ? bucketed->largest_bucket() : kAll, wire.total(),
                             steps_run));
    return training.finish("chapter 8: sharded (ZeRO-" + std::to_string(zero) + ")", collectives,
                           extra);
  });
}
