// SPDX-License-Identifier: MIT
// Op threads: how one host op uses more than one core.
//
// On a GPU one kernel launch spreads over every SM of the device. The host backend's
// analogue is this fork-join: an op, running on its stream's worker thread, splits its
// index range into contiguous parts, hands all but the first to helper threads, runs the
// first itself and returns when every part is done. The stream still sees one op that
// starts and ends (the trace is unchanged); the op just finishes sooner.
//
// Results never depend on the number of threads. Every host loop that splits computes
// each output element exactly as one thread would (same inputs, same order of additions)
// and no two parts write the same element; the matrix products split the rows of C, and
// each row is computed by a single-threaded BLAS call whatever the split (blas.cpp).
//
// The thread count is one setting for the whole process, 1 by default: on the host
// backend N simulated devices are already N worker threads, so the multi-device chapters
// keep 1 and use their cores through devices. Chapter 1 (one device) and bench_train
// raise it to the cores they want. Parts never split again: a parallel_for called from
// inside a part runs on the calling thread. The helper threads are the project's one
// pool (base/thread_pool.hpp); this file only holds the setting.
#pragma once

#include <cstdint>
#include <functional>

namespace towers::host {

/// Sets how many threads one host op may use, for the whole process (default 1). Starts
/// the helper threads it needs; they wait, asleep, until an op hands them work.
/// Throws UsageError when `threads` < 1.
void set_op_threads(int threads);

/// The current setting of set_op_threads().
int op_threads();

/// Calls part(begin, end) for contiguous ranges that cover [0, n) exactly once, using up
/// to op_threads() threads (the caller is one of them), each range at least `min_part`
/// long where n allows; returns when all have finished. Rethrows the first exception a
/// part threw, after every part has ended.
void parallel_for(std::int64_t n, std::int64_t min_part,
                  const std::function<void(std::int64_t begin, std::int64_t end)>& part);

}  // namespace towers::host
