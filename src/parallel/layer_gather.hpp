// SPDX-License-Identifier: MIT
// LayerGather: ZeRO-3's parameters, gathered one layer at a time just before use.
//
// At ZeRO-3 tower r keeps only its shard of the flat parameters (the range the ring's
// reduce-scatter leaves it, ShardedCollectives::shard). The model needs a layer whole
// while that layer runs, in the forward pass and again in the backward pass. So before a
// layer runs, each tower copies the pieces of that layer the other towers own into a
// small window of its own (an all-gather, each tower pulling the N-1 shards it lacks), and
// drops it after the layer's last op: the window is reused for a later layer.
//
// Prefetch: the copies run on a communication stream of the tower, and the gather of the
// next layer is enqueued as soon as the current one is handed to the compute stream, so it
// travels while the current layer computes (chapter 6's two streams). The window therefore
// holds two layers at once: the one in use at one end, the next one at the other end, so
// its size is the largest sum of two consecutive layers in the order the passes use them,
// each rounded up to 256 bytes: both ends start on a 256-byte boundary, as every
// allocation does (cudaMalloc's alignment), so a kernel reading a gathered layer sees the
// alignment it would see in a buffer of its own.
// Events order the two streams: the compute stream waits until a layer has arrived; the
// communication stream waits until the layer that last used an end has been released.
// The backward pass asks for a layer only after its weight and bias gradients, which do
// not read the weights (model::Network's backward), so a backward gather also travels
// while the layer's own weight gradient computes.
// Without prefetch (for comparison, chapter 8's --gather-prefetch off) a layer's gather
// starts only when the compute stream reaches the op that needs it, and that stream waits
// for it: nothing of the tower computes beside a gather.
//
// Why each tower pulls rather than passing chunks round a ring: the towers' passes are
// enqueued one tower after another, so a ring step of tower 0 could not wait for a layer
// tower 1 has not enqueued yet. The shards being pulled were final before the step began
// (the update happens after the reduce-scatter, which every tower's backward pass precedes),
// so a tower can gather alone. The bytes are the all-gather's: (N-1) shards per tower.
// Introduced in chapter 8.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "parallel/allreduce.hpp"
#include "parallel/tower.hpp"
#include "parallel/wire_bytes.hpp"

namespace towers {

/// Where ZeRO-3's towers get each layer's parameters whole while it runs: the hooks a
/// Network's pass calls (LayerGather between the towers of one process; chapter 11's
/// MeshLayerGather between processes).
class LayerSource {
 public:
  virtual ~LayerSource();
  /// The hooks tower `tower`'s next model::Network::forward_backward calls.
  virtual model::Network::LayerParams hooks(int tower) = 0;
};

/// Gathers each tower's layers from every tower's parameter shard.
class LayerGather final : public LayerSource {
 public:
  /// towers[i] holds shards[i], the range owned[i] of the flat parameters, on its device;
  /// the owned ranges tile [0, kNumParameters). Makes a communication stream and a window
  /// of window_elements() floats (MemoryCategory::kParameters) per tower. Copies between
  /// devices are counted into `wire` (may be null). `prefetch`: each layer's gather starts
  /// while the layer before it computes; false: only when the compute stream needs it.
  /// `towers` must outlive this object.
  LayerGather(const std::vector<std::unique_ptr<Tower>>& towers, std::vector<const float*> shards,
              std::vector<Chunk> owned, WireBytes* wire, bool prefetch = true);
  ~LayerGather() override;

  /// The hooks tower `tower`'s next model::Network::forward_backward calls: acquire(k)
  /// makes the compute stream wait for layer k and prefetches the next layer; release(k)
  /// marks the window's end free. Throws std::logic_error when the pass asks for another
  /// layer than schedule() says (the schedule and the network disagree).
  model::Network::LayerParams hooks(int tower) override;

  /// Layers (model::gradient_layers() indices) in the order one forward_backward acquires
  /// them: conv1 .. softmax_linear, then softmax_linear .. conv2 (the backward pass does
  /// not read conv1's weights).
  static const std::vector<int>& schedule();
  /// Floats of each tower's window: the largest two consecutive layers of schedule(),
  /// each rounded up to kWindowAlignment bytes.
  static std::size_t window_elements();
  /// Where each end of a window starts, in bytes from an allocation's start (which is
  /// itself aligned so): what acquire() returns is aligned to it.
  static constexpr std::size_t kWindowAlignment = 256;
  /// Parameters the backward pass gathers (every layer but conv1).
  static std::size_t backward_elements();
  /// The flat parameters' range of the layer use `use` of schedule() gathers.
  static Chunk layer_of_use(std::size_t use);
  /// Where use `use` sits in a window, in floats from its start: end use % 2, the first
  /// at the start, the second as near the end as the alignment allows.
  static std::size_t window_offset(std::size_t use);

 private:
  struct PerTower;
  const float* acquire(int tower, int layer);
  void release(int tower, int layer);
  void enqueue_gather(int tower, std::size_t use);
  float* slot(int tower, std::size_t use) const;

  const std::vector<std::unique_ptr<Tower>>& towers_;
  std::vector<const float*> shards_;
  std::vector<Chunk> owned_;
  WireBytes* wire_;
  bool prefetch_;
  std::vector<std::unique_ptr<PerTower>> per_tower_;
};

}  // namespace towers
