// SPDX-License-Identifier: MIT
// Synthetic CIFAR-10: a deterministic stand-in for the real set, cached on disk.
//
// 50,000 training and 10,000 test images of 10 shape classes (see shapes.hpp), written
// in the real CIFAR-10 binary format, so programs read them with the ordinary reader
// (cifar10.hpp) and the real files are a drop-in replacement. The same seed gives the
// same bytes on every machine. Each class has exactly 5,000 training and 1,000 test
// images, in a shuffled order.
//
// ensure_synthetic_cifar10() writes the files on first use into
//   <cache root>/synthetic-cifar10-seed<seed>-v<kSyntheticVersion>/
// and reuses them after. A STAMP file there records the generator version and seed;
// the files are written into a temporary folder that is renamed into place at the end,
// so an interrupted run never leaves a half-written cache. Changing the generator means
// bumping kSyntheticVersion, which selects a new folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "data/cifar10.hpp"

namespace towers::data {

/// Version of the generator; bump it whenever its output changes.
inline constexpr uint32_t kSyntheticVersion = 1;

/// The seed programs use when the user gives none.
inline constexpr uint64_t kDefaultSyntheticSeed = 1;

/// Which half of the set: the five training files or the test file.
enum class Split {
  kTrain,  ///< data_batch_1.bin .. data_batch_5.bin, 50,000 examples
  kTest,   ///< test_batch.bin, 10,000 examples
};

/// Number of examples in a split: 50,000 (train) or 10,000 (test).
size_t split_size(Split split);

/// The labels of a whole split, in order: exactly split_size / 10 of each class, shuffled.
std::vector<uint8_t> synthetic_labels(uint64_t seed, Split split);

/// Renders examples [begin, begin + count) of a split. Example i depends only on
/// (seed, split, i), so any range can be generated alone, on any thread.
Dataset generate_synthetic(uint64_t seed, Split split, size_t begin, size_t count);

/// $TOWERS_CACHE_DIR if set, else $XDG_CACHE_HOME/towers, else $HOME/.cache/towers,
/// else the system temp folder + towers-cache.
std::filesystem::path default_cache_root();

/// The folder the set for `seed` lives in under `cache_root` (whether or not it exists).
std::filesystem::path synthetic_dir(uint64_t seed, const std::filesystem::path& cache_root);

/// Returns the folder holding the synthetic set for `seed`, generating it first unless a
/// complete one with a matching STAMP is already there. Safe when several processes
/// start at once (each writes its own temporary folder; one rename wins). Throws
/// UsageError, with a hint to set TOWERS_CACHE_DIR, when the cache cannot be written.
std::filesystem::path ensure_synthetic_cifar10(
    uint64_t seed, const std::filesystem::path& cache_root = default_cache_root());

}  // namespace towers::data
