// SPDX-License-Identifier: MIT
#include "parallel/sharded_variables.hpp"

#include <stdexcept>

#include "model/ops.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/shard_reader.hpp"
#include "parallel/tower_loss_batch.hpp"

namespace towers {

namespace {
constexpr std::size_t kAll = model::kNumParameters;

std::vector<int> devices_of(const std::vector<std::unique_ptr<Tower>>& towers) {
  std::vector<int> device_of_tower;
  for (const auto& tower : towers) device_of_tower.push_back(tower->device->index());
  return device_of_tower;
}
}  // namespace

// The ring on every backend, for every stage: --zero 0 and the others then add the same
// numbers in the same order, and end with the same bits. Only the collective the stage
// uses is made, so the ledger's communication line is its own.
ShardedVariables::ShardedVariables(Runtime& runtime, std::vector<std::unique_ptr<Tower>>& towers,
                                   const ZeroOptions& options, WireBytes* wire)
    : ShardedVariables(
          towers, options,
          options.stage == 0 ? make_ring_allreduce(runtime, devices_of(towers), kAll, wire) : nullptr,
          options.stage >= 1 ? make_ring_collectives(runtime, devices_of(towers), kAll, wire) : nullptr,
          [&towers, wire, prefetch = options.gather_prefetch](std::vector<const float*> shards,
                                                              std::vector<Chunk> owned) {
            return std::make_unique<LayerGather>(towers, std::move(shards), std::move(owned),
                                                 wire, prefetch);
          }) {}

ShardedVariables::ShardedVariables(std::vector<std::unique_ptr<Tower>>& towers,
                                   const ZeroOptions& options, std::unique_ptr<AllReduce> allreduce,
                                   std::unique_ptr<ShardedCollectives> halves,
                                   LayerSourceMaker gathers)
    : towers_(towers), options_(options), allreduce_(std::move(allreduce)), halves_(std::move(halves)) {
  const int zero = options.stage;
  const int num_gpus = static_cast<int>(towers.size());
  if ((zero == 0 && !allreduce_) || (zero >= 1 && !halves_) || (zero == 3 && !gathers)) {
    throw std::invalid_argument("ShardedVariables: no collective for ZeRO-" + std::to_string(zero));
  }

  // docs-begin: sharded-state
  // Who holds what. Moving averages: whole with --zero 0; from --zero 1 on only the
  // shard the tower owns after the reduce-scatter (halves_->shard), 1/N of them.
  // --optimizer's own state (momentum's velocity, Adam's moments) covers the same range.
  // Gradients: whole with --zero 0 and 1; from --zero 2 on the tower keeps the shard
  // (grad_shard_): with --zero 2 it holds one bucket whole at a time (BucketedGradients),
  // with --zero 3 the whole buffer during the step (TransientGradients; both buffers are
  // made at the first step and reused, not freed each step). Parameters:
  // whole up to --zero 2; with --zero 3 the shard only, each layer gathered when used.
  whole_grads_ = std::make_unique<TransientGradients>(towers, zero == 3);
  if (zero == 2) bucketed_ = std::make_unique<BucketedGradients>(towers, *halves_, options.bucket_mb);
  optimizers_.reserve(num_gpus);
  for (int i = 0; i < num_gpus; ++i) {
    Tower& tower = *towers[i];
    held_.push_back(zero == 0 ? Chunk{0, kAll} : halves_->shard(kAll, i));
    params_held_.push_back(zero == 3 ? held_[i] : Chunk{0, kAll});
    owned_.push_back(tower.device->allocate(params_held_[i].size * sizeof(float),
                                            MemoryCategory::kParameters));
    params_.push_back(owned_.back().as<float>());
    owned_.push_back(tower.device->allocate(held_[i].size * sizeof(float),
                                            MemoryCategory::kOptimizerState));
    averages_.push_back(owned_.back().as<float>());
    if (zero >= 2) {
      owned_.push_back(tower.device->allocate(held_[i].size * sizeof(float),
                                              MemoryCategory::kGradients));
      grad_shard_.push_back(owned_.back().as<float>());
    }
    optimizers_.emplace_back(options.optimizer, *tower.device, *tower.stream, held_[i].size);
    streams_.push_back(tower.stream.get());
  }
  if (zero == 3) gather_ = gathers(std::vector<const float*>(params_.begin(), params_.end()), held_);
  // docs-end: sharded-state
}

ShardedVariables::~ShardedVariables() = default;

void ShardedVariables::tower_loss(int i, const data::Batch& batch) {
  if (i == 0) grads_ = whole_grads_->begin_step();  // none with --zero 2
  Tower& tower = *towers_[i];
  switch (options_.stage) {
    case 2: tower_forward(tower, params_[i], batch); break;  // backward(): by bucket
    case 3: towers::tower_loss(tower, gather_->hooks(i), batch); break;
    default: towers::tower_loss(tower, params_[i], batch); break;
  }
}

void ShardedVariables::backward() {
  if (options_.stage != 2) return;
  // Every tower's backward pass, each bucket reduce-scattered in it.
  bucketed_->backward(std::vector<const float*>(params_.begin(), params_.end()), grad_shard_,
                      streams_);
}

void ShardedVariables::update(std::int64_t global_step, float lr, float decay) {
  const int zero = options_.stage;
  const std::vector<float*>& grads = grads_;
  std::vector<float*>& params = params_;
  std::vector<Stream*>& streams = streams_;
  const int num_gpus = static_cast<int>(towers_.size());
  // docs-begin: sharded-update
  if (zero == 0) {  // chapter 4: all-reduce, every tower updates its whole copy
    allreduce_->average(grads, kAll, streams);
    for (int i = 0; i < num_gpus; ++i) {
      optimizers_[i].apply(*streams[i], global_step, lr, grads[i], params[i]);
      model::update_moving_averages(*streams[i], decay, params[i], averages_[i]);
    }
  } else {  // ZeRO-1/2/3: the update between the all-reduce's two halves
    // Tower i: the mean of its shard only (--zero 2: already, bucket by bucket).
    if (zero != 2) halves_->reduce_scatter(grads, kAll, streams);
    for (int i = 0; i < num_gpus; ++i) {
      const Chunk mine = halves_->shard(kAll, i);
      const int n = static_cast<int>(mine.size);
      if (zero == 3) {  // keep the shard; the whole buffer is the next step's again
        streams[i]->copy(grad_shard_[i], grads[i] + mine.offset, mine.size * sizeof(float),
                         "keep gradient shard");
      }
      float* g = zero >= 2 ? grad_shard_[i] : grads[i] + mine.offset;
      float* p = zero == 3 ? params[i] : params[i] + mine.offset;
      optimizers_[i].apply(*streams[i], global_step, lr, g, p);
      ops::ema_update(*streams[i], n, decay, p, averages_[i]);
    }
    // Every tower gets every updated shard; ZeRO-3 gathers each layer when it runs.
    if (zero < 3) halves_->all_gather(params, kAll, streams);
  }
  // docs-end: sharded-update
}

void ShardedVariables::end_step() {}

std::string ShardedVariables::collectives() const {
  return options_.stage == 0  ? "allreduce"
         : options_.stage < 3 ? "reduce_scatter+all_gather"
                              : "reduce_scatter+layer_gathers";
}

std::size_t ShardedVariables::gradient_buckets() const {
  return bucketed_ ? bucketed_->buckets().size() : 0;
}

std::size_t ShardedVariables::largest_gradient_block() const {
  return bucketed_ ? bucketed_->largest_bucket() : kAll;
}

std::string ShardedVariables::where() const {
  return options_.stage == 0 ? "a copy per tower (ZeRO-0)"
                             : "a shard per tower (ZeRO-" + std::to_string(options_.stage) + ")";
}

void ShardedVariables::state_to_host(model::TrainingState& state) {
  state.params.resize(kAll);
  state.moving_averages.resize(kAll);
  // With --zero 3 each tower's parameter shard, put together; below, tower 0's copy.
  read_shards(state.params.data(), kAll, params_, params_held_, streams_);
  read_shards(state.moving_averages.data(), kAll, averages_, held_, streams_);
  // And the velocity or moments: sharded like the averages.
  state.optimizer_state.resize(
      static_cast<std::size_t>(model::optimizer_own_floats(options_.optimizer)) * kAll);
  read_optimizer_shards(state.optimizer_state.data(), kAll, optimizers_, held_, streams_);
}

void ShardedVariables::held_to_host(model::TrainingState& state) {
  const int parts = model::optimizer_own_floats(options_.optimizer);
  state.params.resize(kAll);
  state.moving_averages.resize(kAll);
  state.optimizer_state.resize(static_cast<std::size_t>(parts) * kAll);
  for (std::size_t i = 0; i < towers_.size(); ++i) {
    Stream& stream = *streams_[i];
    const Chunk state_range = held_[i], param_range = params_held_[i];
    stream.copy(state.params.data() + param_range.offset, params_[i],
                param_range.size * sizeof(float), "copy params to host");
    stream.copy(state.moving_averages.data() + state_range.offset, averages_[i],
                state_range.size * sizeof(float), "copy averages to host");
    for (int p = 0; p < parts; ++p) {
      stream.copy(state.optimizer_state.data() + static_cast<std::size_t>(p) * kAll + state_range.offset,
                  optimizers_[i].part(p), state_range.size * sizeof(float),
                  "copy optimizer state to host");
    }
    stream.synchronize();
  }
}

void ShardedVariables::params_to_host(float* host) {
  read_shards(host, kAll, params_, params_held_, streams_);
}

void ShardedVariables::load_from_host(const model::TrainingState& state) {
  for (std::size_t i = 0; i < towers_.size(); ++i) {
    Stream& stream = *streams_[i];
    // This tower's range of them (all of the parameters below --zero 3).
    stream.copy(params_[i], state.params.data() + params_held_[i].offset,
                params_held_[i].size * sizeof(float), "copy params");
    stream.copy(averages_[i], state.moving_averages.data() + held_[i].offset,
                held_[i].size * sizeof(float), "copy averages");
    if (!state.optimizer_state.empty()) {  // else zeroes, as made
      optimizers_[i].restore(stream, state.optimizer_state.data(), kAll, held_[i].offset);
    }
  }
  for (Stream* stream : streams_) stream->synchronize();
}

}  // namespace towers
