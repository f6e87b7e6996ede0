// SPDX-License-Identifier: MIT
#include "tower_buffers.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "runtime/busy.hpp"

namespace towers::testing {

namespace {

// The mean of each residue e % kInputPeriod.
std::vector<float> mean_of_period(int towers, int round) {
  std::vector<float> mean(kInputPeriod);
  for (std::size_t e = 0; e < kInputPeriod; ++e) {
    float sum = 0;  // exact: integers of magnitude <= 8, far fewer than 2^20 of them
    for (int t = 0; t < towers; ++t) sum += input_value(t, e, round);
    mean[e] = sum * (1.0f / static_cast<float>(towers));
  }
  return mean;
}

}  // namespace

std::vector<float> expected_mean(int towers, std::size_t count, int round) {
  const std::vector<float> period = mean_of_period(towers, round);
  std::vector<float> mean(count);
  for (std::size_t e = 0; e < count; ++e) mean[e] = period[e % kInputPeriod];
  return mean;
}

long long count_wrong(const float* data, std::size_t count, int towers, float tolerance,
                      int round) {
  const std::vector<float> period = mean_of_period(towers, round);
  long long wrong = 0;
  for (std::size_t e = 0; e < count; ++e) {
    wrong += !(std::fabs(data[e] - period[e % kInputPeriod]) <= tolerance);  // NaN is wrong
  }
  return wrong;
}

std::string first_mismatch(const std::vector<std::vector<float>>& got,
                           const std::vector<float>& expected) {
  for (std::size_t t = 0; t < got.size(); ++t) {
    if (got[t].size() != expected.size()) {
      return "tower " + std::to_string(t) + ": " + std::to_string(got[t].size()) +
             " elements instead of " + std::to_string(expected.size());
    }
    for (std::size_t e = 0; e < expected.size(); ++e) {
      // Compared as values (the inputs make -0 impossible); NaN never equals.
      if (!(got[t][e] == expected[e])) {
        std::ostringstream where;
        where << "tower " << t << ", element " << e << ": " << got[t][e] << " instead of "
              << expected[e];
        return where.str();
      }
    }
  }
  return "";
}

std::unique_ptr<Runtime> host_runtime(int devices) {
  return Runtime::create({BackendChoice::kHost, devices});
}

std::string average_once(AllReduce& allreduce, TowerBuffers& towers) {
  towers.upload();
  allreduce.average(towers.buffers(), towers.count(), towers.streams());
  return first_mismatch(towers.download(), expected_mean(towers.towers(), towers.count()));
}

std::vector<int> round_robin(int towers, int devices) {
  std::vector<int> device_of_tower(towers);
  for (int t = 0; t < towers; ++t) device_of_tower[t] = t % devices;
  return device_of_tower;
}

TowerBuffers::TowerBuffers(Runtime& runtime, std::vector<int> device_of_tower, std::size_t count)
    : count_(count), device_of_tower_(std::move(device_of_tower)) {
  const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(float);
  for (int t = 0; t < static_cast<int>(device_of_tower_.size()); ++t) {
    Device& device = runtime.device(device_of_tower_[t]);
    streams_.push_back(device.create_stream());
    streams_.back()->set_tower(t);
    stream_pointers_.push_back(streams_.back().get());
    device_.push_back(device.allocate(bytes));
    pointers_.push_back(device_.back().as<float>());
    staging_.push_back(device.allocate_pinned(bytes));
  }
}

void TowerBuffers::upload(int round, std::size_t count) {
  count = std::min(count, count_);
  for (int t = 0; t < towers(); ++t) {
    float* host = staging_[t].as<float>();
    for (std::size_t e = 0; e < count; ++e) host[e] = input_value(t, e, round);
    streams_[t]->copy(pointers_[t], host, count * sizeof(float), "upload");
  }
}

long long TowerBuffers::count_wrong(std::size_t count, float tolerance, int round) {
  count = std::min(count, count_);
  for (int t = 0; t < towers(); ++t) {
    streams_[t]->copy(staging_[t].data(), pointers_[t], count * sizeof(float), "download");
  }
  synchronize();
  long long wrong = 0;
  for (int t = 0; t < towers(); ++t) {
    wrong += testing::count_wrong(staging_[t].as<float>(), count, towers(), tolerance, round);
  }
  return wrong;
}

std::vector<std::vector<float>> TowerBuffers::download() {
  for (int t = 0; t < towers(); ++t) {
    streams_[t]->copy(staging_[t].data(), pointers_[t], count_ * sizeof(float), "download");
  }
  synchronize();
  std::vector<std::vector<float>> out;
  for (int t = 0; t < towers(); ++t) {
    const float* host = staging_[t].as<float>();
    out.emplace_back(host, host + count_);
  }
  return out;
}

void TowerBuffers::synchronize() {
  for (auto& stream : streams_) stream->synchronize();
}

void TowerBuffers::upload_late(int slow, double busy_ms) {
  for (int t = 0; t < towers(); ++t) stream(t).fill_zero(buffers()[t], count_ * sizeof(float));
  busy_kernel(stream(slow), busy_ms);
  upload();
}

void TowerBuffers::keep_then_overwrite(TowerBuffers& results) {
  for (int t = 0; t < towers(); ++t) {
    stream(t).copy(results.buffers()[t], buffers()[t], count_ * sizeof(float), "keep");
    stream(t).fill_zero(buffers()[t], count_ * sizeof(float), "overwrite");
  }
}

}  // namespace towers::testing
