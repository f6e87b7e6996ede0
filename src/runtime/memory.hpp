// SPDX-License-Identifier: MIT
// Buffer: RAII ownership of device memory or pinned host memory.
//
// A Buffer frees its memory when destroyed, through the function its device gave it
// (cudaFree, cudaFreeHost, or free on the host backend). It is move-only. Destroy a
// Buffer only after every stream that uses it has finished with it (synchronize first),
// exactly as with cudaFree.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

namespace towers {

/// Owns `bytes` bytes on one device (or pinned host memory). Introduced in chapter 0.
class Buffer {
 public:
  /// Frees the memory (cudaFree, cudaFreeHost, or the host backend's free).
  using Deleter = std::function<void(void*)>;

  /// An empty buffer: no memory, data() is null.
  Buffer() = default;
  /// Takes ownership of `bytes` bytes at `data`, to be freed by `deleter`.
  Buffer(void* data, std::size_t bytes, Deleter deleter)
      : data_(data), bytes_(bytes), deleter_(std::move(deleter)) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  /// Takes `other`'s memory; `other` becomes empty.
  Buffer(Buffer&& other) noexcept { swap(other); }
  /// Frees this buffer's memory, then takes `other`'s; `other` becomes empty.
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  ~Buffer() {
    if (data_ && deleter_) deleter_(data_);
  }

  /// Raw address; valid on the owning device only (host memory for pinned buffers).
  void* data() const { return data_; }
  /// The address as T*; the caller knows the element type.
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  /// Size in bytes (0 when empty).
  std::size_t bytes() const { return bytes_; }
  /// True when the buffer owns no memory.
  bool empty() const { return data_ == nullptr; }

  /// This buffer, with `after_free` run right after its memory is freed: how a device's
  /// memory ledger learns that an allocation is gone (Device::allocate). Must not throw.
  Buffer then_on_free(std::function<void()> after_free) && {
    Deleter free_memory = std::move(deleter_);
    deleter_ = [free_memory = std::move(free_memory), after_free = std::move(after_free)](void* p) {
      if (free_memory) free_memory(p);
      after_free();
    };
    return std::move(*this);
  }

 private:
  void swap(Buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    std::swap(deleter_, other.deleter_);
  }
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Deleter deleter_;
};

}  // namespace towers
