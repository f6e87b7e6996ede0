// SPDX-License-Identifier: MIT
// Chapter 11: the mesh — data (with ZeRO) x tensor x pipeline — planned before it runs.
// Chapters 8, 9 and 10 each proved one dimension alone. Before a run composes them, this
// program answers what the users of every large training system ask first: how many
// bytes will each device hold, per category of the memory ledger; how many bytes will
// cross each dimension of the mesh per step; how large is the bubble; and which run must
// it match bit for bit. The answer is one set of formulas (src/parallel/mesh_plan.hpp),
// written from what chapters 8-10 allocate and send and held to their runs, to the byte,
// by tests/chapters/chapter11_plan_test.cpp. `--plan` prints it without running.
// Without --plan, `mpirun -n N 11_mesh --dp a --tp b --pp c` runs the composed mesh (data
// x tensor x pipeline with SGD, momentum or Adam, --pp at most 4 beside --tp; ZeRO-1
// beside tensor or pipeline parallelism or both, ZeRO-2 beside tensor parallelism, ZeRO-1 to 3 on
// data parallelism alone; the host backend; mesh_run.hpp), one process per device, one
// communicator per dimension, and prints the plan beside what the run measured. What is
// planned but not run yet (a pipeline cut between local3 and local4 beside tensor
// parallelism) is refused before the run
// starts; ZeRO-2 beside a pipeline and ZeRO-3 beside either are not planned at all: the
// plan refuses them (mesh_problem), --plan included.
// The run saves and resumes chapter 1's checkpoints, put together on rank 0 from every
// rank's part (--optimizer's state and ZeRO's shards too),
// with chapter 5's flags, on the meshes mesh_checkpoint_problem lists (mesh_checkpoint.hpp),
// and chapter 5's test hooks make one rank die or stall.
#include <cstdio>
#include <string>

#include "cli/options.hpp"
#include "cli/summary.hpp"
#include "harness/checkpoint_dir.hpp"
#include "harness/training_run.hpp"  // add_save_params_flag
#include "mesh_run_flags.hpp"
#include "model/optimizer.hpp"
#include "parallel/buckets.hpp"  // kMaxBucketMb
#include "parallel/mesh_plan.hpp"
#include "parallel/zero_memory.hpp"

#if TOWERS_MESH_RUN
#include "harness/rank_program.hpp"
#include "mesh_run.hpp"
#endif

using namespace towers;

