// SPDX-License-Identifier: MIT
#include "parallel/mesh_plan.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "data/preprocess.hpp"  // kCropValues
#include "model/network.hpp"
#include "model/parameters.hpp"
#include "parallel/allreduce.hpp"  // ring_chunk
#include "parallel/buckets.hpp"
#include "parallel/layer_gather.hpp"
#include "parallel/pipeline_split.hpp"
#include "parallel/tensor_bytes.hpp"
#include "parallel/zero_memory.hpp"

namespace towers {
namespace {

constexpr std::int64_t kFloat = sizeof(float);
constexpr std::int64_t kImageFloats = static_cast<std::int64_t>(data::kCropValues);
// local3's columns (and local4's rows): what the tensor dimension splits.
constexpr int kSplitColumns = 384;

std::int64_t largest_chunk(std::int64_t count, int ranks) {
  return static_cast<std::int64_t>(ring_chunk(static_cast<std::size_t>(count), ranks, 0).size);
}

// Floats chapter 10's split layers add to a rank's activations for `rows` images and
// `columns` of local3: h and dh over the rows, a ones vector, two scalars
// (TensorSplit::activation_floats, tensor parallel).
std::int64_t split_activation_floats(std::int64_t rows, std::int64_t columns) {
  return 2 * rows * columns + rows + 2;
}

// The largest gradient bucket chapter 8's ZeRO-2 holds whole (--bucket-mb).
std::int64_t largest_bucket(double bucket_mb) {
  std::size_t largest = 0;
  for (const Bucket& bucket : make_buckets(bucket_mb)) largest = std::max(largest, bucket.count);
  return static_cast<std::int64_t>(largest);
}

// Floats of the variables stage `layers` owns and updates, of one tensor rank's slice:
// chapter 9's range of the flat buffer, with local3's and local4's split parameters
// divided by t. What the data dimension averages for a stage.
std::int64_t stage_state_floats(const StageLayers& layers, int t) {
  const ParameterRange range = stage_parameters(layers);
  auto count = static_cast<std::int64_t>(range.count);
  for (const char* name : {"local3/weights", "local3/biases", "local4/weights"}) {
    const model::ParameterView& split = model::parameter(name);
    if (split.offset >= range.offset && split.offset < range.offset + range.count) {
      count -= static_cast<std::int64_t>(split.count) - static_cast<std::int64_t>(split.count) / t;
    }
  }
  return count;
}

std::int64_t& at(CategoryBytes& bytes, MemoryCategory category) {
  return bytes[static_cast<std::size_t>(category)];
}

// One pipeline stage's devices: the bytes of the largest of them.
CategoryBytes stage_bytes(const MeshConfig& c, const std::vector<StageLayers>& split, int s) {
  CategoryBytes bytes{};
  const std::int64_t p = tensor_slice_floats(c.tp);  // P: the model state of one tensor rank
  const std::int64_t shard = largest_chunk(p, c.dp);  // ZeRO's shard of it (ceil(P/dp))
  const bool pipeline = c.pp > 1;

  // Parameters: P, the shard plus LayerGather's window at ZeRO-3.
  const auto window = static_cast<std::int64_t>(LayerGather::window_elements());
  at(bytes, MemoryCategory::kParameters) = kFloat * (c.zero >= 3 ? shard + window : p);
  // Gradients: P whole (a pipeline stage also sums its micro-batches' into a second P);
  // ZeRO-2: the shard and the largest bucket; ZeRO-3: the shard and the whole buffer.
  // ZeRO-2 beside tensor parallelism: the shard and the slice's whole buffer, which
  // chapter 10's backward writes (it has no buckets: zero_one_update.hpp), so more than
  // ZeRO-1's P at the peak; what the step keeps of its gradients is the shard.
  std::int64_t gradients = pipeline ? 2 * p : p;
  if (c.zero == 2) gradients = shard + (c.tp > 1 ? p : largest_bucket(c.bucket_mb));
  if (c.zero == 3) gradients = shard + p;
  at(bytes, MemoryCategory::kGradients) = kFloat * gradients;
  // Optimizer state: the moving averages and the optimizer's own, sharded from ZeRO-1.
  // A pipeline stage keeps the moving averages in chapter 9's buffer of the whole P, but
  // --optimizer's own state (momentum's velocity, Adam's moments) only for the range it
  // updates: a buffer laid out as the parameters would hold nothing in the rest
  // (stage_rank.cpp; the same floats the data dimension averages for the stage). At
  // ZeRO-1 a stage's replicas shard that range, not P: each keeps the moving averages and
  // the optimizer's state of its shard of the range alone (zero_one_update.hpp).
  const int own = model::optimizer_own_floats(c.optimizer);
  std::int64_t optimizer_state = (1 + own) * (c.zero >= 1 ? shard : p);
  if (pipeline && c.zero == 0) optimizer_state = p + own * stage_state_floats(split[s], c.tp);
  if (pipeline && c.zero == 1) {
    optimizer_state = (1 + own) * largest_chunk(stage_state_floats(split[s], c.tp), c.dp);
  }
  at(bytes, MemoryCategory::kOptimizerState) = kFloat * optimizer_state;

  // Activations: chapter 4's Network for the images the device sees.
  const std::int64_t columns = kSplitColumns / c.tp;
  if (!pipeline) {
    std::int64_t floats = network_activation_floats(c.batch) + c.batch * kImageFloats + c.batch;
    if (c.hybrid) {  // the split over every tower's rows, and what the hybrid gathers
      const std::int64_t rows = std::int64_t{c.tp} * c.batch;
      floats += split_activation_floats(rows, columns) +
                2 * rows * (kTensorInputWidth + kTensorOutputWidth);
    } else if (c.tp > 1) {
      floats += split_activation_floats(c.batch, columns);
    }
    at(bytes, MemoryCategory::kActivations) = kFloat * floats;
  } else {  // one Network of a micro-batch per micro-batch the schedule stashes at once
    const int micro_batch = c.batch / c.micro_batches;
    const PipelineShape shape{c.pp, c.micro_batches, 1};
    const std::int64_t slots = peak_stashed_activations(stage_schedule(c.schedule, shape, s));
    std::int64_t per_slot = network_activation_floats(micro_batch);
    const bool holds_split = split[s].first <= model::kLocal3 && model::kLocal3 <= split[s].last;
    if (c.tp > 1 && holds_split) per_slot += split_activation_floats(micro_batch, columns);
    at(bytes, MemoryCategory::kActivations) = kFloat * slots * per_slot;
  }

  // Communication: each dimension's receive buffers on this device.
  // The data dimension's ring (chapter 8 makes it for one tower too, so a 1x1x1 mesh has
  // it); the tensor dimension's, g and f sharing one sized for f's pool2 gradient; the
  // hybrid's two, the replicated all-reduce's and the one over every tower's pool2 rows;
  // chapter 9's mailboxes, one per micro-batch from each neighbour.
  const std::int64_t micro = c.batch / c.micro_batches;
  std::int64_t communication = 0;
  if (c.hybrid) {
    communication = largest_chunk(kReplicatedParameters, c.tp) +
                    largest_chunk(std::int64_t{c.tp} * c.batch * kTensorInputWidth, c.tp);
  } else {
    // A stage averages only the range it owns (chapter 11's composed run, stage_rank.cpp).
    const std::int64_t averaged = pipeline ? stage_state_floats(split[s], c.tp) : p;
    if (c.dp > 1 || (c.tp == 1 && !pipeline)) communication += largest_chunk(averaged, c.dp);
    // The tensor ring where g and f run: on a pipeline only the stage holding local3 and
    // local4 (the stages before it run whole on every tensor rank and sum nothing).
    const bool holds_split = split[s].first <= model::kLocal3 && model::kLocal3 <= split[s].last;
    if (c.tp > 1 && (!pipeline || holds_split)) {
      communication += largest_chunk(micro * kTensorInputWidth, c.tp);
    }
  }
  if (pipeline && s > 0) {
    communication +=
        c.micro_batches * micro * model::Network::layer_output_floats(split[s].first - 1);
  }
  if (pipeline && s + 1 < c.pp) {
    communication += c.micro_batches * micro * model::Network::layer_output_floats(split[s].last);
  }
  at(bytes, MemoryCategory::kCommunication) = kFloat * communication;

  // Other: where the batch lands on the device.
  std::int64_t other = 0;
  if (pipeline) {  // chapter 9: the images on the first stage, the labels on the last
    if (s == 0) other += kFloat * c.batch * kImageFloats;
    if (s + 1 == c.pp) other += 4 * c.batch;  // int32 labels
  } else if (c.tp == 1 && !c.hybrid) {  // chapter 4's iterator: prefetch_depth batches
    other = std::int64_t{c.prefetch_depth} * c.batch * (kFloat * kImageFloats + 4);
  }  // chapter 10's tensor ranks share one batch read on the host: nothing on the device
  at(bytes, MemoryCategory::kOther) = other;
  return bytes;
}

}  // namespace

std::int64_t network_activation_floats(int b) {
  // model/network.cpp, per image: col1 24*24*75, conv1 24*24*64, pool1 and its argmax,
  // norm1 and its scale (12*12*64 each), col2 12*12*1600, conv2, norm2 and its scale
  // (12*12*64 each), pool2 and its argmax (2304 each), local3 384, local4 192, logits 10,
  // the example loss 1, dlogits 10, correct 1, the two gradient buffers 24*24*64 each,
  // the ones 24*24; and per Network the losses, one scratch float and the correct count.
  const std::int64_t per_image = 24 * 24 * 75 + 24 * 24 * 64 + 2 * 12 * 12 * 64 +
                                 2 * 12 * 12 * 64 + 12 * 12 * 1600 + 3 * 12 * 12 * 64 +
                                 2 * 2304 + 384 + 192 + 10 + 1 + 10 + 1 + 2 * 24 * 24 * 64 +
                                 24 * 24;
  return per_image * b + model::kLossCount + 2;
}

std::int64_t tensor_slice_floats(int t) {
  return kReplicatedParameters + (kModelParameters - kReplicatedParameters) / t;
}

std::string mesh_problem(const MeshConfig& c) {
  if (c.dp < 1 || c.tp < 1 || c.pp < 1) {
    return "every mesh degree is at least 1 (--dp, --tp, --pp)";
  }
  if (kTensorOutputWidth % c.tp != 0) {
    return "--tp " + std::to_string(c.tp) + " does not divide local4's 192 outputs and local3's "
           "384 columns; use one of 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 192";
  }
  if (c.pp > model::kLayerCount) {
    return "--pp " + std::to_string(c.pp) + ": the model has " + std::to_string(model::kLayerCount) +
           " layers to cut between (chapter 9); use at most " + std::to_string(model::kLayerCount);
  }
  if (c.zero < 0 || c.zero > kMaxZeroStage) {
    return "--zero " + std::to_string(c.zero) + " is not a ZeRO stage; use 0, 1, 2 or 3";
  }
  if (c.zero == 3 && (c.tp > 1 || c.pp > 1)) {
    return "--zero 3 is planned for data parallelism alone (chapter 8's layer gathers fetch "
           "whole layers of the flat model, not a tensor slice's columns or a stage's range); "
           "use --zero 2 beside --tp (with --pp 1), or --zero 1 beside --tp or --pp";
  }
  if (c.zero == 2 && c.pp > 1) {
    return "--zero 2 is planned for data parallelism and beside --tp, not beside a pipeline (a "
           "stage sums its micro-batches' gradients over its range in buffers of its own, and "
           "no run keeps a shard of them yet); use --zero 1 with --pp above 1, which shards "
           "each stage's range";
  }
  if (c.batch < 1) return "--batch-size is at least 1";
  if (c.micro_batches < 1) return "--micro-batches is at least 1";
  if (c.pp == 1 && c.micro_batches > 1) {
    return "--micro-batches cuts the batch for the pipeline; with --pp 1 there is none. Use "
           "--micro-batches 1, or --pp above 1";
  }
  if (c.batch % c.micro_batches != 0) {
    return "--batch-size " + std::to_string(c.batch) + " is not a multiple of --micro-batches " +
           std::to_string(c.micro_batches) + ": the micro-batches must be equal";
  }
  if (c.schedule == PipelineSchedule::kInterleaved) {
    return "--schedule interleaved has no chunks of the real model (chapter 9); use gpipe or 1f1b";
  }
  if (c.prefetch_depth < 1) return "the prefetch depth is at least 1";
  if (c.hybrid && (c.dp > 1 || c.pp > 1 || c.zero > 0)) {
    return "--hybrid is chapter 10's split on its own: its towers are already the data "
           "dimension. Use it with --dp 1 --pp 1 --zero 0, and --tp for the towers";
  }
  return "";
}

MeshPlan make_mesh_plan(const MeshConfig& c) {
  if (const std::string problem = mesh_problem(c); !problem.empty()) {
    throw std::invalid_argument(problem);
  }
  MeshPlan plan;
  plan.config = c;
  const std::vector<StageLayers> split = default_split(c.pp);
  for (int s = 0; s < c.pp; ++s) {
    plan.per_stage.push_back(stage_bytes(c, split, s));
    for (std::size_t k = 0; k < plan.device.size(); ++k) {
      plan.device[k] = std::max(plan.device[k], plan.per_stage.back()[k]);
    }
  }

  // Bytes on the wire per step, all devices, per dimension.
  const std::int64_t p = tensor_slice_floats(c.tp);
  // Data: one ring (or ZeRO's halves and gathers) per tensor rank, of the whole slice; a
  // pipeline stage's ring averages only the range of the variables it owns.
  const auto backward = static_cast<double>(LayerGather::backward_elements());
  if (c.pp == 1) {
    plan.wire_data =
        std::llround(zero_wire_bytes_per_step(c.zero, static_cast<double>(p), c.dp, kFloat, backward)) *
        c.tp;
  } else {
    for (int s = 0; s < c.pp; ++s) {
      const auto owned = static_cast<double>(stage_state_floats(split[s], c.tp));
      plan.wire_data += std::llround(zero_wire_bytes_per_step(c.zero, owned, c.dp, kFloat, backward)) * c.tp;
    }
  }
  // Tensor: g and f over every image of the batch, one group per data replica.
  plan.wire_tensor = kFloat * (c.hybrid ? hybrid_wire_floats(c.tp, c.batch)
                                        : tensor_wire_floats(c.tp, c.batch) * c.dp);
  // Pipeline: each cut carries the activations forward and their gradient back, every
  // image of the batch once, in each data replica and tensor rank.
  for (int s = 0; s + 1 < c.pp; ++s) {
    plan.wire_pipeline += 2 * kFloat * c.batch *
                          model::Network::layer_output_floats(split[s].last) * c.dp * c.tp;
  }
  plan.bubble = c.pp > 1 ? ideal_bubble_fraction(c.schedule, {c.pp, c.micro_batches, 1}) : 0.0;

  // Which run it must match, and how.
  const int dims_above_one = (c.dp > 1) + (c.tp > 1) + (c.pp > 1);
  // Chapters 9 and 10 train with SGD and no ZeRO: only chapter 8 has the others.
  const bool chapter8 = c.tp == 1 && c.pp == 1;
  // 11_mesh's composed run: data x tensor x pipeline at ZeRO-0 (a pipeline beside tensor
  // parallelism where local3 to softmax_linear stay on one stage) at ZeRO-0 and ZeRO-1,
  // ZeRO-2 beside tensor parallelism, and every ZeRO stage on data parallelism alone, with
  // every optimizer (chapter11_run_test holds it).
  const bool one_beside_data = c.pp == 1 || c.tp == 1;
  const bool composed_run =
      (one_beside_data || split_layers_on_one_stage(c.pp)) && !c.hybrid &&
      (c.zero <= 1 || chapter8 || (c.zero == 2 && c.pp == 1));
  plan.held_by_run = (dims_above_one <= 1 &&
                      (chapter8 || (c.zero == 0 && c.optimizer == model::Optimizer::kSgd))) ||
                     composed_run;
  if (c.hybrid && c.tp == 1) {
    plan.numerics_reference = "04_nccl_iterator's one tower (chapter10_test)";
  } else if (c.hybrid) {
    plan.numerics = NumericsClass::kWithinBound;
    plan.numerics_reference = "chapter 4's " + std::to_string(c.tp) +
                              " towers, within chapter 10's bound (chapter10_test)";
  } else if (c.tp > 1 && c.optimizer != model::Optimizer::kSgd) {
    plan.numerics = NumericsClass::kWithinBound;
    plan.numerics_reference =
        "08_sharded --devices " + std::to_string(c.dp) + " --optimizer " +
        model::optimizer_name(c.optimizer) + ", no bound stated: chapter 10's bound is SGD's, "
        "and no chapter trains the tensor split with " + model::optimizer_name(c.optimizer) +
        " (a prediction)";
  } else if (c.pp > 1 && c.optimizer != model::Optimizer::kSgd && c.dp <= 2) {
    // One micro-batch on one replica: chapter 9's stages compute chapter 1's gradients
    // (chapter9_model_test), and the update is chapter 8's rule, element by element.
    const bool held = c.dp == 1 && c.micro_batches == 1;
    plan.numerics_reference =
        std::string("08_sharded --devices ") + std::to_string(c.dp) + " --optimizer " +
        model::optimizer_name(c.optimizer) +
        (held ? " (chapter11_run_test)"
              : ", each replica accumulating " + std::to_string(c.micro_batches) +
                    " micro-batches (no run holds it yet)");
  } else if (c.tp > 1 && c.pp > 1 && (c.dp > 1 || c.micro_batches > 1)) {
    // Each replica's stages add its micro-batches' gradients in order, the tensor ranks
    // cut local4's and f's sums as chapter 10's do, and the data ring averages each
    // stage's range: no program adds in that order, so no bound is stated.
    plan.numerics = NumericsClass::kWithinBound;
    plan.numerics_reference =
        "chapter 4's " + std::to_string(c.dp) + " tower(s), each accumulating " +
        std::to_string(c.micro_batches) + " micro-batch(es), the tensor ranks cutting local4's "
        "sums as in chapter 10; no bound is stated yet (a prediction; with one micro-batch "
        "and one replica it is 10_tensor --collectives ring bit for bit, chapter11_run_test)";
  } else if (c.tp > 1 && c.dp > 1) {
    plan.numerics = NumericsClass::kWithinBound;
    plan.numerics_reference =
        "05_ranks with " + std::to_string(c.dp) + " ranks (--allreduce ring), within gamma(383) "
        "+ gamma(384/t + t - 2) of the largest update (chapter11_run_test)";
  } else if (c.tp > 1) {
    // With a pipeline of one micro-batch too: its stages cut chapter 10's step between
    // processes, the same ops on the same values in the same order.
    plan.numerics = NumericsClass::kWithinBound;
    plan.numerics_reference =
        "chapter 4 on one batch, within gamma(383) + gamma(384/t + t - 2) of the largest update "
        "(chapter10_test); an order-matched reference bit for bit (chapter10_split_test), and "
        "10_tensor --collectives ring bit for bit (chapter11_run_test" +
        std::string(c.pp > 1 ? ": the stages cut its step between processes)" : ")");
  } else if (c.pp > 1 && c.dp > 2) {
    // Each stage's data ring cuts its chunks from the stage's own range, not from the
    // whole buffer as chapter 4's and chapter 5's rings do: with three replicas or more an
    // element's gradients are added in an order that depends on which chunk it falls in,
    // so the sums round otherwise (with two, a + b = b + a, bit for bit).
    plan.numerics = NumericsClass::kWithinBound;
    const std::string towers =
        c.optimizer == model::Optimizer::kSgd
            ? "chapter 4's " + std::to_string(c.dp) + " towers"
            : "08_sharded --devices " + std::to_string(c.dp) + " --optimizer " +
                  model::optimizer_name(c.optimizer);
    plan.numerics_reference = towers + ", each replica accumulating " +
                              std::to_string(c.micro_batches) + " micro-batches, the replicas' "
                              "sums in another order (each stage's ring cuts its own range); no "
                              "bound is stated yet (a prediction; chapter11_run_test shows the "
                              "bits differ)";
  } else if (c.pp > 1 && c.dp == 1) {
    plan.numerics_reference = "01_single_gpu --accumulate " + std::to_string(c.micro_batches) +
                              " (chapter9_model_test)";
  } else if (c.pp > 1) {
    plan.numerics_reference = "chapter 4's " + std::to_string(c.dp) +
                              " towers, each accumulating " + std::to_string(c.micro_batches) +
                              " micro-batches, written out in chapter11_run_test (no program runs it)";
  } else {
    plan.numerics_reference = "04_nccl_iterator with " + std::to_string(c.dp) +
                              " tower(s), every ZeRO stage (chapter8_test)";
  }
  if (c.zero == 1 && !chapter8) {  // the update moved between the ring's halves, nothing else
    plan.numerics_reference += "; --zero 1 is --zero 0's bits (chapter11_run_test)";
  }
  if (c.zero == 2 && !chapter8) {  // ZeRO-1's update, reading a copy of the shard's mean
    plan.numerics_reference += "; --zero 2 is --zero 1's bits, and --zero 1 --zero 0's "
                               "(chapter11_run_test)";
  }
  if (!plan.held_by_run) plan.numerics_reference += "; composed mesh: a prediction";
  return plan;
}

bool split_layers_on_one_stage(int pp) {
  for (const StageLayers& stage : default_split(pp)) {
    if (stage.first <= model::kLocal3 && model::kLocal3 <= stage.last) {
      return stage.last == model::kSoftmaxLinear;
    }
  }
  return false;
}

std::vector<MeshConfig> mesh_shapes(int n, const MeshConfig& config) {
  std::vector<MeshConfig> shapes;
  for (int dp = 1; dp <= n; ++dp) {
    for (int tp = 1; dp * tp <= n; ++tp) {
      if (n % (dp * tp) != 0) continue;
      MeshConfig shape = config;
      shape.dp = dp;
      shape.tp = tp;
      shape.pp = n / (dp * tp);
      if (shape.pp == 1) shape.micro_batches = 1;  // no pipeline to cut the batch for
      if (mesh_problem(shape).empty()) shapes.push_back(shape);
    }
  }
  return shapes;
}

}  // namespace towers
