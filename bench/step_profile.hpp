// SPDX-License-Identifier: MIT
// Step profile: where one training step's time goes on the host backend, by op and by
// kind of op, read off the trace.
//
// A profile runs a few steps with the trace on and groups the spans of the step's ops two
// ways: by traced name ("conv2 grad gemm", one row per layer and op) and by kind (every
// matrix product is `gemm`, every LRN pass `lrn`, ...; kinds() lists them). A fused
// convolution op is one span that does im2col, a product, bias and ReLU (or a product
// and col2im); the kind table divides such a span among those kinds in the proportions
// its phase record measured (kernels/host/phase_clock.hpp), so the products of every
// layer add up in `gemm` and the data movement around them shows on its own rows. What
// no span covers (enqueueing, waking the worker, the host's wait) is `outside`; the
// kinds and `outside` add up to the steps' wall time.
//
// Used by bench_train and tested by tests/bench/step_profile_test.cpp. The caller owns
// the runtime; profile_steps() leaves its trace disabled and empty, and the phase clock
// off.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "trace/trace.hpp"

namespace towers::bench {

/// One row of a profile: a traced op name or a kind, its calls per step and milliseconds
/// per step (means over the profiled steps). For a fused op's row, `split` holds its
/// phases' shares ("im2col 21%, gemm 74%, bias_relu 5%"); empty for the others.
struct ProfileRow {
  std::string name;
  double calls = 0;
  double ms = 0;
  std::string split;
};

/// A kind of op, as the kind table names it, and what it covers.
struct OpKind {
  const char* name;
  const char* covers;
};

/// The kinds, in the order the table prints them: gemm, im2col, col2im, elementwise,
/// bias_grad, lrn, pool, loss, optimizer, copy, other. `other` is any op not listed
/// in the others' `covers` (none in the tutorial's step).
const std::vector<OpKind>& kinds();

/// The kind of a traced op name (the last word: "conv2 grad gemv" is a gemv, so
/// bias_grad); a fused op's name gives "fused", which profile_steps() divides by phase.
std::string kind_of(const std::string& traced_name);

/// A profile of `steps` steps.
struct StepProfile {
  int steps = 0;
  double step_ms = 0;              ///< wall time per step, mean
  double ops_ms = 0;               ///< sum of every op span per step
  std::vector<ProfileRow> ops;     ///< by traced name, slowest first, fused ops whole
  std::vector<ProfileRow> kinds;   ///< by kind, in kinds() order, every kind listed
  double outside_ms = 0;           ///< step_ms - ops_ms
  int unsplit_fused = 0;           ///< fused spans without a phase record (should be 0)

  /// The row of `kind` in `kinds` (ms 0 when absent).
  double kind_ms(const std::string& kind) const;
};

/// Runs `step` (one training step on the traced runtime; returns its wall seconds)
/// `steps` times with `trace` and the phase clock on, and groups what was recorded.
StepProfile profile_steps(Trace& trace, int steps, const std::function<double()>& step);

/// Prints both tables, `label` in their heading; `#` lines and rows like bench_train's.
void print_profile(const StepProfile& profile, const std::string& label);

}  // namespace towers::bench
