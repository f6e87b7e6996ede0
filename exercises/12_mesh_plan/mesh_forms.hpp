// SPDX-License-Identifier: MIT
// Exercise 12: predict, then run (chapter 11).
//
// Chapter 11's plan says, before anything runs, what every device of a mesh will hold and
// what will cross the links. Here you write its formulas for the three 1-D meshes that
// run today, one function per question; the grader then runs the chapters' programs
// (08_sharded, 09_pipeline, 10_tensor) at a tiny batch and holds your predictions to what
// the runs' memory ledgers and byte counters measured, to the byte, and your bubble to
// what chapter 9's trace measured.
//
// Units: bytes, fp32 (kFloatBytes a float). "Wire bytes" are the bytes all devices of a
// dimension send in one step, added up (what the runs count: every copy of a chunk from
// one device to another). A device's "ledger bytes" of a category are the most that
// category ever held at once on that device (the peak the memory ledger keeps); where
// devices differ by one element of a shard, the largest device's.
//
// What the chapters allocate and send, in words (the formulas are yours to write):
//   - the ring all-reduce (chapter 4) cuts its buffer into one chunk per device, as even
//     as possible (the first ones one element longer); a reduce-scatter, then an
//     all-gather, each chunk passed along the ring. Each device receives into one buffer
//     the size of the largest chunk.
//   - ZeRO (chapter 8) on N devices: stage 1 shards the optimizer state N ways, stage 2
//     the gradients too, stage 3 the parameters too; a device owns one chunk of the ring's
//     cut (the largest device: the largest chunk). At their peak, stages 2 and 3 also hold
//     working buffers that the ZeRO paper's count leaves out (ZeroWorkspace). Stages 0-2
//     send one reduce-scatter and one all-gather of the parameters' worth per step;
//     stage 3 also gathers the parameters the backward pass reads again.
//   - tensor parallelism (chapter 10) over t ranks splits local3's columns and local4's
//     rows; everything else (ModelSizes::replicated) every rank keeps whole. g all-reduces
//     local4's partial outputs forward, f local3's partial input gradient backward, each
//     over every image of the batch; one ring buffer serves both, sized for the larger.
//   - the pipeline (chapter 9) of p stages: a stage keeps buffers of the whole model (it
//     uses its layers' range of them) and a second gradient buffer, the sum of its
//     micro-batches'; across each cut, the activations go forward and their gradient
//     comes back, for every image of the batch; a stage receives into one mailbox per
//     micro-batch from each neighbour.
#pragma once

#include <cstdint>
#include <span>

namespace towers::exercises {

/// Bytes of one float: everything is fp32.
inline constexpr std::int64_t kFloatBytes = 4;

/// The model's sizes that the formulas need; the grader fills them in from towers' model
/// (the numbers in the comments are chapter 4's network).
struct ModelSizes {
  std::int64_t parameters = 0;  ///< Ψ, every parameter of the model (1,068,298)
  /// What every tensor rank keeps whole: conv1, conv2, local4's biases, softmax_linear
  /// (109,450).
  std::int64_t replicated = 0;
  std::int64_t split_columns = 0;  ///< local3's columns, split over the tensor ranks (384)
  /// The parameters that go with one of those columns: local3's 2,304 weights and bias
  /// into it, local4's 192 weights out of it (2,497). replicated + split_columns x this
  /// = parameters.
  std::int64_t floats_per_column = 0;
  std::int64_t f_floats_per_image = 0;  ///< what f all-reduces per image: local3's input (2,304)
  std::int64_t g_floats_per_image = 0;  ///< what g all-reduces per image: local4's output (192)
};

/// What ZeRO holds whole for a moment at its peak (chapter 8), in elements.
struct ZeroWorkspace {
  /// Stage 2: the gradients of the largest bucket, written whole by the backward pass
  /// before that bucket is reduce-scattered. (Stage 3 reduce-scatters the whole gradient
  /// buffer at once: the whole model is one bucket there.)
  std::int64_t largest_bucket = 0;
  /// Stage 3: the parameters gathered at once (the two largest consecutive layers: one
  /// computes while the next one's gather is prefetched).
  std::int64_t gather_window = 0;
  /// Stage 3: the parameters gathered again for the backward pass (every layer it reads).
  std::int64_t backward_gathered = 0;
};

/// Peak ledger bytes of one device, per category.
struct DeviceBytes {
  std::int64_t parameters = 0;       ///< the model's weights
  std::int64_t gradients = 0;        ///< d(loss)/d(weights)
  std::int64_t optimizer_state = 0;  ///< what the update keeps between steps
  std::int64_t communication = 0;    ///< the collectives' receive buffers, the mailboxes
};

/// Wire bytes of chapter 10's two all-reduces per step, all ranks together.
struct TensorWire {
  std::int64_t g = 0;  ///< forward: local4's partial outputs
  std::int64_t f = 0;  ///< backward: local3's partial input gradient
};

// ---- The ring (chapter 4) --------------------------------------------------------------

/// Wire bytes of one ring all-reduce of `floats` floats over `devices` devices (>= 1),
/// all devices together.
std::int64_t ring_all_reduce_wire_bytes(std::int64_t floats, int devices);

/// Ledger bytes of the ring's receive buffer on one device (the largest device's).
std::int64_t ring_receive_buffer_bytes(std::int64_t floats, int devices);

// ---- The data dimension: ZeRO (chapter 8) ------------------------------------------------

/// Wire bytes per step of data parallelism over `devices` at ZeRO `stage` (0..3).
std::int64_t zero_wire_bytes(int stage, int devices, const ModelSizes& model,
                             const ZeroWorkspace& workspace);

/// Ledger bytes of the largest device at ZeRO `stage` (0..3) over `devices`, with
/// `optimizer_floats` floats of optimizer state per parameter (SGD 1: the moving average;
/// momentum 2; Adam 3). Communication: the ring's receive buffer for the parameters
/// (chapter 8 makes the ring for one device too).
DeviceBytes zero_device_bytes(int stage, int devices, int optimizer_floats,
                              const ModelSizes& model, const ZeroWorkspace& workspace);

// ---- The tensor dimension (chapter 10) ---------------------------------------------------

/// Floats of the model one of `t` tensor ranks holds (t divides split_columns).
std::int64_t tensor_rank_floats(int t, const ModelSizes& model);

/// Wire bytes per step of g and of f over `t` ranks that share a batch of `batch` images.
TensorWire tensor_wire_bytes(int t, int batch, const ModelSizes& model);

/// Ledger bytes of one tensor rank (SGD: one float of optimizer state per parameter).
DeviceBytes tensor_device_bytes(int t, int batch, const ModelSizes& model);

// ---- The pipeline dimension (chapter 9) --------------------------------------------------

/// Wire bytes per step across the cuts of a pipeline; cut_floats[s] is what one image's
/// activations hold at the cut between stage s and s + 1 (p - 1 cuts for p stages).
std::int64_t pipeline_wire_bytes(int batch, std::span<const std::int64_t> cut_floats);

/// Ledger bytes of stage `stage` (0..p-1, p = cut_floats.size() + 1) with `batch` images
/// cut into `micro_batches` equal micro-batches (SGD, as chapter 9 trains).
DeviceBytes pipeline_stage_bytes(int stage, int batch, int micro_batches,
                                 std::span<const std::int64_t> cut_floats,
                                 const ModelSizes& model);

/// The share of a step the stages of a GPipe or 1F1B pipeline of `stages` stages and
/// `micro_batches` micro-batches stand idle: the bubble.
double bubble_fraction(int stages, int micro_batches);

}  // namespace towers::exercises
