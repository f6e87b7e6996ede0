// SPDX-License-Identifier: MIT
// Device: one GPU, or one simulated device on the host backend.
//
// A device makes streams, events and memory. Objects it makes must not outlive it (the
// Runtime owns devices and outlives everything a program makes from them). Methods may be
// called from any host thread.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

#include "runtime/backend.hpp"
#include "runtime/event.hpp"
#include "runtime/memory.hpp"
#include "runtime/memory_ledger.hpp"
#include "runtime/stream.hpp"

namespace towers {

/// One GPU, or one simulated device. Introduced in chapter 0.
class Device {
 public:
  virtual ~Device() = default;

  /// Which backend made this device.
  virtual Backend backend() const = 0;
  /// 0..device_count-1 within its Runtime.
  virtual int index() const = 0;
  /// "host:1" or the GPU's name, for logs.
  virtual std::string name() const = 0;

  /// A new stream, independent of every other stream (cudaStreamCreateWithFlags,
  /// non-blocking).
  virtual std::unique_ptr<Stream> create_stream() = 0;
  /// A new event with timing enabled.
  virtual std::unique_ptr<Event> create_event() = 0;
  /// A new event only for ordering and waiting: elapsed_ms_since() is not available on
  /// it (cudaEventDisableTiming, which makes record and wait cheaper on a GPU).
  virtual std::unique_ptr<Event> create_wait_event() { return create_event(); }

  /// `bytes` of device memory (cudaMalloc), counted in this device's memory ledger under
  /// `category` until the Buffer is freed. Throws std::bad_alloc-like towers::OutOfMemory
  /// when the device is full. Not virtual: every backend's memory is counted the same way.
  Buffer allocate(std::size_t bytes, MemoryCategory category = MemoryCategory::kOther) {
    Buffer memory = allocate_memory(bytes, category);
    memory_.add(category, bytes);
    return std::move(memory).then_on_free([this, category, bytes] { memory_.remove(category, bytes); });
  }
  /// Current and peak bytes of this device per category (chapter 8). Pinned host memory
  /// is not device memory and is not counted.
  const MemoryLedger& memory() const { return memory_; }
  /// The same, to reset its peaks.
  MemoryLedger& memory() { return memory_; }
  /// `bytes` of pinned host memory that this device copies to and from asynchronously
  /// (cudaMallocHost). Readable and writable by the host.
  virtual Buffer allocate_pinned(std::size_t bytes) = 0;

  /// Blocks until all work on all of this device's streams has finished
  /// (cudaDeviceSynchronize). Rethrows the first error of any of them.
  virtual void synchronize() = 0;

 protected:
  /// The backend's allocation (cudaMalloc, or the host backend's counted malloc), freed
  /// by the returned Buffer; allocate() adds the ledger around it. `category` only names
  /// what is being allocated in an OutOfMemory (out_of_memory_fact).
  virtual Buffer allocate_memory(std::size_t bytes, MemoryCategory category) = 0;

 private:
  MemoryLedger memory_;
};

/// Thrown when a device has no room for an allocation; the message names the device, the
/// bytes and ledger category asked for, the room there was (out_of_memory_fact), then what
/// to reduce (kTowerMemoryAdvice). A program whose flags are not the towers' (chapter 9:
/// stages and micro-batches) catches it and says fact() with its own advice.
class OutOfMemory : public std::runtime_error {
 public:
  /// `fact`: what ran out (out_of_memory_fact); `advice`: what to reduce, in the flags of
  /// the program that catches it (the towers' by default).
  OutOfMemory(const std::string& fact, const std::string& advice = kTowerMemoryAdvice)
      : std::runtime_error(fact + ". " + advice), fact_(fact) {}
  /// What ran out, without the advice.
  const std::string& fact() const { return fact_; }

 private:
  std::string fact_;
};

}  // namespace towers
