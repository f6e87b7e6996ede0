// SPDX-License-Identifier: MIT
#include "harness/micro_batches.hpp"

#include <cstdio>
#include <vector>

#include "data/preprocess.hpp"
#include "harness/divergence.hpp"
#include "model/checkpoint.hpp"
#include "model/gradient_accumulation.hpp"
#include "model/parameters.hpp"

namespace towers {

void forward_backward_accumulated(Stream& stream, model::Network& network, const float* params,
                                  const float* images, const int* labels, int micro_batches,
                                  float* micro_grads, float* grads, float* host_losses) {
  const int n = static_cast<int>(model::kNumParameters);
  const int size = network.batch_size();
  model::clear_gradient_sum(stream, n, grads);
  for (int i = 0; i < micro_batches; ++i) {
    // Micro-batch i is images [i * size, (i + 1) * size) of the batch, as a pipeline's.
    network.forward_backward(stream, params,
                             images + static_cast<std::size_t>(i) * size * data::kCropValues,
                             labels + static_cast<std::size_t>(i) * size, micro_grads);
    stream.copy(host_losses + i * model::kLossCount, network.losses(),
                sizeof(float) * model::kLossCount, "copy loss");
    model::add_micro_batch_gradients(stream, n, micro_grads, grads);
  }
  model::finish_gradient_mean(stream, n, micro_batches, grads);
}

float mean_total_loss(const float* host_losses, int micro_batches) {
  double sum = 0;
  for (int i = 0; i < micro_batches; ++i) {
    sum += host_losses[i * model::kLossCount + model::kTotalLoss];
  }
  return static_cast<float>(sum / micro_batches);
}

std::string micro_batch_problem(int batch_size, int micro_batches, const std::string& flag) {
  if (batch_size % micro_batches == 0) return "";
  return "--batch-size " + std::to_string(batch_size) + " is not a multiple of " + flag + " " +
         std::to_string(micro_batches) + ": the batch is cut into that many equal " +
         "micro-batches; choose a batch size divisible by it";
}

}  // namespace towers
