// SPDX-License-Identifier: MIT
#include "runtime/backend.hpp"

#include "runtime/cuda_backend.hpp"

namespace towers {

std::string_view to_string(Backend backend) {
  return backend == Backend::kCuda ? "cuda" : "host";
}

BackendChoice parse_backend_choice(std::string_view text) {
  if (text == "auto") return BackendChoice::kAuto;
  if (text == "host") return BackendChoice::kHost;
  if (text == "cuda") return BackendChoice::kCuda;
  throw UsageError("unknown backend '" + std::string(text) +
                   "'. Use --backend auto (a GPU if there is one), cuda or host.");
}

int cuda_device_count() {
  // A function-local static: probed once, thread-safely, on first use.
  static const int count = probe_cuda_device_count();
  return count;
}

Backend resolve_backend(BackendChoice choice) {
  switch (choice) {
    case BackendChoice::kHost:
      return Backend::kHost;
    case BackendChoice::kCuda:
      if (!cuda_compiled()) {
        throw UsageError("--backend cuda: this build of towers has no CUDA backend. "
                         "Rebuild with the CUDA toolkit installed, or use --backend host.");
      }
      if (cuda_device_count() == 0) {
        throw UsageError("--backend cuda: no CUDA device found (no GPU or no driver). "
                         "Use --backend host to run on simulated devices.");
      }
      return Backend::kCuda;
    case BackendChoice::kAuto:
      break;
  }
  return cuda_device_count() > 0 ? Backend::kCuda : Backend::kHost;
}

}  // namespace towers
