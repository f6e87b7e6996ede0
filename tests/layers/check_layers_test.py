#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layer checker must be able to fail: on small planted trees, checked with the real
src/LAYERS, it rejects a lower layer including a higher one and accepts the rest.

    check_layers_test.py ROOT        (ROOT: the repository, for src/LAYERS and the checker)
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
CHECKER = os.path.join(ROOT, "tests", "layers", "check_layers.py")
LAYERS = os.path.join(ROOT, "src", "LAYERS")
failures = []

# The checker's functions in this process (a process per planted tree is slow on a loaded
# machine); the last check runs it as ctest does, for its exit status.
_spec = importlib.util.spec_from_file_location("check_layers", CHECKER)
checker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checker)


def check(name, files, want_rc, want_text=""):
    with tempfile.TemporaryDirectory(prefix="towers-layers-") as tree:
        for rel, text in files.items():
            os.makedirs(os.path.join(tree, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tree, rel), "w", encoding="utf-8") as f:
                f.write(text)
        found, _ = checker.violations(tree, *checker.read_layers(LAYERS))
    text = "\n".join(found)
    if (1 if found else 0) != want_rc or want_text not in text:
        failures.append(f"{name}: {len(found)} violation(s) (want {'some' if want_rc else 'none'}), "
                        f"output:\n{text}")


STREAM = {"src/runtime/stream.hpp": "#pragma once\n"}
check("a higher layer including a lower one passes",
      {**STREAM, "src/parallel/tower.cpp": '#include "runtime/stream.hpp"\n'}, 0)
check("base including the runtime fails, naming file and line",
      {**STREAM, "src/base/hash.cpp": '// x\n#include "runtime/stream.hpp"\n'}, 1,
      "src/base/hash.cpp:2: src/base")
check("the trace including the runtime fails (the old runtime <-> trace cycle)",
      {**STREAM, "src/trace/export.cpp": '#include "runtime/stream.hpp"\n'}, 1,
      "src/trace/export.cpp:1")
check("towers_data including the runtime fails; its iterator may",
      {**STREAM, "src/data/cifar10.cpp": '#include "runtime/stream.hpp"\n',
       "src/data/iterator.hpp": '#include "runtime/stream.hpp"\n'}, 1,
      "src/data/cifar10.cpp:1")
check("a relative include is resolved against the including folder",
      {"src/cli/options.hpp": "#pragma once\n", "src/runtime/x.cpp": '#include "../cli/options.hpp"\n'},
      1, "src/runtime/x.cpp:1")
check("the runtime's CUDA backend checks its calls with the bottom layer's CUDA_CHECK",
      {"src/base/cuda/check.hpp": "#pragma once\n",
       "src/runtime/cuda/cuda_stream.cpp": '#include "base/cuda/check.hpp"\n'}, 0)
check("the runtime including a kernels/cuda header fails (kernels sit above the runtime)",
      {"kernels/cuda/kernels.hpp": "#pragma once\n",
       "src/runtime/cuda/cuda_stream.cpp": '#include "kernels/cuda/kernels.hpp"\n'}, 1,
      "src/runtime/cuda/cuda_stream.cpp:1")
check("system and library headers are not the tree's",
      {"src/base/hash.cpp": '#include "gtest/gtest.h"\n#include <vector>\n'}, 0)
check("the lesson layer parsing flags fails (src/LAYERS forbids CLI11 there)",
      {"src/parallel/allreduce_choice.cpp": '#include <CLI/CLI.hpp>\n'}, 1,
      "src/parallel/allreduce_choice.cpp:1: src/parallel may not include CLI/CLI.hpp")
check("the MPI layer parsing flags fails too",
      {"src/mpi/mpi_job.hpp": '#include <CLI/CLI.hpp>\n'}, 1, "src/mpi/mpi_job.hpp:1")
check("the harness parses flags",
      {"src/harness/lesson_flags.hpp": '#include <CLI/CLI.hpp>\n'}, 0)

with tempfile.TemporaryDirectory(prefix="towers-layers-") as tree:
    os.makedirs(os.path.join(tree, "src", "base"))
    os.makedirs(os.path.join(tree, "src", "runtime"))
    open(os.path.join(tree, "src", "runtime", "stream.hpp"), "w").close()
    with open(os.path.join(tree, "src", "base", "a.cpp"), "w") as f:
        f.write('#include "runtime/stream.hpp"\n')
    run = subprocess.run([sys.executable, CHECKER, tree, LAYERS], capture_output=True, text=True)
    if run.returncode != 1 or "src/base/a.cpp:1" not in run.stdout:
        failures.append(f"command line: exit {run.returncode} (want 1):\n{run.stdout}{run.stderr}")

for f in failures:
    print("FAIL", f)
print(f"check_layers_test: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
