// SPDX-License-Identifier: MIT
// Exercise 06's worker: the code under test, on every rank of an mpiexec job. The grader
// starts it as `mpiexec -n N exercise_06_worker COUNT ints|random world|reversed|halves`:
// the ring runs on MPI_COMM_WORLD, on the same ranks numbered backwards, or on two
// interleaved halves of the ranks (each its own ring, numbered backwards), so a solution
// that uses any communicator but the one it is given fails. It prints one line per rank:
//
//   rank R of N world W sendrecv=K reduce_scatter_bytes=B1 all_gather_bytes=B2
//     exact_error=E reference_mismatches=M violation=<first breach or none> error=<or none>
//
// R and N are the rank and size in the ring's communicator, W the rank in the world; E the
// largest |result - mean| against the mean in double, M the elements whose bits differ
// from chapter 4's ring order. Everything else is seen through MPI's profiling interface
// while ring_average runs: each MPI_* function below notes the call, then calls the real
// one, PMPI_*. MPI_Sendrecv is checked call by call, on what it carries, not on what the
// solution says: the communicator, the neighbours, the bytes sent, and the sent floats
// themselves, bit for bit (reduce-scatter step s sends chunk r - s holding the partial sum
// of ranks r - s .. r in chapter 4's order; all-gather step t sends chunk r + 1 - t holding
// the final mean). Every other point-to-point, collective, one-sided or communicator call
// while the ring runs is a violation: the ring is 2(n - 1) MPI_Sendrecv calls and nothing
// else (no barrier, no hidden collective).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "mpi_ring.hpp"

namespace {

using towers::exercises::Chunk;
using towers::exercises::chunk_of;

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
// rank c+1, c+2, ... adds its own to what arrived. `terms` ranks: the partial sum that
// rank c + terms - 1 sends on; n terms, scaled by the float 1/n: the mean.
float ring_order_sum(std::size_t i, int n, int c, int terms, bool ints) {
  float sum = value(c, i, ints);
  for (int k = 1; k < terms; ++k) sum = value((c + k) % n, i, ints) + sum;
  return sum;
}
float ring_order_mean(std::size_t i, int n, int c, bool ints) {
  return ring_order_sum(i, n, c, n, ints) * (1.0f / static_cast<float>(n));
}

int wrap(int index, int n) { return ((index % n) + n) % n; }

// What the profiling layer watches: set only while ring_average runs.
struct Watch {
  bool on = false;
  MPI_Comm comm = MPI_COMM_NULL;  // the communicator ring_average was given
  int n = 1, rank = 0;
  std::size_t count = 0;
  bool ints = false;
  int sendrecv = 0;                // calls so far
  long long bytes[2] = {0, 0};     // sent in the reduce-scatter, in the all-gather
  std::string violation;           // the first breach seen, for the grader's line
};
Watch watch;

void violate(const std::string& what) {
  if (watch.on && watch.violation.empty()) watch.violation = what;
}

// Any call but MPI_Sendrecv, MPI_Comm_size and MPI_Comm_rank while the ring runs.
void refuse(const char* name) {
  violate(std::string(name) + " called: the ring is 2(n-1) MPI_Sendrecv calls and nothing " +
          "else (no barrier, no collective, no other message)");
}

void check_comm(MPI_Comm comm, const char* name) {
  if (comm != watch.comm) {
    violate(std::string(name) + " on a communicator other than the one ring_average was " +
            "given (use the `comm` argument, not MPI_COMM_WORLD)");
  }
}

// One MPI_Sendrecv of the ring, checked against the step it must be.
void check_sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                    int source, MPI_Comm comm) {
  const int n = watch.n, r = watch.rank, k = watch.sendrecv++;
  const std::string step = "MPI_Sendrecv call " + std::to_string(k + 1);
  check_comm(comm, "MPI_Sendrecv");
  if (k >= 2 * (n - 1)) {
    violate(step + ": more than 2(n-1) = " + std::to_string(2 * (n - 1)) + " calls");
    return;
  }
  if (dest != wrap(r + 1, n) || source != wrap(r - 1, n)) {
    violate(step + ": sends to " + std::to_string(dest) + " and receives from " +
            std::to_string(source) + ", not to the right neighbour " +
            std::to_string(wrap(r + 1, n)) + " and from the left one " +
            std::to_string(wrap(r - 1, n)));
  }
  int type_size = 0;
  PMPI_Type_size(sendtype, &type_size);
  const long long sent = static_cast<long long>(sendcount) * type_size;
  const bool gather = k >= n - 1;
  watch.bytes[gather ? 1 : 0] += sent;
  const int s = gather ? k - (n - 1) : k;
  const int c = gather ? wrap(r + 1 - s, n) : wrap(r - s, n);
  const Chunk chunk = chunk_of(watch.count, n, c);
  if (sent != static_cast<long long>(chunk.size * sizeof(float))) {
    violate(step + " (" + (gather ? "all-gather" : "reduce-scatter") + " step " +
            std::to_string(s) + ") sends " + std::to_string(sent) + " bytes, expected chunk " +
            std::to_string(c) + ": " + std::to_string(chunk.size * sizeof(float)));
    return;
  }
  std::vector<float> expected(chunk.size);
  for (std::size_t j = 0; j < chunk.size; ++j) {
    const std::size_t i = chunk.offset + j;
    expected[j] = gather ? ring_order_mean(i, n, c, watch.ints)
                         : ring_order_sum(i, n, c, s + 1, watch.ints);
  }
  if (chunk.size > 0 && std::memcmp(sendbuf, expected.data(), chunk.size * sizeof(float)) != 0) {
    violate(step + " (" + (gather ? "all-gather" : "reduce-scatter") + " step " +
            std::to_string(s) + ") does not carry chunk " + std::to_string(c) + " as " +
            (gather ? "the final mean" : "the partial sum of chapter 4's order") +
            ", bit for bit");
  }
}

}  // namespace

