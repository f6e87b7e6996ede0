// SPDX-License-Identifier: MIT
// LinkModel: a simulated interconnect between the host backend's devices (chapter 6).
//
// Simulated devices copy at memory speed, so communication costs almost nothing and there
// is little for an overlap to hide. With a link model, a *peer* copy (source and
// destination on two different simulated devices) takes the time a link would:
//
//   t(bytes) = latency + 8 * bytes / (gbps * 10^9)      seconds, gbps in gigabits/s
//
// The copy itself runs at memory speed; the stream's worker then sleeps until t after the
// copy started, so the transfer holds no core while it "travels", as a DMA engine's does.
// When the memcpy alone takes longer than t, the copy takes that long (no sleep).
// What the model leaves out: every copy gets the full bandwidth (no sharing between
// copies at the same time, full duplex), and copies to or from pinned host memory or
// within one device are not slowed. Examples: 10 GbE ~ 10, PCIe 4.0 x16 ~ 256, NVLink 3
// ~ 4800 Gb/s. On the cuda backend the real link is used: asking for a model there is a
// usage error.
#pragma once

#include <cstddef>

namespace towers {

/// The link between simulated devices: `--link-gbps`, `--link-latency-us`.
struct LinkModel {
  double gbps = 0;        ///< bandwidth in gigabits per second; 0: unlimited (no model)
  double latency_us = 0;  ///< added to every peer copy, microseconds
  /// `--link-gbps auto`: the bandwidth is still to be chosen from this machine's compute
  /// (harness/link_sizing.hpp) before the runtime is made; Runtime::create refuses it.
  bool sized_to_compute = false;

  /// Whether peer copies are slowed at all.
  bool limited() const { return gbps > 0 || latency_us > 0; }
  /// Whether a link model was asked for: limited(), or `auto` still to be sized.
  bool asked() const { return limited() || sized_to_compute; }
  /// Seconds a peer copy of `bytes` takes under this model (the formula above).
  double seconds(std::size_t bytes) const {
    const double transfer = gbps > 0 ? 8.0 * static_cast<double>(bytes) / (gbps * 1e9) : 0.0;
    return latency_us * 1e-6 + transfer;
  }
};

}  // namespace towers
