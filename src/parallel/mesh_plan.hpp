// SPDX-License-Identifier: MIT
// MeshPlan: what a run on a mesh of dp x tp x pp devices will hold and send, predicted
// before it starts (chapter 11).
//
// Chapters 8, 9 and 10 each prove one dimension alone: ZeRO's ledger on the data
// dimension, the bubble on the pipeline, the tensor split's bytes. The plan is one set of
// formulas for all three, written from what those chapters *allocate and send* (the
// ledger counts bytes asked for, so a form can equal it to the byte):
//
//   model state  P = the floats of one tensor rank's slice (chapter 10's
//                TensorSliceLayout: 109,450 replicated + 2,497 x 384/t; Ψ when t = 1).
//                Chapter 9's stages keep buffers of the whole P and use their layers'
//                range of it, so a pipeline stage holds P too; --optimizer's own state
//                (momentum's velocity, Adam's moments) only for that range. ZeRO on the
//                data dimension shards P over dp as chapter 8 does (ceil(P/dp), the
//                largest shard, is the largest device's; a pipeline stage's ZeRO-1 shards
//                its range, ceil(range/dp)), with chapter 8's transients:
//                the largest gradient bucket at stage 2, the whole gradient buffer and
//                LayerGather's window at 3. Beside tensor parallelism ZeRO-2 keeps the
//                slice's gradient shard beside the whole slice chapter 10's backward
//                writes (it has no buckets): P + ceil(P/dp) gradients, more than ZeRO-1's P.
//   activations  chapter 4's Network for the images a device sees (its batch b, or a
//                micro-batch b/m, once per stashed micro-batch on a pipeline stage), the
//                batch's images and labels, and chapter 10's split activations.
//   communication the ring's receive buffer (its largest chunk) on the data and tensor
//                dimensions (a pipeline stage's data ring averages only the range of the
//                variables it owns; on a pipeline only the stage holding local3 and
//                local4 has a tensor ring); chapter 9's mailboxes between neighbouring stages.
//   other        chapter 4's iterator slots (prefetch depth x one batch); chapter 9's
//                batch on its first and last stage; nothing with chapter 10's shared batch.
//   wire         bytes all devices send per step, per mesh dimension (zero_memory.hpp,
//                tensor_bytes.hpp; the pipeline's activations and gradients across each cut).
//   bubble       (p-1)/(m+p-1), chapter 9's ideal_bubble_fraction.
//
// A 1-D mesh is a chapter that exists, and tests/chapters/chapter11_plan_test.cpp holds
// the plan to its run category by category. A mesh of data x tensor x pipeline (ZeRO-0,
// every optimizer; with tp and pp both above 1 where local3 to softmax_linear stay on one
// stage, pp <= 4), ZeRO-1 beside tensor or pipeline parallelism or both, ZeRO-2 beside
// tensor parallelism, and data parallelism alone at every ZeRO stage run as 11_mesh's
// composed run, and chapter11_run_test holds the plan to it the same way. A pipeline cut
// between local3 and local4 beside tensor parallelism has no run yet: their plan composes the same forms, and
// `held_by_run` says so. ZeRO-2 beside a pipeline and ZeRO-3 beside either is not planned
// at all: mesh_problem refuses it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/optimizer_kind.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "runtime/memory_ledger.hpp"

