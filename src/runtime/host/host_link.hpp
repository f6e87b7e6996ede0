// SPDX-License-Identifier: MIT
// HostLink: the simulated interconnect shared by one runtime's host devices.
//
// It holds the LinkModel and a map from device allocations to the device that owns them,
// so a stream can tell a peer copy (two devices) from a local one. Devices register each
// allocation and forget it when freed. Thread-safe: any stream's enqueue may look up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "runtime/link_model.hpp"

namespace towers {

/// The link model plus who owns which device memory.
class HostLink {
 public:
  /// A link that slows peer copies as `model` says; no allocations known yet.
  explicit HostLink(LinkModel model) : model_(model) {}

  /// The bandwidth and latency peer copies are charged.
  const LinkModel& model() const { return model_; }
  /// Records that [data, data + bytes) is device `device`'s memory.
  void add(const void* data, std::size_t bytes, int device);
  /// Forgets the allocation starting at `data`.
  void remove(const void* data);
  /// The device owning `address`, or -1 (pinned host memory, or unknown).
  int owner(const void* address) const;
  /// Seconds the copy dst <- src of `bytes` takes on the link; 0 unless src and dst are
  /// on two different devices.
  double copy_seconds(void* dst, const void* src, std::size_t bytes) const;

 private:
  LinkModel model_;
  mutable std::mutex mutex_;
  // first address -> (one past the last, device)
  std::map<std::uintptr_t, std::pair<std::uintptr_t, int>> ranges_;
};

}  // namespace towers
