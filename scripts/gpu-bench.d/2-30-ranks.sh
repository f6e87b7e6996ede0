# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: chapter 5 (and chapter 6 across ranks) as one MPI
# rank on the GPU with NCCL, started by mpiexec as a user would: the NCCL communicator of
# one rank, its init under the watchdog, and the rank's device chosen, before MPI_Init,
# from its local rank. Without MPI (no mpiexec, or a build configured without it) the step
# is a skip that says so, not a failure.
mpiexec_cmd=$(command -v mpiexec || echo mpiexec)
step "chapter 5 under mpiexec -n 1 with NCCL" 14 && {
  if [ "$dry_run" = 0 ] && ! command -v mpiexec >/dev/null 2>&1; then
    record skip "chapter 5: mpiexec is not on PATH (apt-get install openmpi-bin)"
  else
    run_bench "Chapter 5: mpiexec -n 1, NCCL" 7 \
      "$mpiexec_cmd" --allow-run-as-root -n 1 $bin/05_ranks --backend cuda --allreduce nccl \
      --steps 6 --batch-size 32 --log-every 3 --save-params "$(params ch5)"
    expect ranks=1 allreduce=nccl
    run_bench "Chapter 6 across ranks: mpiexec -n 1, NCCL, overlap on" 7 \
      "$mpiexec_cmd" --allow-run-as-root -n 1 $bin/06_overlap_ranks --backend cuda --allreduce nccl \
      --steps 6 --batch-size 32 --log-every 3
    expect allreduce=nccl
  fi
}