namespace {

constexpr MemoryCategory kShown[] = {
    MemoryCategory::kParameters,    MemoryCategory::kGradients, MemoryCategory::kOptimizerState,
    MemoryCategory::kActivations,   MemoryCategory::kCommunication, MemoryCategory::kOther};

std::int64_t bytes_of(const CategoryBytes& bytes, MemoryCategory category) {
  return bytes[static_cast<std::size_t>(category)];
}

std::int64_t sum_of(const CategoryBytes& bytes) {
  std::int64_t sum = 0;
  for (std::int64_t b : bytes) sum += b;
  return sum;
}

std::string shape_name(const MeshConfig& c) {
  return std::to_string(c.dp) + "x" + std::to_string(c.tp) + "x" + std::to_string(c.pp);
}

void print_plan(const MeshPlan& plan) {
  const MeshConfig& c = plan.config;
  std::printf("plan of mesh dp %d x tp %d x pp %d = %d device(s): ZeRO-%d on data, %s on "
              "tensor, %s with %d micro-batch(es) on pipeline, batch %d per data replica, "
              "optimizer %s\n",
              c.dp, c.tp, c.pp, c.devices(), c.zero,
              c.hybrid ? "Krizhevsky's hybrid" : "the column/row split",
              to_string(c.schedule).c_str(),
              c.micro_batches, c.batch, model::optimizer_name(c.optimizer));
  std::printf("\npeak bytes per device, by ledger category (one row per pipeline stage; every "
              "device of a stage the same, up to one element of a shard):\n  %-8s", "");
  for (MemoryCategory category : kShown) {
    std::printf(" %15s", std::string(category_name(category)).c_str());
  }
  std::printf(" %15s\n", "sum");
  for (std::size_t s = 0; s < plan.per_stage.size(); ++s) {
    std::printf("  stage%-3zu", s);
    for (MemoryCategory category : kShown) {
      std::printf(" %15lld", static_cast<long long>(bytes_of(plan.per_stage[s], category)));
    }
    std::printf(" %15lld\n", static_cast<long long>(sum_of(plan.per_stage[s])));
  }
  std::printf("  (the runtime's workspace is 0 on the host backend and not planned on GPUs)\n");
  std::printf("\nbytes on the wire per step, all devices: data %lld, tensor %lld, pipeline %lld, "
              "total %lld\n",
              static_cast<long long>(plan.wire_data), static_cast<long long>(plan.wire_tensor),
              static_cast<long long>(plan.wire_pipeline), static_cast<long long>(plan.total_wire()));
  std::printf("bubble: (p-1)/(m+p-1) = %.3f\n", plan.bubble);
  std::printf("numerics: %s %s\n",
              plan.numerics == NumericsClass::kBitIdentical ? "bit-identical to" : "within a bound of",
              plan.numerics_reference.c_str());
  std::printf("%s\n", plan.held_by_run
                          ? "held to a run: a program runs this mesh (a chapter, or 11_mesh's "
                            "composed run), and chapter 11's tests compare every category with it"
                          : "not held to a run yet: no program runs this mesh (ZeRO beside "
                            "both tensor and pipeline parallelism, or a pipeline of 5 stages or more beside "
                            "tensor parallelism); these numbers compose the 1-D forms");
}

#if TOWERS_MESH_RUN
// Whether the command line asks for the plan alone. Decided before the flags are parsed:
// the plan is one process, the run a job of ranks that starts MPI first.
bool asks_for_plan(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--plan" || arg.rfind("--plan=", 0) == 0) return true;
  }
  return false;
}
#endif

