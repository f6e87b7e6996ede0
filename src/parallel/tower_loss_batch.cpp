// SPDX-License-Identifier: MIT
#include "parallel/tower_loss_batch.hpp"

#include <stdexcept>
#include <string>

#include "model/network.hpp"

namespace towers {

namespace {

void check_batch(const Tower& tower, const data::Batch& batch) {
  if (batch.indices.size() != static_cast<std::size_t>(tower.batch_size())) {
    throw std::invalid_argument("tower_loss: tower " + std::to_string(tower.index) + " has batch " +
                                std::to_string(tower.batch_size()) + " but got a batch of " +
                                std::to_string(batch.indices.size()));
  }
}

// Every tower_loss(): check the batch, enqueue the network's forward and backward passes
// on the tower's stream (`params` flat or by layer; `layer_done`, chapter 6's per-layer
// callback, where given), then copy the losses out for the log.
template <typename Params, typename... LayerDone>
void run_tower_loss(Tower& tower, const Params& params, const data::Batch& batch,
                    const LayerDone&... layer_done) {
  check_batch(tower, batch);
  Stream& stream = *tower.stream;
  tower.network->forward_backward(stream, params, batch.images, batch.labels,
                                  tower.grads.as<float>(), layer_done...);
  stream.copy(tower.losses.data(), tower.network->losses(), sizeof(float) * model::kLossCount,
              "copy loss");
}

}  // namespace

void tower_loss(Tower& tower, const float* params, const data::Batch& batch) {
  run_tower_loss(tower, params, batch);
}

void tower_loss(Tower& tower, const float* params, const data::Batch& batch,
                const model::Network::LayerDone& layer_done) {
  run_tower_loss(tower, params, batch, layer_done);
}

void tower_loss(Tower& tower, const model::Network::LayerParams& params, const data::Batch& batch) {
  run_tower_loss(tower, params, batch);
}

void tower_forward(Tower& tower, const float* params, const data::Batch& batch) {
  check_batch(tower, batch);
  Stream& stream = *tower.stream;
  tower.network->forward(stream, params, batch.images, batch.labels);
  // The losses are final after the forward pass; the backward pass only reads them.
  stream.copy(tower.losses.data(), tower.network->losses(), sizeof(float) * model::kLossCount,
              "copy loss");
}

}  // namespace towers
