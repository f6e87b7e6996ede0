# SPDX-License-Identifier: MIT
"""The ring diagram's data is what the ring computes: ctest docs.RingScheduleIsTheRing.

    ring_schedule_check.py DOCS_RING_SCHEDULE

Runs docs_ring_schedule for 2..5 towers and checks its record against the ring all-reduce
the docs describe: 2(n-1) copy steps per tower, each from the left neighbour; every
element ends as the mean of the towers' starting values (tower r starts with 2^r); and
the sum of every chunk after the reduce-scatter names every tower. If the ring or the
recorder changes so that the picture would be wrong, this fails.
"""
import json
import subprocess
import sys

from check_report import verdict


def main():
    tool = sys.argv[1]
    failures = []
    for n in range(2, 6):
        out = subprocess.run([tool, str(n)], capture_output=True, text=True, check=True).stdout
        lines = [json.loads(line) for line in out.splitlines()]
        start, ops = lines[0], lines[1:]
        if start["towers"] != n:
            failures.append(f"n={n}: header says {start['towers']} towers")
        copies = [op for op in ops if op["kind"] == "copy"]
        for r in range(n):
            mine = [op for op in copies if op["tower"] == r]
            if len(mine) != 2 * (n - 1):
                failures.append(f"n={n}: tower {r} made {len(mine)} copies, not {2 * (n - 1)}")
            for op in mine:
                if op["from"]["tower"] != (r - 1) % n:
                    failures.append(f"n={n}: tower {r} copied from tower {op['from']['tower']}")
        mean = ((1 << n) - 1) / n
        final = ops[-1]["buffers"]
        for r, buffer in enumerate(final):
            if any(abs(v - mean) > 1e-4 for v in buffer):
                failures.append(f"n={n}: tower {r} ends with {buffer}, not all {mean:g}")
        print(f"n={n}: {len(copies)} copies, every tower ends with the mean {mean:g}")
    return verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
