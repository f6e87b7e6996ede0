// SPDX-License-Identifier: MIT
// Runtime creation: backends, device counts, and the errors a user can cause.
#include <gtest/gtest.h>

#include <string>

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
