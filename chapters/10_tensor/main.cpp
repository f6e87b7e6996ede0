// SPDX-License-Identifier: MIT
// Chapter 10: the tower splits a layer.
// One change from chapter 4: no device holds local3 and local4 whole. With --tp t (tensor
// parallelism, Megatron-LM's), t ranks share one batch: each holds 1/t of local3's columns
// and the same 1/t of local4's rows, computes a partial sum of local4's output, and the
// ranks meet inside the forward pass (g: an all-reduce of those partial sums) and inside the
// backward pass (f: an all-reduce of local3's input gradient). Everything else runs whole on
// every rank. With --hybrid (Krizhevsky's "one weird trick"), N towers of b images run the
// convolutions data-parallel, all-gather pool2's outputs, split the FC pair over all N x b
// rows, reduce-scatter its sums back, and all-reduce the replicated gradients as chapter 4.
// The lesson is src/parallel/tensor_split.hpp (the math) and tensor_slices.hpp (where each
// rank keeps its variables); checkpoints are chapter 1's, the slices put together.
#include <string>

#include "harness/overlap_trace.hpp"
#include "harness/tensor_report.hpp"
#include "harness/tower_flags.hpp"
#include "harness/tower_training.hpp"
#include "model/optimizer.hpp"
#include "parallel/tensor_slices.hpp"
#include "parallel/tensor_split.hpp"
#include "trace/span_names.hpp"

using namespace towers;

