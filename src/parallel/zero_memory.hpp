// SPDX-License-Identifier: MIT
// ZeRO's closed form: the model-state bytes one device holds at each sharding stage
// (chapter 8). The ZeRO paper (Rajbhandari et al., 2020) and the Ultra-Scale Playbook
// count, per parameter, b_p bytes of parameters, b_g of gradients and k of optimizer
// state; Ψ parameters on N devices. Each stage shards one more of the three N ways:
//
//   stage 0 (plain data parallel)   b_p Ψ   + b_g Ψ   + k Ψ
//   stage 1 (optimizer state)       b_p Ψ   + b_g Ψ   + k Ψ/N
//   stage 2 (... and gradients)     b_p Ψ   + b_g Ψ/N + k Ψ/N
//   stage 3 (... and parameters)    b_p Ψ/N + b_g Ψ/N + k Ψ/N
//
// The paper's mixed precision has b_p = b_g = 2 (fp16) and k = 12 (fp32 master copy,
// Adam's two moments). The tutorial trains in fp32 with one moving average per
// parameter: b_p = b_g = k = 4. Chapter 8's --optimizer adds state: momentum keeps a
// velocity (k = 8), Adam two moments (k = 12, the paper's k by coincidence: there it is a
// master copy and two moments, here a moving average and two moments); see
// optimizer_state_bytes(). Activations are not in the formula: they depend on the
// batch, not on Ψ, and no stage divides them.
//
// The paper counts what a device keeps between steps. At its peak a device also holds
// what stages 2 and 3 need for a moment, and the ledger measures the peak, so the
// formula takes two transient terms (0 in the paper's count):
//   stage 2-3: + b_g B  the gradients the backward pass writes whole before they are
//                        reduce-scattered (chapter 8: at stage 2 B = the largest bucket,
//                        each bucket reduce-scattered as the backward pass finishes it;
//                        at stage 3 B = Ψ, the whole model is one bucket)
//   stage 3:   + b_p W  the gathered layers held at once (chapter 8: W = the two largest
//                        consecutive layers in the order the passes use them, since the
//                        next layer's gather is prefetched while one computes)
// Shards: N need not divide Ψ; a shard is then one element longer than Ψ/N, so a device's
// measured bytes of a sharded category lie in [formula, formula + one element per tower).
// The same function serves the tests, the chapter's summary and its printed table.
#pragma once

#include "model/optimizer_kind.hpp"

namespace towers {

/// What the formula needs to know about a run.
struct ZeroSizes {
  double parameters = 0;        ///< Ψ: number of parameters
  int devices = 1;              ///< N: devices the state is sharded over
  double parameter_bytes = 4;   ///< b_p: bytes per parameter (4: fp32)
  double gradient_bytes = 4;    ///< b_g: bytes per gradient element
  double optimizer_bytes = 4;   ///< k: bytes of optimizer state per parameter
  double gradient_bucket = 0;   ///< B: gradient elements held whole at stages 2-3 (transient)
  double parameter_window = 0;  ///< W: gathered parameter elements held at stage 3 (transient)
};

/// Bytes of each kind of model state on one device.
struct ZeroBytes {
  double parameters = 0;       ///< bytes of parameters
  double gradients = 0;        ///< bytes of gradients
  double optimizer_state = 0;  ///< bytes of optimizer state
  /// All three: the model state of one device.
  constexpr double total() const { return parameters + gradients + optimizer_state; }
};

/// k for chapter 8's optimizers, in fp32 bytes per parameter: the tutorial's moving
/// average (every optimizer keeps it) plus the optimizer's own state. SGD 4, momentum 8
/// (the velocity), Adam 12 (the two moments).
constexpr double optimizer_state_bytes(model::Optimizer optimizer) {
  return 4.0 * model::optimizer_state_floats(optimizer);
}

/// Highest ZeRO stage the formula knows.
inline constexpr int kMaxZeroStage = 3;

/// Bytes per device at ZeRO `stage` (0..3; a stage outside that range counts as 3 or 0,
/// the nearest one). Stage s shards the optimizer state from 1 on, the gradients from 2
/// on, the parameters at 3.
constexpr ZeroBytes zero_bytes_per_device(int stage, const ZeroSizes& sizes) {
  const double psi = sizes.parameters;
  const double n = sizes.devices;
  auto held = [&](int sharded_from, double bytes_per_element, double transient) {
    return stage >= sharded_from ? bytes_per_element * (psi / n + transient)
                                 : bytes_per_element * psi;
  };
  return {held(3, sizes.parameter_bytes, sizes.parameter_window),
          held(2, sizes.gradient_bytes, sizes.gradient_bucket),
          held(1, sizes.optimizer_bytes, 0)};
}

/// Bytes all N towers together send over the links in one step at ZeRO `stage`, with
/// `bytes` per element. Stages 0-2: one reduce-scatter and one all-gather of Ψ, in which
/// each tower receives the N-1 shards it does not own: 2(N-1)Ψ bytes (per tower, the
/// all-reduce's 2(N-1)/N Ψ). Stage 3: the reduce-scatter, a gather of every layer for the
/// forward pass and one of each layer the backward pass reads, `backward_parameters` of
/// them: (N-1)(2Ψ + Ψ_bwd). With Ψ_bwd = Ψ that is 1.5 times stages 0-2.
constexpr double zero_wire_bytes_per_step(int stage, double parameters, int devices,
                                          double bytes, double backward_parameters) {
  const double others = devices - 1;
  const double gathered = stage >= 3 ? parameters + backward_parameters : parameters;
  return others * (parameters + gathered) * bytes;
}

}  // namespace towers
