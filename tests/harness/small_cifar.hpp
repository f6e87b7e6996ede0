// SPDX-License-Identifier: MIT
// A small CIFAR-10 folder (5 x 16 training images, 16 test images) for the harness tests
// that read --data-dir, made once per test process and removed at its exit; and the flags
// of a quick run on it.
#pragma once

#include <string>

#include "base/temp_dir.hpp"
#include "data/cifar10.hpp"
#include "data/synthetic.hpp"
#include "harness/training.hpp"

namespace towers::testing {

inline const std::string& small_cifar_dir() {
  struct Folder {
    base::TempDir dir{"harness-small-cifar"};
    Folder() {
      const data::Dataset train = data::generate_synthetic(7, data::Split::kTrain, 0, 5 * 16);
      for (int f = 0; f < 5; ++f) {
        data::write_records(dir.path() / ("data_batch_" + std::to_string(f + 1) + ".bin"), train,
                            f * 16, 16);
      }
      data::write_records(data::test_file(dir.path()),
                          data::generate_synthetic(7, data::Split::kTest, 0, 16));
    }
    std::string path = dir.path().string();
  };
  static const Folder folder;
  return folder.path;
}

/// Two towers of batch 2 on the host backend, reading small_cifar_dir(), for `steps` steps,
/// each logged.
inline TrainingFlags two_host_towers(int steps) {
  TrainingFlags flags;
  flags.runtime.backend = BackendChoice::kHost;
  flags.runtime.devices = 2;
  flags.layout.batch_size = 2;
  flags.data_dir = small_cifar_dir();
  flags.steps = steps;
  flags.log_every = 1;
  return flags;
}

}  // namespace towers::testing
