// SPDX-License-Identifier: MIT
#include "harness/parameter_check.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/hash.hpp"
#include "cli/options.hpp"
#include "runtime/backend.hpp"

namespace towers {

void add_check_flags(CLI::App& app, CheckFlags& flags) {
  app.add_option("--check-every", flags.check_every,
                 "compare the towers' parameter checksums after every K steps and the last")
      ->capture_default_str()->check(whole_number(1, 100000000));
  app.add_option("--inject-divergence", flags.inject_divergence,
                 "for tests: after this step, change one parameter of the last tower, so the "
                 "check must stop training")
      ->check(whole_number(0, 100000000));
}

std::string divergence_message(std::span<const std::uint64_t> sums, int step,
                               const std::string& who) {
  std::map<std::uint64_t, std::vector<int>> groups;  // checksum -> its copies, in order
  for (std::size_t i = 0; i < sums.size(); ++i) groups[sums[i]].push_back(static_cast<int>(i));
  if (groups.size() <= 1) return "";
  std::string message =
      "the " + who + "s' parameters differ after step " + std::to_string(step) + ":";
  auto describe = [&](std::uint64_t sum) {
    const auto& members = groups[sum];
    message += " " + who + (members.size() == 1 ? "" : "s");
    for (std::size_t k = 0; k < members.size(); ++k) {
      message += (k == 0 ? " " : ", ") + std::to_string(members[k]);
    }
    char hex[32];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, sum);
    message += std::string(members.size() == 1 ? " has" : " have") + " checksum " + hex + ";";
  };
  describe(sums[0]);
  for (const auto& [sum, members] : groups) {
    if (sum != sums[0]) describe(sum);
  }
  return message + " every " + who + " must apply the same mean gradients to the same parameters.";
}

ParameterCheck::ParameterCheck(const std::vector<std::unique_ptr<Tower>>& towers,
                               std::size_t count, const CheckFlags& flags, int steps)
    : towers_(towers), count_(count), flags_(flags), steps_(steps) {
  if (flags.inject_divergence >= 0 && towers.size() < 2) {
    throw UsageError("--inject-divergence needs at least two towers to compare; "
                     "use --devices 2 or more.");
  }
  staging_ = towers.front()->device->allocate_pinned(count * sizeof(float));
}

void ParameterCheck::after_step(int step, std::span<float* const> params) {
  if (step == flags_.inject_divergence) perturb(*towers_.back(), params.back());
  if ((step + 1) % flags_.check_every == 0 || step == steps_ - 1) compare(step, params);
}

void ParameterCheck::perturb(Tower& tower, float* params) {
  // One ulp on the first parameter: the smallest change a float can make.
  float* value = staging_.as<float>();
  tower.stream->copy(value, params, sizeof(float), "read param");
  tower.stream->synchronize();
  *value = std::nextafter(*value, INFINITY);
  tower.stream->copy(params, value, sizeof(float), "inject divergence");
  tower.stream->synchronize();
  std::printf("inject-divergence: changed one parameter of tower %d after step %d\n",
              tower.index, flags_.inject_divergence);
}

void ParameterCheck::compare(int step, std::span<float* const> params) {
  std::vector<std::uint64_t> sums;
  for (std::size_t i = 0; i < towers_.size(); ++i) {
    Stream& stream = *towers_[i]->stream;
    stream.copy(staging_.data(), params[i], count_ * sizeof(float), "copy params to check");
    stream.synchronize();  // the host reads the copy next
    sums.push_back(base::fnv1a64(staging_.data(), count_ * sizeof(float)));
  }
  const std::string differ = divergence_message(sums, step, "tower");
  if (!differ.empty()) throw std::runtime_error(differ);
  ++checks_;
}

}  // namespace towers
