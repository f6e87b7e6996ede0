// SPDX-License-Identifier: MIT
// What the grader of exercise 05 calls: the graded max_pool_input_grad (the stub, the
// solution or a mutant), compiled in graded_call.cpp, the one file that includes it. The
// tests (grader_test.cpp) then compile once for every graded header, and the graded header
// is compiled without kernels/math/pool.hpp, the reference it is compared with.
#pragma once

#include "kernels/math/shape.hpp"

namespace towers::exercises {

/// The graded header's max_pool_input_grad(i, dy, argmax, in).
float graded_input_grad(int i, const float* dy, const int* argmax, math::Nhwc in);

/// The path of the graded header, whose text the grader checks for library shortcuts.
const char* graded_source_file();

}  // namespace towers::exercises
