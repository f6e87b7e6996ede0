# SPDX-License-Identifier: MIT
"""The parts bench/plot_*.py charts share: reading a results file and its numbers, the
SVG's frame and title, the y axis with its grid, and writing the chart or checking it is
fresh. Written once so that every chart on the results pages looks the same, is checked
the same way, and fails the same way: one line saying what was wrong and what to do
(exit status 2 for a path or file the command line names, 1 for a stale chart), never a
Python traceback."""

import math
import os
import shlex
import stat
import sys
from pathlib import Path

# A number in a bench's table: 12, -0.5, and inf or nan (a bench prints "inf" for an
# unlimited link, and a ratio over zero is inf); which of them a chart can draw is
# number()'s business, not the pattern's.
NUMBER = r"-?(?:[0-9]+(?:\.[0-9]+)?|inf)|nan"


def fail(program, message, status=2):
    """Ends the program with `program: message` on stderr and `status`."""
    print(f"{program}: {message}", file=sys.stderr)
    sys.exit(status)


def read_lines(program, path):
    """The lines of the results file `path`, or a one-line error when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except IsADirectoryError:
        fail(program, f"{path} is a folder; give a results file (a bench's output or a page of "
                      "bench/results/)")
    except UnicodeDecodeError:
        fail(program, f"{path} is not text (not UTF-8); give a bench's output or a results page")
    except OSError as e:
        fail(program, f"cannot read {path} ({e.strerror}); check the path")


def number(program, text, column, where, allow_inf=False):
    """`text` of a table as a float; a value the chart cannot draw (nan, or inf unless
    `allow_inf`) is a one-line error naming the column and `where` ("FILE:LINE")."""
    value = float(text)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        fail(program, f"{where}: {column} is {text}, which a chart cannot draw; rerun that case "
                      "or remove its row")
    return value


def chart_arguments(parser, title):
    """Adds what every chart's command line has after its results: --svg (where to write
    the chart), --title (`title` by default) and --check (compare, write nothing)."""
    parser.add_argument("--svg", required=True, help="where to write the chart")
    parser.add_argument("--title", default=title)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when --svg differs from what RESULTS give")


def regenerate_command(words):
    """The command that redraws a chart, quoted as a shell reads it (paths with spaces)."""
    return shlex.join(words)


def write_or_check(program, svg_path, text, check, regenerate):
    """Writes `text` to `svg_path`; with `check`, writes nothing and exits 1 (saying the
    `regenerate` command) when the file is missing or differs from `text`.
    Written as the programs write their outputs (cli/output_paths.cpp): a symbolic link is
    refused, not written through (the chart would land on its target, maybe a file elsewhere),
    except a link to a device such as /dev/stdout; a missing folder or a folder in the file's
    place is a one-line error; a regular file is replaced whole (a temporary file renamed
    over it), so a failed write leaves the old chart."""
    if check:
        try:
            fresh = Path(svg_path).read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            fresh = False
        if not fresh:
            fail(program, f"{svg_path} is not what its results give; regenerate it: {regenerate}", 1)
        return
    path = Path(svg_path)
    if path.is_symlink():
        target = os.readlink(path)
        if not path.exists() or path.is_file() or path.is_dir():
            gone = "" if path.exists() else ", whose target does not exist"
            fail(program, f"--svg {svg_path}: is a symbolic link (to {target}){gone}. Outputs are "
                          "not written through links: give the target's own path, or a new name")
    if path.is_dir():
        fail(program, f"--svg {svg_path}: is a folder, not a file. Give a file name, e.g. "
                      f"{path / 'chart.svg'}")
    folder = path.parent
    if not folder.is_dir():
        fail(program, f"--svg {svg_path}: its folder {folder} does not exist. Create it first "
                      f"(mkdir -p {shlex.quote(str(folder))}) or choose another path")
    try:
        if path.exists() and not stat.S_ISREG(path.stat().st_mode):
            with open(path, "w", encoding="utf-8") as device:  # /dev/stdout, a pipe: in place
                device.write(text)
            return
        temporary = folder / f".{path.name}.tmp-{os.getpid()}"
        try:
            temporary.write_text(text, encoding="utf-8")
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as e:
        fail(program, f"cannot write {svg_path} ({e.strerror}); check that its folder is "
                      "writable and has space", 1)


def frame(width, height, left, title, notes):
    """The opening tag, a white background, a bold title and grey note lines under it."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="18" font-size="13" font-weight="bold">{title}</text>']
    for i, note in enumerate(notes):
        out.append(f'<text x="{left}" y="{34 + 14 * i}" fill="#444">{note}</text>')
    return out


def nice_step(top):
    """A round grid step that gives 4 to 8 lines up to `top`."""
    step = 1.0
    while top / step > 8:
        for factor in (2, 2.5, 2):
            step *= factor
            if top / step <= 8:
                break
    return step


def y_axis(y, y_max, step, left, x_end, top, plot_h, label):
    """A grey grid line and a value every `step` from 0 to `y_max` (y maps a value to its
    pixel row), and the axis' label turned on its side."""
    out = []
    v = 0.0
    while v <= y_max + 1e-9:
        out.append(f'<line x1="{left}" x2="{x_end}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   f'stroke="#e4e4e4"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        v += step
    out.append(f'<text x="14" y="{top + plot_h / 2:.0f}" transform="rotate(-90 14 '
               f'{top + plot_h / 2:.0f})" text-anchor="middle">{label}</text>')
    return out