int main(int argc, char** argv) {
  TowerFlags flags{"Chapter 10: local3 split by columns and local4 by rows over t ranks (--tp: "
                   "all-reduces g forward and f backward), or Krizhevsky's hybrid (--hybrid: "
                   "convolutions data-parallel, the FC layers split)."};
  int tp = 0;
  bool hybrid = false;
  std::string collectives = "auto";
  CLI::App& app = flags.app;
  app.add_option("--tp", tp,
                 "tensor-parallel ranks t: local3's 384 columns and local4's 384 rows split "
                 "t ways, every rank on the same batch (default: one rank per device)")
      ->check(CLI::Range(1, 384));
  app.add_flag("--hybrid", hybrid,
               "Krizhevsky's hybrid instead: one tower of --batch-size images per device, the "
               "convolutions data-parallel, the FC layers split over all towers' images");
  app.add_option("--collectives", collectives,
                 "nccl (cuda backend, one GPU per rank), ring (any backend; counts the bytes "
                 "on the wire) or auto (nccl where it can run, else the ring)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "ring", "nccl"}));

  return run_program(app, argc, argv, [&] {
    if (hybrid && app.count("--tp") > 0) {
      throw UsageError("--tp and --hybrid are two ways to split: --tp t splits the FC layers "
                       "over t ranks of one batch, --hybrid over every device's tower. Give one.");
    }
    if (app.count("--tp") > 0 && app.count("--towers") > 0) {
      throw UsageError("--tp sets how many ranks there are; --towers would set it again. Drop "
                       "--towers (use --devices and --towers-per-device for where they run).");
    }
    const TensorMode mode = hybrid ? TensorMode::kHybrid : TensorMode::kTensorParallel;
    if (tp > 0) flags.layout.towers = tp;
    // Each rank owns a slice of the variables (below), not a copy: no whole gradient buffer
    // and no per-device parameter copy, so the ledger shows the slices alone.
    flags.layout.whole_gradients = false;
    flags.layout.replica_params = false;
    // Tensor parallel: the t ranks share one batch of b, chapter 1's; the hybrid: each
    // tower its slice of a global batch of N x b, chapter 3's (and chapter 4's iterators').
    TowerTraining training(flags,
                           mode == TensorMode::kTensorParallel ? TowerInput::kSharedBatch
                                                               : TowerInput::kGlobalBatch);
    auto& towers = training.towers();
    const int num_gpus = training.num_towers();

    // docs-begin: tensor-slices
    // Where the variables live: rank r keeps the replicated variables whole and its columns
    // of local3 and rows of local4 (its slice), each as parameters, gradients and moving
    // averages. From --seed or the resumed checkpoint, each rank takes its slice.
    std::vector<Device*> devices;
    std::vector<Stream*> streams;
    for (auto& tower : towers) {
      devices.push_back(tower->device);
      streams.push_back(tower->stream.get());
    }
    TensorSlices slices(devices, streams);
    // Checkpoints, --save-params and --eval: the slices put together, chapter 1's layout.
    training.start(slices);
    // docs-end: tensor-slices
    TensorSplit split(training.runtime(), towers, slices, mode, collectives);
    print_tensor_layout(split, slices);
    // How long each rank's stream spent in g and in f with nothing else to run: the forward
    // and backward passes stop there (chapter 6's measure; here nothing hides them).
    OverlapTrace g_trace(span::is_tensor_g), f_trace(span::is_tensor_f);
    training.watch_trace([&](const std::vector<TraceEvent>& events) {
      g_trace.collect(events);
      f_trace.collect(events);
    });
    const std::int64_t steps_per_decay =
        model::decay_steps(training.batch_size(), mode == TensorMode::kHybrid ? num_gpus : 1);
    int steps_run = 0;

    for (int run_step = 0; run_step < flags.steps && !training.stop_requested(); ++run_step) {
      StepScope step = training.step(run_step);
      const std::int64_t global_step = step.global_step();  // counts from --resume's step
      for (auto& tower : towers) step.probe(*tower);  // --probe: every rank's stream, first
      if (mode == TensorMode::kTensorParallel) {
        // docs-begin: tensor-step
        // The tower loop is cut where the ranks meet: twice a step, inside the passes.
        for (int r = 0; r < num_gpus; ++r) {
          split.forward_convolutions(r, training.images(), training.labels());  // whole
          split.forward_to_cut(r);  // local3: its columns; local4: its rows' partial sums
        }
        split.g();                  // all-reduce: local4's sum on every rank; all wait here
        for (int r = 0; r < num_gpus; ++r) {
          split.forward_from_cut(r);    // + local4's bias, ReLU, softmax_linear, the loss
          split.backward_to_local4(r);  // softmax_linear's backward, local4's ReLU
          split.backward_to_cut(r);     // local4's rows, local3's columns: partial dx
        }
        split.f();                  // all-reduce: pool2's gradient whole on every rank
        for (int r = 0; r < num_gpus; ++r) split.backward_convolutions(r);
        // docs-end: tensor-step
      } else {
        // docs-begin: hybrid-step
        for (int r = 0; r < num_gpus; ++r) {  // data parallel: each tower its own images
          split.forward_convolutions(r, training.images(), training.labels());
        }
        split.gather_activations();     // pool2 of all N x b images on every tower
        for (int r = 0; r < num_gpus; ++r) split.forward_to_cut(r);
        split.reduce_scatter_local4();  // each tower: its own images' rows, summed
        for (int r = 0; r < num_gpus; ++r) {
          split.forward_from_cut(r);
          split.backward_to_local4(r);
        }
        split.gather_local4_gradient();  // local4's output gradient, all N x b rows
        for (int r = 0; r < num_gpus; ++r) split.backward_to_cut(r);
        split.reduce_scatter_pool2_gradient();  // each tower: its own images' dpool2
        for (int r = 0; r < num_gpus; ++r) split.backward_convolutions(r);
        split.all_reduce_replicated();  // chapter 4's all-reduce, of the replicated 10 %
        // docs-end: hybrid-step
      }
      const float lr = model::learning_rate(global_step, steps_per_decay);
      const float decay = model::moving_average_decay(global_step);
      for (int r = 0; r < num_gpus; ++r) split.update(r, lr, decay);  // each its own slice
      step.enqueued();
      training.runtime().synchronize();
      step.end(split.loss());
      ++steps_run;
    }
    Summary extra;
    extra.add("mode", std::string(mode == TensorMode::kHybrid ? "hybrid" : "tp"));
    if (mode == TensorMode::kTensorParallel) {
      extra.add("exposed_g_ms", g_trace.exposed_comm_ms(), 3)
          .add("exposed_f_ms", f_trace.exposed_comm_ms(), 3)
          .add("g_overlap", g_trace.overlap_comm(), 3)
          .add("f_overlap", f_trace.overlap_comm(), 3);
    }
    extra.add("collectives", split.collectives_name())
        .append(report_tensor(training.runtime(), split, slices, steps_run, flags.runtime.link));
    const std::string meet = mode == TensorMode::kHybrid ? "gathers+scatters+allreduce" : "g+f";
    return training.finish(std::string("chapter 10: ") +
                               (mode == TensorMode::kHybrid ? "hybrid" : "tensor parallel"),
                           meet, extra);
  });
}
