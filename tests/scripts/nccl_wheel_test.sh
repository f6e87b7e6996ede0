#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cmake/TowersNccl.cmake finds NCCL where a GPU machine with PyTorch has it: only in NCCL's
# pip wheel (site-packages/nvidia/nccl), which ships libnccl.so.2 and no libnccl.so. A fake
# wheel on PYTHONPATH, the system's folders switched off: the runtime library is found and
# used; a development link beside it is preferred; with neither, configuration fails
# naming what to install.
set -u
root=${1:?usage: nccl_wheel_test.sh <source dir>}
root=$(cd "$root" && pwd)
fail() { echo "FAIL: $*"; echo "--- output:"; echo "${out:-}"; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: no python3 to find a wheel with"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheel=$work/site/nvidia/nccl
mkdir -p "$wheel/include" "$wheel/lib" "$work/project"
echo '/* a stand-in */' > "$wheel/include/nccl.h"
: > "$wheel/lib/libnccl.so.2"
cat > "$work/project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(nccl_wheel_test NONE)
# Only the wheel and the (absent) toolkit: this machine's own NCCL, if any, is not seen
# (nor python3 on PATH: the test names it).
set(CMAKE_FIND_USE_CMAKE_SYSTEM_PATH OFF)
set(CMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH OFF)
set(CUDAToolkit_INCLUDE_DIRS "$work/no-toolkit/include")
set(CUDAToolkit_LIBRARY_DIR "$work/no-toolkit/lib")
include("$root/cmake/TowersNccl.cmake")
towers_find_nccl()
message(STATUS "found NCCL_LIBRARY=\${NCCL_LIBRARY} NCCL_INCLUDE_DIR=\${NCCL_INCLUDE_DIR}")
CMAKE
configure() {
  rm -rf "$work/build"
  PYTHONPATH="$work/site" cmake -G Ninja -S "$work/project" -B "$work/build" \
    -DTOWERS_PYTHON3="$(command -v python3)" 2>&1
}

out=$(configure) || fail "configuration failed with NCCL's wheel on PYTHONPATH"
echo "$out" | grep -qF "found NCCL_LIBRARY=$wheel/lib/libnccl.so.2 NCCL_INCLUDE_DIR=$wheel/include" ||
  fail "the wheel's libnccl.so.2 was not used"

ln -s libnccl.so.2 "$wheel/lib/libnccl.so"
out=$(configure) || fail "configuration failed with a development link in the wheel"
echo "$out" | grep -qF "found NCCL_LIBRARY=$wheel/lib/libnccl.so " ||
  fail "the development link libnccl.so was not preferred"

rm -rf "$work/site"
out=$(configure) && fail "configuration passed with no NCCL anywhere"
echo "$out" | grep -q "nvidia-nccl" || fail "the failure does not say what to install"
echo "PASS: NCCL found in a pip wheel (libnccl.so.2), the development link preferred, none refused"
