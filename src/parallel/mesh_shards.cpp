// SPDX-License-Identifier: MIT
#include "parallel/mesh_shards.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "mpi/mpi_check.hpp"
#include "model/gradient_layers.hpp"
#include "model/parameters.hpp"
#include "parallel/allreduce_mpi.hpp"

namespace towers {

MeshShards::MeshShards(Device& device, MPI_Comm comm, std::size_t max_count, Watchdog& watchdog,
                       std::string what)
    : comm_(comm), max_count_(max_count), watchdog_(watchdog), what_(std::move(what)) {
  MPI_CHECK(MPI_Comm_size(comm, &ranks_));
  MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  const std::size_t largest = ring_chunk(max_count, ranks_, 0).size;
  if (largest > 0) receive_ = device.allocate(largest * sizeof(float), MemoryCategory::kCommunication);
}

Chunk MeshShards::shard(std::size_t count, int tower) const {
  if (tower != 0) {
    throw std::invalid_argument(what_ + ": one tower per process, so no tower " + std::to_string(tower));
  }
  return mesh_shard(count, ranks_, rank_);
}

Chunk mesh_shard(std::size_t count, int ranks, int rank) {
  return ring_chunk(count, ranks, (rank + 1) % ranks);  // what the reduce-scatter leaves it
}

float* MeshShards::one_tower(std::span<float* const> buffers, std::size_t count,
                             std::span<Stream* const> streams) const {
  if (buffers.size() != 1 || streams.size() != 1) {
    throw std::invalid_argument(what_ + ": one tower per process, not " + std::to_string(buffers.size()));
  }
  if (count > max_count_) {
    throw std::invalid_argument(what_ + ": count " + std::to_string(count) +
                                " exceeds the max_count it was set up for");
  }
  return buffers[0];
}

template <typename Work>
void MeshShards::enqueue(Stream& stream, const std::string& what, Work work) {
  const int step = step_;
  stream.launch(
      what,
      [this, what, step, work] {
        Watchdog::Scope waiting(watchdog_, what, step);
        sent_ += work();
      },
      [this](const CudaLaunchContext&) {
        throw std::logic_error(what_ + " reads host memory; it ran on a GPU stream");
      });
}

void MeshShards::reduce_scatter(std::span<float* const> buffers, std::size_t count,
                                std::span<Stream* const> streams) {
  reduce_scatter_bucket(buffers, count, Chunk{0, count}, streams);
}

void MeshShards::reduce_scatter_bucket(std::span<float* const> buckets, std::size_t count,
                                       Chunk bucket, std::span<Stream* const> streams) {
  float* data = one_tower(buckets, count, streams);
  if (bucket.offset + bucket.size > count) {
    throw std::invalid_argument(what_ + ": the bucket lies outside the buffer");
  }
  float* receive = receive_.as<float>();
  MPI_Comm comm = comm_;
  enqueue(*streams[0], what_ + " reduce-scatter", [=] {
    return ring_reduce_scatter_sendrecv(data, count, receive, comm, Reduction::kMean, bucket);
  });
}

void MeshShards::all_gather(std::span<float* const> buffers, std::size_t count,
                            std::span<Stream* const> streams) {
  float* data = one_tower(buffers, count, streams);
  MPI_Comm comm = comm_;
  enqueue(*streams[0], what_ + " all-gather",
          [=] { return ring_all_gather_sendrecv(data, count, comm, Chunk{0, count}); });
}

MeshLayerGather::MeshLayerGather(Tower& tower, const float* shard, Chunk owned, MPI_Comm comm,
                                 Watchdog& watchdog, std::string what)
    : tower_(tower), shard_(shard), owned_(owned), comm_(comm), watchdog_(watchdog),
      what_(std::move(what)),
      window_(tower.device->allocate(LayerGather::window_elements() * sizeof(float),
                                     MemoryCategory::kParameters)) {}

model::Network::LayerParams MeshLayerGather::hooks(int tower) {
  if (tower != 0) {
    throw std::invalid_argument(what_ + ": one tower per process, so no tower " + std::to_string(tower));
  }
  return {[this](int layer) { return acquire(layer); }, [this](int layer) { release(layer); }};
}

const float* MeshLayerGather::acquire(int layer) {
  const std::size_t use = next_use_;
  if (LayerGather::schedule()[use] != layer) {
    throw std::logic_error(what_ + ": the pass asked for layer " + std::to_string(layer) +
                           " where the schedule has " + std::to_string(LayerGather::schedule()[use]));
  }
  const Chunk range = LayerGather::layer_of_use(use);
  float* into = window_.as<float>() + LayerGather::window_offset(use);
  // This rank's piece of the layer goes into place first; the ring brings the others'.
  const Chunk mine = overlap(owned_, range);
  const float* from = mine.size > 0 ? shard_ + (mine.offset - owned_.offset) : nullptr;
  float* to = mine.size > 0 ? into + (mine.offset - range.offset) : nullptr;
  const std::string what = what_ + " " + model::gradient_layers()[static_cast<std::size_t>(layer)].name;
  const int step = step_;
  MPI_Comm comm = comm_;
  tower_.stream->launch(
      what,
      [this, what, step, from, to, mine, into, range, comm] {
        if (mine.size > 0) std::memcpy(to, from, mine.size * sizeof(float));
        Watchdog::Scope waiting(watchdog_, what, step);
        sent_ += ring_all_gather_sendrecv(into, model::kNumParameters, comm, range);
      },
      [this](const CudaLaunchContext&) {
        throw std::logic_error(what_ + " reads host memory; it ran on a GPU stream");
      });
  return into;
}

void MeshLayerGather::release(int layer) {
  if (LayerGather::schedule()[next_use_] != layer) {
    throw std::logic_error(what_ + ": released layer " + std::to_string(layer) + " out of order");
  }
  // The compute stream runs the next gather after this layer's last op: the end is free.
  next_use_ = (next_use_ + 1) % LayerGather::schedule().size();
}

}  // namespace towers
