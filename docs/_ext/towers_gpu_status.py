# SPDX-License-Identifier: MIT
"""Which chapters' CUDA paths have run on a GPU, and when: read from bench/results/.

The docs build calls it through the ``towers-gpu-chapters`` directive (towers_pages.py);
run by hand it prints the same table as Markdown::

    python3 docs/_ext/towers_gpu_status.py bench/results chapters

A GPU results page is a ``bench/results/*.md`` whose first line starts with
"# GPU check" and holds a date (YYYY-MM-DD): what scripts/gpu-check wrote on a GPU, or a
page written from such a run's logs. A chapter ran on the GPU in a page when the page
shows, in backticks, a command that runs the chapter's program on cuda::

    `build-gpu/bin/03_stream_towers --backend cuda ...` (exit 0)

(also behind a launcher, as ``mpiexec ... build-gpu/bin/05_ranks --backend cuda``).
scripts/gpu-check writes each command with its exit status: 0 passed, anything else
failed. A command without one is a page written by hand from a run's console, which
shows only what ran to the end: passed. A chapter no page shows is "only compiled": its
CUDA code builds (CI compiles it for sm_90) but has never run on a GPU.
"""
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

PROGRAM = re.compile(r"build-gpu/bin/(\d\d)_[A-Za-z0-9_]+")
COMMAND = re.compile(r"`([^`\n]*build-gpu/bin/\d\d_[^`\n]*)`(?:\s*\(exit (\d+)\))?")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
COMMIT = re.compile(r"commit `([0-9a-f]{6,40})`")


@dataclass
class Run:
    """One command of a page that ran a chapter's program on cuda."""
    command: str
    exit_status: int  # 0 when the page gives none (written by hand from what ran)


@dataclass
class Page:
    """One GPU results page: when, where, and its runs by chapter number ("03")."""
    name: str
    date: str
    commit: str
    runs: dict = field(default_factory=dict)  # chapter number -> [Run]


@dataclass
class ChapterStatus:
    """A row of the table: the chapter's last GPU run, or none."""
    chapter: str                 # the folder name, "03_stream_towers"
    last: Page = None            # the newest page that ran it
    last_runs: list = field(default_factory=list)
    last_passed: Page = None     # the newest page where all its runs passed

    def result(self):
        if self.last is None:
            return "only compiled"
        failed = [run for run in self.last_runs if run.exit_status != 0]
        if not failed:
            return "passed" if len(self.last_runs) == 1 else f"passed ({len(self.last_runs)} runs)"
        statuses = ", ".join(killed_or_exit(run.exit_status) for run in failed)
        return f"failed: {len(failed)} of {len(self.last_runs)} runs ({statuses})"


def killed_or_exit(status):
    return "killed at its time limit" if status in (124, 137) else f"exit {status}"


def read_page(path):
    """The page's runs, or None when it is not a GPU results page."""
    text = path.read_text()
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# GPU check"):
        return None
    date = DATE.search(lines[0]) or DATE.match(path.name)
    if date is None:
        raise ValueError(f"{path}: a GPU results page needs a date (YYYY-MM-DD) in its title")
    commit = COMMIT.search(text)
    page = Page(path.name, date.group(0), commit.group(1) if commit else "")
    for match in COMMAND.finditer(text):
        command = match.group(1)
        program = PROGRAM.search(command)
        if "--backend cuda" not in command:
            continue  # a host run (or a dry run's listing) proves nothing about CUDA
        status = int(match.group(2)) if match.group(2) is not None else 0
        page.runs.setdefault(program.group(1), []).append(Run(command, status))
    return page


def chapter_statuses(results_dir, chapters_dir):
    """One ChapterStatus per folder chapters/NN_*, in order, from the pages in results_dir."""
    pages = [page for page in (read_page(p) for p in sorted(Path(results_dir).glob("*.md")))
             if page is not None]
    pages.sort(key=lambda page: (page.date, page.name))  # oldest first; the last wins
    rows = []
    for folder in sorted(Path(chapters_dir).glob("[0-9][0-9]_*")):
        if not folder.is_dir():
            continue
        row = ChapterStatus(folder.name)
        number = folder.name[:2]
        for page in pages:
            runs = page.runs.get(number)
            if not runs:
                continue
            row.last, row.last_runs = page, runs
            if all(run.exit_status == 0 for run in runs):
                row.last_passed = page
        rows.append(row)
    return rows


def where(page):
    text = f"bench/results/{page.name}"
    return text + (f", commit {page.commit}" if page.commit else "")


def table_rows(statuses):
    """[chapter, last GPU run, result, page] per chapter, as text."""
    rows = []
    for status in statuses:
        if status.last is None:
            rows.append([status.chapter, "never", "only compiled", "—"])
            continue
        result = status.result()
        if status.last_passed is not None and status.last_passed is not status.last:
            result += f"; last passed {status.last_passed.date} ({where(status.last_passed)})"
        rows.append([status.chapter, status.last.date, result, where(status.last)])
    return rows


HEADER = ["chapter", "last run on a GPU", "result", "page"]


def markdown(statuses):
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for row in table_rows(statuses):
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) != 3:
        print("usage: towers_gpu_status.py RESULTS_DIR CHAPTERS_DIR", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(markdown(chapter_statuses(argv[1], argv[2])))
    except ValueError as error:
        print(f"towers_gpu_status: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
