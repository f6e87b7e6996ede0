# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check: one captured step under compute-sanitizer's memcheck —
# out-of-bounds and misaligned accesses, errors of CUDA calls — chapter 7 (the step as a
# graph: capture, instantiate, replay) with two towers sharing a GPU for two steps.
# Memcheck slows kernels by 10-100x; lazy loading spares it patching unused kernels.
step "sanitizer: memcheck of a captured step" 40 && {
  if [ "$dry_run" = 1 ] || command -v compute-sanitizer >/dev/null 2>&1; then
    run_bench "compute-sanitizer memcheck: chapter 7, 2 towers on one GPU, 2 steps" 40 \
      compute-sanitizer --tool memcheck --error-exitcode 99 \
      $bin/07_graph --backend cuda --devices 1 --towers-per-device 2 --steps 2 --batch-size 8 --log-every 1
    expect towers=2 graph_launches=2
  else
    record skip "compute-sanitizer: not on PATH (it ships with the CUDA toolkit)"
  fi
}
