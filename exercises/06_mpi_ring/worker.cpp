// SPDX-License-Identifier: MIT
// Exercise 06's worker: the code under test, on every rank of an mpiexec job. The grader
// starts it as `mpiexec -n N exercise_06_worker COUNT ints|random` and reads one line per
// rank:
//
//   rank R sendrecv=K collectives=C exact_error=E reference_mismatches=M error=none
//
// K counts this rank's MPI_Sendrecv calls and C its collective calls (MPI_Allreduce and
// friends), counted through MPI's profiling interface: each wrapper below counts, then
// calls the real function, PMPI_<name>. E is the largest |result - mean| against the mean
// computed in double; M the elements whose bits differ from chapter 4's ring order.
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "mpi_ring.hpp"

namespace {
int sendrecv_calls = 0;
int collective_calls = 0;
}  // namespace

extern "C" {
int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
  ++sendrecv_calls;
  return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                       source, recvtag, comm, status);
}
int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  ++collective_calls;
  return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}
int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
               int root, MPI_Comm comm) {
  ++collective_calls;
  return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}
int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  ++collective_calls;
  return PMPI_Bcast(buffer, count, type, root, comm);
}
}

namespace {

// Rank r's element i: small integers (exact sums) or seeded floats in [-1, 1).
float value(int rank, std::size_t i, bool ints) {
  if (ints) return static_cast<float>(static_cast<int>((rank * 7 + i * 3) % 11) - 5);
  std::uint64_t x = (static_cast<std::uint64_t>(rank) << 32) ^ (i * 0x9e3779b97f4a7c15ull) ^ 12345u;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

// Chapter 4's ring order for an element of chunk c: start with rank c's value, then each
// rank c+1, c+2, ... adds its own to what arrived; the owner scales by the float 1/n.
float ring_order_mean(std::size_t i, int n, int c, bool ints) {
  float sum = value(c, i, ints);
  for (int k = 1; k < n; ++k) sum = value((c + k) % n, i, ints) + sum;
  return sum * (1.0f / static_cast<float>(n));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // A ring with a mistake can leave ranks waiting for a message that never comes. Each
  // rank ends itself after 15 s (SIGALRM), so a wrong solution fails instead of hanging.
  alarm(15);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int n = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::size_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100;
  const bool ints = argc > 2 && std::string(argv[2]) == "ints";

  std::vector<float> data(count), receive(towers::exercises::chunk_of(count, n, 0).size + 1);
  for (std::size_t i = 0; i < count; ++i) data[i] = value(rank, i, ints);
  std::string error = "none";
  try {
    towers::exercises::ring_average(data.data(), count, receive.data(), MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    error = e.what();
  }
  double exact_error = 0;
  std::size_t mismatches = 0;
  for (int c = 0; c < n; ++c) {
    const towers::exercises::Chunk chunk = towers::exercises::chunk_of(count, n, c);
    for (std::size_t i = chunk.offset; i < chunk.offset + chunk.size; ++i) {
      double mean = 0;
      for (int r = 0; r < n; ++r) mean += value(r, i, ints);
      mean /= n;
      exact_error = std::max(exact_error, std::abs(static_cast<double>(data[i]) - mean));
      if (data[i] != ring_order_mean(i, n, c, ints)) ++mismatches;
    }
  }
  std::printf("rank %d sendrecv=%d collectives=%d exact_error=%.9g reference_mismatches=%zu error=%s\n",
              rank, sendrecv_calls, collective_calls, exact_error, mismatches, error.c_str());
  std::fflush(stdout);
  MPI_Finalize();
  return 0;
}
