// SPDX-License-Identifier: MIT
// NCCL between processes: one communicator rank per MPI rank, one GPU each.
//
// Bootstrap, the standard way: rank 0 asks NCCL for a unique id (it names the job's
// communicator and where to reach rank 0), MPI_Bcast hands it to every rank, and every
// rank joins with ncclCommInitRank(size, id, rank) on its own GPU. From then on MPI is
// out of the data path: NCCL moves the gradients itself (NVLink, PCIe, or the network).
//
// The all-reduce runs on a communication stream of its own, ordered by events: it waits
// for the backward pass recorded on the tower's stream, and the tower's stream waits for
// the mean before the update. (Frameworks do the same so that, later, gradients of early
// layers can be reduced while later layers still compute.)
//
// Failure is an error, never a hang: wait() polls the communication event and NCCL's
// asynchronous error (ncclCommGetAsyncError); on an error, or past the watchdog's limit,
// it aborts the communicator (ncclCommAbort, which frees a kernel stuck waiting for a
// dead peer) and throws, and run_rank_program() ends the job. Built only with CUDA.
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/usage_error.hpp"
#include "base/cuda/check.hpp"
#include "mpi/mpi_check.hpp"
#include "parallel/allreduce_mpi.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

// NCCL needs one GPU per rank. Ranks compare the UUIDs of their GPUs rather than counting
// the GPUs they see: a launcher that shows each rank one GPU (CUDA_VISIBLE_DEVICES) gives
// every rank "one GPU, number 0", yet all of them distinct. Every rank gets every UUID, so
// every rank throws the same message.
void refuse_shared_gpus(int ordinal, const MpiJob& job, Watchdog& watchdog) {
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, ordinal));
  std::vector<char> uuids(static_cast<std::size_t>(job.size()) * sizeof properties.uuid.bytes);
  {
    Watchdog::Scope waiting(watchdog, "MPI_Allgather of the GPUs' UUIDs", -1);
    MPI_CHECK(MPI_Allgather(properties.uuid.bytes, sizeof properties.uuid.bytes, MPI_BYTE,
                            uuids.data(), sizeof properties.uuid.bytes, MPI_BYTE, job.comm()));
  }
  const std::size_t width = sizeof properties.uuid.bytes;
  for (int a = 0; a < job.size(); ++a) {
    for (int b = a + 1; b < job.size(); ++b) {
      if (std::memcmp(&uuids[a * width], &uuids[b * width], width) == 0) {
        throw UsageError("ranks " + std::to_string(a) + " and " + std::to_string(b) +
                         " would share one GPU, and NCCL needs one GPU per rank. Start at most "
                         "as many ranks per machine as it has GPUs (mpirun -n ...), or use "
                         "--backend host --allreduce mpi.");
      }
    }
  }
}

class NcclRankAllReduce final : public RankAllReduce {
 public:
  NcclRankAllReduce(Device& device, const MpiJob& job, Watchdog& watchdog) : watchdog_(watchdog) {
    // docs-begin: nccl-bootstrap
    ncclUniqueId id{};
    if (job.rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    {
      Watchdog::Scope waiting(watchdog, "MPI_Bcast of the NCCL id", -1);
      MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, job.comm()));
    }
    CUDA_CHECK(cudaSetDevice(device.index()));  // runtime device i is CUDA ordinal i
    refuse_shared_gpus(device.index(), job, watchdog);
    {
      // Joining waits for every rank: a rank that never arrives is the watchdog's to name.
      Watchdog::Scope waiting(watchdog, "ncclCommInitRank", -1);
      NCCL_CHECK(ncclCommInitRank(&comm_, job.size(), id, job.rank()));
    }
    // docs-end: nccl-bootstrap
    comm_stream_ = device.create_stream();
    gradients_ready_ = device.create_event();
    mean_ready_ = device.create_event();
  }

  ~NcclRankAllReduce() override {
    if (comm_) (void)ncclCommDestroy(comm_);  // teardown: nothing useful to do on failure
  }

  void average(float* buffer, std::size_t count, Stream& stream, int step) override {
    step_ = step;
    stream.record(*gradients_ready_);          // after the backward pass
    comm_stream_->wait(*gradients_ready_);
    ncclComm_t comm = comm_;
    comm_stream_->launch(
        span::kNcclAllReduce,
        [] { throw std::logic_error("the nccl all-reduce ran on a host stream"); },
        [=](const CudaLaunchContext& ctx) {
          NCCL_CHECK(ncclAllReduce(buffer, buffer, count, ncclFloat, ncclAvg, comm,
                                   static_cast<cudaStream_t>(ctx.stream)));
        });
    comm_stream_->record(*mean_ready_);
    stream.wait(*mean_ready_);                 // the update reads the mean
  }

  void wait(Stream& stream) override {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(watchdog_.limit_seconds());
    while (!mean_ready_->query()) {
      ncclResult_t state = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
      if (state != ncclSuccess && state != ncclInProgress) {
        abort_communicator();
        throw std::runtime_error("nccl allreduce of step " + std::to_string(step_) +
                                 " failed: " + ncclGetErrorString(state));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        abort_communicator();
        throw std::runtime_error("nccl allreduce of step " + std::to_string(step_) +
                                 " did not finish within " + std::to_string(watchdog_.limit_seconds()) +
                                 " s: another rank has died or stopped answering");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    stream.synchronize();
  }

  std::string_view name() const override { return "nccl"; }

 private:
  void abort_communicator() {
    (void)ncclCommAbort(comm_);  // frees kernels waiting for a peer; we are failing anyway
    comm_ = nullptr;
  }

  Watchdog& watchdog_;
  ncclComm_t comm_ = nullptr;
  std::unique_ptr<Stream> comm_stream_;
  std::unique_ptr<Event> gradients_ready_, mean_ready_;
  int step_ = -1;
};

}  // namespace

std::unique_ptr<RankAllReduce> make_nccl_rank_allreduce(Device& device, const MpiJob& job,
                                                        Watchdog& watchdog) {
  return std::make_unique<NcclRankAllReduce>(device, job, watchdog);
}

}  // namespace towers
