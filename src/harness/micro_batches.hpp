// SPDX-License-Identifier: MIT
// One training step over m micro-batches on one device (chapter 1's --accumulate m): the
// reference chapter 9's pipeline stages must equal bit for bit.
#pragma once

#include <string>

#include "model/network.hpp"
#include "runtime/stream.hpp"

namespace towers {

/// Enqueues forward and backward of each of `micro_batches` consecutive slices of the
/// batch (`network` is sized for one slice), adding their gradients into `grads` in
/// micro-batch order and dividing by `micro_batches` (model/gradient_accumulation.hpp).
/// `micro_grads` is [kNumParameters] scratch on the device; each micro-batch's
/// [kLossCount] losses are copied to host_losses[i * kLossCount] (pinned host memory).
void forward_backward_accumulated(Stream& stream, model::Network& network, const float* params,
                                  const float* images, const int* labels, int micro_batches,
                                  float* micro_grads, float* grads, float* host_losses);

/// The mean of the micro-batches' total losses in host_losses (after the stream is synced).
float mean_total_loss(const float* host_losses, int micro_batches);

/// "--batch-size B is not a multiple of --accumulate m: ..." when B cannot be cut into m
/// equal micro-batches; empty when it can. `flag` names the flag that sets m.
std::string micro_batch_problem(int batch_size, int micro_batches, const std::string& flag);

}  // namespace towers
