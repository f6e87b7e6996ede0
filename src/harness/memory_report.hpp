// SPDX-License-Identifier: MIT
// MemoryReport: chapter 8's ledger beside ZeRO's formula, as a table and summary keys.
//
// After the run it reads every device's memory ledger (Device::memory()) and prints one
// row per device of peak bytes per category, then the closed form's row for the same
// stage, N and Ψ (src/parallel/zero_memory.hpp), then the ZeRO paper's own example from
// the same function. Its summary keys hold the largest peak over devices per category
// (devices differ by at most one element of each shard) and the formula's values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cli/summary.hpp"
#include "parallel/zero_memory.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// Prints the ledger table of `runtime`'s first `devices` devices against
/// zero_bytes_per_device(stage, sizes) times `towers_per_device` (each tower is one of
/// the N ranks the state is sharded over; towers sharing a device add up); returns the
/// summary keys
/// peak_<category>_bytes (every category; workspace only where a device has any: on
/// GPUs), peak_total_bytes and
/// formula_<parameters|gradients|optimizer_state|total>_bytes.
Summary report_memory(Runtime& runtime, int devices, int towers_per_device, int stage,
                      const ZeroSizes& sizes);

/// Chapter 8's report for a run of `towers` towers on the first `devices` devices at ZeRO
/// `stage` of the tutorial model, with `optimizer_bytes` of optimizer state per parameter
/// (optimizer_state_bytes(--optimizer)): report_memory() with the transient terms this chapter's
/// stages hold (at stages 2-3 the `gradient_bucket` gradients a tower holds whole at once:
/// the largest bucket at stage 2, all of them at stage 3; LayerGather's window at stage
/// 3), then the bytes on the wire: `wire_bytes` counted over `steps` steps beside
/// zero_wire_bytes_per_step. Adds to report_memory's keys formula_gradient_bucket_bytes,
/// formula_parameter_window_bytes, wire_bytes, wire_bytes_per_step and
/// formula_wire_bytes_per_step (the formula for one tower per device: towers sharing a
/// device copy to each other over no link).
Summary report_zero(Runtime& runtime, int devices, int towers, int stage,
                    double optimizer_bytes, std::size_t gradient_bucket,
                    std::uint64_t wire_bytes, int steps);

/// The ZeRO paper's example (Ψ = 7.5 B, N = 64, 2 + 2 + 12 bytes per parameter) for
/// stages 0..3 in GB, one line, from zero_bytes_per_device: "120.0 / 31.4 / 16.6 / 1.9".
std::string paper_example_line();

}  // namespace towers
