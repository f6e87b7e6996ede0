// SPDX-License-Identifier: MIT
// Runtime: the devices of one backend and the trace they write to.
//
// Create one per program with Runtime::create(); it owns its devices and must outlive
// every stream, event and buffer made from them. Not copyable.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "runtime/backend.hpp"
#include "runtime/device.hpp"
#include "runtime/link_model.hpp"

namespace towers {

class Trace;

/// How many devices of which backend a program wants (`--backend`, `--devices`).
struct RuntimeOptions {
  BackendChoice backend = BackendChoice::kAuto;  ///< `--backend auto|cuda|host`
  /// host: how many simulated devices; cuda: use the first N GPUs.
  /// Unset means the default: kDefaultHostDevices simulated devices, or every GPU.
  std::optional<int> devices;
  /// host: the simulated link between devices (`--link-gbps`, `--link-latency-us`);
  /// unlimited by default. cuda: must stay unlimited (the real link is used).
  LinkModel link = {};
};

/// Default number of simulated devices when `--devices` is not given.
inline constexpr int kDefaultHostDevices = 4;

/// The devices of one backend plus the trace. Introduced in chapter 0.
class Runtime {
 public:
  /// Picks the backend and makes the devices. Throws UsageError for a device count of
  /// zero or below, or more CUDA devices than exist, with what to do instead.
  static std::unique_ptr<Runtime> create(const RuntimeOptions& options);

  /// Takes the devices of `backend` and the trace their streams write to (create() calls
  /// this; tests use it to build a runtime by hand).
  Runtime(Backend backend, std::vector<std::unique_ptr<Device>> devices,
          std::shared_ptr<Trace> trace);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The backend every device of this runtime belongs to.
  Backend backend() const { return backend_; }
  /// Number of devices (GPUs, or simulated devices).
  int device_count() const { return static_cast<int>(devices_.size()); }
  /// Device `index` (0..device_count()-1); throws std::out_of_range otherwise.
  Device& device(int index) { return *devices_.at(index); }
  /// Where every stream of this runtime records its ops (when enabled).
  Trace& trace() { return *trace_; }
  /// Synchronizes every device.
  void synchronize();

 private:
  Backend backend_;
  std::shared_ptr<Trace> trace_;
  std::vector<std::unique_ptr<Device>> devices_;
};

}  // namespace towers
