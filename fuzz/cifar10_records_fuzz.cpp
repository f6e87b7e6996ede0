// SPDX-License-Identifier: MIT
// Fuzz target: the CIFAR-10 record reader (data::parse_records), which reads whatever file
// --data-dir points at. Every input must give a Dataset or a UsageError; a Dataset must
// hold one label (0-9) and one image per 3,073-byte record, and writing its images back
// to the file's planar order must give the input's bytes exactly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "data/cifar10.hpp"
#include "runtime/backend.hpp"  // towers::UsageError

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace towers::data;
  try {
    const Dataset set = parse_records(std::span<const std::uint8_t>(data, size), "fuzz-input");
    if (set.size() * kRecordBytes != size || set.images.size() != set.size() * kImageBytes) {
      std::abort();
    }
    std::vector<std::uint8_t> planes(kImageBytes);
    for (std::size_t i = 0; i < set.size(); ++i) {
      const std::uint8_t* record = data + i * kRecordBytes;
      if (set.labels[i] != record[0] || set.labels[i] >= kNumClasses) std::abort();
      hwc_to_planes(set.image(i), planes.data());
      if (std::memcmp(planes.data(), record + 1, kImageBytes) != 0) std::abort();
    }
  } catch (const towers::UsageError&) {
    // Empty, truncated, or a bad label: refused with a message, as it should be.
  }
  return 0;
}
