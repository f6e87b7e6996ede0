// SPDX-License-Identifier: MIT
#include "harness/evaluate.hpp"

#include <cstdio>
#include <numeric>
#include <span>
#include <vector>

#include "data/preprocess.hpp"

namespace towers {

Precision evaluate(Device& device, Stream& stream, model::Network& network, const float* params,
                   const data::Dataset& test) {
  const int batch = network.batch_size();
  const long long num_iter = (static_cast<long long>(test.size()) + batch - 1) / batch;
  const std::size_t image_floats = static_cast<std::size_t>(batch) * data::kCropValues;
  // Two pinned host batches: the host preprocesses batch k+1 while the device runs k.
  Buffer host_images[2] = {device.allocate_pinned(image_floats * sizeof(float)),
                           device.allocate_pinned(image_floats * sizeof(float))};
  Buffer host_labels[2] = {device.allocate_pinned(batch * sizeof(std::int32_t)),
                           device.allocate_pinned(batch * sizeof(std::int32_t))};
  Buffer images = device.allocate(image_floats * sizeof(float));
  Buffer labels = device.allocate(batch * sizeof(std::int32_t));
  Buffer correct = device.allocate_pinned(num_iter * sizeof(float));
  auto copied = device.create_wait_event();
  std::vector<std::size_t> indices(batch);
  for (long long step = 0; step < num_iter; ++step) {
    const int slot = step % 2;
    for (int i = 0; i < batch; ++i) indices[i] = (step * batch + i) % test.size();
    // The pinned slot was last read by the copy two batches ago. Waiting for the most
    // recent copy covers it: a stream runs its copies in order.
    if (step >= 2) copied->synchronize();
    data::fill_batch(test, indices, data::Mode::kEval, 0, 0, host_images[slot].as<float>(),
                     host_labels[slot].as<std::int32_t>());
    stream.copy(images.data(), host_images[slot].data(), image_floats * sizeof(float), "copy images");
    stream.copy(labels.data(), host_labels[slot].data(), batch * sizeof(std::int32_t), "copy labels");
    stream.record(*copied);
    network.predict(stream, params, images.as<float>(), labels.as<int>());
    stream.copy(correct.as<float>() + step, network.correct_count(), sizeof(float), "copy count");
  }
  stream.synchronize();
  Precision result;
  for (long long step = 0; step < num_iter; ++step) {
    result.correct += static_cast<long long>(correct.as<float>()[step]);
  }
  result.predictions = num_iter * batch;
  return result;
}

void add_eval_flag(CLI::App& app, bool& eval) {
  app.add_flag("--eval", eval, "after training, print precision @ 1 on the test set "
                               "(moving averages of the parameters, as cifar10_eval.py)");
}

void print_precision(const Precision& p) {
  std::printf("precision @ 1 = %.3f (%lld of %lld)\n", p.precision_at_1(), p.correct, p.predictions);
}

}  // namespace towers
