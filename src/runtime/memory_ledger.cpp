// SPDX-License-Identifier: MIT
#include "runtime/memory_ledger.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace towers {

std::string_view category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParameters: return "parameters";
    case MemoryCategory::kGradients: return "gradients";
    case MemoryCategory::kOptimizerState: return "optimizer_state";
    case MemoryCategory::kActivations: return "activations";
    case MemoryCategory::kCommunication: return "communication";
    case MemoryCategory::kWorkspace: return "workspace";
    case MemoryCategory::kOther: return "other";
  }
  throw std::invalid_argument("category_name: not a MemoryCategory");
}

std::string mib_text(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

std::string out_of_memory_fact(const std::string& device, std::size_t bytes,
                               MemoryCategory category, const std::string& room) {
  return "out of memory on " + device + " allocating " + std::to_string(bytes) + " bytes (" +
         mib_text(bytes) + ") of " + std::string(category_name(category)) + ": " + room;
}

void MemoryLedger::add(MemoryCategory category, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  current_[at(category)] += bytes;
  current_total_ += bytes;
  peak_[at(category)] = std::max(peak_[at(category)], current_[at(category)]);
  peak_total_ = std::max(peak_total_, current_total_);
}

void MemoryLedger::remove(MemoryCategory category, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Called from a Buffer's deleter, which must not throw; Device::allocate removes exactly
  // what it added, so the counts cannot go below zero.
  current_[at(category)] -= bytes;
  current_total_ -= bytes;
}

std::size_t MemoryLedger::current(MemoryCategory category) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_[at(category)];
}

std::size_t MemoryLedger::peak(MemoryCategory category) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_[at(category)];
}

std::size_t MemoryLedger::current_total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_total_;
}

std::size_t MemoryLedger::peak_total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_total_;
}

void MemoryLedger::reset_peaks() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = current_;
  peak_total_ = current_total_;
}

}  // namespace towers
