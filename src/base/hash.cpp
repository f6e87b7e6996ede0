// SPDX-License-Identifier: MIT
#include "base/hash.hpp"

namespace towers::base {

std::uint64_t fnv1a64(const void* data, std::size_t bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV offset basis
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;  // FNV prime
  }
  return hash;
}

}  // namespace towers::base
