# SPDX-License-Identifier: MIT
"""docs.NumbersCheckHoldsOnEveryMachine: the numbers checker (numbers_check.py) refuses
the claims that hold on one machine only, and accepts those that hold on any: a time
compared with a typed number fails, a time compared with another of the same build's
runs passes; a sample whose kernels' bits (final_loss, a hash) differ from this build's
passes, one whose other values (a node count) differ fails; the kernels' bits equal to a
typed value fail, bounded by one pass. Runs the checker on a made-up page and run."""
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKER = Path(__file__).with_name("numbers_check.py")
RUN = ("summary: mode=sync towers=4 step_ms=200.1\n"
       "summary: mode=enqueue towers=4 step_ms=50.2 final_loss=2.5000 averages_hash=00ff "
       "graph_nodes=12 precision_at_1=0.95\n")


def problems(page_text):
    """The checker's FAIL lines for README.md = page_text against the run R above."""
    with tempfile.TemporaryDirectory() as tmp:
        source, generated = Path(tmp, "src"), Path(tmp, "generated")
        (source / "exercises").mkdir(parents=True)
        generated.mkdir()
        (generated / "R.txt").write_text(RUN)
        (source / "README.md").write_text(page_text)
        out = subprocess.run([sys.executable, CHECKER, source, generated],
                             capture_output=True, text=True).stdout
        return [line for line in out.splitlines() if line.startswith("FAIL")]


def sample(enqueue_line):
    return ("<!-- output: R -->\n```\nsummary: mode=sync towers=4 step_ms=199.0\n"
            + enqueue_line + "\n```\n")


def claim(expression):
    return f"It is fast.\n<!-- numbers: check {expression} -->\n"


CASES = [
    # (what, page, problems expected)
    ("a time against a typed number", claim("R.step_ms < 75"), 1),
    ("a time against a time of the same run", claim("R.step_ms < 0.375 * R[sync].step_ms"), 0),
    ("a typed number against a time, reversed", claim("75 > R.step_ms"), 1),
    ("the kernels' bits equal to a typed value", claim("R.final_loss == 2.5"), 1),
    ("the kernels' bits equal to another run's", claim("R.final_loss == R.final_loss"), 0),
    ("the kernels' bits bounded", claim("R.precision_at_1 >= 0.9"), 0),
    ("a share within a typed tolerance", claim("abs(R.step_ms / R[sync].step_ms - 0.25) < 0.1"), 0),
    ("a sample with another machine's bits",
     sample("summary: mode=enqueue towers=4 step_ms=51.0 final_loss=2.6123 averages_hash=abcd "
            "graph_nodes=12 precision_at_1=0.91"), 0),
    ("a sample with another node count",
     sample("summary: mode=enqueue towers=4 step_ms=51.0 final_loss=2.5000 averages_hash=00ff "
            "graph_nodes=13 precision_at_1=0.95"), 1),
    ("a prose example of the bits", "It ends at `final_loss=9.9999`.\n", 0),
    ("a prose pair of another count", "The graph has `graph_nodes=13`.\n", 1),
]


def main():
    failed = 0
    for what, page, expected in CASES:
        found = problems(page)
        ok = len(found) == expected
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {len(found)} problem(s), expected {expected}"
              + "".join(f"\n       {line}" for line in found))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
