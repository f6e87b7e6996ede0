// SPDX-License-Identifier: MIT
#include "parallel/layer_gather.hpp"

#include <algorithm>
#include <stdexcept>

#include "model/gradient_layers.hpp"
#include "trace/span_names.hpp"

namespace towers {
namespace {

// schedule()'s first uses, one per layer: the forward pass; the rest are the backward's.
constexpr std::size_t kForwardUses = 5;

const model::GradientLayer& layer_range(int layer) {
  return model::gradient_layers()[static_cast<std::size_t>(layer)];
}

// Floats of a layer's place at one end of the window: its count rounded up to the
// window's alignment, so that the other end starts aligned too.
std::size_t aligned_count(int layer) {
  constexpr std::size_t floats = LayerGather::kWindowAlignment / sizeof(float);
  return (layer_range(layer).count + floats - 1) / floats * floats;
}

}  // namespace

// One tower's window, its communication stream and the events between the two streams.
// The window has two ends; use u of schedule() sits at end u % 2.
struct LayerGather::PerTower {
  std::unique_ptr<Stream> comm;   // the gathers run here
  Buffer window;                  // [window_elements()] floats
  std::unique_ptr<Event> arrived[2];   // the layer gathered into an end is complete
  std::unique_ptr<Event> released[2];  // the compute stream no longer reads an end
  std::unique_ptr<Event> needed;       // without prefetch: the compute stream needs a layer now
  std::size_t next_use = 0;            // position in schedule() of the next acquire
  std::vector<std::string> names;      // "gather conv1", per use, for the trace
};

const std::vector<int>& LayerGather::schedule() {
  // gradient_layers() indices: 0 softmax_linear, 1 local4, 2 local3, 3 conv2, 4 conv1.
  static const std::vector<int> uses = {4, 3, 2, 1, 0, 0, 1, 2, 3};
  return uses;
}

std::size_t LayerGather::window_elements() {
  const std::vector<int>& uses = schedule();
  std::size_t largest = 0;
  for (std::size_t u = 0; u + 1 < uses.size(); ++u) {
    largest = std::max(largest, aligned_count(uses[u]) + aligned_count(uses[u + 1]));
  }
  return largest;
}

std::size_t LayerGather::backward_elements() {
  std::size_t total = 0;
  for (std::size_t u = kForwardUses; u < schedule().size(); ++u) total += layer_range(schedule()[u]).count;
  return total;
}

LayerGather::LayerGather(const std::vector<std::unique_ptr<Tower>>& towers,
                         std::vector<const float*> shards, std::vector<Chunk> owned,
                         WireBytes* wire, bool prefetch)
    : towers_(towers),
      shards_(std::move(shards)),
      owned_(std::move(owned)),
      wire_(wire),
      prefetch_(prefetch) {
  if (shards_.size() != towers_.size() || owned_.size() != towers_.size()) {
    throw std::invalid_argument("LayerGather: one shard and one owned range per tower");
  }
  for (const auto& tower : towers_) {
    auto p = std::make_unique<PerTower>();
    p->comm = tower->device->create_stream();
    p->comm->set_tower(tower->index);
    p->window = tower->device->allocate(window_elements() * sizeof(float),
                                        MemoryCategory::kParameters);
    for (int end = 0; end < 2; ++end) {
      p->arrived[end] = tower->device->create_wait_event();
      p->released[end] = tower->device->create_wait_event();
    }
    p->needed = tower->device->create_wait_event();
    for (std::size_t u = 0; u < schedule().size(); ++u) {
      p->names.push_back(span::layer_gather(layer_range(schedule()[u]).name, u >= kForwardUses));
    }
    per_tower_.push_back(std::move(p));
  }
}

LayerGather::~LayerGather() {
  // Queued ops complete and wait on this object's events: the communication streams' and
  // the compute streams' records of `released` and `needed`. Let them finish before the
  // events go (the communication streams are destroyed last, after them).
  for (auto& tower : per_tower_) {
    try {
      tower->comm->synchronize();
      for (auto& event : tower->released) event->synchronize();
      tower->needed->synchronize();
    } catch (...) {  // a stream's error was the run's to report; a destructor must not throw
    }
  }
}

model::Network::LayerParams LayerGather::hooks(int tower) {
  return {[this, tower](int layer) { return acquire(tower, layer); },
          [this, tower](int layer) { release(tower, layer); }};
}

Chunk LayerGather::layer_of_use(std::size_t use) {
  const model::GradientLayer& layer = layer_range(schedule()[use]);
  return {layer.offset, layer.count};
}

std::size_t LayerGather::window_offset(std::size_t use) {
  // End 0 from the window's start, end 1 as near its end as alignment allows: two
  // consecutive uses never overlap, since the window holds the largest two consecutive
  // layers, each rounded up. Both ends start on a kWindowAlignment boundary (the window
  // and the rounded counts are multiples of it); flush with the end, a layer whose count
  // is not would start only 4- or 8-byte aligned (softmax_linear's 1930 floats did).
  if (use % 2 == 0) return 0;
  return window_elements() - aligned_count(schedule()[use]);
}

LayerSource::~LayerSource() = default;

float* LayerGather::slot(int tower, std::size_t use) const {
  return per_tower_[tower]->window.as<float>() + window_offset(use);
}

const float* LayerGather::acquire(int tower, int layer) {
  PerTower& p = *per_tower_[tower];
  const std::size_t use = p.next_use;
  if (schedule()[use] != layer) {
    throw std::logic_error("LayerGather: the pass asked for " + layer_range(layer).name +
                           " where the schedule has " + layer_range(schedule()[use]).name);
  }
  Stream& compute = *towers_[tower]->stream;
  if (!prefetch_) {
    // Just in time: the gather starts when the compute stream reaches the op that needs
    // the layer, and that stream waits for it; nothing of the tower computes beside it.
    compute.record(*p.needed);
    p.comm->wait(*p.needed);
    enqueue_gather(tower, use);
  } else if (use == 0) {
    enqueue_gather(tower, 0);  // the step's first layer: nothing prefetched it
  }
  compute.wait(*p.arrived[use % 2]);
  // Prefetch: the next layer travels while this one computes.
  if (prefetch_ && use + 1 < schedule().size()) enqueue_gather(tower, use + 1);
  return slot(tower, use);
}

void LayerGather::release(int tower, int layer) {
  PerTower& p = *per_tower_[tower];
  if (schedule()[p.next_use] != layer) {
    throw std::logic_error("LayerGather: released " + layer_range(layer).name + " out of order");
  }
  towers_[tower]->stream->record(*p.released[p.next_use % 2]);
  p.next_use = (p.next_use + 1) % schedule().size();  // the next step starts over
}

void LayerGather::enqueue_gather(int tower, std::size_t use) {
  PerTower& p = *per_tower_[tower];
  Stream& comm = *p.comm;
  const model::GradientLayer& layer = layer_range(schedule()[use]);
  float* into = slot(tower, use);
  // The end's previous layer (use - 2) must be done with before it is overwritten.
  comm.wait(*p.released[use % 2]);
  // Every tower's piece of this layer: its owned range intersected with the layer's.
  for (std::size_t owner = 0; owner < towers_.size(); ++owner) {
    const Chunk& own = owned_[owner];
    const std::size_t begin = std::max(own.offset, layer.offset);
    const std::size_t end = std::min(own.offset + own.size, layer.offset + layer.count);
    if (begin >= end) continue;
    comm.copy(into + (begin - layer.offset), shards_[owner] + (begin - own.offset),
              (end - begin) * sizeof(float), p.names[use]);
    if (wire_ != nullptr) {
      wire_->add(towers_[owner]->device->index(), towers_[tower]->device->index(),
                 (end - begin) * sizeof(float));
    }
  }
  comm.record(*p.arrived[use % 2]);
}

}  // namespace towers
