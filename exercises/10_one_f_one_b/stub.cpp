// SPDX-License-Identifier: MIT
// Exercise 10 — your code goes here. See README.md and one_f_one_b.hpp.
#include "one_f_one_b.hpp"

#include "exercises/todo.hpp"

namespace towers::exercises {

std::vector<StageOp> one_f_one_b(int stages, int micro_batches, int stage) {
  // TODO(1): the warm-up: the forwards before the steady state. The steady state begins
  //   with one more forward, then the first backward. How many forwards must come before
  //   that one so that the stage is never idle while its first backward travels?
  //   (Never more than there are micro-batches.)
  // TODO(2): the steady state: one forward, then one backward, while forwards remain.
  // TODO(3): the cool-down: the backwards left, in order.
  (void)stages;
  (void)micro_batches;
  (void)stage;
  todo("exercise 10: write one_f_one_b() in exercises/10_one_f_one_b/stub.cpp");
}

}  // namespace towers::exercises
