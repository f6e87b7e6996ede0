// SPDX-License-Identifier: MIT
#include "runtime/runtime.hpp"

#include <string>
#include <system_error>

#include "runtime/cuda_backend.hpp"
#include "runtime/host/host_device.hpp"
#include "trace/trace.hpp"

namespace towers {

std::unique_ptr<Runtime> Runtime::create(const RuntimeOptions& options) {
  if (options.devices && *options.devices < 1) {
    throw UsageError("--devices must be at least 1 (got " + std::to_string(*options.devices) +
                     "); leave it out to use the default.");
  }
  const Backend backend = resolve_backend(options.backend);
  if (options.link.sized_to_compute) {
    throw UsageError("--link-gbps auto sizes the link to a tower's backward pass, and this "
                     "program trains no towers it could measure. Give a bandwidth instead, "
                     "e.g. --link-gbps 10.");
  }
  auto trace = std::make_shared<Trace>();
  std::vector<std::unique_ptr<Device>> devices;
  if (backend == Backend::kHost) {
    const int count = options.devices.value_or(kDefaultHostDevices);
    auto link = options.link.limited() ? std::make_shared<HostLink>(options.link) : nullptr;
    for (int i = 0; i < count; ++i) {
      try {
        devices.push_back(std::make_unique<HostDevice>(i, *trace, kHostDeviceMemoryBytes, link));
      } catch (const std::system_error& e) {  // each simulated device starts threads
        throw UsageError("--devices " + std::to_string(count) + ": could not start simulated device " +
                         std::to_string(i) + " (" + e.what() + "); this machine allows fewer "
                         "threads. Use fewer --devices.");
      }
    }
  } else {
    if (options.link.limited()) {
      throw UsageError("--link-gbps and --link-latency-us model the link between simulated "
                       "devices; on GPUs the real link is used. Leave them out, or add "
                       "--backend host.");
    }
    const int available = cuda_device_count();
    const int count = options.devices.value_or(available);
    if (count > available) {
      throw UsageError("--devices " + std::to_string(count) + ": only " + std::to_string(available) +
                       " CUDA device(s) found. Use --devices " + std::to_string(available) +
                       " (several towers can share one GPU with --towers-per-device), or "
                       "--backend host to simulate more devices.");
    }
    devices = make_cuda_devices(count, *trace);
  }
  return std::make_unique<Runtime>(backend, std::move(devices), std::move(trace));
}

Runtime::Runtime(Backend backend, std::vector<std::unique_ptr<Device>> devices,
                 std::shared_ptr<Trace> trace)
    : backend_(backend), trace_(std::move(trace)), devices_(std::move(devices)) {}

Runtime::~Runtime() = default;

void Runtime::synchronize() {
  for (auto& device : devices_) device->synchronize();
}

}  // namespace towers
