// SPDX-License-Identifier: MIT
#include "harness/lesson_flags.hpp"

#include <vector>

#include "cli/options.hpp"  // finite_number

namespace towers {
namespace {

// --allreduce, with the choices of one kind of program.
void add_allreduce_choice(CLI::App& app, std::string& choice, const std::string& help,
                          const std::vector<std::string>& choices) {
  app.add_option("--allreduce", choice, help)->capture_default_str()->check(CLI::IsMember(choices));
}

}  // namespace

void add_allreduce_flag(CLI::App& app, std::string& choice) {
  add_allreduce_choice(app, choice,
                       "how towers average gradients: nccl (cuda backend, one GPU per tower), "
                       "ring (any backend), device0 (chapter 3's: summed on device 0, the mean "
                       "copied back), or auto (nccl where it can run, else the ring)",
                       {"auto", "device0", "ring", "nccl"});
}

void add_rank_allreduce_flag(CLI::App& app, std::string& choice) {
  add_allreduce_choice(app, choice,
                       "how ranks average gradients: mpi (MPI_Allreduce, host backend), ring "
                       "(chapter 4's ring over MPI_Sendrecv, host backend), nccl (cuda backend, "
                       "one GPU per rank), or auto (nccl on GPUs, mpi on the host)",
                       {"auto", "mpi", "ring", "nccl"});
}

void add_overlap_flags(CLI::App& app, OverlapFlags& flags) {
  app.add_option_function<std::string>(
         "--overlap", [&flags](const std::string& text) { flags.overlap = text == "on"; },
         "on: all-reduce each bucket on a communication stream as soon as the backward pass "
         "has finished it; off: one all-reduce after the whole backward pass (chapter 4)")
      ->check(CLI::IsMember({"on", "off"}))
      ->default_str("on");
  app.add_option("--bucket-mb", flags.bucket_mb,
                 "largest bucket in MiB (as DDP's bucket_cap_mb); consecutive layers join "
                 "while they fit; 0: one bucket per layer")
      ->check(finite_number(0, kMaxBucketMb,
                            " MiB (the whole model is 4.1 MiB, so any cap above it is one bucket)"))
      ->default_str("0");
}

}  // namespace towers
