// SPDX-License-Identifier: MIT
// The CUDA side of the seam in runtime/cuda_backend.hpp.
#include "runtime/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/cuda/check.hpp"
#include "runtime/cuda/cuda_device.hpp"
#include "runtime/cuda_environment.hpp"
#include "runtime/peer_access.hpp"

namespace towers {

bool cuda_compiled() { return true; }

int probe_cuda_device_count() {
  // The first CUDA call of a program, so the last moment to set what CUDA reads when it
  // starts (runtime/cuda_environment.hpp: more hardware queues; module loading stays lazy).
  apply_cuda_environment();
  int count = 0;
  // Without a GPU or driver this fails (cudaErrorInsufficientDriver, or NoDevice), and
  // the error is sticky: we ask once and never touch CUDA again. Not an error for us.
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

namespace {

// PeerLinks on real GPUs: one checked CUDA call each.
class CudaPeerLinks final : public PeerLinks {
 public:
  bool can_access(int from, int to) override {
    int can = 0;
    CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
    return can != 0;
  }
  std::string enable(int from, int to) override {
    CUDA_CHECK(cudaSetDevice(from));
    const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
    if (status == cudaSuccess) return "";
    // Not sticky (already enabled, too many peers, unsupported): clear it, so that the
    // next checked call does not report it as its own.
    (void)cudaGetLastError();
    if (status == cudaErrorPeerAccessAlreadyEnabled) return "";  // already what we want
    return cudaGetErrorName(status);
  }
};

}  // namespace

std::vector<std::unique_ptr<Device>> make_cuda_devices(int count, Trace& trace) {
  std::vector<std::unique_ptr<Device>> devices;
  for (int i = 0; i < count; ++i) {
    devices.push_back(std::make_unique<CudaDevice>(i, trace));
    // Before any probe can spin: loading a kernel lazily at its first launch may need the
    // context to synchronize, which would wait for a probe spinning on that very launch.
    preload_cuda_probe_kernels(i);
  }
  // Let every GPU read and write every other's memory directly where the hardware
  // allows it; elsewhere, and where enabling fails, peer copies are staged through the
  // host by the driver. A failure is reported once and is not an error.
  CudaPeerLinks links;
  (void)enable_peer_access(count, links, stderr);
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
