// SPDX-License-Identifier: MIT
#include "harness/tensor_report.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "parallel/tensor_bytes.hpp"

namespace towers {
namespace {

// The table's columns: every category but the runtime's workspace. (Sized to its six
// entries: an array of all seven left the last one zero, kParameters, a second time.)
constexpr std::array<MemoryCategory, 6> kTensorTableCategories = {
    MemoryCategory::kParameters,    MemoryCategory::kGradients,
    MemoryCategory::kOptimizerState, MemoryCategory::kActivations,
    MemoryCategory::kCommunication, MemoryCategory::kOther};

// The collectives each mode runs, in the order of a step.
std::vector<TensorCollective> collectives_of(TensorMode mode) {
  if (mode == TensorMode::kTensorParallel) return {TensorCollective::kG, TensorCollective::kF};
  return {TensorCollective::kGatherPool2, TensorCollective::kScatterLocal4,
          TensorCollective::kGatherLocal4Gradient, TensorCollective::kScatterPool2Gradient,
          TensorCollective::kReplicated};
}

}  // namespace

const char* collective_key(TensorCollective collective) {
  switch (collective) {
    case TensorCollective::kG: return "g";
    case TensorCollective::kF: return "f";
    case TensorCollective::kGatherPool2: return "gather_pool2";
    case TensorCollective::kScatterLocal4: return "scatter_local4";
    case TensorCollective::kGatherLocal4Gradient: return "gather_local4_gradient";
    case TensorCollective::kScatterPool2Gradient: return "scatter_pool2_gradient";
    default: return "replicated";
  }
}

void print_tensor_layout(const TensorSplit& split, const TensorSlices& slices) {
  const bool hybrid = split.mode() == TensorMode::kHybrid;
  const int b = split.batch_size();
  if (hybrid) {
    std::printf("hybrid: %d tower(s) of %d images; local3 and local4 split over all %d rows\n",
                split.ranks(), b, split.rows());
  } else {
    std::printf("tensor parallel: %d rank(s), each on the same %d images\n", split.ranks(), b);
  }
  for (int r = 0; r < split.ranks(); ++r) {
    const TensorSliceLayout& layout = slices.layout(r);
    const Chunk cols = layout.columns();
    const std::size_t first = cols.offset, last = cols.offset + cols.size - 1;
    std::printf("  %s %d: ", hybrid ? "tower" : "rank", r);
    if (hybrid) std::printf("images %d-%d, ", r * b, (r + 1) * b - 1);
    std::printf("local3 columns %zu-%zu [%lld x %zu], local4 rows %zu-%zu [%zu x %lld]; "
                "replicated %zu, slice %zu floats\n",
                first, last, static_cast<long long>(kTensorInputWidth), cols.size, first, last,
                cols.size, static_cast<long long>(kTensorOutputWidth),
                TensorSliceLayout::replicated_floats(), layout.size());
  }
}

double ring_link_ms(const LinkModel& link, int ranks, std::size_t count) {
  double seconds = 0;
  for (int k = 0; k < ranks; ++k) {
    const Chunk chunk = ring_chunk(count, ranks, k);
    seconds += 2.0 * (ranks - 1) * link.seconds(chunk.size * sizeof(float));
  }
  return 1000.0 * seconds / ranks;
}

Summary report_tensor(Runtime& runtime, const TensorSplit& split, const TensorSlices& slices,
                      int steps, const LinkModel& link) {
  const int ranks = split.ranks();
  const bool hybrid = split.mode() == TensorMode::kHybrid;
  // The closed form per device: the slices (and split activations) of the ranks on it.
  const int devices = std::min(ranks, runtime.device_count());
  std::vector<double> slice_bytes(devices, 0.0), activation_bytes(devices, 0.0);
  for (int r = 0; r < ranks; ++r) {
    const int d = r % devices;
    const TensorSliceLayout& layout = slices.layout(r);
    slice_bytes[d] += 4.0 * static_cast<double>(layout.size());
    activation_bytes[d] += 4.0 * static_cast<double>(TensorSplit::activation_floats(
                                     split.mode(), ranks, split.batch_size(), layout.columns().size));
  }
  std::printf("\nmemory per device, peak bytes (%s, %d %s of batch %d on %d device(s)):\n",
              hybrid ? "hybrid" : "tensor parallel", ranks, hybrid ? "tower(s)" : "rank(s)",
              split.batch_size(), devices);
  std::printf("  %-8s", "");
  for (MemoryCategory c : kTensorTableCategories) std::printf(" %15s", std::string(category_name(c)).c_str());
  std::printf(" %15s\n", "total");
  std::array<std::size_t, kMemoryCategoryCount> largest{};
  std::size_t largest_total = 0;
  for (int d = 0; d < devices; ++d) {
    const MemoryLedger& ledger = runtime.device(d).memory();
    std::printf("  dev%-5d", d);
    for (std::size_t i = 0; i < kTensorTableCategories.size(); ++i) {
      const std::size_t peak = ledger.peak(kTensorTableCategories[i]);
      largest[i] = std::max(largest[i], peak);
      std::printf(" %15zu", peak);
    }
    largest_total = std::max(largest_total, ledger.peak_total());
    std::printf(" %15zu\n", ledger.peak_total());
    std::printf("  %-8s %15.0f %15.0f %15.0f %15s %15s %15s\n", "formula", slice_bytes[d],
                slice_bytes[d], slice_bytes[d], "-", "-", "-");
  }
  std::printf("  (formula: each rank's slice of the parameters, gradients and moving averages; "
              "the activations are the Network's for %d images, as chapter 4's tower holds, "
              "plus %.0f bytes of the split layers' per device)\n",
              split.batch_size(), *std::max_element(activation_bytes.begin(), activation_bytes.end()));

  Summary summary;
  for (std::size_t i = 0; i < kTensorTableCategories.size(); ++i) {
    summary.add("peak_" + std::string(category_name(kTensorTableCategories[i])) + "_bytes",
                static_cast<long long>(largest[i]));
  }
  const double formula_slices = *std::max_element(slice_bytes.begin(), slice_bytes.end());
  summary.add("peak_total_bytes", static_cast<long long>(largest_total))
      .add("formula_parameters_bytes", formula_slices, 1)
      .add("formula_gradients_bytes", formula_slices, 1)
      .add("formula_optimizer_state_bytes", formula_slices, 1)
      .add("formula_split_activation_bytes",
           *std::max_element(activation_bytes.begin(), activation_bytes.end()), 1);

  // Bytes on the wire, all devices together, per step.
  const int b = split.batch_size();
  if (!hybrid && link.limited() && ranks > 1) {  // g's and f's copies under the link model
    const auto rows = static_cast<std::size_t>(b);
    summary.add("link_model_g_ms", ring_link_ms(link, ranks, rows * kTensorOutputWidth), 3)
        .add("link_model_f_ms", ring_link_ms(link, ranks, rows * kTensorInputWidth), 3);
  }
  const double formula = 4.0 * static_cast<double>(hybrid ? hybrid_wire_floats(ranks, b)
                                                          : tensor_wire_floats(ranks, b));
  const double data_parallel = 4.0 * static_cast<double>(data_parallel_wire_floats(ranks));
  if (split.collectives_name() != "ring") {
    std::printf("bytes on the wire: not counted (NCCL moves them); formula %.0f per step\n",
                formula);
    return summary.add("formula_wire_bytes_per_step", formula, 1)
        .add("data_parallel_wire_bytes_per_step", data_parallel, 1);
  }
  const double per = steps > 0 ? 1.0 / steps : 0.0;
  std::printf("bytes on the wire per step, all devices:");
  for (TensorCollective c : collectives_of(split.mode())) {
    const double bytes = static_cast<double>(split.wire_bytes(c)) * per;
    std::printf(" %s %.0f,", collective_key(c), bytes);
    summary.add("wire_" + std::string(collective_key(c)) + "_bytes_per_step", bytes, 1);
  }
  const double counted = static_cast<double>(split.wire_bytes()) * per;
  std::printf(" total %.0f counted, %.0f formula; data parallel (chapter 4) on %d devices: %.0f\n",
              counted, formula, ranks, data_parallel);
  return summary.add("wire_bytes", static_cast<long long>(split.wire_bytes()))
      .add("wire_bytes_per_step", counted, 1)
      .add("formula_wire_bytes_per_step", formula, 1)
      .add("data_parallel_wire_bytes_per_step", data_parallel, 1);
}

}  // namespace towers
