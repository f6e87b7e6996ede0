// SPDX-License-Identifier: MIT
#include "zero_one_update.hpp"

#include "model/ops.hpp"
#include "mpi/mpi_check.hpp"
#include "parallel/one_device_variables.hpp"  // copy_from_host, copy_to_host

namespace towers {
namespace {

int ranks_of(MPI_Comm data) {
  int ranks = 1;
  MPI_CHECK(MPI_Comm_size(data, &ranks));
  return ranks;
}

}  // namespace

ZeroOneUpdate::ZeroOneUpdate(Device& device, Stream& stream, MPI_Comm data, std::size_t count,
                             model::Optimizer optimizer, const float* averages, Watchdog& watchdog,
                             bool keep_gradient_shard)
    : stream_(stream),
      data_(data),
      count_(count),
      // One replica has nothing to meet: the plan counts no data ring beside a tensor
      // rank's or a stage's, as at ZeRO-0.
      halves_(ranks_of(data) > 1
                  ? std::make_unique<MeshShards>(device, data, count, watchdog, "data ring")
                  : nullptr),
      // The chunk the ring's reduce-scatter leaves this rank; with one replica, every one.
      shard_(halves_ ? halves_->shard(count, /*tower=*/0) : Chunk{0, count}),
      optimizer_(optimizer, device, stream, shard_.size) {
  if (shard_.size == 0) return;
  averages_ = device.allocate(shard_.size * sizeof(float), MemoryCategory::kOptimizerState);
  copy_from_host(stream, averages_.as<float>(), averages + shard_.offset, shard_.size);
  if (keep_gradient_shard) {
    gradient_shard_ = device.allocate(shard_.size * sizeof(float), MemoryCategory::kGradients);
  }
  stream.synchronize();
}

void ZeroOneUpdate::update(int step, std::int64_t global_step, float learning_rate, float decay,
                           float* grads, float* params) {
  Stream* stream = &stream_;
  if (halves_) {  // the mean of this rank's shard
    halves_->set_step(step);
    halves_->reduce_scatter({&grads, 1}, count_, {&stream, 1});
  }
  // Chapter 8's ZeRO-1 update, on the shard alone; ZeRO-2 keeps the shard's mean apart
  // first, and the whole buffer is scratch from here on.
  const float* mean = grads + shard_.offset;
  if (!gradient_shard_.empty()) {
    stream_.copy(gradient_shard_.as<float>(), mean, shard_.size * sizeof(float),
                 "keep gradient shard");
    mean = gradient_shard_.as<float>();
  }
  float* shard = params + shard_.offset;
  optimizer_.apply(stream_, global_step, learning_rate, mean, shard);
  ops::ema_update(stream_, static_cast<int>(shard_.size), decay, shard, averages_.as<float>());
  if (halves_) halves_->all_gather({&params, 1}, count_, {&stream, 1});
}

void ZeroOneUpdate::restore_optimizer(const float* whole, std::size_t whole_count,
                                      std::size_t offset) {
  optimizer_.restore(stream_, whole, whole_count, offset + shard_.offset);
  stream_.synchronize();  // `whole` may go once this returns
}

void ZeroOneUpdate::put_together(std::vector<float>& averages,
                                 std::vector<float>& optimizer_state) {
  const auto parts = static_cast<std::size_t>(optimizer_.parts());
  averages.assign(count_, 0.0f);
  optimizer_state.assign(parts * count_, 0.0f);
  if (shard_.size > 0) {  // this rank's shard, at its place in each array
    copy_to_host(stream_, averages.data() + shard_.offset, averages_.as<float>(), shard_.size);
    for (std::size_t p = 0; p < parts; ++p) {
      copy_to_host(stream_, optimizer_state.data() + p * count_ + shard_.offset,
                   optimizer_.part(static_cast<int>(p)), shard_.size);
    }
  }
  gather_shards(averages.data());
  for (std::size_t p = 0; p < parts; ++p) gather_shards(optimizer_state.data() + p * count_);
}

void ZeroOneUpdate::gather_shards(float* array) const {
  int ranks = 1, rank = 0;
  MPI_CHECK(MPI_Comm_size(data_, &ranks));
  MPI_CHECK(MPI_Comm_rank(data_, &rank));
  // Every replica's shard, as MeshShards::shard gives each its own: they tile `count_`.
  std::vector<int> counts, offsets;
  for (int r = 0; r < ranks; ++r) {
    const Chunk shard = mesh_shard(count_, ranks, r);
    counts.push_back(static_cast<int>(shard.size));
    offsets.push_back(static_cast<int>(shard.offset));
  }
  if (rank == 0) {  // rank 0's own shard is in place already
    MPI_CHECK(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_FLOAT, array, counts.data(), offsets.data(),
                          MPI_FLOAT, 0, data_));
  } else {
    MPI_CHECK(MPI_Gatherv(array + shard_.offset, static_cast<int>(shard_.size), MPI_FLOAT, nullptr,
                          nullptr, nullptr, MPI_FLOAT, 0, data_));
  }
}

}  // namespace towers
