// SPDX-License-Identifier: MIT
// MPI_Allreduce, the host all-reduces as stream work, and which one a run uses.
#include "parallel/allreduce_mpi.hpp"

#include <climits>
#include <stdexcept>
#include <vector>

#include "kernels/host/blas.hpp"
#include "mpi/mpi_check.hpp"
#include "parallel/allreduce.hpp"
#include "runtime/backend.hpp"
#include "trace/span_names.hpp"

namespace towers {

RankAllReduce::~RankAllReduce() = default;

void RankAllReduce::wait(Stream& stream) { stream.synchronize(); }

// docs-begin: mpi-average
void mpi_average(float* data, std::size_t count, MPI_Comm comm) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument("mpi_average: more than INT_MAX floats in one message");
  }
  int ranks = 1;
  MPI_CHECK(MPI_Comm_size(comm, &ranks));
  // Sum in place across ranks; MPI chooses how (and so in which order the sums happen).
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm));
  host::scal(static_cast<int>(count), 1.0f / static_cast<float>(ranks), data);
}
// docs-end: mpi-average

namespace {

// mpi and ring: the MPI calls run as the stream's own work, so they come after the
// backward pass on the stream, show in the trace as this tower's op, and the update
// enqueued after them sees the mean. The watchdog bounds each call.
class HostRankAllReduce final : public RankAllReduce {
 public:
  HostRankAllReduce(bool ring, const MpiJob& job, Watchdog& watchdog, std::size_t max_count)
      : ring_(ring), comm_(job.comm()), watchdog_(watchdog),
        receive_(ring ? ring_chunk(max_count, job.size(), 0).size : 0), max_count_(max_count) {}

  void average(float* buffer, std::size_t count, Stream& stream, int step) override {
    if (count > max_count_) {
      throw std::invalid_argument(std::string(name()) + " all-reduce: count " + std::to_string(count) +
                                  " exceeds the max_count it was set up for");
    }
    const std::string op = ring_ ? span::kRingSendrecv : span::kMpiAllReduce;
    stream.launch(
        op,
        [=, this] {
          Watchdog::Scope waiting(watchdog_, op, step);
          if (ring_) {
            ring_average_sendrecv(buffer, count, receive_.data(), comm_);
          } else {
            mpi_average(buffer, count, comm_);
          }
        },
        [](const CudaLaunchContext&) {
          throw std::logic_error("the MPI all-reduce reads host memory; it ran on a GPU stream");
        });
  }

  std::string_view name() const override { return ring_ ? "ring" : "mpi"; }

 private:
  bool ring_;
  MPI_Comm comm_;
  Watchdog& watchdog_;
  std::vector<float> receive_;  // [largest chunk]: the ring's receive buffer
  std::size_t max_count_;
};

}  // namespace

std::unique_ptr<RankAllReduce> make_rank_allreduce(Runtime& runtime, Device& device,
                                                   const std::string& choice, const MpiJob& job,
                                                   Watchdog& watchdog, std::size_t max_count) {
  const bool gpus = runtime.backend() == Backend::kCuda;
  const std::string resolved = choice == "auto" ? (gpus ? "nccl" : "mpi") : choice;
  if (resolved == "nccl") {
    if (!gpus) {
      throw UsageError("--allreduce nccl needs the cuda backend (real GPUs), but this run uses the "
                       "host backend. Use --allreduce mpi or ring.");
    }
    // Ranks that would share a GPU are refused by the NCCL all-reduce itself, which compares
    // the GPUs' UUIDs: counting the GPUs this process sees would refuse a launcher that
    // shows each rank only its own.
    return make_nccl_rank_allreduce(device, job, watchdog);
  }
  if (resolved != "mpi" && resolved != "ring") {
    throw UsageError("unknown all-reduce '" + choice + "'. Use auto, mpi, ring or nccl.");
  }
  if (gpus) {
    throw UsageError("--allreduce " + resolved + " runs MPI on host memory, and this MPI is not "
                     "CUDA-aware; on GPUs use --allreduce nccl (or auto), or --backend host.");
  }
  return std::make_unique<HostRankAllReduce>(resolved == "ring", job, watchdog, max_count);
}

}  // namespace towers
