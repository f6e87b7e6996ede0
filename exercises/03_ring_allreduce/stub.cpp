// SPDX-License-Identifier: MIT
// Exercise 03 — your code goes here. See README.md and ring_allreduce.hpp.
#include "ring_allreduce.hpp"

#include <stdexcept>

#include "exercises/todo.hpp"

namespace towers::exercises {

void reduce_scatter_step(Ring& ring, int step) {
  // TODO(1): for every tower r: left = (r - 1) mod N, c = (r - 1 - step) mod N (careful:
  //   % of a negative int is negative in C++). Add chunk c of buffers[left] into chunk c
  //   of buffers[r], then report Transfer{left, r, c, /*reduce=*/true}.
  (void)ring;
  (void)step;
  todo("exercise 03: write reduce_scatter_step() in exercises/03_ring_allreduce/stub.cpp");
}

void all_gather_step(Ring& ring, int step) {
  // TODO(2): like reduce_scatter_step, with chunk c = (r - step) mod N, copied, not added.
  (void)ring;
  (void)step;
  todo("exercise 03: write all_gather_step() in exercises/03_ring_allreduce/stub.cpp");
}

void ring_allreduce(Ring& ring) {
  // TODO(3): check the buffers (none, or different sizes: std::invalid_argument); run the
  //   N-1 reduce-scatter steps; scale each tower's owned chunk (r + 1) mod N by 1/N; run
  //   the N-1 all-gather steps.
  (void)ring;
  todo("exercise 03: write ring_allreduce() in exercises/03_ring_allreduce/stub.cpp");
}

}  // namespace towers::exercises
