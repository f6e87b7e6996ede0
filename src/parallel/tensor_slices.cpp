// SPDX-License-Identifier: MIT
#include "parallel/tensor_slices.hpp"

#include <stdexcept>
#include <string>

#include "model/parameters.hpp"

namespace towers {
namespace {

using model::parameter;

// The split layers' shapes, read from the model's own layout.
std::size_t local3_inputs() { return static_cast<std::size_t>(parameter("local3/weights").shape[0]); }
std::size_t local3_outputs() { return static_cast<std::size_t>(parameter("local3/weights").shape[1]); }
std::size_t local4_outputs() { return static_cast<std::size_t>(parameter("local4/weights").shape[1]); }

}  // namespace

TensorSliceLayout::TensorSliceLayout(int ranks, int rank) {
  const int columns = static_cast<int>(local3_outputs());
  if (ranks < 1 || ranks > columns || rank < 0 || rank >= ranks) {
    throw std::invalid_argument("TensorSliceLayout: rank " + std::to_string(rank) + " of " +
                                std::to_string(ranks) + " (ranks must be 1.." +
                                std::to_string(columns) + ": local3 has " +
                                std::to_string(columns) + " columns to split)");
  }
  columns_ = ring_chunk(local3_outputs(), ranks, rank);
}

std::size_t TensorSliceLayout::conv_floats() { return parameter("local3/weights").offset; }

std::size_t TensorSliceLayout::local4_biases_at() { return conv_floats(); }

std::size_t TensorSliceLayout::softmax_at() { return local4_biases_at() + local4_outputs(); }

std::size_t TensorSliceLayout::softmax_flat_offset() {
  return parameter("softmax_linear/weights").offset;
}

std::size_t TensorSliceLayout::replicated_floats() {
  return softmax_at() + (model::kNumParameters - softmax_flat_offset());
}

std::size_t TensorSliceLayout::split_floats_per_column() {
  return local3_inputs() + 1 + local4_outputs();
}

std::size_t TensorSliceLayout::size() const {
  return replicated_floats() + split_floats_per_column() * columns_.size;
}

std::size_t TensorSliceLayout::local3_biases_at() const {
  return local3_weights_at() + local3_inputs() * columns_.size;
}

std::size_t TensorSliceLayout::local4_weights_at() const {
  return local3_biases_at() + columns_.size;
}

void TensorSliceLayout::take(const float* whole, float* slice) const {
  const std::size_t c = columns_.size, first = columns_.offset;
  const std::size_t out3 = local3_outputs(), out4 = local4_outputs();
  // The replicated prefix: the convolutions, local4's biases, softmax_linear.
  for (std::size_t i = 0; i < conv_floats(); ++i) slice[i] = whole[i];
  const float* biases4 = whole + parameter("local4/biases").offset;
  for (std::size_t i = 0; i < out4; ++i) slice[local4_biases_at() + i] = biases4[i];
  for (std::size_t i = softmax_flat_offset(); i < model::kNumParameters; ++i) {
    slice[softmax_at() + (i - softmax_flat_offset())] = whole[i];
  }
  // local3: columns first..first+c of every row of [2304, 384], then those biases.
  const float* weights3 = whole + parameter("local3/weights").offset;
  for (std::size_t row = 0; row < local3_inputs(); ++row) {
    for (std::size_t j = 0; j < c; ++j) {
      slice[local3_weights_at() + row * c + j] = weights3[row * out3 + first + j];
    }
  }
  const float* biases3 = whole + parameter("local3/biases").offset;
  for (std::size_t j = 0; j < c; ++j) slice[local3_biases_at() + j] = biases3[first + j];
  // local4: rows first..first+c of [384, 192], contiguous in the flat layout.
  const float* weights4 = whole + parameter("local4/weights").offset + first * out4;
  for (std::size_t i = 0; i < c * out4; ++i) slice[local4_weights_at() + i] = weights4[i];
}

void TensorSliceLayout::put(const float* slice, float* whole, bool replicated) const {
  const std::size_t c = columns_.size, first = columns_.offset;
  const std::size_t out3 = local3_outputs(), out4 = local4_outputs();
  if (replicated) {
    for (std::size_t i = 0; i < conv_floats(); ++i) whole[i] = slice[i];
    float* biases4 = whole + parameter("local4/biases").offset;
    for (std::size_t i = 0; i < out4; ++i) biases4[i] = slice[local4_biases_at() + i];
    for (std::size_t i = softmax_flat_offset(); i < model::kNumParameters; ++i) {
      whole[i] = slice[softmax_at() + (i - softmax_flat_offset())];
    }
  }
  float* weights3 = whole + parameter("local3/weights").offset;
  for (std::size_t row = 0; row < local3_inputs(); ++row) {
    for (std::size_t j = 0; j < c; ++j) {
      weights3[row * out3 + first + j] = slice[local3_weights_at() + row * c + j];
    }
  }
  float* biases3 = whole + parameter("local3/biases").offset;
  for (std::size_t j = 0; j < c; ++j) biases3[first + j] = slice[local3_biases_at() + j];
  float* weights4 = whole + parameter("local4/weights").offset + first * out4;
  for (std::size_t i = 0; i < c * out4; ++i) weights4[i] = slice[local4_weights_at() + i];
}

TensorSlices::TensorSlices(std::vector<Device*> devices, std::vector<Stream*> streams)
    : TensorSlices(devices, std::move(streams), static_cast<int>(devices.size()), 0) {}

TensorSlices::TensorSlices(std::vector<Device*> devices, std::vector<Stream*> streams,
                           int group_ranks, int first_rank, bool keep_averages)
    : streams_(std::move(streams)) {
  const int ranks = static_cast<int>(devices.size());
  if (ranks == 0 || streams_.size() != devices.size()) {
    throw std::invalid_argument("TensorSlices: needs one stream per device, at least one");
  }
  for (int r = 0; r < ranks; ++r) {
    layouts_.emplace_back(group_ranks, first_rank + r);
    const std::size_t bytes = layouts_.back().size() * sizeof(float);
    Device& device = *devices[static_cast<std::size_t>(r)];
    params_.push_back(device.allocate(bytes, MemoryCategory::kParameters));
    grads_.push_back(device.allocate(bytes, MemoryCategory::kGradients));
    averages_.push_back(keep_averages ? device.allocate(bytes, MemoryCategory::kOptimizerState)
                                      : Buffer());
  }
}

void TensorSlices::take_back(const float* params, const float* averages) {
  for (int r = 0; r < ranks(); ++r) {
    const TensorSliceLayout& layout = layouts_[static_cast<std::size_t>(r)];
    const std::size_t bytes = layout.size() * sizeof(float);
    Stream& stream = *streams_[static_cast<std::size_t>(r)];
    staging_.resize(layout.size());
    // Rearranged on the host, then one copy per buffer; the copy reads staging_, so wait
    // before the next buffer reuses it.
    layout.take(params, staging_.data());
    stream.copy(this->params(r), staging_.data(), bytes, "take params");
    stream.synchronize();
    if (this->averages(r) == nullptr) continue;  // kept elsewhere
    layout.take(averages, staging_.data());
    stream.copy(this->averages(r), staging_.data(), bytes, "take averages");
    stream.synchronize();
  }
}

void TensorSlices::put_together(float* params, float* averages) {
  for (int r = 0; r < ranks(); ++r) {
    const TensorSliceLayout& layout = layouts_[static_cast<std::size_t>(r)];
    const std::size_t bytes = layout.size() * sizeof(float);
    Stream& stream = *streams_[static_cast<std::size_t>(r)];
    staging_.resize(layout.size());
    // The replicated variables are equal on every rank (tensor parallel: the same inputs;
    // the hybrid: all-reduced); rank 0's are taken.
    for (auto [host, device] : {std::pair{params, this->params(r)},
                                std::pair{averages, this->averages(r)}}) {
      if (host == nullptr || device == nullptr) continue;
      stream.copy(staging_.data(), device, bytes, "put together");
      stream.synchronize();
      layout.put(staging_.data(), host, /*replicated=*/r == 0);
    }
  }
}

void TensorSlices::state_to_host(model::TrainingState& state) {
  state.params.resize(model::kNumParameters);
  state.moving_averages.resize(model::kNumParameters);
  state.optimizer_state.clear();  // SGD: chapter 10 keeps no optimizer state of its own
  put_together(state.params.data(), state.moving_averages.data());
}

}  // namespace towers
