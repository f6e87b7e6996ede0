// SPDX-License-Identifier: MIT
// Runs a test once per backend: always on host, on cuda where a GPU exists (skipped,
// visibly, where none does).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "runtime/runtime.hpp"

namespace towers {
/// Lets GoogleTest print "host"/"cuda" instead of raw bytes.
inline void PrintTo(Backend backend, std::ostream* out) { *out << to_string(backend); }
}  // namespace towers

namespace towers::testing {

/// Fixture for TEST_P over both backends; `runtime(n)` makes n devices or skips.
class BothBackends : public ::testing::TestWithParam<Backend> {
 protected:
  /// A runtime with `devices` devices of GetParam()'s backend; GTEST_SKIPs (returns
  /// nullptr) when the cuda backend lacks that many GPUs.
  std::unique_ptr<Runtime> runtime(int devices) {
    if (GetParam() == Backend::kCuda && cuda_device_count() < devices) {
      return nullptr;
    }
    RuntimeOptions options;
    options.backend = GetParam() == Backend::kCuda ? BackendChoice::kCuda : BackendChoice::kHost;
    options.devices = devices;
    return Runtime::create(options);
  }
};

inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  return std::string(to_string(info.param));
}

}  // namespace towers::testing

/// Makes `rt` with `n` devices or skips the test saying what was missing.
#define TOWERS_RUNTIME_OR_SKIP(rt, n)                                                    \
  auto rt = runtime(n);                                                                  \
  if (!rt) {                                                                             \
    GTEST_SKIP() << "needs " << (n) << " CUDA device(s), found " << cuda_device_count(); \
  }

#define TOWERS_INSTANTIATE_BOTH_BACKENDS(suite)                                        \
  INSTANTIATE_TEST_SUITE_P(Backends, suite,                                            \
                           ::testing::Values(Backend::kHost, Backend::kCuda),          \
                           ::towers::testing::backend_name)

/// A suite of tests over both backends that needs nothing more than BothBackends:
/// TOWERS_BOTH_BACKENDS_SUITE(Streams); then TEST_P(Streams, ...).
#define TOWERS_BOTH_BACKENDS_SUITE(suite)                  \
  class suite : public ::towers::testing::BothBackends {}; \
  TOWERS_INSTANTIATE_BOTH_BACKENDS(suite)
