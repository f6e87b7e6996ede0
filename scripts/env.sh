# SPDX-License-Identifier: MIT
# Sourced by the towers scripts: finds nvcc where the CUDA toolkit installs it.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# Use both cores for builds, but no more than the machine has.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

# OpenBLAS picks its matrix-product kernels when it loads, from the CPU's model number, and
# a release older than the CPU may not know the model and fall back to kernels for a far
# older one: the host step then runs several times slower, and a program that computes on
# the host says so on stderr (kernels/host/openblas_core.hpp). OPENBLAS_CORETYPE overrides
# the choice. It is set here only where that is safe:
#   - only when it is unset: a value already there (CI's OPENBLAS_CORETYPE=Haswell runs)
#     is someone's choice and stays;
#   - only on x86-64 with /proc/cpuinfo, and only for AVX2 CPUs and newer (older ones
#     predate the libraries in use, which know them);
#   - only to a core whose instructions the CPU has (from its flags: a core it lacks
#     would die on an illegal instruction), and the one a library that knows the CPU picks
#     itself, so where the choice was already right nothing changes.
# Where it does change the kernels, results change in their last bits (each kernel set
# adds in its own order): the tests compare runs made within one test run, and the pages
# never state the kernels' bits as a literal (tests/docs/numbers_check.py). A library that
# does not know the name prints "Core not found" and keeps its own choice.
# towers_openblas_coretype VENDOR FLAGS...: the core for that CPU, or nothing (POSIX sh); the same
# decision as host::best_openblas_core, from AVX2 up (tests/ops/openblas_cores.tsv holds
# the cases both are tested on).
towers_openblas_coretype() {
  towers_flags=" $* "  # the vendor and the flags, each found as a whole word
  towers_has() {
    for towers_flag in "$@"; do
      case "$towers_flags" in *" $towers_flag "*) ;; *) return 1 ;; esac
    done
  }
  if towers_has avx512f avx512cd avx512bw avx512dq avx512vl; then
    if towers_has avx512_bf16; then echo Cooperlake; else echo SkylakeX; fi
  elif towers_has avx2 fma; then
    if towers_has AuthenticAMD || towers_has HygonGenuine; then echo Zen; else echo Haswell; fi
  fi
  unset -f towers_has
  unset towers_flags towers_flag
}
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ "$(uname -m)" = x86_64 ] && [ -r /proc/cpuinfo ]; then
  # The first processor's lines (sed stops there: no pipe to break under pipefail).
  towers_coretype=$(towers_openblas_coretype \
    "$(sed -n '/^vendor_id/{s/^[^:]*: *//p;q;}' /proc/cpuinfo)" \
    $(sed -n '/^flags/{s/^[^:]*: *//p;q;}' /proc/cpuinfo))
  if [ -n "$towers_coretype" ]; then export OPENBLAS_CORETYPE="$towers_coretype"; fi
  unset towers_coretype
fi
