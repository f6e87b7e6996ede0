// SPDX-License-Identifier: MIT
// The activation bytes a model::Network of batch b allocates, as chapter 8's ledger counts
// them on a host device: what chapters 10's and 11's byte counts are checked against.
#pragma once

#include "model/network.hpp"
#include "runtime/runtime.hpp"

namespace towers::testing {

inline long long allocated_network_activation_bytes(int b) {
  RuntimeOptions options;
  options.backend = BackendChoice::kHost;
  options.devices = 1;
  auto runtime = Runtime::create(options);
  Device& device = runtime->device(0);
  model::Network net(device, b);
  return static_cast<long long>(device.memory().current(MemoryCategory::kActivations));
}

}  // namespace towers::testing
