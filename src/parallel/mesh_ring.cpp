// SPDX-License-Identifier: MIT
#include "parallel/mesh_ring.hpp"

#include <stdexcept>

#include "mpi/mpi_check.hpp"
#include "parallel/allreduce_mpi.hpp"

namespace towers {

MeshRing::MeshRing(Device& device, MPI_Comm comm, std::size_t max_count, Reduction reduction,
                   Watchdog& watchdog, std::string what)
    : comm_(comm), max_count_(max_count), reduction_(reduction), watchdog_(watchdog),
      what_(std::move(what)) {
  int ranks = 1;
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  const std::size_t largest = ring_chunk(max_count, ranks, 0).size;
  if (largest > 0) receive_ = device.allocate(largest * sizeof(float), MemoryCategory::kCommunication);
}

void MeshRing::average(std::span<float* const> buffers, std::size_t count,
                       std::span<Stream* const> streams) {
  if (buffers.size() != 1 || streams.size() != 1) {
    throw std::invalid_argument(what_ + ": one tower per process, not " +
                                std::to_string(buffers.size()));
  }
  if (count > max_count_) {
    throw std::invalid_argument(what_ + ": count " + std::to_string(count) +
                                " exceeds the max_count it was set up for");
  }
  float* data = buffers[0];
  float* receive = receive_.as<float>();
  const int step = step_;
  streams[0]->launch(
      what_,
      [=, this] {
        Watchdog::Scope waiting(watchdog_, what_, step);
        sent_ += ring_average_sendrecv(data, count, receive, comm_, reduction_);
      },
      [this](const CudaLaunchContext&) {
        throw std::logic_error(what_ + " reads host memory; it ran on a GPU stream");
      });
}

}  // namespace towers
