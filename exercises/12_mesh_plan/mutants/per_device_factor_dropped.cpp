// SPDX-License-Identifier: MIT
// mutant: the (N-1)/N dropped: every device counted as sending the whole buffer twice
#include "mesh_forms.hpp"

namespace towers::exercises {

namespace {

// The ring's largest chunk of `floats` over `devices`: the first chunks are one longer.
std::int64_t largest_chunk(std::int64_t floats, int devices) {
  return (floats + devices - 1) / devices;
}

}  // namespace

std::int64_t ring_all_reduce_wire_bytes(std::int64_t floats, int devices) {
  // Every chunk crosses devices - 1 links in the reduce-scatter and as many in the
  // all-gather, whatever the chunks' sizes: per device 2(k-1)/k of the buffer.
  return 2 * std::int64_t{devices} * floats * kFloatBytes;
}

std::int64_t ring_receive_buffer_bytes(std::int64_t floats, int devices) {
  return largest_chunk(floats, devices) * kFloatBytes;
}

std::int64_t zero_wire_bytes(int stage, int devices, const ModelSizes& model,
                             const ZeroWorkspace& workspace) {
  // A reduce-scatter and an all-gather: one all-reduce's worth. Stage 3 gathers the
  // parameters for the forward pass and again those the backward pass reads.
  const std::int64_t others = devices - 1;
  const std::int64_t gathered =
      stage >= 3 ? model.parameters + workspace.backward_gathered : model.parameters;
  return others * (model.parameters + gathered) * kFloatBytes;
}

DeviceBytes zero_device_bytes(int stage, int devices, int optimizer_floats,
                              const ModelSizes& model, const ZeroWorkspace& workspace) {
  const std::int64_t psi = model.parameters;
  const std::int64_t shard = largest_chunk(psi, devices);
  DeviceBytes bytes;
  bytes.parameters = kFloatBytes * (stage >= 3 ? shard + workspace.gather_window : psi);
  std::int64_t gradients = psi;
  if (stage == 2) gradients = shard + workspace.largest_bucket;
  if (stage >= 3) gradients = shard + psi;  // the whole buffer is the one bucket
  bytes.gradients = kFloatBytes * gradients;
  bytes.optimizer_state = kFloatBytes * optimizer_floats * (stage >= 1 ? shard : psi);
  bytes.communication = ring_receive_buffer_bytes(psi, devices);
  return bytes;
}

std::int64_t tensor_rank_floats(int t, const ModelSizes& model) {
  return model.replicated + model.floats_per_column * (model.split_columns / t);
}

TensorWire tensor_wire_bytes(int t, int batch, const ModelSizes& model) {
  return {ring_all_reduce_wire_bytes(std::int64_t{batch} * model.g_floats_per_image, t),
          ring_all_reduce_wire_bytes(std::int64_t{batch} * model.f_floats_per_image, t)};
}

DeviceBytes tensor_device_bytes(int t, int batch, const ModelSizes& model) {
  const std::int64_t slice = kFloatBytes * tensor_rank_floats(t, model);
  // g and f share one ring, its buffer sized for f's rows (the wider).
  return {slice, slice, slice,
          ring_receive_buffer_bytes(std::int64_t{batch} * model.f_floats_per_image, t)};
}

std::int64_t pipeline_wire_bytes(int batch, std::span<const std::int64_t> cut_floats) {
  std::int64_t bytes = 0;
  for (const std::int64_t floats : cut_floats) bytes += 2 * batch * floats * kFloatBytes;
  return bytes;
}

DeviceBytes pipeline_stage_bytes(int stage, int batch, int micro_batches,
                                 std::span<const std::int64_t> cut_floats,
                                 const ModelSizes& model) {
  const std::int64_t psi = kFloatBytes * model.parameters;
  const int last = static_cast<int>(cut_floats.size());
  const std::int64_t micro_batch = batch / micro_batches;
  // One mailbox per micro-batch from each neighbour: the cut before and the cut after.
  std::int64_t mailboxes = 0;
  if (stage > 0) mailboxes += micro_batches * micro_batch * cut_floats[stage - 1];
  if (stage < last) mailboxes += micro_batches * micro_batch * cut_floats[stage];
  return {psi, 2 * psi, psi, kFloatBytes * mailboxes};
}

double bubble_fraction(int stages, int micro_batches) {
  return (stages - 1.0) / (micro_batches + stages - 1.0);
}

}  // namespace towers::exercises
