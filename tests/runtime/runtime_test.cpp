// SPDX-License-Identifier: MIT
// Runtime creation: backends, device counts, and the errors a user can cause.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/cuda_environment.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

TEST(Runtime, HostDefaultsToFourSimulatedDevices) {
  auto rt = Runtime::create({BackendChoice::kHost, std::nullopt});
  EXPECT_EQ(rt->backend(), Backend::kHost);
  EXPECT_EQ(rt->device_count(), kDefaultHostDevices);
  EXPECT_EQ(rt->device(2).name(), "host:2");
}

TEST(Runtime, AutoPicksCudaOnlyWhenAGpuIsPresent) {
  Backend picked = resolve_backend(BackendChoice::kAuto);
  EXPECT_EQ(picked, cuda_device_count() > 0 ? Backend::kCuda : Backend::kHost);
}

TEST(Runtime, ZeroDevicesIsAUsageErrorThatSaysWhatToDo) {
  try {
    Runtime::create({BackendChoice::kHost, 0});
    FAIL() << "--devices 0 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("at least 1"), std::string::npos) << e.what();
  }
}

TEST(Runtime, MoreCudaDevicesThanExistIsAUsageError) {
  if (cuda_device_count() == 0) {
    EXPECT_THROW(Runtime::create({BackendChoice::kCuda, 1}), UsageError);
  } else {
    EXPECT_THROW(Runtime::create({BackendChoice::kCuda, cuda_device_count() + 1}), UsageError);
  }
}

// What the cuda backend sets before its first CUDA call (runtime/cuda_environment.hpp):
// enough hardware queues that 8 towers' streams (16 with chapter 6's communication
// streams) do not share one, a user's own setting kept, and module loading left lazy.
TEST(CudaEnvironment, RaisesTheHardwareQueuesKeepsTheUsersAndLeavesLoadingLazy) {
  const char* before = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::string saved = before ? before : "";
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  apply_cuda_environment();
  const char* set = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  ASSERT_NE(set, nullptr) << "CUDA_DEVICE_MAX_CONNECTIONS left at CUDA's 8";
  EXPECT_GE(std::stoi(set), 2 * 8) << "8 towers with two streams each need 16 queues";
  EXPECT_LE(std::stoi(set), 32) << "CUDA allows at most 32";
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4", 1);
  apply_cuda_environment();
  EXPECT_STREQ(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"), "4") << "the user's setting must win";
  for (const CudaEnvironmentSetting& setting : cuda_environment()) {
    EXPECT_NE(std::string(setting.name), "CUDA_MODULE_LOADING")
        << "forcing a module loading mode (EAGER loaded every cuBLAS and NCCL kernel)";
  }
  if (before) {
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", saved.c_str(), 1);
  } else {
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  }
}

TEST(Runtime, UnknownBackendNamesTheValidOnes) {
  try {
    parse_backend_choice("gpu");
    FAIL() << "'gpu' was accepted";
  } catch (const UsageError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("'gpu'"), std::string::npos) << message;
    EXPECT_NE(message.find("host"), std::string::npos) << message;
  }
  EXPECT_EQ(parse_backend_choice("cuda"), BackendChoice::kCuda);
}

}  // namespace
}  // namespace towers
