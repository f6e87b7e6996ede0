# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check: chapter 5 (and chapter 6 across ranks) as one MPI rank on
# the GPU with NCCL, started by mpiexec as a user would: the NCCL communicator of one rank,
# its init under the watchdog, and the rank's device chosen from its local rank.
mpiexec_cmd=$(command -v mpiexec || echo mpiexec)
step "chapter 5 under mpiexec -n 1 with NCCL" 25 && {
  if [ "$dry_run" = 1 ] || command -v mpiexec >/dev/null 2>&1; then
    run_bench "Chapter 5: mpiexec -n 1, NCCL" 15 \
      "$mpiexec_cmd" --allow-run-as-root -n 1 $bin/05_ranks --backend cuda --allreduce nccl \
      --steps 6 --batch-size 32 --log-every 3 --save-params "$(params ch5)"
    expect ranks=1 allreduce=nccl
    run_bench "Chapter 6 across ranks: mpiexec -n 1, NCCL, overlap on" 15 \
      "$mpiexec_cmd" --allow-run-as-root -n 1 $bin/06_overlap_ranks --backend cuda --allreduce nccl \
      --steps 6 --batch-size 32 --log-every 3
    expect allreduce=nccl
  else
    record skip "mpiexec is not on PATH (apt-get install openmpi-bin)"
  fi
}
