// SPDX-License-Identifier: MIT
// The golden batch (tests/golden): tensors of one batch of 4 through the TF model,
// computed in float64 and stored as float32, located through manifest.json.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace towers::model::testing {

/// golden.bin read whole, with each tensor's byte range from manifest.json.
class Golden {
 public:
  /// Reads TOWERS_GOLDEN_DIR/{manifest.json,golden.bin}; throws std::runtime_error if missing.
  Golden() {
    const std::string dir = TOWERS_GOLDEN_DIR;
    const std::string manifest = read_file(dir + "/manifest.json");
    bytes_ = read_file(dir + "/golden.bin");
    // Each tensor entry has "name", then (after its shape and layout) "offset" and "bytes".
    static const std::regex entry(
        R"re("name":\s*"([^"]+)"[\s\S]*?"offset":\s*([0-9]+),\s*"bytes":\s*([0-9]+))re");
    for (auto it = std::sregex_iterator(manifest.begin(), manifest.end(), entry);
         it != std::sregex_iterator(); ++it) {
      ranges_[(*it)[1]] = {std::stoull((*it)[2]), std::stoull((*it)[3])};
    }
    static const std::regex scalar(R"re("([a-z_]+)":\s*(-?[0-9.eE+-]+))re");
    for (auto it = std::sregex_iterator(manifest.begin(), manifest.end(), scalar);
         it != std::sregex_iterator(); ++it) {
      scalars_[(*it)[1]] = std::stod((*it)[2]);
    }
  }

  /// The tensor `name` (e.g. "params/conv1/weights") as T values.
  template <typename T>
  std::vector<T> tensor(const std::string& name) const {
    const auto found = ranges_.find(name);
    if (found == ranges_.end()) throw std::runtime_error("golden has no tensor " + name);
    const auto [offset, bytes] = found->second;
    std::vector<T> values(bytes / sizeof(T));
    std::memcpy(values.data(), bytes_.data() + offset, bytes);  // little-endian host
    return values;
  }

  /// A scalar of the manifest, e.g. "total_loss".
  double scalar(const std::string& name) const { return scalars_.at(name); }

 private:
  static std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("missing " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string bytes_;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> ranges_;
  std::map<std::string, double> scalars_;
};

}  // namespace towers::model::testing
