// SPDX-License-Identifier: MIT
// Exercise 12 — your code goes here. See README.md and mesh_forms.hpp.
#include "mesh_forms.hpp"

#include "exercises/todo.hpp"

namespace towers::exercises {

std::int64_t ring_all_reduce_wire_bytes(std::int64_t floats, int devices) {
  // TODO(1): how many links does each chunk cross in the reduce-scatter, and in the
  //   all-gather? Add up over all chunks (their sizes differ, their sum does not).
  (void)floats;
  (void)devices;
  todo("exercise 12: write ring_all_reduce_wire_bytes() in exercises/12_mesh_plan/stub.cpp");
}

std::int64_t ring_receive_buffer_bytes(std::int64_t floats, int devices) {
  // TODO(2): the largest chunk of the ring's cut, in bytes.
  (void)floats;
  (void)devices;
  todo("exercise 12: write ring_receive_buffer_bytes() in exercises/12_mesh_plan/stub.cpp");
}

std::int64_t zero_wire_bytes(int stage, int devices, const ModelSizes& model,
                             const ZeroWorkspace& workspace) {
  // TODO(3): a reduce-scatter and an all-gather each move half of an all-reduce; what
  //   more does stage 3 gather?
  (void)stage;
  (void)devices;
  (void)model;
  (void)workspace;
  todo("exercise 12: write zero_wire_bytes() in exercises/12_mesh_plan/stub.cpp");
}

DeviceBytes zero_device_bytes(int stage, int devices, int optimizer_floats,
                              const ModelSizes& model, const ZeroWorkspace& workspace) {
  // TODO(4): per category: the whole model, or the largest device's shard from the stage
  //   that shards it on, plus what that stage holds whole for a moment (ZeroWorkspace).
  (void)stage;
  (void)devices;
  (void)optimizer_floats;
  (void)model;
  (void)workspace;
  todo("exercise 12: write zero_device_bytes() in exercises/12_mesh_plan/stub.cpp");
}

std::int64_t tensor_rank_floats(int t, const ModelSizes& model) {
  // TODO(5): what a rank keeps whole, and its share of the split columns.
  (void)t;
  (void)model;
  todo("exercise 12: write tensor_rank_floats() in exercises/12_mesh_plan/stub.cpp");
}

TensorWire tensor_wire_bytes(int t, int batch, const ModelSizes& model) {
  // TODO(6): g and f are ring all-reduces over the t ranks, of how many floats each?
  (void)t;
  (void)batch;
  (void)model;
  todo("exercise 12: write tensor_wire_bytes() in exercises/12_mesh_plan/stub.cpp");
}

DeviceBytes tensor_device_bytes(int t, int batch, const ModelSizes& model) {
  // TODO(7): the rank's slice in each model-state category; one ring buffer for g and f.
  (void)t;
  (void)batch;
  (void)model;
  todo("exercise 12: write tensor_device_bytes() in exercises/12_mesh_plan/stub.cpp");
}

std::int64_t pipeline_wire_bytes(int batch, std::span<const std::int64_t> cut_floats) {
  // TODO(8): what crosses each cut per image, forward and backward?
  (void)batch;
  (void)cut_floats;
  todo("exercise 12: write pipeline_wire_bytes() in exercises/12_mesh_plan/stub.cpp");
}

DeviceBytes pipeline_stage_bytes(int stage, int batch, int micro_batches,
                                 std::span<const std::int64_t> cut_floats,
                                 const ModelSizes& model) {
  // TODO(9): the whole model's buffers (how many of gradients?), and the mailboxes from
  //   the stage's neighbours: the first stage has none before it, the last none after.
  (void)stage;
  (void)batch;
  (void)micro_batches;
  (void)cut_floats;
  (void)model;
  todo("exercise 12: write pipeline_stage_bytes() in exercises/12_mesh_plan/stub.cpp");
}

double bubble_fraction(int stages, int micro_batches) {
  // TODO(10): idle time over the whole step, for a GPipe or 1F1B flush.
  (void)stages;
  (void)micro_batches;
  todo("exercise 12: write bubble_fraction() in exercises/12_mesh_plan/stub.cpp");
}

}  // namespace towers::exercises
