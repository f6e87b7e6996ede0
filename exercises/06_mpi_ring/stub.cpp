// SPDX-License-Identifier: MIT
// Exercise 06 — your code goes here. See README.md and mpi_ring.hpp.
#include "mpi_ring.hpp"

#include "exercises/todo.hpp"

namespace towers::exercises {

void ring_average(float* data, std::size_t count, float* receive, MPI_Comm comm) {
  // TODO(1): MPI_Comm_size / MPI_Comm_rank; return at once for one rank or count 0.
  // TODO(2): left = (r - 1) mod n, right = (r + 1) mod n (careful: % of a negative int is
  //   negative in C++).
  // TODO(3): n-1 reduce-scatter steps: MPI_Sendrecv(chunk (r - s) to right, chunk (r - 1 - s)
  //   from left into receive), then add receive into that chunk of data.
  // TODO(4): scale your owned chunk (r + 1) by 1.0f / n.
  // TODO(5): n-1 all-gather steps: MPI_Sendrecv(chunk (r + 1 - t) to right, chunk (r - t)
  //   from left straight into data).
  (void)data;
  (void)count;
  (void)receive;
  (void)comm;
  todo("exercise 06: write ring_average() in exercises/06_mpi_ring/stub.cpp");
}

}  // namespace towers::exercises
