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
// towers (chapter11_run_test).
#include <memory>

#include <mpi.h>

#include "harness/tower_inputs.hpp"
#include "mesh_rank.hpp"
#include "model/optimizer.hpp"
#include "model/parameters.hpp"
#include "mpi/mpi_check.hpp"
#include "parallel/mesh_ring.hpp"
#include "parallel/mesh_shards.hpp"
#include "parallel/one_device_variables.hpp"  // copy_to_host
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
              make_ring(mesh, watchdog, c), make_halves(mesh, watchdog, c),
              make_gathers(mesh, watchdog)),
        data_(mesh.data()),
        zero_(c.zero),
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
    if (gathers_ != nullptr) gathers_->set_step(step);
    vars_.tower_loss(0, batch);
    vars_.backward();
    inputs_[0].release(batch, *tower_.stream);
    vars_.update(global_step, model::learning_rate(global_step, steps_per_decay_),
                 model::moving_average_decay(global_step));
  }

  float loss() override { return tower_.losses.as<float>()[model::kTotalLoss]; }

  // The parameters alone (--save-params): the moving averages and the optimizer's state
  // are shards from ZeRO-1 on and are not put together yet, so a checkpoint of this rank
  // is refused before the run (mesh_checkpoint_problem).
  void put_together(model::TrainingState& state) override {
    std::vector<float>& whole = state.params;
    // Below ZeRO-3 every rank holds the parameters whole after the all-gather: rank 0's.
    whole.resize(model::kNumParameters);
    if (zero_ < 3) {
      vars_.params_to_host(whole.data());
      return;
    }
    // ZeRO-3: every rank's shard, gathered in place on data rank 0 (world rank 0).
    const Chunk mine = halves_->shard(model::kNumParameters, 0);
    copy_to_host(*tower_.stream, whole.data() + mine.offset, vars_.params()[0], mine.size);
    int ranks = 1, me = 0;
    MPI_CHECK(MPI_Comm_size(data_, &ranks));
    MPI_CHECK(MPI_Comm_rank(data_, &me));
    std::vector<int> counts, offsets;
    for (int r = 0; r < ranks; ++r) {
      const Chunk shard = ring_chunk(model::kNumParameters, ranks, (r + 1) % ranks);
      counts.push_back(static_cast<int>(shard.size));
      offsets.push_back(static_cast<int>(shard.offset));
    }
    const auto m = static_cast<std::size_t>(me);
    const void* send = me == 0 ? MPI_IN_PLACE : whole.data() + offsets[m];
    MPI_CHECK(MPI_Gatherv(send, counts[m], MPI_FLOAT, whole.data(), counts.data(), offsets.data(),
                          MPI_FLOAT, 0, data_));
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
  int zero_;
  std::int64_t steps_per_decay_;
};

}  // namespace

std::unique_ptr<MeshRank> make_sharded_rank(const MeshRanks& mesh, Watchdog& watchdog, TowerSet& set,
                                            const data::Dataset& train, const MeshConfig& config,
                                            const model::TrainingState& state, std::uint64_t seed) {
  return std::make_unique<ShardedRank>(mesh, watchdog, set, train, config, state, seed);
}

}  // namespace towers
