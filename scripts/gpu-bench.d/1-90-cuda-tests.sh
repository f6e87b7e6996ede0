# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 1: the CUDA tests. What runs a GPU: every test
# instantiated for both backends on cuda (.../cuda), the CUDA-only suites (CudaCheck,
# CudaRing, CudaNccl, CudaLedger) and the few named for the cuda backend. Not: the host
# instances, the chapter tests (host-backend programs) and the mpiexec tests (labels
# chapter-5 and two-hosts). The timing and concurrency tests measure the GPU, and the
# ledger tests read the driver's count of the device's memory, so they run alone, one at a
# time, after the others. tests/scripts/gpu_check_plan_test.sh checks this selection
# against the build's test list.
cuda_tests='/cuda( |$)|^Cuda[A-Za-z]*\.|^OpsOnStreams\.Cuda|^Runtime\.(AutoPicksCuda|MoreCudaDevices)'
no_mpi_labels='chapter-5|two-hosts'
serial_tests='Rendezvous|KernelStamps|ElapsedTime|LaunchReturnsBefore|SpanResolverBoth|MemoryLedgerOf|CudaLedger'

step "tests: the CUDA tests (timing and ledger tests serially)" 35 && {
  if [ "$dry_run" = 1 ]; then
    echo "  would run: ctest --preset gpu -R '$cuda_tests' -E '$serial_tests' -LE '$no_mpi_labels' --timeout 30 -j 4"
    echo "  would run: ctest --preset gpu -R '$cuda_tests' -LE '$no_mpi_labels' then only '$serial_tests', -j 1 --timeout 30"
  else
    timeout "$(( $(seconds_left) * 2 / 3 + 1 ))" ctest --preset gpu -R "$cuda_tests" -E "$serial_tests" \
      -LE "$no_mpi_labels" --timeout 30 -j 4 >>"$step_log" 2>&1
    parallel_status=$?
    serial_list=$(ctest --preset gpu -N -R "$cuda_tests" -LE "$no_mpi_labels" 2>/dev/null |
                  grep -oE 'Test +#[0-9]+: .*' | sed -E 's/Test +#[0-9]+: //' | grep -E "$serial_tests" |
                  sed -E 's/[][().*+?^$|\\]/\\&/g' | sed 's/^/^/; s/$/$/' | paste -sd'|')
    serial_status=1  # no serial test listed is a failure too: the build has none to run
    if [ -n "$serial_list" ]; then
      timeout "$(seconds_left)" ctest --preset gpu -R "$serial_list" --timeout 30 -j 1 >>"$step_log" 2>&1
      serial_status=$?
    fi
    # The names, for the report's "what passed" table and "not run" list.
    tested() { grep -E "Test +#[0-9]+: .*$1" "$step_log" | sed -E 's/^.*Test +#[0-9]+: //; s/ +# GetParam.*//; s/ \.+.*//' | sort -u; }
    tested ' +Passed' > "$work/cuda-passed.txt"
    tested 'Skipped' > "$work/cuda-skipped.txt"
    { echo '```'; grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\(Subprocess|Total Test time" "$step_log"; echo '```'; } >> "$results"
    if [ $parallel_status -eq 0 ]; then record pass "CUDA tests, -j 4"; else record fail "CUDA tests, -j 4 (status $parallel_status): see the tests log"; fi
    if [ $serial_status -eq 0 ]; then record pass "timing and ledger tests, serially"; else record fail "timing and ledger tests, serially (status $serial_status): see the tests log"; fi
  fi
  save_results
}
