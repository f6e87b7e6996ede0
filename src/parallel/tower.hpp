// SPDX-License-Identifier: MIT
// Tower: one copy of the model working on its own slice of the batch.
//
// As in cifar10_multi_gpu_train.py, tower i runs on device i (or, with several towers
// per device, on device i % devices, each tower on its own stream). A tower owns its
// stream, its model activations (Network), its batch buffers and its gradient buffer.
// Parameters live once per device (a Replica) and are read by every tower on that
// device. Towers are made and used from one host thread. Introduced in chapter 2.
#pragma once

#include <memory>
#include <vector>

#include "model/network.hpp"
#include "runtime/runtime.hpp"

namespace towers {

/// The model's parameters on one device, shared by the towers placed there.
struct Replica {
  Device* device = nullptr;  ///< where these parameters live
  Buffer params;  ///< [kNumParameters] float on `device` (or none: TowerLayout::replica_params)
};

/// One tower: device, stream, batch, activations, gradients.
struct Tower {
  int index = 0;                     ///< i in tower_i
  Device* device = nullptr;          ///< the device the tower runs on
  Replica* replica = nullptr;        ///< parameters this tower reads
  std::unique_ptr<Stream> stream;    ///< tagged with `index` in the trace
  std::unique_ptr<model::Network> network;  ///< activations and workspace of the model
  Buffer images;                     ///< [batch, 24, 24, 3] float on `device`
  Buffer labels;                     ///< [batch] int32 on `device`
  Buffer grads;                      ///< [kNumParameters] float on `device` (or none: TowerLayout)
  Buffer losses;                     ///< pinned host [model::kLossCount], copied each step
  std::unique_ptr<Event> done;       ///< recorded after this tower's backward pass

  /// Images per step for this tower.
  int batch_size() const { return network->batch_size(); }
};

/// How many towers, and how they sit on the devices.
struct TowerLayout {
  int towers = 0;             ///< 0: one per device x towers_per_device
  int towers_per_device = 1;  ///< several towers share a device, each on its own stream
  int batch_size = 128;       ///< per tower; the global batch is towers x batch_size
  /// Index of the first tower made here (chapter 5: the rank, whose shard it reads).
  int first_index = 0;
  /// Device of the first tower; the others follow cyclically (chapter 5: local rank
  /// modulo the GPUs, so ranks on one machine spread over its GPUs).
  int first_device = 0;
  /// Give each tower its whole gradient buffer (Tower::grads). Chapter 8's ZeRO-2 and -3
  /// never hold one for long (zero_gradients.hpp), so they make none here: a buffer made
  /// and freed before the first step would still set the ledger's peak.
  bool whole_gradients = true;
  /// Give each device in use its parameter copy (Replica::params), which chapters 2, 3
  /// and 7 read. Chapter 8's towers own their parameters (whole, or a shard at ZeRO-3),
  /// so it makes none: a copy made and freed before the first step would still set the
  /// ledger's parameter peak (at ZeRO-3 from N = 14 on, where shard and window are less).
  bool replica_params = true;
};

/// The towers of a run and the parameter copies they read.
struct TowerSet {
  std::vector<std::unique_ptr<Replica>> replicas;  ///< one per device in use
  std::vector<std::unique_ptr<Tower>> towers;      ///< tower i is towers[i]
};

/// Makes the towers and one Replica per used device. Throws UsageError for a layout the
/// devices cannot hold (zero towers, towers not filling devices evenly, too little memory),
/// saying what to change.
TowerSet make_towers(Runtime& runtime, const TowerLayout& layout);

/// Number of towers `layout` asks for on `runtime` (resolving towers == 0).
int tower_count(const Runtime& runtime, const TowerLayout& layout);

}  // namespace towers
