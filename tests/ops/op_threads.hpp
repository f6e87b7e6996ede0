// SPDX-License-Identifier: MIT
// OpThreads: sets how many threads a host op may use for one scope (parallel.hpp), and
// puts back the default, 1, when the scope ends, so no test leaks its setting.
#pragma once

#include "kernels/host/parallel.hpp"

namespace towers::testing {

class OpThreads {
 public:
  explicit OpThreads(int threads) { host::set_op_threads(threads); }
  ~OpThreads() { host::set_op_threads(1); }
  OpThreads(const OpThreads&) = delete;
  OpThreads& operator=(const OpThreads&) = delete;
};

}  // namespace towers::testing
