// SPDX-License-Identifier: MIT
// Evaluation as in cifar10_eval.py: precision @ 1 on the test set, central crops, the
// moving averages of the parameters in place of the raw ones.
#pragma once

#include <CLI/CLI.hpp>

#include "data/cifar10.hpp"
#include "model/network.hpp"
#include "runtime/device.hpp"

namespace towers {

/// Result of one evaluation pass.
struct Precision {
  long long correct = 0;      ///< predictions whose top-1 class is the label
  long long predictions = 0;  ///< num_iter * batch_size
  /// correct / predictions, as cifar10_eval.py prints it.
  double precision_at_1() const { return predictions ? double(correct) / predictions : 0.0; }
};

/// Runs ceil(test.size() / batch) batches of the network on `params` (device memory on
/// `device`; pass the moving averages to evaluate as the tutorial does). Like TF's queue,
/// the last batch wraps around to the first images, so 10,000 images give 79 x 128 =
/// 10,112 predictions. Enqueues on `stream` and synchronizes it once at the end.
Precision evaluate(Device& device, Stream& stream, model::Network& network, const float* params,
                   const data::Dataset& test);

/// Adds --eval (into `eval`): after training, evaluate as cifar10_eval.py does.
void add_eval_flag(CLI::App& app, bool& eval);

/// Prints "precision @ 1 = P (correct of predictions)", cifar10_eval.py's line.
void print_precision(const Precision& p);

}  // namespace towers
