// SPDX-License-Identifier: MIT
// A stand-in kernel that keeps a device busy for a fixed time (chapter 0).
//
// On a GPU it is a kernel that spins on the GPU's clock; on a simulated device the
// worker thread sleeps, which occupies the device (its stream) but not a CPU core — the
// way a GPU kernel occupies the GPU and leaves the host free.
#pragma once

#include <string_view>

#include "runtime/stream.hpp"

namespace towers {

/// Enqueues `ms` milliseconds of device work named `name` on `stream`. Returns at once.
/// Chapter 9 names each stage's stand-in forward and backward so ("F3.0", "B3.0").
void busy_kernel(Stream& stream, double ms, std::string_view name = "busy");

}  // namespace towers
