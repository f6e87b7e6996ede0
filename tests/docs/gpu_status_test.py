# SPDX-License-Identifier: MIT
"""docs/_ext/towers_gpu_status.py (the docs' per-chapter GPU table) on planted results.

A scratch bench/results/ and chapters/ with every case the table must get right: a page
written by hand (commands without an exit status), gpu-check's pages (with one), a chapter
whose newest run failed after an earlier one passed, one killed at its time limit, several
runs of one chapter, a page whose file name sorts after a newer page's, a host run and a
page that is no GPU results page (neither counts), a chapter that never ran. The table
printed must be exactly the expected one.

    python3 gpu_status_test.py SOURCE_DIR
"""
import subprocess
import sys
import tempfile
from pathlib import Path

PAGES = {
    # By hand from a run's console: what it shows ran to the end.
    "2026-11-29-Test-GPU.md": """# GPU check: Test GPU, 2026-11-29

Written from the logs of a run at commit `abc1234`.

`build-gpu/bin/00_streams --backend cuda --towers-per-device 4 --kernel-ms 20`

`build-gpu/bin/01_single_gpu --backend cuda --steps 10`
""",
    # scripts/gpu-check's form: each command with its exit status.
    "2026-12-05-Test-GPU-check.md": """# GPU check: Test-GPU, 2026-12-05T10:00Z

Produced by `scripts/gpu-check` at commit `def5678`.

`build-gpu/bin/00_streams --backend cuda --devices 1 --towers-per-device 4` (exit 0)

`build-gpu/bin/01_single_gpu --backend cuda --steps 300` (exit 1)

`build-gpu/bin/03_stream_towers --backend cuda --devices 1 --probe` (exit 0)

`build-gpu/bin/03_stream_towers --backend cuda --devices 1` (exit 0)

`build-gpu/bin/05_ranks --backend host --steps 2` (exit 0)

`compute-sanitizer --tool memcheck build-gpu/bin/07_graph --backend cuda --steps 2` (exit 124)
""",
    # Sorts last by name but is the oldest: its failure must not be chapter 3's last run.
    "zz-older-check.md": """# GPU check: Old GPU, 2026-11-01

`build-gpu/bin/03_stream_towers --backend cuda` (exit 2)
""",
    # Not a GPU results page: a host benchmark, whatever commands it quotes.
    "2026-12-06-host-2core.md": """# Host benchmarks, 2026-12-06

`build-gpu/bin/05_ranks --backend cuda` (exit 0)
""",
}

CHAPTERS = ["00_streams", "01_single_gpu", "03_stream_towers", "05_ranks", "07_graph"]

EXPECTED = """\
| chapter | last run on a GPU | result | page |
|---|---|---|---|
| 00_streams | 2026-12-05 | passed | bench/results/2026-12-05-Test-GPU-check.md, commit def5678 |
| 01_single_gpu | 2026-12-05 | failed: 1 of 1 runs (exit 1); last passed 2026-11-29 (bench/results/2026-11-29-Test-GPU.md, commit abc1234) | bench/results/2026-12-05-Test-GPU-check.md, commit def5678 |
| 03_stream_towers | 2026-12-05 | passed (2 runs) | bench/results/2026-12-05-Test-GPU-check.md, commit def5678 |
| 05_ranks | never | only compiled | — |
| 07_graph | 2026-12-05 | failed: 1 of 1 runs (killed at its time limit) | bench/results/2026-12-05-Test-GPU-check.md, commit def5678 |
"""


def generate(source, results, chapters):
    return subprocess.run(
        [sys.executable, str(source / "docs" / "_ext" / "towers_gpu_status.py"),
         str(results), str(chapters)], capture_output=True, text=True)


def main():
    source = Path(sys.argv[1])
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        results, chapters = Path(scratch, "results"), Path(scratch, "chapters")
        results.mkdir()
        for name, text in PAGES.items():
            (results / name).write_text(text)
        for name in CHAPTERS:
            (chapters / name).mkdir(parents=True)
        (chapters / "CMakeLists.txt").write_text("# not a chapter\n")
        done = generate(source, results, chapters)
        if done.returncode != 0:
            failures.append(f"exit {done.returncode}: {done.stderr}")
        elif done.stdout != EXPECTED:
            failures.append("the table differs.\n--- expected:\n" + EXPECTED +
                            "--- got:\n" + done.stdout)

        # A GPU results page without a date cannot be placed: refused, not guessed.
        (results / "undated.md").write_text("# GPU check: somewhere\n")
        done = generate(source, results, chapters)
        if done.returncode == 0 or "needs a date" not in done.stderr:
            failures.append(f"an undated GPU page was accepted: exit {done.returncode}, "
                            f"{done.stderr.strip()[-200:]}")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print(f"PASS: {len(CHAPTERS)} chapters from {len(PAGES)} planted pages")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
