// SPDX-License-Identifier: MIT
// The op-thread setting over the project's one pool (base/thread_pool.hpp): the helper
// threads every op of the process shares, started by the first setting above 1.
#include "kernels/host/parallel.hpp"

#include <atomic>
#include <string>

#include "base/thread_pool.hpp"
#include "base/usage_error.hpp"

namespace towers::host {
namespace {

std::atomic<int> configured_threads{1};

// Created by the first setting above 1 (never in a process that keeps the default), so
// every parallel_for that splits finds it there.
base::ThreadPool& helpers() {
  static base::ThreadPool pool(1);
  return pool;
}

}  // namespace

void set_op_threads(int threads) {
  if (threads < 1) {
    throw UsageError("host op threads must be at least 1, got " + std::to_string(threads));
  }
  // The calling thread is one of an op's threads: `threads` threads need threads - 1 helpers.
  if (threads > 1) helpers().grow(threads - 1);
  configured_threads.store(threads);
}

int op_threads() { return configured_threads.load(); }

void parallel_for(std::int64_t n, std::int64_t min_part,
                  const std::function<void(std::int64_t, std::int64_t)>& part) {
  const int threads = op_threads();
  if (threads == 1 || n <= min_part) {
    if (n > 0) part(0, n);  // one part: no need to touch the pool
    return;
  }
  helpers().parallel_for(n, min_part, threads, part);
}

}  // namespace towers::host
