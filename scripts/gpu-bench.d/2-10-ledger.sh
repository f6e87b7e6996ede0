# SPDX-License-Identifier: MIT
# Sourced by scripts/gpu-check --call 2: the memory ledger against the driver, alone on the
# GPU (another process's allocation would move the driver's count): the CudaLedger tests
# (tests/runtime/memory_ledger_cuda_test.cpp) three times over. Each allocation the ledger
# counts, the runtime's workspaces included, must be what cudaMemGetInfo sees taken:
# ledger <= used <= ledger + one 2 MiB page per allocation.
step "ledger: against cudaMemGetInfo, alone on the GPU" 8 && {
  if [ "$dry_run" = 1 ]; then
    echo "  would run: ctest --preset gpu -R '^CudaLedger\\.' -j 1 --repeat until-fail:3 --timeout 20"
  elif [ ! -x build-gpu/tests/test_cuda_ledger ]; then
    record fail "the ledger tests: build-gpu/tests/test_cuda_ledger was not built"
  else
    timeout "$(seconds_left)" ctest --preset gpu -R '^CudaLedger\.' -j 1 --repeat until-fail:3 \
      --timeout 20 >>"$step_log" 2>&1
    status=$?
    { echo '```'; grep -E "CudaLedger|tests passed|tests failed|Expected|Which is|bytes" "$step_log" | head -n 20; echo '```'; } >> "$results"
    if [ $status -ne 0 ]; then
      record fail "CudaLedger tests (status $status): see the ledger log"
    elif grep -qE "CudaLedger.*Skipped" "$step_log"; then
      record skip "CudaLedger tests skipped: $(grep -m1 -oE 'needs .*' "$step_log")"
    else
      record pass "ledger <= cudaMemGetInfo's used <= ledger + 2 MiB per allocation, 3 times"
    fi
  fi
  save_results
}
