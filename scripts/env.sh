# SPDX-License-Identifier: MIT
# Sourced by the towers scripts: finds nvcc where the CUDA toolkit installs it.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# Use both cores for builds, but no more than the machine has.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
