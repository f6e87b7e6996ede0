// SPDX-License-Identifier: MIT
// The phase clock's switch and the list of recorded splits.
#include "kernels/host/phase_clock.hpp"

#include <mutex>
#include <utility>

namespace towers::host {
namespace {

std::atomic<bool> clock_on{false};

std::mutex splits_mutex;
std::vector<PhaseSplit>& splits() {
  static std::vector<PhaseSplit> list;
  return list;
}

}  // namespace

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kIm2col: return "im2col";
    case Phase::kProduct: return "gemm";
    case Phase::kBiasRelu: return "bias_relu";
    case Phase::kCol2im: return "col2im";
    case Phase::kCount: break;
  }
  return "?";
}

void set_phase_clock(bool on) { clock_on.store(on); }

bool phase_clock_on() { return clock_on.load(std::memory_order_relaxed); }

std::vector<PhaseSplit> take_phase_splits() {
  std::lock_guard<std::mutex> lock(splits_mutex);
  return std::exchange(splits(), {});
}

PhaseRecord::~PhaseRecord() {
  if (!on_) return;
  PhaseSplit split{op_, {}};
  for (int i = 0; i < kPhaseCount; ++i) split.seconds[i] = nanoseconds_[i].load() * 1e-9;
  std::lock_guard<std::mutex> lock(splits_mutex);
  splits().push_back(std::move(split));
}

}  // namespace towers::host
