// SPDX-License-Identifier: MIT
// The input pipeline's threads are the project's one pool (base/thread_pool.hpp). This
// name stays only for src/parallel/tower_inputs.hpp, which another change moves; once it
// includes base/thread_pool.hpp, delete this file.
#pragma once

#include "base/thread_pool.hpp"

namespace towers::data {

using ThreadPool = base::ThreadPool;

}  // namespace towers::data
