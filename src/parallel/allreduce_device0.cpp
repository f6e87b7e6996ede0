// SPDX-License-Identifier: MIT
// Chapter 3's averaging as an all-reduce, so chapter 4 can change one thing at a time
// (--allreduce device0): the towers still meet on device 0, as in chapter 3, but each
// keeps and updates its own parameters, as with the ring, so between `device0` and
// `ring` only the averaging differs.
//
// One stream on the root device (tower 0's), tagged with no tower, does it all:
//   - waits for every tower's event recorded at average() (the towers' gradients are final);
//   - sums in tower order, g0 + g1 + ... + g(N-1), into tower 0's buffer, peer-copying
//     each tower on another device into a receive buffer first (chapter 3's
//     DeviceAverage, same order, same axpy, so the same bits);
//   - scales by 1/N and copies the mean back into every other tower's buffer;
//   - records one event that every tower's stream waits for before its next work.
// It moves 2(N-1) full buffers through one device, where the ring moves 2(N-1)/N of a
// buffer per tower: the reason it scales worse, and what allreduce_ms shows.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/blas.hpp"
#include "kernels/host/blas.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/allreduce_checks.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

class DeviceZeroAllReduce final : public AllReduce {
 public:
  DeviceZeroAllReduce(Runtime& runtime, std::span<const int> device_of_tower, std::size_t max_count)
      : device_of_tower_(device_of_tower.begin(), device_of_tower.end()),
        max_count_(max_count),
        root_(runtime.device(device_of_tower_[0])),
        stream_(root_.create_stream()),
        done_(root_.create_wait_event()) {
    // At least one float: a zero-byte cudaMalloc may return no address at all.
    const std::size_t bytes = std::max<std::size_t>(max_count, 1) * sizeof(float);
    for (const int device : device_of_tower_) {
      ready_.push_back(runtime.device(device).create_wait_event());
      // Towers on the root device are added straight from their own buffer.
      received_.push_back(device == root_.index() ? Buffer() : root_.allocate(bytes, MemoryCategory::kCommunication));
    }
  }

  void average(std::span<float* const> buffers, std::size_t count,
               std::span<Stream* const> streams) override {
    detail::check_average_arguments("device0", device_of_tower_, buffers, streams);
    if (count > max_count_) {
      throw std::invalid_argument("device0 all-reduce: count " + std::to_string(count) +
                                  " exceeds the max_count " + std::to_string(max_count_) +
                                  " it was set up for");
    }
    const std::size_t n = buffers.size();
    if (n == 1 || count == 0) return;  // the mean of one buffer, or of nothing, is itself
    const int c = static_cast<int>(count);
    const std::size_t bytes = count * sizeof(float);
    float* sum = buffers[0];
    for (std::size_t i = 0; i < n; ++i) streams[i]->record(*ready_[i]);
    stream_->wait(*ready_[0]);
    for (std::size_t i = 1; i < n; ++i) {
      stream_->wait(*ready_[i]);  // tower i's gradients are final
      const float* grads = buffers[i];
      if (!received_[i].empty()) {
        stream_->copy(received_[i].data(), grads, bytes,
                      std::string(span::kDevice0Prefix) + "peer copy");
        grads = received_[i].as<float>();
      }
      stream_->launch(
          std::string(span::kDevice0Prefix) + "add", [=] { host::axpy(c, 1.0f, grads, sum); },
          [=](const CudaLaunchContext& ctx) { cuda::axpy(ctx, c, 1.0f, grads, sum); });
    }
    const float scale = 1.0f / static_cast<float>(n);
    stream_->launch(
        std::string(span::kDevice0Prefix) + "scale", [=] { host::scal(c, scale, sum); },
        [=](const CudaLaunchContext& ctx) { cuda::scal(ctx, c, scale, sum); });
    for (std::size_t i = 1; i < n; ++i) {
      stream_->copy(buffers[i], sum, bytes, std::string(span::kDevice0Prefix) + "broadcast");
    }
    stream_->record(*done_);
    for (std::size_t i = 0; i < n; ++i) streams[i]->wait(*done_);  // the mean is in place
  }

  std::string_view name() const override { return "device0"; }

 private:
  std::vector<int> device_of_tower_;
  std::size_t max_count_;
  Device& root_;
  std::unique_ptr<Stream> stream_;  // on the root device, no tower
  std::unique_ptr<Event> done_;     // recorded after the broadcast
  std::vector<std::unique_ptr<Event>> ready_;  // per tower: its gradients are final
  std::vector<Buffer> received_;    // per tower on another device: [max_count] on the root
};

}  // namespace

std::unique_ptr<AllReduce> make_device0_allreduce(Runtime& runtime,
                                                  std::span<const int> device_of_tower,
                                                  std::size_t max_count) {
  detail::check_towers("device0", runtime, device_of_tower);
  return std::make_unique<DeviceZeroAllReduce>(runtime, device_of_tower, max_count);
}

}  // namespace towers
