// SPDX-License-Identifier: MIT
#include "harness/memory_report.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "model/parameters.hpp"
#include "parallel/layer_gather.hpp"

namespace towers {
namespace {

constexpr std::array<MemoryCategory, kMemoryCategoryCount> kLedgerCategories = {
    MemoryCategory::kParameters,    MemoryCategory::kGradients,
    MemoryCategory::kOptimizerState, MemoryCategory::kActivations,
    MemoryCategory::kCommunication, MemoryCategory::kWorkspace,
    MemoryCategory::kOther};

// The categories the table shows: every one, but the runtime's workspace only where a
// device has any (on GPUs; the host backend has none, and its table stays as it was).
std::vector<MemoryCategory> shown_categories(Runtime& runtime, int devices) {
  std::vector<MemoryCategory> shown;
  for (MemoryCategory c : kLedgerCategories) {
    bool any = c != MemoryCategory::kWorkspace;
    for (int d = 0; d < devices && !any; ++d) any = runtime.device(d).memory().peak(c) > 0;
    if (any) shown.push_back(c);
  }
  return shown;
}

}  // namespace

std::string paper_example_line() {
  const ZeroSizes paper{7.5e9, 64, 2, 2, 12};
  std::string line;
  for (int stage = 0; stage <= kMaxZeroStage; ++stage) {
    char gb[32];
    std::snprintf(gb, sizeof gb, "%.1f", zero_bytes_per_device(stage, paper).total() / 1e9);
    line += (stage == 0 ? "" : " / ") + std::string(gb);
  }
  return line;
}

Summary report_memory(Runtime& runtime, int devices, int towers_per_device, int stage,
                      const ZeroSizes& sizes) {
  const std::vector<MemoryCategory> categories = shown_categories(runtime, devices);
  std::vector<std::size_t> largest(categories.size(), 0);
  std::size_t largest_total = 0;
  std::printf("\nmemory per device, peak bytes (ZeRO-%d, %d tower(s) on %d device(s), %.0f "
              "parameters):\n",
              stage, sizes.devices, devices, sizes.parameters);
  std::printf("  %-8s", "");
  for (MemoryCategory c : categories) std::printf(" %15s", std::string(category_name(c)).c_str());
  std::printf(" %15s\n", "total");
  for (int d = 0; d < devices; ++d) {
    const MemoryLedger& ledger = runtime.device(d).memory();
    std::printf("  dev%-5d", d);
    for (std::size_t i = 0; i < categories.size(); ++i) {
      const std::size_t peak = ledger.peak(categories[i]);
      largest[i] = std::max(largest[i], peak);
      std::printf(" %15zu", peak);
    }
    largest_total = std::max(largest_total, ledger.peak_total());
    std::printf(" %15zu\n", ledger.peak_total());
  }
  const ZeroBytes per_tower = zero_bytes_per_device(stage, sizes);
  const double k = towers_per_device;
  const ZeroBytes formula{per_tower.parameters * k, per_tower.gradients * k,
                          per_tower.optimizer_state * k};
  std::printf("  %-8s %15.1f %15.1f %15.1f", "formula", formula.parameters, formula.gradients,
              formula.optimizer_state);
  for (std::size_t i = 3; i < categories.size(); ++i) std::printf(" %15s", "-");
  std::printf(" %15.1f\n", formula.total());
  std::printf("  (formula: parameters, gradients and optimizer state only; activations depend on "
              "the batch, not on N)\n");
  std::printf("ZeRO paper's example, same formula (7.5e9 parameters, 64 devices, 2+2+12 bytes), "
              "stages 0/1/2/3: %s GB\n",
              paper_example_line().c_str());

  Summary summary;
  for (std::size_t i = 0; i < categories.size(); ++i) {
    summary.add("peak_" + std::string(category_name(categories[i])) + "_bytes",
                static_cast<long long>(largest[i]));
  }
  summary.add("peak_total_bytes", static_cast<long long>(largest_total));
  summary.add("formula_parameters_bytes", formula.parameters, 1)
      .add("formula_gradients_bytes", formula.gradients, 1)
      .add("formula_optimizer_state_bytes", formula.optimizer_state, 1)
      .add("formula_total_bytes", formula.total(), 1);
  return summary;
}

Summary report_zero(Runtime& runtime, int devices, int towers, int stage,
                    double optimizer_bytes, std::size_t gradient_bucket,
                    std::uint64_t wire_bytes, int steps) {
  const double psi = static_cast<double>(model::kNumParameters);
  const double window = static_cast<double>(LayerGather::window_elements());
  ZeroSizes sizes{psi, towers, 4, 4, optimizer_bytes};
  // Held whole for a moment: one bucket at a time (stage 2), the whole buffer (stage 3).
  sizes.gradient_bucket = stage >= 2 ? static_cast<double>(gradient_bucket) : 0;
  sizes.parameter_window = stage == 3 ? window : 0;
  const int towers_per_device = towers / devices;
  Summary summary = report_memory(runtime, devices, towers_per_device, stage, sizes);
  const double per_step = steps > 0 ? static_cast<double>(wire_bytes) / steps : 0.0;
  const double formula = zero_wire_bytes_per_step(
      stage, psi, towers, 4, static_cast<double>(LayerGather::backward_elements()));
  std::printf("bytes on the wire per step, all towers: %.0f counted, %.0f formula (ZeRO-%d)\n",
              per_step, formula, stage);
  summary.add("formula_gradient_bucket_bytes", 4 * sizes.gradient_bucket * towers_per_device, 1)
      .add("formula_parameter_window_bytes", 4 * sizes.parameter_window * towers_per_device, 1)
      .add("wire_bytes", static_cast<long long>(wire_bytes))
      .add("wire_bytes_per_step", per_step, 1)
      .add("formula_wire_bytes_per_step", formula, 1);
  return summary;
}

}  // namespace towers
