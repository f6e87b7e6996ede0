# SPDX-License-Identifier: MIT
"""Chapter 3's events diagram has an arrow per tower: ctest docs.EventsDiagramArrows.

    events_diagram_check.py HTML_DIR GENERATED_DIR

Reads the built chapter 3 page's inline SVG (```{towers-events} 03_stream_towers```) and
the run it was drawn from, and checks, against the run's summary (towers=N) and its
trace (NAME.json):
  * one arrow from each tower's stream to the meeting stream (tower i's `done` ->
    average_gradients' wait), N in all, from N different towers;
  * one arrow from the meeting stream to each tower's stream (params_ready -> the next
    step's reads), N in all;
  * as many arrows as the trace has waits in that step whose record is in it too: the
    picture drops no record -> wait pair and invents none.
Prints "docs not built" and exits 0 when there is no HTML (ctest reports it as skipped).
"""
import json
import re
import sys
from pathlib import Path

from check_report import verdict

RUN = "03_stream_towers"
PAGE = "chapters/03_stream_towers.html"
ARROW = re.compile(r'<path class="towers-arrow" data-event="(-?\d+)" '
                   r'data-from-tower="(-?\d+)" data-to-tower="(-?\d+)"')


def main():
    html_dir, generated = Path(sys.argv[1]), Path(sys.argv[2])
    page = html_dir / PAGE
    if not page.is_file() or not (generated / f"{RUN}.json").is_file():
        print("docs not built: build the `docs` target to check the events diagram")
        return 0
    html = page.read_text()
    svg = re.search(r'<svg [^>]*class="towers-events".*?</svg>', html, re.S)
    if not svg:
        print(f"FAIL {PAGE} has no events diagram (towers-events)")
        return 1
    svg = svg.group(0)
    summary = dict(re.findall(r"(\w+)=(\S+)", "\n".join(
        line for line in (generated / f"{RUN}.txt").read_text().splitlines()
        if line.startswith("summary:"))))
    towers = int(summary["towers"])
    step = int(re.search(r">Step (\d+):", svg).group(1))
    arrows = [(int(e), int(a), int(b)) for e, a, b in ARROW.findall(svg)]
    failures = []
    done = sorted(a for _, a, b in arrows if a >= 0 and b < 0)
    ready = sorted(b for _, a, b in arrows if a < 0 and b >= 0)
    if done != list(range(towers)):
        failures.append(f"arrows from the towers' streams to the meeting stream come from "
                        f"towers {done}, not one from each of the {towers} towers")
    if ready != list(range(towers)):
        failures.append(f"arrows from the meeting stream go to towers {ready}, not one to "
                        f"each of the {towers} towers")
    # The trace's own record -> wait pairs of that step.
    marks = [e for e in json.loads((generated / f"{RUN}.json").read_text())["traceEvents"]
             if e.get("ph") == "i" and e["args"]["step"] == step]
    recorded = {(e["args"]["event"], e["args"]["record"]) for e in marks
                if e["name"] == "event record"}
    pairs = [e for e in marks if e["name"] == "event wait"
             and (e["args"]["event"], e["args"]["record"]) in recorded]
    if len(pairs) != len(arrows):
        failures.append(f"the trace has {len(pairs)} record -> wait pairs in step {step}, "
                        f"the diagram {len(arrows)} arrows")
    print(f"step {step}: {len(arrows)} arrows; towers -> meeting stream: {done}; "
          f"meeting stream -> towers: {ready}; summary towers={towers}")
    return verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
