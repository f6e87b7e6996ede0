// SPDX-License-Identifier: MIT
// The names of the spans that one layer writes and another reads back.
//
// A program's trace is matched by name: the analysis counts "enqueue" host spans, chapter
// 4's PipelineTrace times the all-reduce ops and the iterators' input copies. Writing the
// same string in two places would let a rename make a summary read 0 with no failure, so
// producers and analysers both use the constants here (and tests/trace/span_names_test.cpp
// checks that what a ring, an iterator and a training step write is what the analysers
// find). Names of ops nobody matches ("conv1", "copy loss") stay where they are written.
#pragma once

#include <string>
#include <string_view>

namespace towers::span {

/// Host span: the training thread enqueueing one step (trace/analysis.hpp).
inline constexpr char kEnqueue[] = "enqueue";
/// Copy-stream op: a TowerIterator copying one batch to its device (data/iterator.hpp).
inline constexpr char kCopyInput[] = "copy input";
/// All-reduce op: NCCL's, within one process or across ranks.
inline constexpr char kNcclAllReduce[] = "nccl allreduce";
/// Chapter 8's halves of NCCL's all-reduce, called apart.
inline constexpr char kNcclReduceScatter[] = "nccl reducescatter";
inline constexpr char kNcclAllGather[] = "nccl allgather";
/// All-reduce op: chapter 5's MPI_Allreduce.
inline constexpr char kMpiAllReduce[] = "mpi allreduce";
/// Every op of the ring all-reduce starts with this.
inline constexpr char kRingPrefix[] = "ring ";
/// Ring op: the final scaling by 1/towers.
inline constexpr char kRingScale[] = "ring scale";
/// Every op of chapter 4's device0 all-reduce (chapter 3's averaging) starts with this.
inline constexpr char kDevice0Prefix[] = "device0 ";
/// Marker (TraceKind::kRecord): a stream reached Stream::record(event).
inline constexpr char kEventRecord[] = "event record";
/// Marker (TraceKind::kWait): a stream got past Stream::wait(event).
inline constexpr char kEventWait[] = "event wait";
/// Ring op: chapter 5's whole ring over MPI_Sendrecv.
inline constexpr char kRingSendrecv[] = "ring sendrecv";
/// Every copy of chapter 8's ZeRO-3 layer gathers starts with this ("gather conv2",
/// "gather conv2 again": the backward pass's).
inline constexpr char kLayerGatherPrefix[] = "gather ";

/// Ring op: reduce-scatter step `of` ("1/3"): the send of a chunk.
inline std::string ring_reduce_scatter(const std::string& of) { return "ring rs " + of; }
/// Ring op: reduce-scatter step `of`: the add of the received chunk.
inline std::string ring_reduce_scatter_add(const std::string& of) { return "ring rs " + of + " add"; }
/// Ring op: all-gather step `of`.
inline std::string ring_all_gather(const std::string& of) { return "ring ag " + of; }

/// Whether `name` is an all-reduce op: any ring or device0 op, NCCL's or MPI's (with
/// chapter 8's reduce-scatter and all-gather, the all-reduce's two halves).
inline bool is_allreduce(std::string_view name) {
  return name.starts_with(kRingPrefix) || name.starts_with(kDevice0Prefix) ||
         name == kNcclAllReduce || name == kMpiAllReduce || name == kNcclReduceScatter ||
         name == kNcclAllGather;
}

/// The span of ZeRO-3's gather of `layer` ("conv2"); `again`: the backward pass's.
inline std::string layer_gather(const std::string& layer, bool again) {
  return kLayerGatherPrefix + layer + (again ? " again" : "");
}

/// Whether `name` is a copy of a ZeRO-3 layer gather (chapter 8's LayerGather).
inline bool is_layer_gather(std::string_view name) { return name.starts_with(kLayerGatherPrefix); }

/// Chapter 10's collectives run their ops under a scope (Stream::set_scope), so a trace
/// tells them apart: "g ring rs 1/1" is a step of g's ring, "g nccl allreduce" NCCL's g.
/// Tensor parallel's g: the all-reduce of local4's partial outputs (forward).
inline constexpr char kTensorG[] = "g";
/// Tensor parallel's f: the all-reduce of local3's partial input gradients (backward).
inline constexpr char kTensorF[] = "f";
/// The hybrid's all-gather of pool2's outputs.
inline constexpr char kHybridGatherPool2[] = "ag pool2";
/// The hybrid's reduce-scatter of local4's partial outputs.
inline constexpr char kHybridScatterLocal4[] = "rs local4";
/// The hybrid's all-gather of local4's output gradient.
inline constexpr char kHybridGatherLocal4Gradient[] = "ag local4 grad";
/// The hybrid's reduce-scatter of local3's partial input gradients.
inline constexpr char kHybridScatterPool2Gradient[] = "rs pool2 grad";

/// Whether `name` is an op of a collective (is_allreduce) run under `scope`.
inline bool is_scoped_collective(std::string_view name, std::string_view scope) {
  return name.size() > scope.size() && name.starts_with(scope) && name[scope.size()] == ' ' &&
         is_allreduce(name.substr(scope.size() + 1));
}
/// Whether `name` is an op of chapter 10's g.
inline bool is_tensor_g(std::string_view name) { return is_scoped_collective(name, kTensorG); }
/// Whether `name` is an op of chapter 10's f.
inline bool is_tensor_f(std::string_view name) { return is_scoped_collective(name, kTensorF); }
/// Whether `name` is an op of any of chapter 10's scoped collectives (g, f, the hybrid's
/// gathers and scatters).
inline bool is_tensor_collective(std::string_view name) {
  for (std::string_view scope : {kTensorG, kTensorF, kHybridGatherPool2, kHybridScatterLocal4,
                                 kHybridGatherLocal4Gradient, kHybridScatterPool2Gradient}) {
    if (is_scoped_collective(name, scope)) return true;
  }
  return false;
}

/// Whether `name` is communication between devices in a chapter's collectives: an
/// all-reduce op (is_allreduce) or one of chapter 10's scoped collectives. The trace's
/// exports colour these as the all-reduce (src/trace/export.cpp).
inline bool is_collective(std::string_view name) {
  return is_allreduce(name) || is_tensor_collective(name);
}

}  // namespace towers::span
