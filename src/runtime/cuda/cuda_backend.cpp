// SPDX-License-Identifier: MIT
// The CUDA side of the seam in runtime/cuda_backend.hpp.
#include "runtime/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <cstring>

#include "kernels/cuda/check.hpp"
#include "runtime/cuda/cuda_device.hpp"

namespace towers {

bool cuda_compiled() { return true; }

int probe_cuda_device_count() {
  int count = 0;
  // Without a GPU or driver this fails (cudaErrorInsufficientDriver, or NoDevice), and
  // the error is sticky: we ask once and never touch CUDA again. Not an error for us.
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

std::vector<std::unique_ptr<Device>> make_cuda_devices(int count, Trace& trace) {
  std::vector<std::unique_ptr<Device>> devices;
  for (int i = 0; i < count; ++i) devices.push_back(std::make_unique<CudaDevice>(i, trace));
  // Let every GPU read and write every other's memory directly where the hardware
  // allows it; elsewhere peer copies are staged through the host by the driver.
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < count; ++j) {
      int can_access = 0;
      if (i == j) continue;
      CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access, i, j));
      if (!can_access) continue;
      CUDA_CHECK(cudaSetDevice(i));
      cudaError_t status = cudaDeviceEnablePeerAccess(j, 0);
      if (status == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();  // not sticky; already what we want
      } else {
        CUDA_CHECK(status);
      }
    }
  }
  return devices;
}

Buffer allocate_cuda_shared_flags(int ints) {
  void* data = nullptr;
  const std::size_t bytes = sizeof(int) * static_cast<std::size_t>(ints);
  // Mapped + portable pinned memory: one address every GPU and the host can use.
  CUDA_CHECK(cudaHostAlloc(&data, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(data, 0, bytes);
  return Buffer(data, bytes, [](void* p) { (void)cudaFreeHost(p); });
}

}  // namespace towers
