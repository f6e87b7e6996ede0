// SPDX-License-Identifier: MIT
// ShardedVariables: chapter 8's placement. The towers stop keeping copies of everything
// (ZeRO): at stage k each tower keeps
//
//   stage 0   everything whole, as chapter 4's towers (the all-reduce, then every tower
//             updates its whole copy);
//   stage 1   the moving averages and --optimizer's own state of its shard only
//             (ShardedCollectives::shard: 1/N of them); the update runs between the ring's
//             two halves, reduce-scatter and all-gather, each tower updating its shard;
//   stage 2   and the gradients of its shard only: the backward pass runs bucket by bucket
//             (chapter 6's buckets), each bucket reduce-scattered as soon as every tower
//             has computed it (BucketedGradients), so a tower holds its shard plus one
//             bucket whole;
//   stage 3   and the parameters of its shard only: each layer is gathered from the
//             towers just before it runs, in the forward pass and again in the backward
//             pass (LayerGather), and no all-gather follows the update.
//
// Same math at every stage, the same adds in the same order (the ring on every backend),
// so every stage ends with stage 0's bits, and the same bytes on the wire but stage 3's
// extra gathers. The two verbs put the shards together on the host (the checkpoint holds
// the state whole, chapter 1's) and hand each tower its shard back.
// Used from one host thread. Introduced in chapter 8.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/iterator.hpp"
#include "model/optimizer_kind.hpp"
#include "model/optimizer_state.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/layer_gather.hpp"
#include "parallel/placement.hpp"
#include "parallel/tower.hpp"
#include "parallel/wire_bytes.hpp"
#include "parallel/zero_gradients.hpp"
#include "parallel/zero_memory.hpp"  // kMaxZeroStage

namespace towers {

/// How chapter 8 shards the training state over its towers.
struct ZeroOptions {
  int stage = 1;                                   ///< --zero 0..3
  model::Optimizer optimizer = model::Optimizer::kSgd;  ///< --optimizer
  double bucket_mb = 0;                            ///< --bucket-mb (stage 2)
  bool gather_prefetch = true;                     ///< --gather-prefetch (stage 3)
};

/// Each tower's shard of the training state at a ZeRO stage, and the step that keeps it.
/// Introduced in chapter 8.
class ShardedVariables : public Placement {
 public:
  /// Allocates each tower's part of the variables on its device for `options.stage`
  /// (memory categories as the ledger counts them) and the collectives that stage uses,
  /// ring on every backend, counting every copy between two devices in `wire`. The towers
  /// must have been made without whole gradients from stage 2 on
  /// (TowerLayout::whole_gradients) and without parameter copies (replica_params).
  /// load_from_host() fills the variables.
  ShardedVariables(Runtime& runtime, std::vector<std::unique_ptr<Tower>>& towers,
                   const ZeroOptions& options, WireBytes* wire);
  /// Makes stage 3's layer gathers once the towers' parameter shards exist: shards[i] on
  /// tower i's device holds the range owned[i] of the flat parameters.
  using LayerSourceMaker = std::function<std::unique_ptr<LayerSource>(
      std::vector<const float*> shards, std::vector<Chunk> owned)>;

  /// The same placement with collectives made elsewhere (chapter 11: one tower per
  /// process, the collectives over MPI, counting their own bytes): `allreduce` for stage 0,
  /// `halves` for stages 1 to 3, `gathers` for stage 3; what the stage does not use may be
  /// null. Throws std::invalid_argument when the stage's collective is missing.
  ShardedVariables(std::vector<std::unique_ptr<Tower>>& towers, const ZeroOptions& options,
                   std::unique_ptr<AllReduce> allreduce, std::unique_ptr<ShardedCollectives> halves,
                   LayerSourceMaker gathers = nullptr);
  ~ShardedVariables() override;

  /// Enqueues tower `i`'s share of the step on its stream, after the caller has ordered
  /// the stream after `batch`: the forward and backward pass (stage 3: each layer gathered
  /// just before use); stage 2: the forward pass only, backward() runs the rest.
  void tower_loss(int i, const data::Batch& batch);
  /// Stage 2: every tower's backward pass, bucket by bucket, each bucket reduce-scattered
  /// into the towers' gradient shards as soon as it is computed. Nothing at other stages.
  void backward();
  /// Where the towers meet, and the update: stage 0, chapter 4's all-reduce and every
  /// tower's whole update; stages 1-3, the update of each tower's shard between the ring's
  /// two halves (stage 2: the gradients are reduced already; stage 3: no all-gather).
  void update(std::int64_t global_step, float learning_rate, float decay);
  /// After the step's synchronize: what the step held for a moment is done with.
  void end_step();

  /// The stage: 0 to kMaxZeroStage.
  int stage() const { return options_.stage; }
  /// The collectives the stage meets in, for the summary: allreduce,
  /// reduce_scatter+all_gather, or reduce_scatter+layer_gathers.
  std::string collectives() const;
  /// [tower] where each tower's parameters are: whole up to stage 2 (what chapter 4's
  /// parameter check compares), its shard at stage 3.
  const std::vector<float*>& params() const { return params_; }
  /// Stage 2: the buckets' count; else 0.
  std::size_t gradient_buckets() const;
  /// The gradients a tower holds whole at once: the largest bucket (stage 2), else all.
  std::size_t largest_gradient_block() const;

  /// [tower] the range of the moving averages and --optimizer's state it keeps (the whole
  /// buffer with --zero 0, its shard from --zero 1 on).
  Chunk held(int tower) const { return held_[static_cast<std::size_t>(tower)]; }
  /// [tower] the range of the parameters it keeps (its shard with --zero 3, else all).
  Chunk params_held(int tower) const { return params_held_[static_cast<std::size_t>(tower)]; }
  /// The ranges these towers keep, each copied into its place of `state`'s whole arrays
  /// (params, moving_averages: kNumParameters floats; optimizer_state: each part's
  /// kNumParameters one after another), resized to fit; what no tower here keeps is left
  /// as it was. For towers that are some of the holders (chapter 11: one tower per
  /// process), whose ranges are then put together over MPI; state_to_host() is the whole.
  /// Waits for the copies.
  void held_to_host(model::TrainingState& state);

  std::string where() const override;
  void state_to_host(model::TrainingState& state) override;
  void params_to_host(float* params) override;
  void load_from_host(const model::TrainingState& state) override;

 private:
  std::vector<std::unique_ptr<Tower>>& towers_;
  ZeroOptions options_;
  std::unique_ptr<AllReduce> allreduce_;         // stage 0
  std::unique_ptr<ShardedCollectives> halves_;   // stages 1-3
  std::vector<float*> params_, averages_, grad_shard_;
  std::vector<Stream*> streams_;
  std::vector<Chunk> held_;          // [tower] the range of the sharded state it keeps
  std::vector<Chunk> params_held_;   // [tower] the range of the parameters it keeps
  std::vector<Buffer> owned_;
  std::vector<model::OptimizerState> optimizers_;  // --optimizer's own state, same range
  std::unique_ptr<TransientGradients> whole_grads_;
  std::unique_ptr<BucketedGradients> bucketed_;
  std::unique_ptr<LayerSource> gather_;
  std::vector<float*> grads_;  // this step's whole gradient buffers (begin of the step)
};

}  // namespace towers
