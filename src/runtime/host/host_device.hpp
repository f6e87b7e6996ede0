// SPDX-License-Identifier: MIT
// HostDevice: a simulated GPU.
//
// Its "device memory" is ordinary host memory, counted against a capacity so that asking
// for too much fails like cudaMalloc does. Its streams are HostStreams (one worker thread
// each). synchronize() waits for every stream the device has made and that still exists.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/host/host_link.hpp"
#include "trace/trace.hpp"

namespace towers {

class HostStream;

/// Default memory of one simulated device (bytes): small enough that four of them fit
/// in a laptop's memory, large enough for the tutorial's model at batch 128.
inline constexpr std::size_t kHostDeviceMemoryBytes = std::size_t{4} << 30;

/// A simulated device of the host backend.
class HostDevice final : public Device {
 public:
  /// Simulated device `index`, with `capacity_bytes` of memory, tracing into `trace`.
  /// `link` (shared by the runtime's devices; null: none) slows peer copies (chapter 6).
  HostDevice(int index, Trace& trace, std::size_t capacity_bytes = kHostDeviceMemoryBytes,
             std::shared_ptr<HostLink> link = nullptr);
  ~HostDevice() override;

  Backend backend() const override { return Backend::kHost; }
  int index() const override { return index_; }
  std::string name() const override;
  std::unique_ptr<Stream> create_stream() override;
  std::unique_ptr<Event> create_event() override;
  Buffer allocate_pinned(std::size_t bytes) override;
  void synchronize() override;

  /// Bytes currently allocated on this simulated device.
  std::size_t used_bytes() const { return used_.load(); }

  /// The simulated link to the other devices, or null (peer copies at memory speed).
  const HostLink* link() const { return link_.get(); }

  /// Called by HostStream's constructor and destructor.
  void register_stream(HostStream* stream);
  /// Called by HostStream's destructor.
  void unregister_stream(HostStream* stream);

 protected:
  Buffer allocate_memory(std::size_t bytes, MemoryCategory category) override;

 private:
  const int index_;
  Trace& trace_;
  const std::size_t capacity_;
  std::shared_ptr<HostLink> link_;
  std::atomic<std::size_t> used_{0};
  std::mutex streams_mutex_;
  std::vector<HostStream*> streams_;
  int next_stream_index_ = 0;
};

}  // namespace towers
