// SPDX-License-Identifier: MIT
// bench_allreduce_mpi: chapter 5's all-reduces between processes, timed as nccl-tests'
// all_reduce_perf times NCCL, beside chapter 4's in-process ring in the same run.
//
//   mpirun -n 2 build/bin/bench_allreduce_mpi      # then -n 4
//
// One row per size (4 KB to 64 MB of floats per rank), three groups of columns:
//   mpi       MPI_Allreduce + scale (mpi_average), every rank
//   ring      chapter 4's ring over MPI_Sendrecv (ring_average_sendrecv), every rank
//   threads   chapter 4's ring on N simulated devices inside rank 0 (make_ring_allreduce),
//             while the other ranks sleep; the same algorithm without a process boundary
// time: mean per average over `--iters` averages after `--warmup`, the slowest rank's.
// algbw = size / time, busbw = algbw * 2(n-1)/n (see bench_allreduce and chapter 4).
// #wrong: elements, over all ranks, that differ from the exact mean after one average of
// fresh inputs (small integers: every sum is exact, so any correct order gives the bits).
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "base/timing.hpp"
#include "cli/options.hpp"  // whole_number
#include "mpi/mpi_check.hpp"
#include "harness/rank_program.hpp"
#include "mpi/mpi_job.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/allreduce_mpi.hpp"
#include "runtime/backend.hpp"
#include "runtime/runtime.hpp"
#include "tower_buffers.hpp"

namespace towers {
namespace {

constexpr std::size_t kMinBytes = std::size_t{4} << 10;
constexpr std::size_t kMaxBytes = std::size_t{64} << 20;
// The all-reduce tests' inputs and exact mean (tests/allreduce/tower_buffers.hpp).
using testing::count_wrong;

void fill(float* data, std::size_t count, int rank) {
  for (std::size_t e = 0; e < count; ++e) data[e] = testing::input_value(rank, e);
}

struct Cell {
  double seconds = 0;
  long long wrong = 0;
};

// Times `average` on every rank: the slowest rank's mean time, #wrong summed over ranks.
template <typename Average>
Cell time_ranks(const MpiJob& job, std::vector<float>& data, std::size_t count, int warmup,
                int iters, Average average) {
  fill(data.data(), count, job.rank());
  for (int i = 0; i < warmup; ++i) average(data.data(), count);
  MPI_CHECK(MPI_Barrier(job.comm()));
  const auto start = base::Clock::now();
  for (int i = 0; i < iters; ++i) average(data.data(), count);
  double mine = base::seconds_since(start) / iters, slowest = 0;
  MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, job.comm()));
  fill(data.data(), count, job.rank());
  average(data.data(), count);
  long long wrong = count_wrong(data.data(), count, job.size()), all_wrong = 0;
  MPI_CHECK(MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, job.comm()));
  return {slowest, all_wrong};
}

// Chapter 4's ring with one simulated device per rank, all inside this process.
class InProcessRing {
 public:
  explicit InProcessRing(int towers)
      : runtime_(Runtime::create({BackendChoice::kHost, towers})) {
    std::vector<int> devices;
    for (int t = 0; t < towers; ++t) {
      devices.push_back(t);
      Device& device = runtime_->device(t);
      buffers_.push_back(device.allocate(kMaxBytes));
      pointers_.push_back(buffers_.back().as<float>());
      streams_.push_back(device.create_stream());
      stream_pointers_.push_back(streams_.back().get());
    }
    ring_ = make_ring_allreduce(*runtime_, devices, kMaxBytes / sizeof(float));
  }
  Cell time(std::size_t count, int warmup, int iters) {
    const int n = static_cast<int>(pointers_.size());
    for (int t = 0; t < n; ++t) fill(pointers_[t], count, t);
    for (int i = 0; i < warmup; ++i) ring_->average(pointers_, count, stream_pointers_);
    runtime_->synchronize();
    const auto start = base::Clock::now();
    for (int i = 0; i < iters; ++i) ring_->average(pointers_, count, stream_pointers_);
    runtime_->synchronize();
    Cell cell{base::seconds_since(start) / iters, 0};
    for (int t = 0; t < n; ++t) fill(pointers_[t], count, t);
    ring_->average(pointers_, count, stream_pointers_);
    runtime_->synchronize();
    for (int t = 0; t < n; ++t) cell.wrong += count_wrong(pointers_[t], count, n);
    return cell;
  }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::vector<Buffer> buffers_;
  std::vector<float*> pointers_;
  std::unique_ptr<AllReduce> ring_;
  std::vector<std::unique_ptr<Stream>> streams_;  // last: drained before the buffers go
  std::vector<Stream*> stream_pointers_;
};

