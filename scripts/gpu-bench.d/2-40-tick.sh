# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: how often %globaltimer, the clock every kernel
# stamp reads, really changes on this GPU (bench/globaltimer_tick.cu): what a kernel's
# stamps are rounded to.
step "tick: the measured %globaltimer tick" 5 && {
  run_bench "%globaltimer tick" 5 $bin/bench_globaltimer_tick
  expect_at_least tick_ns=1
}
