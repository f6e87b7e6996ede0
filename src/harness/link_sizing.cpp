// SPDX-License-Identifier: MIT
#include "harness/link_sizing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <vector>

#include "data/iterator.hpp"
#include "data/preprocess.hpp"
#include "model/ops.hpp"
#include "model/parameters.hpp"
#include "parallel/tower.hpp"
#include "parallel/tower_loss.hpp"
#include "parallel/tower_loss_batch.hpp"

namespace towers {
namespace {

constexpr double kBytesPerGradient = sizeof(float);

// Milliseconds `enqueue` takes on `stream` to finish, the fastest of `repeats` runs.
template <typename Enqueue>
double fastest_ms(Stream& stream, int repeats, Enqueue enqueue) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    enqueue();
    stream.synchronize();
    best = std::min(best, std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

double ring_allreduce_ms(int towers, double gbps) {
  if (towers < 2 || gbps <= 0) return 0;
  const double hop_bytes = kBytesPerGradient * model::kNumParameters / towers;
  return 2.0 * (towers - 1) * 8.0 * hop_bytes / (gbps * 1e9) * 1000.0;
}

LinkSizing size_link_to_backward(int towers, int batch_size) {
  LinkSizing sizing;
  if (towers < 2) return sizing;
  RuntimeOptions one;
  one.backend = BackendChoice::kHost;
  one.devices = 1;
  auto runtime = Runtime::create(one);
  ops::set_host_op_threads(1);  // as each tower of the run computes: one core
  TowerLayout layout;
  layout.towers = 1;
  layout.batch_size = batch_size;
  TowerSet set = make_towers(*runtime, layout);
  Tower& tower = *set.towers[0];
  std::vector<float> host_params(model::kNumParameters);
  model::initialize_parameters(0, host_params.data());
  float* params = set.replicas[0]->params.as<float>();
  tower.stream->copy(params, host_params.data(), host_params.size() * sizeof(float), "copy params");
  std::vector<float> images(static_cast<std::size_t>(batch_size) * data::kCropValues, 0.0f);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch_size), 0);
  tower.stream->copy(tower.images.as<float>(), images.data(), images.size() * sizeof(float),
                     "copy images");
  tower.stream->copy(tower.labels.as<std::int32_t>(), labels.data(),
                     labels.size() * sizeof(std::int32_t), "copy labels");
  const std::vector<std::size_t> indices(static_cast<std::size_t>(batch_size), 0);
  data::Batch batch;
  batch.images = tower.images.as<float>();
  batch.labels = tower.labels.as<std::int32_t>();
  batch.indices = indices;  // tower_loss checks the batch's size by them
  // The copies above read these host vectors: whatever happens below, the stream is done
  // with them before they go.
  struct WaitAtExit {
    Stream& stream;
    ~WaitAtExit() { stream.synchronize(); }
  } wait_at_exit{*tower.stream};
  // Once to warm up (first touch of every buffer), then the fastest of three: the
  // backward pass is the forward and backward pass less the forward pass.
  constexpr int kRepeats = 3;
  fastest_ms(*tower.stream, 1, [&] { tower_loss(tower, params, batch); });
  const double both = fastest_ms(*tower.stream, kRepeats, [&] { tower_loss(tower, params, batch); });
  const double forward = fastest_ms(*tower.stream, kRepeats, [&] { tower_forward(tower, params, batch); });
  sizing.backward_ms = std::max(both - forward, 0.01 * both);  // never 0: a link needs a time
  const double hop_bits = 8.0 * kBytesPerGradient * model::kNumParameters / towers;
  sizing.gbps = 2.0 * (towers - 1) * hop_bits / (sizing.backward_ms / 1000.0) / 1e9;
  sizing.allreduce_ms = ring_allreduce_ms(towers, sizing.gbps);
  return sizing;
}

std::string LinkSizing::describe(int towers) const {
  char line[256];
  std::snprintf(line, sizeof line,
                "link: --link-gbps auto: one tower's backward pass took %.1f ms here, so the "
                "simulated link is %.3g Gb/s, on which a ring all-reduce of every gradient "
                "among %d towers takes as long", backward_ms, gbps, towers);
  return line;
}

}  // namespace towers
