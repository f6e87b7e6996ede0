// SPDX-License-Identifier: MIT
#include "parallel/tower.hpp"

#include <string>

#include "data/preprocess.hpp"
#include "model/parameters.hpp"

namespace towers {

int tower_count(const Runtime& runtime, const TowerLayout& layout) {
  return layout.towers > 0 ? layout.towers : runtime.device_count() * layout.towers_per_device;
}

TowerSet make_towers(Runtime& runtime, const TowerLayout& layout) {
  const int devices = runtime.device_count();
  if (layout.towers < 0 || layout.towers_per_device < 1 || layout.batch_size < 1) {
    throw UsageError("--towers, --towers-per-device and --batch-size must be positive (got " +
                     std::to_string(layout.towers) + ", " + std::to_string(layout.towers_per_device) +
                     ", " + std::to_string(layout.batch_size) + ").");
  }
  const int count = tower_count(runtime, layout);
  if (layout.towers > 0 && layout.towers_per_device > 1 &&
      layout.towers != devices * layout.towers_per_device) {
    throw UsageError("--towers " + std::to_string(layout.towers) + " does not match " +
                     std::to_string(devices) + " device(s) x --towers-per-device " +
                     std::to_string(layout.towers_per_device) + ". Give one of the two flags, or make "
                     "--towers = devices x towers-per-device.");
  }
  if (count % devices != 0 && count > devices) {
    throw UsageError("--towers " + std::to_string(count) + " does not divide evenly over " +
                     std::to_string(devices) + " device(s). Use a multiple of " +
                     std::to_string(devices) + ", or set --devices.");
  }
  const std::size_t param_bytes = model::kNumParameters * sizeof(float);
  TowerSet set;
  const int used_devices = std::min(count, devices);
  try {
    for (int d = 0; d < used_devices; ++d) {
      auto replica = std::make_unique<Replica>();
      replica->device = &runtime.device((layout.first_device + d) % devices);
      if (layout.replica_params) {
        replica->params = replica->device->allocate(param_bytes, MemoryCategory::kParameters);
      }
      set.replicas.push_back(std::move(replica));
    }
    for (int i = 0; i < count; ++i) {
      auto tower = std::make_unique<Tower>();
      tower->index = layout.first_index + i;
      tower->replica = set.replicas[i % used_devices].get();
      tower->device = tower->replica->device;
      tower->stream = tower->device->create_stream();
      tower->stream->set_tower(tower->index);
      tower->network = std::make_unique<model::Network>(*tower->device, layout.batch_size);
      // The batch is the forward pass's first input: counted with the activations.
      tower->images = tower->device->allocate(sizeof(float) * layout.batch_size * data::kCropValues,
                                              MemoryCategory::kActivations);
      tower->labels = tower->device->allocate(sizeof(int) * layout.batch_size,
                                              MemoryCategory::kActivations);
      if (layout.whole_gradients) {
        tower->grads = tower->device->allocate(param_bytes, MemoryCategory::kGradients);
      }
      tower->losses = tower->device->allocate_pinned(sizeof(float) * model::kLossCount);
      tower->done = tower->device->create_wait_event();
      set.towers.push_back(std::move(tower));
    }
  } catch (const OutOfMemory& e) {
    // Fewer towers per device helps only where towers share one (chapter 5's ranks have one
    // tower a device and no --towers flag): otherwise only the batch can shrink.
    const bool shared = count > used_devices;
    throw UsageError(e.fact() + " (" + std::to_string(count) + " tower(s) of batch " +
                     std::to_string(layout.batch_size) + " on " + std::to_string(used_devices) +
                     " device(s)). " +
                     (shared ? kTowerMemoryAdvice
                             : "Use a smaller --batch-size (the activations grow with it)."));
  }
  return set;
}

}  // namespace towers