// The plan's summary keys (the run adds what it measured to them).
Summary plan_summary(const MeshPlan& plan) {
  const MeshConfig& config = plan.config;
  Summary summary;
  summary.add("mesh", shape_name(config))
      .add("devices", config.devices())
      .add("dp", config.dp)
      .add("tp", config.tp)
      .add("pp", config.pp)
      .add("tensor_mode", std::string(config.hybrid ? "hybrid" : "tp"))
      .add("zero", config.zero)
      .add("optimizer", std::string(model::optimizer_name(config.optimizer)))
      .add("schedule", to_string(config.schedule))
      .add("micro_batches", config.micro_batches)
      .add("batch_size", config.batch);
  for (MemoryCategory category : kShown) {
    summary.add("plan_" + std::string(category_name(category)) + "_bytes",
                static_cast<long long>(bytes_of(plan.device, category)));
  }
  summary.add("plan_sum_bytes", static_cast<long long>(sum_of(plan.device)))
      .add("plan_wire_data_bytes_per_step", static_cast<long long>(plan.wire_data))
      .add("plan_wire_tensor_bytes_per_step", static_cast<long long>(plan.wire_tensor))
      .add("plan_wire_pipeline_bytes_per_step", static_cast<long long>(plan.wire_pipeline))
      .add("plan_wire_bytes_per_step", static_cast<long long>(plan.total_wire()))
      .add("plan_bubble", plan.bubble, 3)
      .add("numerics", std::string(plan.numerics == NumericsClass::kBitIdentical
                                       ? "bit_identical"
                                       : "within_bound"))
      .add("held_by_run", std::string(plan.held_by_run ? "yes" : "no"));
  return summary;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 11: the plan of a data x tensor x pipeline mesh, before any run: peak "
               "bytes per device per ledger category, bytes on the wire per step per dimension, "
               "the bubble and the numerics class (--plan). Without --plan, mpirun -n N 11_mesh "
               "--dp a --tp b --pp c runs the composed mesh (data x tensor x pipeline, --pp at "
               "most 4 beside --tp; SGD, momentum or Adam; ZeRO-1 beside --tp or --pp, ZeRO-2 "
               "beside --tp, ZeRO-1 to 3 with data parallelism alone; host backend) and prints the plan beside what "
               "it measured; it saves and resumes chapter 1's checkpoints (--checkpoint-dir, "
               "--resume), the optimizer's state included, on the meshes its tests prove."};
  MeshConfig config;
  bool plan_only = false;
  int shapes_of = 0;
  std::string schedule_name = "1f1b";
  std::string optimizer_name = "sgd";
  MeshRunFlags run_flags;
  app.add_flag("--plan", plan_only, "print the plan without running");
  app.add_option("--dp", config.dp, "data-parallel degree: replicas, each its own batch")
      ->capture_default_str()->check(whole_number(1, 4096, "replicas"));
  app.add_option("--tp", config.tp,
                 "tensor-parallel degree: local3's columns and local4's rows split t ways "
                 "(chapter 10); must divide 192 and 384")
      ->capture_default_str()->check(whole_number(1, 192, "ranks"));
  app.add_flag("--hybrid", config.hybrid,
               "the tensor dimension runs Krizhevsky's hybrid (chapter 10's --hybrid): --tp "
               "towers of --batch-size images each, the FC pair split over all their rows; "
               "only with --dp 1 --pp 1 --zero 0");
  app.add_option("--pp", config.pp,
                 "pipeline degree: stages of chapter 9's most even split; at most 9 (the layers)")
      ->capture_default_str()->check(whole_number(1, 64, "stages"));
  app.add_option("--zero", config.zero,
                 "ZeRO stage on the data dimension (chapter 8): 0..3; 1 beside --tp or --pp "
                 "(each replica shards its slice or its stage's range), 2 beside --tp (its "
                 "slice's gradients too), 3 with --tp 1 --pp 1 only")
      ->capture_default_str()->check(whole_number(0, kMaxZeroStage, "(a ZeRO stage: 0, 1, 2 or 3)"));
  app.add_option("--schedule", schedule_name, "pipeline schedule: gpipe or 1f1b")
      ->capture_default_str()->check(CLI::IsMember({"gpipe", "1f1b"}));
  app.add_option("--micro-batches", config.micro_batches,
                 "micro-batches per batch on the pipeline (1 when --pp 1); must divide the batch")
      ->capture_default_str()->check(whole_number(1, 1024, "micro-batches"));
  app.add_option("--batch-size", config.batch, "images per data-parallel replica per step")
      ->capture_default_str()->check(whole_number(1, 4096, "images"));
  app.add_option("--optimizer", optimizer_name,
                 "sgd, momentum or adam: how much optimizer state each parameter keeps")
      ->capture_default_str()->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  app.add_option("--bucket-mb", config.bucket_mb,
                 "ZeRO-2's largest gradient bucket in MiB, as chapter 8's (0: one per layer)")
      ->capture_default_str()->check(finite_number(0, kMaxBucketMb, " MiB"));
  app.add_option("--shapes", shapes_of,
                 "instead of one mesh: one line for every dp x tp x pp = N the plan accepts with "
                 "the other flags (the mesh's own --dp, --tp, --pp are then not used)")
      ->check(whole_number(1, 4096, "devices"));

  const std::string run_group = "The composed run (without --plan)";
  app.add_option("--steps", run_flags.steps, "training steps of the composed run")
      ->capture_default_str()->check(whole_number(1, 100000000))->group(run_group);
  app.add_option("--log-every", run_flags.log_every, "print the tutorial's log line every N steps")
      ->capture_default_str()->check(whole_number(1, 100000000))->group(run_group);
  app.add_option("--seed", run_flags.seed, "seed of initialization, shuffling and distortions")
      ->capture_default_str()->check(unsigned_64())->group(run_group);
  app.add_option("--data-dir", run_flags.data_dir,
                 "folder with CIFAR-10 binary files; default: the embedded synthetic set")
      ->group(run_group);
  add_save_params_flag(app, run_flags.save_params, " (rank 0 writes the slices put together)");
  app.get_option("--save-params")->group(run_group);
  app.add_option("--collective-timeout", run_flags.collective_timeout_s,
                 "seconds any one collective may wait for the other ranks before the job ends")
      ->capture_default_str()->check(finite_number(0.1, 86400, " seconds (a day at most)"))
      ->group(run_group);
  // Chapter 1's flags, with chapter 5's meaning for a job: rank 0 owns the folder.
  const std::string checkpoint_group = "Checkpoints of the composed run (rank 0 writes chapter "
                                       "1's file: the ranks' parts put together, --optimizer's "
                                       "state too; --resume refuses a file of another optimizer)";
  add_checkpoint_flags(app, run_flags.checkpoints);
  for (const char* name : {"--checkpoint-dir", "--checkpoint-every", "--resume",
                           "--resume-if-present", "--overwrite"}) {
    app.get_option(name)->group(checkpoint_group);
  }
