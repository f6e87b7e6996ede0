# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: one captured step under compute-sanitizer's
# memcheck — out-of-bounds and misaligned accesses, errors of CUDA calls — chapter 7 (the
# step as a graph: capture, instantiate, replay) with two towers sharing a GPU for two
# steps. Memcheck slows kernels by 10-100x; lazy loading spares it patching unused kernels.
# Under gVisor compute-sanitizer refuses the device ("Device not supported"): a skip, said.
step "sanitizer: memcheck of a captured step" 28 && {
  if [ "$dry_run" = 1 ] || command -v compute-sanitizer >/dev/null 2>&1; then
    run_bench "compute-sanitizer memcheck: chapter 7, 2 towers on one GPU, 2 steps" 28 \
      compute-sanitizer --tool memcheck --error-exitcode 99 \
      $bin/07_graph --backend cuda --devices 1 --towers-per-device 2 --steps 2 --batch-size 8 --log-every 1
    if [ "$dry_run" = 0 ] && grep -q "Device not supported" "$bench_out"; then
      record skip "compute-sanitizer does not support this machine's device (as seen under gVisor)"
    else
      expect towers=2 graph_launches=2
    fi
  else
    record skip "compute-sanitizer: not on PATH (it ships with the CUDA toolkit)"
  fi
}
