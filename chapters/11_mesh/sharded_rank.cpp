// SPDX-License-Identifier: MIT
// Chapter 8's rank in a process of its own (chapter 11's composed run, tp = pp = 1, with
// --zero 1 or 2, or an optimizer that keeps state: --optimizer momentum|adam).
//
// Chapter 8 sharded the training state over towers that shared a process: ShardedVariables
// decided who holds what at each ZeRO stage and ran the step that keeps it so, its ring's
// two halves copying between the towers' devices. Here each data rank is a process with
// one tower, and ShardedVariables is the same placement for that one tower: its shard of
// the moving averages and of --optimizer's state (ZeRO-1), and of the mean gradients,
// each bucket reduce-scattered as the backward pass finishes it (ZeRO-2). Only its
// collectives changed: chapter 5's ring over the data communicator (MeshRing, the
// all-reduce, at ZeRO-0) or its two halves (MeshShards, reduce-scatter and all-gather, at
// ZeRO-1 and -2), rank r owning the shard chapter 8's tower r owns. The same adds in the
// same order: the bits are 08_sharded's with as many towers (chapter11_run_test).
// ZeRO-3 gathers every layer from the other towers' shards as it runs (LayerGather) and
// has no run over MPI yet.
#include <memory>

#include "harness/tower_inputs.hpp"
#include "mesh_rank.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/mesh_ring.hpp"
#include "parallel/mesh_shards.hpp"
#include "parallel/sharded_variables.hpp"

namespace towers {
namespace {

class ShardedRank final : public MeshRank {
 public:
  ShardedRank(const MeshRanks& mesh, Watchdog& watchdog, TowerSet& set, const data::Dataset& train,
              const MeshConfig& c, const model::TrainingState& state, std::uint64_t seed)
      : tower_(*set.towers[0]),
        // The replica's shard of every step, as chapter 5's rank (tower index = data rank).
        inputs_(train, set.towers, InputFlags{}, seed, c.dp),
        vars_(set.towers, {.stage = c.zero, .optimizer = c.optimizer, .bucket_mb = c.bucket_mb},
              make_ring(mesh, watchdog, c), make_halves(mesh, watchdog, c)),
        steps_per_decay_(model::decay_steps(c.batch, c.dp)) {
    vars_.load_from_host(state);  // its range of them; the optimizer's own state starts at 0
  }

  void enqueue(int step, std::int64_t global_step) override {
    // Chapter 8's step for one tower: its batch, the passes (ZeRO-2: the backward pass
    // bucket by bucket, each bucket reduce-scattered over the data ring), the update.
    const data::Batch batch = inputs_[0].next();
    tower_.stream->wait(*batch.ready);
    if (ring_ != nullptr) ring_->set_step(step);
    if (halves_ != nullptr) halves_->set_step(step);
    vars_.tower_loss(0, batch);
    vars_.backward();
    inputs_[0].release(batch, *tower_.stream);
    vars_.update(global_step, model::learning_rate(global_step, steps_per_decay_),
                 model::moving_average_decay(global_step));
  }

  float loss() override { return tower_.losses.as<float>()[model::kTotalLoss]; }

  void put_together(std::vector<float>& whole) override {
    // Below ZeRO-3 every rank holds the parameters whole after the all-gather: rank 0's.
    whole.resize(model::kNumParameters);
    vars_.params_to_host(whole.data());
  }

  std::uint64_t bytes_sent(int dimension) const override {
    if (dimension != 0) return 0;
    return (ring_ != nullptr ? ring_->bytes_sent() : 0) +
           (halves_ != nullptr ? halves_->bytes_sent() : 0);
  }
  Stream& stream() override { return *tower_.stream; }

 private:
  // The collective the stage meets in, over the data communicator; the other is null.
  // ShardedVariables owns it, this rank keeps a view to name the step and read the bytes.
  std::unique_ptr<AllReduce> make_ring(const MeshRanks& mesh, Watchdog& watchdog, const MeshConfig& c) {
    if (c.zero != 0) return nullptr;
    auto ring = std::make_unique<MeshRing>(*tower_.device, mesh.data(), model::kNumParameters,
                                           Reduction::kMean, watchdog, "data ring");
    ring_ = ring.get();
    return ring;
  }
  std::unique_ptr<ShardedCollectives> make_halves(const MeshRanks& mesh, Watchdog& watchdog,
                                                  const MeshConfig& c) {
    if (c.zero == 0) return nullptr;
    auto halves = std::make_unique<MeshShards>(*tower_.device, mesh.data(), model::kNumParameters,
                                               watchdog, "data ring");
    halves_ = halves.get();
    return halves;
  }

  Tower& tower_;
  MeshRing* ring_ = nullptr;      // owned by vars_ (ZeRO-0)
  MeshShards* halves_ = nullptr;  // owned by vars_ (ZeRO-1, -2)
  TowerInputs inputs_;
  ShardedVariables vars_;
  std::int64_t steps_per_decay_;
};

}  // namespace

std::unique_ptr<MeshRank> make_sharded_rank(const MeshRanks& mesh, Watchdog& watchdog, TowerSet& set,
                                            const data::Dataset& train, const MeshConfig& config,
                                            const model::TrainingState& state, std::uint64_t seed) {
  return std::make_unique<ShardedRank>(mesh, watchdog, set, train, config, state, seed);
}

}  // namespace towers