#if TOWERS_MESH_RUN
  FaultFlags faults;
  add_fault_flags(app, faults);  // chapter 5's test hooks: one rank dies or stalls on purpose
#endif

  // What both the plan and the run check first: the flags name a mesh the plan accepts.
  auto settle = [&] {
    config.schedule = *parse_pipeline_schedule(schedule_name);
    config.optimizer = model::parse_optimizer(optimizer_name);
    if (shapes_of > 0 && !plan_only) {
      throw UsageError("--shapes N lists the plans of every mesh of N devices; add --plan");
    }
    if (shapes_of > 0) return;
    if (const std::string problem = mesh_problem(config); !problem.empty()) {
      throw UsageError(problem);
    }
  };

#if TOWERS_MESH_RUN
  if (!asks_for_plan(argc, argv)) {
    return run_rank_program(app, argc, argv, [&](MpiJob& job) {
      settle();
      if (const std::string problem = mesh_run_problem(config); !problem.empty()) {
        throw UsageError(problem);
      }
      if (const std::string problem = mesh_checkpoint_problem(config, run_flags.checkpoints);
          !problem.empty()) {
        throw UsageError(problem);
      }
      check_mesh_job(config, job);
      const MeshPlan plan = make_mesh_plan(config);
      print_plan(plan);
      Summary summary = plan_summary(plan);
      summary.add("measured", std::string("yes"));
      return run_mesh(job, config, run_flags, faults, summary);
    });
  }
#endif
  return run_program(app, argc, argv, [&] {
    settle();
    if (!plan_only) {
      throw UsageError("this build has no MPI, so chapter 11's composed run (mpirun -n N "
                       "11_mesh) is not built; add --plan to print what such a run will hold "
                       "and send");
    }
    if (shapes_of > 0) {
      if (app.count("--dp") + app.count("--tp") + app.count("--pp") > 0) {
        throw UsageError("--shapes N plans every mesh of N devices; drop --dp, --tp and --pp");
      }
      const auto shapes = mesh_shapes(shapes_of, config);
      std::printf("every mesh of %d device(s) the plan accepts (ZeRO-%d, batch %d, %d "
                  "micro-batch(es) where pp > 1):\n  %-12s %15s %15s %15s %15s %8s %s\n",
                  shapes_of, config.zero, config.batch, config.micro_batches, "dp x tp x pp",
                  "sum of peaks", "wire data", "wire tensor", "wire pipeline", "bubble",
                  "numerics");
      for (const MeshConfig& shape : shapes) {
        const MeshPlan plan = make_mesh_plan(shape);
        std::printf("  %-12s %15lld %15lld %15lld %15lld %8.3f %s\n", shape_name(shape).c_str(),
                    static_cast<long long>(sum_of(plan.device)), static_cast<long long>(plan.wire_data),
                    static_cast<long long>(plan.wire_tensor),
                    static_cast<long long>(plan.wire_pipeline), plan.bubble,
                    plan.numerics == NumericsClass::kBitIdentical ? "bit-identical" : "within-bound");
      }
      Summary().add("devices", shapes_of).add("shapes", static_cast<int>(shapes.size())).print();
      return 0;
    }
    const MeshPlan plan = make_mesh_plan(config);
    print_plan(plan);
    plan_summary(plan)
        .add("measured", std::string("no"))
        .print();
    return 0;
  });
}
