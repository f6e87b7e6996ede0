// SPDX-License-Identifier: MIT
// Turning on direct peer access between GPUs, and carrying on when a pair refuses.
//
// With peer access enabled a GPU reads and writes another's memory over NVLink or PCIe;
// without it, cudaMemcpyPeerAsync and cudaMemcpyDefault copies still work (the driver
// stages them), only slower. So a pair that reports it can access its peer but then fails
// to enable it (too many peers, an IOMMU, a virtualized GPU) is no reason to stop: the
// runtime falls back to staged copies for that pair and says so once, on stderr.
//
// The logic is written against PeerLinks, not CUDA, so it is tested on the host with a
// fake (tests/runtime/peer_access_test.cpp); src/runtime/cuda implements PeerLinks.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace towers {

/// What the runtime asks of the hardware about direct access between two devices.
class PeerLinks {
 public:
  virtual ~PeerLinks() = default;
  /// Whether device `from` can address device `to`'s memory (cudaDeviceCanAccessPeer).
  virtual bool can_access(int from, int to) = 0;
  /// Enables it (cudaDeviceEnablePeerAccess); "" on success or when already enabled,
  /// else the reason it failed. Must leave no error behind for later calls.
  virtual std::string enable(int from, int to) = 0;
};

/// One ordered pair whose peer access could not be enabled, and why.
struct PeerFailure {
  int from = 0;        ///< the device that would read or write its peer's memory
  int to = 0;          ///< the peer device
  std::string reason;  ///< what CUDA (or the fake) said
};

/// Enables peer access for every ordered pair of `count` devices that can access each
/// other. Never throws for a failed enable: returns the failures, after writing one line
/// naming them all to `log` (nothing when there are none; null `log`: silent).
std::vector<PeerFailure> enable_peer_access(int count, PeerLinks& links, std::FILE* log);

}  // namespace towers