// The profiling interface: the solution's MPI calls land here first.
extern "C" {
int MPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status* status) {
  if (watch.on) check_sendrecv(sendbuf, sendcount, sendtype, dest, source, comm);
  return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                       source, recvtag, comm, status);
}
int MPI_Comm_size(MPI_Comm comm, int* size) {
  if (watch.on) check_comm(comm, "MPI_Comm_size");
  return PMPI_Comm_size(comm, size);
}
int MPI_Comm_rank(MPI_Comm comm, int* rank) {
  if (watch.on) check_comm(comm, "MPI_Comm_rank");
  return PMPI_Comm_rank(comm, rank);
}

// Every other call that moves data or synchronizes: refused, then passed on (so that a
// wrong solution still finishes and the grader can say what it did).
#define TOWERS_REFUSED(name, params, args) \
  int MPI_##name params {                  \
    refuse("MPI_" #name);                  \
    return PMPI_##name args;               \
  }
// Point to point.
TOWERS_REFUSED(Send, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m),
               (b, c, t, d, tag, m))
TOWERS_REFUSED(Ssend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m),
               (b, c, t, d, tag, m))
TOWERS_REFUSED(Bsend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m),
               (b, c, t, d, tag, m))
TOWERS_REFUSED(Rsend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m),
               (b, c, t, d, tag, m))
TOWERS_REFUSED(Recv, (void* b, int c, MPI_Datatype t, int s, int tag, MPI_Comm m, MPI_Status* st),
               (b, c, t, s, tag, m, st))
TOWERS_REFUSED(Isend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m,
                       MPI_Request* q), (b, c, t, d, tag, m, q))
TOWERS_REFUSED(Issend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m,
                        MPI_Request* q), (b, c, t, d, tag, m, q))
TOWERS_REFUSED(Ibsend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m,
                        MPI_Request* q), (b, c, t, d, tag, m, q))
TOWERS_REFUSED(Irsend, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m,
                        MPI_Request* q), (b, c, t, d, tag, m, q))
TOWERS_REFUSED(Irecv, (void* b, int c, MPI_Datatype t, int s, int tag, MPI_Comm m,
                       MPI_Request* q), (b, c, t, s, tag, m, q))
TOWERS_REFUSED(Send_init, (const void* b, int c, MPI_Datatype t, int d, int tag, MPI_Comm m,
                           MPI_Request* q), (b, c, t, d, tag, m, q))
