# SPDX-License-Identifier: MIT
"""The parts bench/plot_*.py charts share: the SVG's frame and title, the y axis with its
grid, and writing the chart or checking it is fresh. Written once so that every chart on
the results pages looks the same and is checked the same way."""

import sys
from pathlib import Path


def write_or_check(svg_path, text, check, regenerate):
    """Writes `text` to `svg_path`; with `check`, writes nothing and exits 1 (saying the
    `regenerate` command) when the file is missing or differs from `text`."""
    if not check:
        Path(svg_path).write_text(text)
        return
    if not Path(svg_path).exists() or Path(svg_path).read_text() != text:
        sys.exit(f"{svg_path} is not what its results give; regenerate it: {regenerate}")


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
