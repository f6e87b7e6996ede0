// SPDX-License-Identifier: MIT
#include "parallel/mesh_shards.hpp"

#include <stdexcept>

#include "mpi/mpi_check.hpp"
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
  return ring_chunk(count, ranks_, (rank_ + 1) % ranks_);  // what the reduce-scatter leaves it
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
          [=] { return ring_all_gather_sendrecv(data, count, comm); });
}

}  // namespace towers