TOWERS_REFUSED(Recv_init, (void* b, int c, MPI_Datatype t, int s, int tag, MPI_Comm m,
                           MPI_Request* q), (b, c, t, s, tag, m, q))
TOWERS_REFUSED(Sendrecv_replace, (void* b, int c, MPI_Datatype t, int d, int stag, int s,
                                  int rtag, MPI_Comm m, MPI_Status* st),
               (b, c, t, d, stag, s, rtag, m, st))
TOWERS_REFUSED(Probe, (int s, int tag, MPI_Comm m, MPI_Status* st), (s, tag, m, st))
TOWERS_REFUSED(Iprobe, (int s, int tag, MPI_Comm m, int* f, MPI_Status* st), (s, tag, m, f, st))
// Collectives, blocking and not.
TOWERS_REFUSED(Barrier, (MPI_Comm m), (m))
TOWERS_REFUSED(Ibarrier, (MPI_Comm m, MPI_Request* q), (m, q))
TOWERS_REFUSED(Bcast, (void* b, int c, MPI_Datatype t, int root, MPI_Comm m), (b, c, t, root, m))
TOWERS_REFUSED(Ibcast, (void* b, int c, MPI_Datatype t, int root, MPI_Comm m, MPI_Request* q),
               (b, c, t, root, m, q))
TOWERS_REFUSED(Reduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, int root,
                        MPI_Comm m), (s, r, c, t, o, root, m))
TOWERS_REFUSED(Ireduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, int root,
                         MPI_Comm m, MPI_Request* q), (s, r, c, t, o, root, m, q))
TOWERS_REFUSED(Allreduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m),
               (s, r, c, t, o, m))
TOWERS_REFUSED(Iallreduce, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m,
                            MPI_Request* q), (s, r, c, t, o, m, q))
TOWERS_REFUSED(Reduce_scatter_block, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o,
                                      MPI_Comm m), (s, r, c, t, o, m))
TOWERS_REFUSED(Reduce_scatter, (const void* s, void* r, const int c[], MPI_Datatype t, MPI_Op o,
                                MPI_Comm m), (s, r, c, t, o, m))
TOWERS_REFUSED(Scan, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m),
               (s, r, c, t, o, m))
TOWERS_REFUSED(Exscan, (const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm m),
               (s, r, c, t, o, m))
TOWERS_REFUSED(Gather, (const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt,
                        int root, MPI_Comm m), (s, sc, st, r, rc, rt, root, m))
TOWERS_REFUSED(Gatherv, (const void* s, int sc, MPI_Datatype st, void* r, const int rc[],
                         const int d[], MPI_Datatype rt, int root, MPI_Comm m),
               (s, sc, st, r, rc, d, rt, root, m))
TOWERS_REFUSED(Scatter, (const void* s, int sc, MPI_Datatype st, void* r, int rc,
                         MPI_Datatype rt, int root, MPI_Comm m), (s, sc, st, r, rc, rt, root, m))
TOWERS_REFUSED(Scatterv, (const void* s, const int sc[], const int d[], MPI_Datatype st, void* r,
                          int rc, MPI_Datatype rt, int root, MPI_Comm m),
               (s, sc, d, st, r, rc, rt, root, m))
TOWERS_REFUSED(Allgather, (const void* s, int sc, MPI_Datatype st, void* r, int rc,
                           MPI_Datatype rt, MPI_Comm m), (s, sc, st, r, rc, rt, m))
TOWERS_REFUSED(Iallgather, (const void* s, int sc, MPI_Datatype st, void* r, int rc,
                            MPI_Datatype rt, MPI_Comm m, MPI_Request* q),
               (s, sc, st, r, rc, rt, m, q))
TOWERS_REFUSED(Allgatherv, (const void* s, int sc, MPI_Datatype st, void* r, const int rc[],
                            const int d[], MPI_Datatype rt, MPI_Comm m),
               (s, sc, st, r, rc, d, rt, m))
