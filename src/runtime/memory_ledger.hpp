// SPDX-License-Identifier: MIT
// MemoryLedger: where every byte of a device lives (chapter 8).
//
// Device::allocate tags each allocation with what it holds. The ledger adds the bytes on
// allocation and takes them off when the Buffer is freed, per category, and keeps the
// peak of each category and of the total. A category's peak is the most that category
// ever held at once; the total's peak is the most the device held at once, which can be
// less than the sum of the categories' peaks (they need not peak together).
// The ledger counts the bytes asked for, not the allocator's rounding, so its numbers
// are the ones a formula can predict. Thread-safe: allocations are rare, a mutex is enough.
//
// What the runtime allocates for itself on a GPU, outside Device::allocate, is counted too,
// as kWorkspace: each stream's cuBLAS workspace (32 MiB on Hopper, made with the stream's
// handle) and each device's kernel-stamp ring. Not counted, because nothing tells their
// size: what cublasCreate and NCCL's communicators allocate inside themselves (NCCL's
// buffers depend on NCCL_BUFFSIZE, its channels and its peers), and the CUDA context.
// The host backend has none of these: its kWorkspace stays 0. On a GPU the ledger can be
// checked against cudaMemGetInfo: ledger <= used <= ledger + one 2 MiB page per
// allocation (tests/runtime/memory_ledger_test.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

namespace towers {

/// What a device allocation holds. The first five are the lines of ZeRO's accounting
/// (chapter 8); the runtime's own scratch on a GPU is kWorkspace; everything else
/// (iterator slots, scalars) is kOther.
enum class MemoryCategory {
  kParameters,      ///< the model's weights
  kGradients,       ///< d(loss)/d(weights)
  kOptimizerState,  ///< what the update keeps between steps (the moving averages)
  kActivations,     ///< the forward pass's outputs kept for the backward pass, its inputs
  kCommunication,   ///< receive buffers of the collectives
  kWorkspace,       ///< the runtime's own: cuBLAS workspaces, kernel-stamp rings (cuda only)
  kOther,           ///< everything else
};

/// Number of categories; MemoryCategory values are 0..kMemoryCategoryCount-1.
inline constexpr int kMemoryCategoryCount = 7;

/// "parameters", "gradients", "optimizer_state", "activations", "communication",
/// "workspace", "other": the names summary lines use.
std::string_view category_name(MemoryCategory category);

/// What an OutOfMemory says ran out: which device, what was being allocated (`bytes` of
/// the ledger's `category`) and the room there was (`room`: "12.0 MiB free of 64.0 MiB",
/// or why none).
std::string out_of_memory_fact(const std::string& device, std::size_t bytes,
                               MemoryCategory category, const std::string& room);

/// What an OutOfMemory advises unless a program gives its own (see OutOfMemory::fact):
/// the flags of the tower chapters, whose activations grow with the batch and the towers.
inline constexpr const char* kTowerMemoryAdvice =
    "Use a smaller --batch-size (the activations grow with it) or fewer towers per device "
    "(--towers-per-device, --towers).";
/// "12.3 MiB": bytes as a person reads them in a memory message.
std::string mib_text(std::size_t bytes);

/// Current and peak bytes of one device, per category and in total.
class MemoryLedger {
 public:
  /// Counts `bytes` more in `category`; updates the peaks.
  void add(MemoryCategory category, std::size_t bytes);
  /// Counts `bytes` fewer in `category` (a Buffer was freed).
  void remove(MemoryCategory category, std::size_t bytes);

  /// Bytes of `category` held now.
  std::size_t current(MemoryCategory category) const;
  /// The most bytes `category` held at once since the start (or reset_peaks()).
  std::size_t peak(MemoryCategory category) const;
  /// Bytes held now, all categories together.
  std::size_t current_total() const;
  /// The most bytes held at once, all categories together.
  std::size_t peak_total() const;
  /// Peaks become the current values: measure from here on (a later phase alone).
  void reset_peaks();

 private:
  static std::size_t at(MemoryCategory category) { return static_cast<std::size_t>(category); }
  mutable std::mutex mutex_;
  std::array<std::size_t, kMemoryCategoryCount> current_{};
  std::array<std::size_t, kMemoryCategoryCount> peak_{};
  std::size_t current_total_ = 0;
  std::size_t peak_total_ = 0;
};

}  // namespace towers
