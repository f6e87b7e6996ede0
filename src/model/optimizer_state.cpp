// SPDX-License-Identifier: MIT
#include "model/optimizer_state.hpp"

#include <cmath>
#include <string>

#include "base/usage_error.hpp"
#include "model/ops.hpp"

namespace towers::model {

const char* optimizer_name(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kSgd: return "sgd";
    case Optimizer::kMomentum: return "momentum";
    case Optimizer::kAdam: return "adam";
  }
  return "sgd";
}

Optimizer parse_optimizer(const std::string& name) {
  for (Optimizer o : {Optimizer::kSgd, Optimizer::kMomentum, Optimizer::kAdam}) {
    if (name == optimizer_name(o)) return o;
  }
  throw UsageError("--optimizer " + name + " is not an optimizer this chapter has. Use "
                   "--optimizer sgd (the tutorial's, the default), momentum (one velocity "
                   "per parameter) or adam (two moments per parameter).");
}

OptimizerState::OptimizerState(Optimizer optimizer, Device& device, Stream& stream,
                               std::size_t count)
    : optimizer_(optimizer), count_(count) {
  const std::size_t floats = static_cast<std::size_t>(optimizer_own_floats(optimizer)) * count;
  if (floats == 0) return;  // SGD keeps nothing of its own: no allocation, no ledger entry
  state_ = device.allocate(floats * sizeof(float), MemoryCategory::kOptimizerState);
  ops::fill(stream, static_cast<int>(floats), 0.0f, state_.as<float>());
}

void OptimizerState::restore(Stream& stream, const float* whole, std::size_t whole_count,
                             std::size_t offset) {
  for (int p = 0; p < parts(); ++p) {
    stream.copy(part(p), whole + static_cast<std::size_t>(p) * whole_count + offset,
                count_ * sizeof(float), "restore optimizer state");
  }
}

void OptimizerState::apply(Stream& stream, std::int64_t global_step, float learning_rate,
                           const float* grads, float* params) {
  const int n = static_cast<int>(count_);
  switch (optimizer_) {
    case Optimizer::kSgd:
      ops::sgd_update(stream, n, learning_rate, grads, params);
      return;
    case Optimizer::kMomentum:
      // A constant gradient g grows the velocity to g / (1 - momentum), ten times g. The
      // tutorial's rate was tuned for plain SGD, so momentum takes it times (1 - momentum):
      // once the velocity has settled, the same step SGD would take.
      ops::momentum_update(stream, n, learning_rate * (1.0f - kMomentum), kMomentum, grads,
                           state_.as<float>(), params);
      return;
    case Optimizer::kAdam: {
      // Adam divides by the gradient's own scale, so each parameter moves by about the
      // learning rate per step whatever its gradient: the tutorial's 0.1 would be a huge
      // step for every weight. It uses 0.001 (the Adam paper's default), decaying on the
      // tutorial's schedule. Both moments start at 0, biased towards 0 for the first steps;
      // the correction sqrt(1 - beta2^t) / (1 - beta1^t), t = step + 1, is one scalar per
      // step, folded into the step size here on the host (in double, then rounded once),
      // as TensorFlow's AdamOptimizer does: every tower and every shard gets the same float.
      math::AdamScalars s;
      const double t = static_cast<double>(global_step) + 1.0;
      const double correction = std::sqrt(1.0 - std::pow(static_cast<double>(s.beta2), t)) /
                                (1.0 - std::pow(static_cast<double>(s.beta1), t));
      s.step_size = static_cast<float>(learning_rate * kAdamLearningRateScale * correction);
      float* m = state_.as<float>();
      ops::adam_update(stream, n, s, grads, m, m + count_, params);
      return;
    }
  }
}

}  // namespace towers::model