TOWERS_REFUSED(Alltoall, (const void* s, int sc, MPI_Datatype st, void* r, int rc,
                          MPI_Datatype rt, MPI_Comm m), (s, sc, st, r, rc, rt, m))
TOWERS_REFUSED(Alltoallv, (const void* s, const int sc[], const int sd[], MPI_Datatype st,
                           void* r, const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm m),
               (s, sc, sd, st, r, rc, rd, rt, m))
// One-sided, and new communicators (creating one is itself a collective).
TOWERS_REFUSED(Put, (const void* o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc,
                     MPI_Datatype tt, MPI_Win w), (o, oc, ot, tr, td, tc, tt, w))
TOWERS_REFUSED(Get, (void* o, int oc, MPI_Datatype ot, int tr, MPI_Aint td, int tc,
                     MPI_Datatype tt, MPI_Win w), (o, oc, ot, tr, td, tc, tt, w))
TOWERS_REFUSED(Win_fence, (int a, MPI_Win w), (a, w))
TOWERS_REFUSED(Comm_dup, (MPI_Comm m, MPI_Comm* out), (m, out))
TOWERS_REFUSED(Comm_split, (MPI_Comm m, int color, int key, MPI_Comm* out), (m, color, key, out))
TOWERS_REFUSED(Comm_create, (MPI_Comm m, MPI_Group g, MPI_Comm* out), (m, g, out))
#undef TOWERS_REFUSED
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // A ring with a mistake can leave ranks waiting for a message that never comes. Each
  // rank ends itself after 15 s (SIGALRM), so a wrong solution fails instead of hanging.
  alarm(15);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int world_n = 1, world_rank = 0;
  PMPI_Comm_size(MPI_COMM_WORLD, &world_n);
  PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  const std::size_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100;
  const bool ints = argc > 2 && std::string(argv[2]) == "ints";
  const std::string layout = argc > 3 ? argv[3] : "world";
  // The ring's communicator: the world, the world numbered backwards, or two interleaved
  // halves numbered backwards (the grader's own PMPI calls, not watched).
  MPI_Comm comm = MPI_COMM_WORLD;
  if (layout == "reversed") PMPI_Comm_split(MPI_COMM_WORLD, 0, world_n - 1 - world_rank, &comm);
  if (layout == "halves") {
    PMPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_n - world_rank, &comm);
  }
  if (comm != MPI_COMM_WORLD) MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int n = 1, rank = 0;
  PMPI_Comm_size(comm, &n);
  PMPI_Comm_rank(comm, &rank);

  std::vector<float> data(count), receive(chunk_of(count, n, 0).size + 1);
  for (std::size_t i = 0; i < count; ++i) data[i] = value(rank, i, ints);
  std::string error = "none";
  watch.comm = comm;
  watch.n = n;
  watch.rank = rank;
  watch.count = count;
  watch.ints = ints;
  watch.on = true;
  try {
    towers::exercises::ring_average(data.data(), count, receive.data(), comm);
  } catch (const std::exception& e) {
    error = e.what();
  }
  watch.on = false;
  double exact_error = 0;
  std::size_t mismatches = 0;
  for (int c = 0; c < n; ++c) {
    const Chunk chunk = chunk_of(count, n, c);
    for (std::size_t i = chunk.offset; i < chunk.offset + chunk.size; ++i) {
      double mean = 0;
      for (int r = 0; r < n; ++r) mean += value(r, i, ints);
      mean /= n;
      exact_error = std::max(exact_error, std::abs(static_cast<double>(data[i]) - mean));
      if (data[i] != ring_order_mean(i, n, c, ints)) ++mismatches;
    }
  }
  std::printf("rank %d of %d world %d sendrecv=%d reduce_scatter_bytes=%lld all_gather_bytes=%lld "
              "exact_error=%.9g reference_mismatches=%zu violation=%s error=%s\n",
              rank, n, world_rank, watch.sendrecv, watch.bytes[0], watch.bytes[1], exact_error,
              mismatches, watch.violation.empty() ? "none" : watch.violation.c_str(),
              error.c_str());
  std::fflush(stdout);
  if (comm != MPI_COMM_WORLD) PMPI_Comm_free(&comm);
  MPI_Finalize();
  return 0;
}