// The other ranks wait without spinning (an MPI_Barrier polls a core), so rank 0's
// in-process ring has the machine's cores to itself.
void wait_for_rank0(const MpiJob& job) {
  MPI_Request request;
  MPI_CHECK(MPI_Ibarrier(job.comm(), &request));
  int done = 0;
  while (!done) {
    MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void print_cell(const Cell& cell, std::size_t bytes, int n) {
  const double algbw = static_cast<double>(bytes) / cell.seconds / 1e9;
  std::printf("  %9.1f %7.3f %7.3f %6lld", cell.seconds * 1e6, algbw, algbw * 2.0 * (n - 1) / n,
              cell.wrong);
}

}  // namespace
}  // namespace towers

int main(int argc, char** argv) {
  using namespace towers;
  CLI::App app{"bench_allreduce_mpi: MPI_Allreduce and the ring over MPI_Sendrecv beside "
               "chapter 4's in-process ring. Run: mpirun -n N bench_allreduce_mpi"};
  int iters = 20, warmup = 3;
  app.add_option("--iters", iters, "timed averages per size")->capture_default_str()->check(whole_number(1, 100000));
  app.add_option("--warmup", warmup, "untimed averages first")->capture_default_str()->check(whole_number(0, 1000));
  return run_rank_program(app, argc, argv, [&](MpiJob& job) {
    const int n = job.size();
    std::vector<float> data(kMaxBytes / sizeof(float)), receive(ring_chunk(kMaxBytes / sizeof(float), n, 0).size + 1);
    std::unique_ptr<InProcessRing> threads;
    if (job.rank() == 0) threads = std::make_unique<InProcessRing>(n);
    std::printf("# all-reduce (mean) of float32 per rank, %d ranks on this machine; time in us "
                "(slowest rank), GB/s\n", n);
    std::printf("# %10s  %-32s  %-32s  %-32s\n", "", "mpi (MPI_Allreduce)", "ring (MPI_Sendrecv)",
                "threads (chapter 4 ring, rank 0)");
    std::printf("# %10s", "size");
    for (int k = 0; k < 3; ++k) std::printf("  %9s %7s %7s %6s", "time", "algbw", "busbw", "#wrong");
    std::printf("\n");
    long long wrong = 0;
    for (std::size_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= 2) {
      const std::size_t count = bytes / sizeof(float);
      const Cell mpi = time_ranks(job, data, count, warmup, iters,
                                  [&](float* d, std::size_t c) { mpi_average(d, c, job.comm()); });
      const Cell ring = time_ranks(job, data, count, warmup, iters, [&](float* d, std::size_t c) {
        ring_average_sendrecv(d, c, receive.data(), job.comm());
      });
      Cell local;  // rank 0 only
      if (job.rank() == 0) local = threads->time(count, warmup, iters);
      wait_for_rank0(job);
      std::printf("  %10zu", bytes);
      for (const Cell cell : {mpi, ring, local}) print_cell(cell, bytes, n);
      std::printf("\n");
      std::fflush(stdout);
      wrong += mpi.wrong + ring.wrong + local.wrong;
    }
    std::printf("summary: ranks=%d sizes=%d wrong=%lld\n", n, 15, wrong);
    return wrong == 0 ? 0 : 1;
  });
}
