// SPDX-License-Identifier: MIT
// 64-bit FNV-1a: the checksum of checkpoint files and of the parameter-agreement checks.
// Any flipped bit changes it; it is not a defence against a deliberate forgery.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace towers::base {

/// 64-bit FNV-1a of `bytes` bytes at `data`.
std::uint64_t fnv1a64(const void* data, std::size_t bytes);

/// 64-bit FNV-1a of the bytes of `text`.
inline std::uint64_t fnv1a64(std::string_view text) { return fnv1a64(text.data(), text.size()); }

}  // namespace towers::base
