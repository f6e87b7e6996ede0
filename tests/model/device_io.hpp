// SPDX-License-Identifier: MIT
// Test helpers for the model: a device, a stream, and copies to and from device memory
// through pinned buffers, so the same test runs on the host and cuda backends; a fixture
// for those tests and the random inputs they share.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "runtime/runtime.hpp"

namespace towers::model::testing {

/// A runtime with one device of `backend`, one stream on it, and device buffers that live
/// as long as the fixture. Make it only when the backend exists (see cuda_device_count()).
class DeviceIo {
 public:
  explicit DeviceIo(Backend backend) {
    RuntimeOptions options;
    options.backend = backend == Backend::kCuda ? BackendChoice::kCuda : BackendChoice::kHost;
    options.devices = 1;
    runtime_ = Runtime::create(options);
    stream_ = device().create_stream();
  }
  ~DeviceIo() { stream_->synchronize(); }
  DeviceIo(const DeviceIo&) = delete;
  DeviceIo& operator=(const DeviceIo&) = delete;

  /// The runtime (for its trace).
  Runtime& runtime() { return *runtime_; }
  /// Device 0 of the runtime.
  Device& device() { return runtime_->device(0); }
  /// The fixture's stream.
  Stream& stream() { return *stream_; }

  /// A device copy of `values`; the copy has finished when this returns.
  template <typename T>
  T* upload(const std::vector<T>& values) {
    buffers_.push_back(device().allocate(values.size() * sizeof(T)));
    write(buffers_.back().as<T>(), values);
    return buffers_.back().as<T>();
  }

  /// Copies `values` to `device_values`; finished when this returns.
  template <typename T>
  void write(T* device_values, const std::vector<T>& values) {
    const std::size_t bytes = values.size() * sizeof(T);
    Buffer pinned = device().allocate_pinned(bytes);
    std::memcpy(pinned.data(), values.data(), bytes);
    stream_->copy(device_values, pinned.data(), bytes);
    stream_->synchronize();  // pinned must outlive the copy
  }

  /// Waits for the stream, then copies `n` device values back.
  template <typename T>
  std::vector<T> download(const T* device_values, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    Buffer pinned = device().allocate_pinned(bytes);
    stream_->copy(pinned.data(), device_values, bytes);
    stream_->synchronize();
    const T* host_values = pinned.as<T>();
    return std::vector<T>(host_values, host_values + n);
  }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Stream> stream_;
  std::vector<Buffer> buffers_;
};

/// Fixture for TEST_P over both backends (TOWERS_INSTANTIATE_BOTH_BACKENDS, from
/// tests/runtime/backends.hpp): skips the cuda one, visibly, where there is no GPU.
class EachBackend : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kCuda && cuda_device_count() == 0) {
      GTEST_SKIP() << "needs a CUDA device, found 0";
    }
  }
};

/// `n` values drawn uniformly from [-1, 1), the same for the same `seed`.
inline std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

}  // namespace towers::model::testing
