# SPDX-License-Identifier: MIT
"""Diagrams drawn from what towers' own code did (not drawn by hand).

ring_figure: the ring all-reduce step by step, from docs_ring_schedule's record of the
real ring (docs/tools/ring_schedule.cpp): one row per ring step, one box per tower, one
cell per chunk, saying whose gradients the chunk holds after that step.
"""
import json
from html import escape

CELL_W, CELL_H, GAP, LABEL_W = 44.0, 26.0, 30.0, 200.0
from towers_timeline import TOWER_COLORS  # one palette for every figure


def load_ring(text):
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    return lines[0], lines[1:]


def holds(value, n):
    """Tower r started with 2^r: a sum is a set of towers; the mean of all is 'mean'."""
    everyone = (1 << n) - 1
    if abs(value * n - everyone) < 1e-3 and abs(value - round(value)) > 1e-6:
        return "mean", list(range(n))
    if abs(value - round(value)) > 1e-6:
        return f"{value:g}", []
    towers = [r for r in range(n) if int(round(value)) >> r & 1]
    return "+".join(str(r) for r in towers), towers


def ring_steps(ops):
    """[(label, [(tower, from_tower, chunk)], buffers after the step)] in the order run."""
    steps, current = [], None
    for op in ops:
        name = op["op"]
        if not name.startswith("ring ") or name == "ring scale":
            if name == "ring scale" and steps:
                steps[-1]["scaled"] = True
                steps[-1]["buffers"] = op["buffers"]
            continue
        key = " ".join(name.split()[:3])  # "ring rs 1/3" (also for "ring rs 1/3 add")
        if current is None or current["key"] != key:
            current = {"key": key, "moves": [], "buffers": op["buffers"], "scaled": False}
            steps.append(current)
        if op["kind"] == "copy":
            current["moves"].append((op["tower"], op["from"]["tower"], op["from"]["element"]))
        current["buffers"] = op["buffers"]
    return steps


def ring_figure(text):
    start, ops = load_ring(text)
    n = start["towers"]
    steps = ring_steps(ops)
    box_w = n * CELL_W + 12
    width = LABEL_W + n * (box_w + GAP)
    row_h = CELL_H + 40
    out = []
    rows = [("start: each tower's gradients", [], start["buffers"], False)]
    for step in steps:
        phase, number = step["key"].split()[1:3]
        what = "reduce-scatter" if phase == "rs" else "all-gather"
        label = f"{what} step {number}" + (" + scale" if step["scaled"] else "")
        rows.append((label, step["moves"], step["buffers"], step["scaled"]))
    previous = None
    for i, (label, moves, buffers, scaled) in enumerate(rows):
        y = 30 + i * row_h
        out.append(f'<text x="4" y="{y + 24}" font-size="12">{escape(label)}</text>')
        moved = {tower: (source, chunk) for tower, source, chunk in moves}
        for r in range(n):
            x = LABEL_W + r * (box_w + GAP)
            out.append(f'<rect x="{x}" y="{y}" width="{box_w}" height="{CELL_H + 18}" '
                       f'fill="none" stroke="#999999" rx="4"/>')
            if r in moved:
                source, chunk = moved[r]
                out.append(f'<text x="{x + 4}" y="{y + 12}" font-size="10">'
                           f'tower {r} ← chunk {chunk} of tower {source}</text>')
            elif i == 0:
                out.append(f'<text x="{x + 4}" y="{y + 12}" font-size="10">tower {r}</text>')
            for c in range(n):
                value = buffers[r][c]
                text, towers = holds(value, n)
                changed = previous is not None and abs(previous[r][c] - value) > 1e-9
                cx = x + 6 + c * CELL_W
                fill = "#ffe9a8" if changed else "#f4f4f4"
                if text == "mean":
                    fill = "#c9e7c4" if changed else "#e4f2e1"
                tip = (f"tower {r}, chunk {c}: " + ("the mean of every tower's" if text == "mean"
                       else "the sum of towers " + text + "'") + " gradients")
                out.append(f'<rect x="{cx}" y="{y + 16}" width="{CELL_W - 4}" '
                           f'height="{CELL_H}" fill="{fill}" stroke="#cccccc">'
                           f'<title>{escape(tip)}</title></rect>')
                out.append(f'<text x="{cx + (CELL_W - 4) / 2}" y="{y + 33}" font-size="11" '
                           f'text-anchor="middle">{escape(text)}</text>')
        previous = buffers
    header = "".join(
        f'<text x="{LABEL_W + r * (box_w + GAP) + 6 + c * CELL_W + (CELL_W - 4) / 2}" '
        f'y="20" font-size="10" text-anchor="middle" fill="#555555">c{c}</text>'
        for r in range(n) for c in range(n))
    height = 30 + len(rows) * row_h + 30
    legend = (f'<text x="4" y="{height - 12}" font-size="11">Each cell: a chunk of a tower\'s '
              f'buffer and whose gradients it sums ("0+2": towers 0 and 2; "mean": all, '
              f'divided by {n}). Yellow/green: changed in this step.</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" font-family="sans-serif" role="img">\n'
            + header + "\n".join(out) + legend + "\n</svg>\n")
