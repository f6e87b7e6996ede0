// SPDX-License-Identifier: MIT
#include "parallel/tower_loss.hpp"

#include "data/preprocess.hpp"
#include "model/parameters.hpp"

namespace towers {

void tower_loss(Tower& tower, const float* global_images, const std::int32_t* global_labels) {
  tower_loss(tower, tower.replica->params.as<float>(), global_images, global_labels);
}

void tower_loss(Tower& tower, const float* params, const float* global_images,
                const std::int32_t* global_labels) {
  Stream& stream = *tower.stream;
  const std::size_t batch = tower.batch_size();
  const std::size_t image_floats = batch * data::kCropValues;
  // This tower's slice of the global batch: "dequeues one batch for the GPU".
  stream.copy(tower.images.data(), global_images + tower.index * image_floats,
              image_floats * sizeof(float), "copy images");
  stream.copy(tower.labels.data(), global_labels + tower.index * batch,
              batch * sizeof(std::int32_t), "copy labels");
  tower.network->forward_backward(stream, params,
                                  tower.images.as<float>(), tower.labels.as<int>(),
                                  tower.grads.as<float>());
  stream.copy(tower.losses.data(), tower.network->losses(), sizeof(float) * model::kLossCount,
              "copy loss");
}

}  // namespace towers
