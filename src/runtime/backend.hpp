// SPDX-License-Identifier: MIT
// Backends: where a tower's work runs.
//
// kCuda runs on real GPUs through the CUDA runtime; kHost runs on *simulated devices*:
// plain memory plus one worker thread per stream, with CUDA's ordering rules. The choice
// is made at run time (`--backend auto|cuda|host`), never by #ifdef.
#pragma once

#include <string>
#include <string_view>

// UsageError lives in the base layer; included here so that files which include this
// header for it keep compiling (new code includes base/usage_error.hpp).
#include "base/usage_error.hpp"

namespace towers {

/// Which implementation of the runtime a program uses. Introduced in chapter 0.
enum class Backend {
  kHost,  ///< simulated devices: CPU worker threads with CUDA stream semantics
  kCuda,  ///< real GPUs: CUDA streams, events, cuBLAS, NCCL
};

/// What the user asked for on the command line: a backend, or "pick for me".
enum class BackendChoice { kAuto, kHost, kCuda };

/// "host" or "cuda".
std::string_view to_string(Backend backend);

/// Parses "auto", "host" or "cuda"; throws UsageError naming the valid values otherwise.
BackendChoice parse_backend_choice(std::string_view text);

/// True when this build has the CUDA backend compiled in.
bool cuda_compiled();

/// Number of usable CUDA devices: 0 without a GPU, without a driver, or in a build
/// without CUDA. Probes once per process, because without a driver CUDA's error is
/// sticky: after the first failed call every later call fails too.
int cuda_device_count();

/// kAuto resolves to kCuda when a GPU is present, else kHost. Asking for kCuda where
/// there is none throws UsageError with a hint to use `--backend host`.
Backend resolve_backend(BackendChoice choice);

}  // namespace towers
