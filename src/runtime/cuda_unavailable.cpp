// SPDX-License-Identifier: MIT
// The CUDA backend in a build without CUDA: no devices, and a clear error if asked for.
#include <stdexcept>

#include "runtime/cuda_backend.hpp"

namespace towers {
namespace {

[[noreturn]] void no_cuda() {
  throw UsageError("this build of towers has no CUDA backend; use --backend host");
}

}  // namespace

bool cuda_compiled() { return false; }
int probe_cuda_device_count() { return 0; }
std::vector<std::unique_ptr<Device>> make_cuda_devices(int, Trace&) { no_cuda(); }
void launch_cuda_busy_kernel(const CudaLaunchContext&, double) { no_cuda(); }
Buffer allocate_cuda_shared_flags(int) { no_cuda(); }
void launch_cuda_rendezvous(const CudaLaunchContext&, int*, int, int, std::chrono::milliseconds) {
  no_cuda();
}
void launch_cuda_rendezvous_reset(const CudaLaunchContext&, int*, int) { no_cuda(); }

}  // namespace towers
