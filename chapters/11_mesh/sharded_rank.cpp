// SPDX-License-Identifier: MIT
// Chapter 8's rank in a process of its own (chapter 11's composed run, tp = pp = 1, with
// --zero 1 to 3, or an optimizer that keeps state: --optimizer momentum|adam).
//
// Chapter 8 sharded the training state over towers that shared a process: ShardedVariables
// decided who holds what at each ZeRO stage and ran the step that keeps it so, its ring's
// two halves copying between the towers' devices. Here each data rank is a process with
// one tower, and ShardedVariables is the same placement for that one tower: its shard of
// the moving averages and of --optimizer's state (ZeRO-1), and of the mean gradients,
// each bucket reduce-scattered as the backward pass finishes it (ZeRO-2), and of the
// parameters, each layer gathered just before it runs (ZeRO-3). Only its collectives
// changed: chapter 5's ring over the data communicator (MeshRing, the all-reduce, at
// ZeRO-0) or its two halves (MeshShards, reduce-scatter and all-gather, from ZeRO-1 on),
// rank r owning the shard chapter 8's tower r owns, and at ZeRO-3 the ring's all-gather of
// one layer at a time (MeshLayerGather) where chapter 8's towers pulled the pieces from
// each other. The same adds in the same order: the bits are 08_sharded's with as many
// towers (chapter11_run_test). A checkpoint is chapter 8's too: the shards of the moving
// averages and of --optimizer's state (ZeRO-3: and of the parameters) put together on
// world rank 0, each rank taking its shard back when a resumed run makes it.
#include <memory>

#include <mpi.h>

#include "harness/tower_inputs.hpp"
#include "mesh_rank.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "parallel/mesh_ring.hpp"
#include "parallel/mesh_shards.hpp"
#include "parallel/sharded_variables.hpp"
#include "state_gather.hpp"

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
              make_ring(mesh, watchdog, c), make_halves(mesh, watchdog, c),
              make_gathers(mesh, watchdog)),
        data_(mesh.data()),
        optimizer_parts_(model::optimizer_own_floats(c.optimizer)),
        steps_per_decay_(model::decay_steps(c.batch, c.dp)) {
    // Its range of them, the optimizer's own state too (zeroes on a fresh start or SGD).
    vars_.load_from_host(state);
    if (state.input) inputs_.restore(*state.input);  // a resumed run's next global batch
  }

  void enqueue(int step, std::int64_t global_step) override {
    // Chapter 8's step for one tower: its batch, the passes (ZeRO-2: the backward pass
    // bucket by bucket, each bucket reduce-scattered over the data ring), the update.
    const data::Batch batch = inputs_[0].next();
    tower_.stream->wait(*batch.ready);
    if (ring_ != nullptr) ring_->set_step(step);
    if (halves_ != nullptr) halves_->set_step(step);
    if (gathers_ != nullptr) gathers_->set_step(step);
    vars_.tower_loss(0, batch);
    vars_.backward();
    inputs_[0].release(batch, *tower_.stream);
    vars_.update(global_step, model::learning_rate(global_step, steps_per_decay_),
                 model::moving_average_decay(global_step));
  }

  float loss() override { return tower_.losses.as<float>()[model::kTotalLoss]; }

  // The whole state on data rank 0 (world rank 0): below ZeRO-3 the parameters are every
  // rank's whole (rank 0's are taken), the rest is the ranks' shards put together, as
  // chapter 8's state_to_host() puts its towers' shards together (gather_state).
  void put_together(model::TrainingState& whole) override {
    model::TrainingState mine;
    vars_.held_to_host(mine);  // this rank's ranges, in their places
    gather_state(data_, mine, vars_.params_held(0), vars_.held(0), optimizer_parts_, whole);
  }

  std::uint64_t bytes_sent(int dimension) const override {
    if (dimension != 0) return 0;
    return (ring_ != nullptr ? ring_->bytes_sent() : 0) +
           (halves_ != nullptr ? halves_->bytes_sent() : 0) +
           (gathers_ != nullptr ? gathers_->bytes_sent() : 0);
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
  ShardedVariables::LayerSourceMaker make_gathers(const MeshRanks& mesh, Watchdog& watchdog) {
    return [this, &mesh, &watchdog](std::vector<const float*> shards, std::vector<Chunk> owned) {
      auto gathers = std::make_unique<MeshLayerGather>(tower_, shards.at(0), owned.at(0),
                                                       mesh.data(), watchdog, "gather");
      gathers_ = gathers.get();
      return gathers;
    };
  }

  Tower& tower_;
  MeshRing* ring_ = nullptr;      // owned by vars_ (ZeRO-0)
  MeshShards* halves_ = nullptr;  // owned by vars_ (ZeRO-1 to 3)
  MeshLayerGather* gathers_ = nullptr;  // owned by vars_ (ZeRO-3)
  TowerInputs inputs_;
  ShardedVariables vars_;
  MPI_Comm data_;
  int optimizer_parts_;  // arrays of --optimizer's own state: 0, 1 or 2
  std::int64_t steps_per_decay_;
};

}  // namespace

std::unique_ptr<MeshRank> make_sharded_rank(const MeshRanks& mesh, Watchdog& watchdog, TowerSet& set,
                                            const data::Dataset& train, const MeshConfig& config,
                                            const model::TrainingState& state, std::uint64_t seed) {
  return std::make_unique<ShardedRank>(mesh, watchdog, set, train, config, state, seed);
}

}  // namespace towers