namespace towers {

/// One configuration of the mesh: its shape and what runs on each dimension.
struct MeshConfig {
  int dp = 1;  ///< data-parallel degree (replicas, each its own batch)
  int tp = 1;  ///< tensor-parallel degree (local3/local4 split, chapter 10)
  int pp = 1;  ///< pipeline degree (stages, chapter 9's most even split)
  int zero = 0;  ///< ZeRO stage 0..3 on the data dimension (chapter 8)
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;  ///< gpipe or 1f1b (real model)
  int micro_batches = 1;  ///< m: micro-batches per batch on the pipeline dimension
  int batch = 32;         ///< b: images per data-parallel replica per step
  model::Optimizer optimizer = model::Optimizer::kSgd;  ///< sgd, momentum or adam
  double bucket_mb = 0;   ///< ZeRO-2's largest bucket, as chapter 8's --bucket-mb
  int prefetch_depth = 2; ///< iterator slots per data rank (chapter 4's default)
  /// The tensor dimension runs Krizhevsky's hybrid instead (chapter 10's --hybrid): tp
  /// towers of `batch` images each, the convolutions data-parallel, the FC pair split over
  /// all tp x batch rows. Only alone (dp = pp = 1, ZeRO-0).
  bool hybrid = false;
  /// The devices the mesh takes: dp x tp x pp, one process each in a composed run.
  int devices() const { return dp * tp * pp; }
};

/// What is wrong with `config` as a sentence that says what to change, or "" when the
/// plan can be made: degrees >= 1; tp dividing 192 (so 384 too: local4's outputs and
/// local3's columns); pp at most the model's 9 layers; zero 0..3, 2 only with pp = 1 and
/// 3 only on a mesh of data parallelism alone (chapter 8's layer gathers are whole-model);
/// micro-batches dividing the batch and above 1 only with pp > 1; gpipe or 1f1b (the real
/// model has no interleaved chunks); the hybrid only with dp = pp = 1 and ZeRO-0.
std::string mesh_problem(const MeshConfig& config);

/// Peak bytes of one device, per ledger category (MemoryCategory order).
using CategoryBytes = std::array<std::int64_t, kMemoryCategoryCount>;

/// How a run on the mesh compares, bit for bit, with a run that exists.
enum class NumericsClass {
  kBitIdentical,  ///< the same bits as `numerics_reference`
  kWithinBound,   ///< within a stated bound of `numerics_reference`
};

/// The plan of one configuration.
struct MeshPlan {
  MeshConfig config;  ///< what was planned
  /// Peak bytes per category of each pipeline stage's devices (every device of a stage
  /// holds the same up to one element of a shard; the plan gives the largest).
  std::vector<CategoryBytes> per_stage;
  /// The largest over devices, per category: what the chapters' summaries print as
  /// peak_<category>_bytes.
  CategoryBytes device{};
  std::int64_t wire_data = 0;      ///< bytes per step on the data dimension, all devices
  std::int64_t wire_tensor = 0;    ///< on the tensor dimension (g and f)
  std::int64_t wire_pipeline = 0;  ///< across the pipeline's cuts (activations and gradients)
  double bubble = 0;               ///< (p-1)/(m+p-1)
  /// How its bits compare with `numerics_reference`.
  NumericsClass numerics = NumericsClass::kBitIdentical;
  std::string numerics_reference;  ///< the run it matches and the test that holds it
  /// A program runs this mesh and a test holds the plan to it: a 1-D mesh (chapters 8-10),
  /// data x tensor x pipeline at ZeRO-0 (split_layers_on_one_stage where tp and pp are
  /// both above 1), data x tensor or data x pipeline at ZeRO-1, data x tensor at ZeRO-2,
  /// or data parallelism alone at any ZeRO stage (11_mesh's composed run, every optimizer).
  bool held_by_run = false;
  /// Bytes per step on every dimension together.
  std::int64_t total_wire() const { return wire_data + wire_tensor + wire_pipeline; }
};

/// The plan of `config` (which mesh_problem() must accept; throws std::invalid_argument
/// with its sentence otherwise).
MeshPlan make_mesh_plan(const MeshConfig& config);

/// Floats of chapter 4's Network for a batch of `b` (model/network.cpp's buffers, all
/// counted as activations): 454,486 per image and kLossCount + 2 scalars.
std::int64_t network_activation_floats(int b);

/// Floats of one tensor rank's slice of the model (t dividing 384): chapter 10's
/// TensorSliceLayout::size(), the model's Ψ when t = 1.
std::int64_t tensor_slice_floats(int t);

/// Whether chapter 9's default split into `pp` stages keeps local3, local4 and
/// softmax_linear on one stage (pp <= 4), as a pipeline beside tensor parallelism needs:
/// chapter 10's split joins local3's columns to local4's rows on the same rank, sums them
/// with g and runs on to the loss, so a cut inside that run of layers would need another
/// collective the composed run does not have.
bool split_layers_on_one_stage(int pp);

/// The factorizations dp x tp x pp = n the plan accepts with `config`'s other settings.
std::vector<MeshConfig> mesh_shapes(int n, const MeshConfig& config);

/// "data", "tensor", "pipeline": the names of the dimensions in summaries.
inline constexpr std::array<const char*, 3> kMeshDimensions = {"data", "tensor", "pipeline"};

}  // namespace towers
