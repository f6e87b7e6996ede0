// SPDX-License-Identifier: MIT
#include "runtime/host/host_device.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "runtime/host/host_event.hpp"
#include "runtime/host/host_graph.hpp"
#include "runtime/host/host_stream.hpp"

namespace towers {
namespace {

// Device allocations are 256-byte aligned, as cudaMalloc's are.
constexpr std::size_t kAlignment = 256;

void* aligned_bytes(std::size_t bytes) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded);
}

}  // namespace

HostDevice::HostDevice(int index, Trace& trace, std::size_t capacity_bytes,
                       std::shared_ptr<HostLink> link)
    : index_(index), trace_(trace), capacity_(capacity_bytes), link_(std::move(link)) {}

HostDevice::~HostDevice() = default;

std::string HostDevice::name() const { return "host:" + std::to_string(index_); }

std::unique_ptr<Stream> HostDevice::create_stream() {
  int index;
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    index = next_stream_index_++;
  }
  return std::make_unique<HostStream>(*this, index, trace_);
}

std::unique_ptr<Event> HostDevice::create_event() { return std::make_unique<HostEvent>(); }

Buffer HostDevice::allocate_memory(std::size_t bytes, MemoryCategory category) {
  refuse_if_capturing("Device::allocate on " + name());
  if (used_.fetch_add(bytes) + bytes > capacity_) {
    used_.fetch_sub(bytes);
    throw OutOfMemory(out_of_memory_fact(
        name(), bytes, category,
        mib_text(capacity_ - std::min(capacity_, used_.load())) + " free of the simulated " +
            mib_text(capacity_)));
  }
  void* data = aligned_bytes(bytes);
  if (data == nullptr) {
    used_.fetch_sub(bytes);
    throw OutOfMemory(out_of_memory_fact(
        name(), bytes, category, "the machine's own memory ran out (the allocation failed)"));
  }
  if (link_) link_->add(data, bytes, index_);  // so a stream can tell a peer copy
  return Buffer(data, bytes, [this, bytes](void* p) {
    if (link_) link_->remove(p);
    std::free(p);
    used_.fetch_sub(bytes);
  });
}

Buffer HostDevice::allocate_pinned(std::size_t bytes) {
  refuse_if_capturing("Device::allocate_pinned on " + name());
  void* data = aligned_bytes(bytes);
  if (data == nullptr) {
    throw OutOfMemory("out of host memory allocating " + std::to_string(bytes) + " bytes (" +
                          mib_text(bytes) + ") of pinned memory for " + name(),
                      "Use a smaller --batch-size or fewer towers (--towers, --devices).");
  }
  return Buffer(data, bytes, [](void* p) { std::free(p); });
}

void HostDevice::register_stream(HostStream* stream) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  streams_.push_back(stream);
}

void HostDevice::unregister_stream(HostStream* stream) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
}

void HostDevice::synchronize() {
  refuse_if_capturing("Device::synchronize on " + name());
  std::vector<HostStream*> streams;
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    streams = streams_;
  }
  // Wait for all of them before reporting, so one failing stream does not leave the
  // others running; then rethrow the first error.
  std::exception_ptr first_error;
  for (HostStream* stream : streams) {
    try {
      stream->synchronize();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace towers
