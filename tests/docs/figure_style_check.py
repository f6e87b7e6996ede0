# SPDX-License-Identifier: MIT
"""One figure style on every page: ctest docs.OneFigureStyle.

    figure_style_check.py SOURCE_DIR

The pages show two kinds of figure: the programs' own --trace-svg timelines
(src/trace/export.cpp, timeline_svg) and the figures the docs draw from the traces
(docs/_ext/towers_timeline.py, whose palette towers_events.py and towers_diagrams.py
import). A learner compares them across pages, so tower i must have one colour and the
all-reduce one colour everywhere. Fails, naming both files, when the C++ palette and the
Python one differ, or when a docs module writes a palette of its own.
"""
import re
import sys
from pathlib import Path


def main():
    source = Path(sys.argv[1])
    cpp = (source / "src/trace/export.cpp").read_text()
    py = (source / "docs/_ext/towers_timeline.py").read_text()
    problems = []
    cpp_towers = re.search(r"kColors\[\]\s*=\s*\{([^}]*)\}", cpp)
    py_towers = re.search(r"^TOWER_COLORS\s*=\s*\[([^\]]*)\]", py, re.M)
    cpp_comm = re.search(r'kAllReduceColor\s*=\s*"(#[0-9a-fA-F]{6})"', cpp)
    py_comm = re.search(r'^ALL_REDUCE_COLOR\s*=\s*"(#[0-9a-fA-F]{6})"', py, re.M)
    if not (cpp_towers and py_towers and cpp_comm and py_comm):
        print("FAIL: a palette is missing (kColors/kAllReduceColor in src/trace/export.cpp, "
              "TOWER_COLORS/ALL_REDUCE_COLOR in docs/_ext/towers_timeline.py)")
        return 1
    colours = lambda text: [c.lower() for c in re.findall(r"#[0-9a-fA-F]{6}", text)]
    if colours(cpp_towers.group(1)) != colours(py_towers.group(1)):
        problems.append(f"tower colours differ: export.cpp {colours(cpp_towers.group(1))}, "
                        f"towers_timeline.py {colours(py_towers.group(1))}")
    if cpp_comm.group(1).lower() != py_comm.group(1).lower():
        problems.append(f"all-reduce colour differs: export.cpp {cpp_comm.group(1)}, "
                        f"towers_timeline.py {py_comm.group(1)}")
    for module in sorted((source / "docs/_ext").glob("*.py")):
        if module.name != "towers_timeline.py" and re.search(
                r"^TOWER_COLORS\s*=", module.read_text(), re.M):
            problems.append(f"{module.relative_to(source)} writes its own TOWER_COLORS; "
                            "import towers_timeline's")
    for problem in problems:
        print("FAIL:", problem)
    if not problems:
        print(f"ok: {len(colours(py_towers.group(1)))} tower colours and the all-reduce's "
              f"{py_comm.group(1)} are the same in the programs' and the docs' figures")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
