// SPDX-License-Identifier: MIT
// TensorSlices: where chapter 10's variables live — a slice per rank.
//
// Chapter 10 splits the two fully connected layers that hold 90 % of the model's
// parameters. Rank r of t owns a contiguous range of local3's 384 outputs (its columns of
// local3's weights [2304, 384] and of its biases) and the same range of local4's 384
// inputs (its rows of local4's weights [384, 192]): ring_chunk(384, t, r), 384/t each
// when t divides 384. Everything else — conv1, conv2, softmax_linear and local4's biases,
// which are added once, after the ranks' partial sums are added up — is replicated: each
// rank holds it whole.
//
// A rank keeps its slice in one flat buffer, in this order:
//
//   [0, 107,328)            conv1, conv2: where the flat layout has them (offset 0)
//   next 192                local4/biases                    replicated: 109,450 floats
//   next 1,930              softmax_linear/weights, /biases
//   next 2,304 c            local3/weights, its c columns, row by row ([2304, c])
//   next c                  local3/biases, its c entries     split: 2,497 c floats
//   next 192 c              local4/weights, its c rows ([c, 192])
//
// so the replicated variables are one prefix (the hybrid all-reduces it as chapter 4 does)
// and the convolutions sit at their flat offsets (model::Network reads them as it would
// the whole buffer). Gradients and moving averages use the same layout. With t = 1 the
// slice holds every parameter once: 109,450 + 2,497 x 384 = 1,068,298.
//
// The two verbs of a placement (DESIGN.md): put the whole training state together on the
// host in chapter 1's flat layout (checkpoints, --save-params, --eval), and take it back
// (the start, --resume). The tutorial's SGD keeps no state beyond the moving averages, so
// the training state is the parameters and the moving averages. Used from one host thread,
// between steps.
#pragma once

#include <cstddef>
#include <vector>

#include "parallel/allreduce.hpp"
#include "runtime/runtime.hpp"
#include "parallel/placement.hpp"

namespace towers {

/// Where rank `rank` of `ranks` keeps its variables inside its slice (layout above), and
/// how its pieces map to chapter 1's flat layout. Plain arithmetic, no device.
class TensorSliceLayout {
 public:
  /// Rank `rank` (0..ranks-1) of `ranks` (1..384). Throws std::invalid_argument outside
  /// those ranges.
  TensorSliceLayout(int ranks, int rank);

  /// local3's outputs (its weights' columns, its biases) and local4's inputs (its weights'
  /// rows) this rank owns: ring_chunk(384, ranks, rank).
  Chunk columns() const { return columns_; }
  /// Floats of the slice: replicated_floats() + split_floats_per_column() x columns().size.
  std::size_t size() const;

  /// The parameters every rank holds whole: conv1, conv2, local4/biases, softmax_linear
  /// (109,450). They are the slice's first replicated_floats() floats.
  static std::size_t replicated_floats();
  /// Floats a rank holds per column it owns: local3's 2,304 weights and 1 bias, local4's
  /// 192 weights (2,497).
  static std::size_t split_floats_per_column();

  // Where each variable starts inside the slice, in floats.
  /// conv1 and conv2: [0, conv_floats()), where the flat layout has them.
  static std::size_t conv_floats();
  /// local4/biases [192].
  static std::size_t local4_biases_at();
  /// softmax_linear/weights [192, 10] then /biases [10]; in the flat layout they start at
  /// softmax_flat_offset(), the params_from model::Network's layer-by-layer calls take.
  static std::size_t softmax_at();
  /// The flat offset of softmax_linear/weights.
  static std::size_t softmax_flat_offset();
  /// local3/weights, this rank's columns: [2304, columns().size], row by row.
  std::size_t local3_weights_at() const { return replicated_floats(); }
  /// local3/biases, this rank's entries [columns().size].
  std::size_t local3_biases_at() const;
  /// local4/weights, this rank's rows [columns().size, 192].
  std::size_t local4_weights_at() const;

  /// Copies this rank's slice out of `whole` (kNumParameters floats, chapter 1's layout)
  /// into `slice` (size() floats). Host memory.
  void take(const float* whole, float* slice) const;
  /// Copies `slice` into its places of `whole`: this rank's columns and rows of local3 and
  /// local4, and, when `replicated`, the replicated variables. Host memory.
  void put(const float* slice, float* whole, bool replicated) const;

 private:
  Chunk columns_;
};

/// Every rank's slice of the parameters, their gradients and their moving averages, on the
/// rank's device. Introduced in chapter 10.
class TensorSlices : public Placement {
 public:
  /// Rank r on devices[r], its copies made on streams[r] (streams[r] runs on devices[r]).
  /// Allocates per rank a slice of parameters (MemoryCategory::kParameters), of gradients
  /// (kGradients) and of moving averages (kOptimizerState): the memory ledger shows each
  /// rank's share. Several ranks may share a device.
  TensorSlices(std::vector<Device*> devices, std::vector<Stream*> streams);
  /// Some ranks of a tensor group of `group_ranks`, the others in other processes
  /// (chapter 11's mesh): devices[i] holds the slice of rank first_rank + i. Throws
  /// std::invalid_argument as TensorSliceLayout for ranks outside the group. Without
  /// `keep_averages` the moving averages are kept elsewhere (chapter 11's ZeRO-1 keeps a
  /// shard of them): none are allocated, averages() is null, and take_back() and
  /// put_together() leave them out.
  TensorSlices(std::vector<Device*> devices, std::vector<Stream*> streams, int group_ranks,
               int first_rank, bool keep_averages = true);

  /// How many ranks.
  int ranks() const { return static_cast<int>(layouts_.size()); }
  /// Rank r's layout.
  const TensorSliceLayout& layout(int r) const { return layouts_[static_cast<std::size_t>(r)]; }
  /// Rank r's parameters: layout(r).size() floats on its device.
  float* params(int r) { return params_[static_cast<std::size_t>(r)].as<float>(); }
  /// Rank r's gradients, laid out as its parameters.
  float* grads(int r) { return grads_[static_cast<std::size_t>(r)].as<float>(); }
  /// Rank r's moving averages, laid out as its parameters (null when kept elsewhere).
  float* averages(int r) { return averages_[static_cast<std::size_t>(r)].as<float>(); }

  std::string where() const override { return "a slice per tensor rank"; }
  void state_to_host(model::TrainingState& state) override;
  void params_to_host(float* params) override { put_together(params, nullptr); }
  void load_from_host(const model::TrainingState& state) override {
    take_back(state.params.data(), state.moving_averages.data());
  }

  /// Takes the whole state back: every rank's slice of `params` and `averages` (host,
  /// kNumParameters floats each, chapter 1's layout) copied to its device. Waits.
  void take_back(const float* params, const float* averages);
  /// Puts the whole state together on the host: each rank's pieces of its parameters
  /// and moving averages into `params` and `averages` (kNumParameters floats each, chapter
  /// 1's layout; either may be null: not read), the replicated variables from rank 0.
  /// Waits for each rank's stream: call between steps.
  void put_together(float* params, float* averages);

 private:
  std::vector<TensorSliceLayout> layouts_;
  std::vector<Stream*> streams_;
  std::vector<Buffer> params_, grads_, averages_;
  std::vector<float> staging_;  // one slice on the host, laid out as on the device
};

}  // namespace towers
