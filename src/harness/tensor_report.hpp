// SPDX-License-Identifier: MIT
// Chapter 10's report: every device's memory ledger beside the split's closed form, and
// the bytes each collective put on the wire beside theirs (src/parallel/tensor_bytes.hpp).
//
// After the run it prints one row per device of peak bytes per category (chapter 8's
// ledger), then the closed form's row for the ranks on that device: parameters, gradients
// and moving averages of their slices (TensorSliceLayout::size(), in 4-byte floats), and
// the split layers' activations (TensorSplit::activation_floats(); the Network's own, for
// the rank's batch, come beside them and are chapter 4's). Then the bytes on the wire per
// step, counted per collective, beside the closed form and beside chapter 4's data
// parallelism on as many devices. Used from the training thread, after the last step.
#pragma once

#include "cli/summary.hpp"
#include "parallel/tensor_slices.hpp"
#include "parallel/tensor_split.hpp"
#include "runtime/link_model.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// Prints the report for a run of `steps` steps and returns its summary keys:
/// peak_<category>_bytes and peak_total_bytes (the largest over devices, chapter 8's),
/// formula_parameters_bytes, formula_gradients_bytes, formula_optimizer_state_bytes (the
/// largest device's slices), formula_split_activation_bytes (its split activations),
/// wire_bytes, wire_bytes_per_step, one wire_..._bytes_per_step for each collective the
/// mode runs (named by collective_key(): wire_g_bytes_per_step, ...),
/// formula_wire_bytes_per_step and data_parallel_wire_bytes_per_step.
/// With NCCL nothing is counted: the wire keys are left out and a line says so. Tensor
/// parallel on a simulated link (`link` limited) also gets link_model_g_ms and
/// link_model_f_ms: the link model's time per step and rank for g's and f's copies.
Summary report_tensor(Runtime& runtime, const TensorSplit& split, const TensorSlices& slices,
                      int steps, const LinkModel& link);

/// The link model's time, in ms per rank, of a ring all-reduce of `count` floats over
/// `ranks` ranks, one per device: every chunk crosses ranks - 1 links in each half.
double ring_link_ms(const LinkModel& link, int ranks, std::size_t count);

/// Prints who holds what, one line per rank (tower, in the hybrid): its images (hybrid),
/// its columns of local3 and rows of local4 with their shapes, and its slice's size. The
/// docs draw chapter 10's f/g picture from these lines (docs/_ext/towers_diagrams.py).
void print_tensor_layout(const TensorSplit& split, const TensorSlices& slices);

/// The summary key part of `collective`: "g", "f", "gather_pool2", "scatter_local4",
/// "gather_local4_gradient", "scatter_pool2_gradient", "replicated".
const char* collective_key(TensorCollective collective);

}  // namespace towers
