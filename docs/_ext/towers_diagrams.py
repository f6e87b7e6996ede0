# SPDX-License-Identifier: MIT
"""Diagrams drawn from what towers' own code did (not drawn by hand).

ring_figure: the ring all-reduce step by step, from docs_ring_schedule's record of the
real ring (docs/tools/ring_schedule.cpp): one row per ring step, one box per tower, one
cell per chunk, saying whose gradients the chunk holds after that step.

tensor_figure: chapter 10's f and g (or the hybrid's gathers and scatters), from the ranks
and shapes the program printed about its own split.

mesh_figure: chapter 11's memory and wire bytes against the mesh shape, from the plan of
every shape (11_mesh --plan --shapes N) and the runs that measured some of them.
"""
import json
import re
from html import escape

CELL_W, CELL_H, GAP, LABEL_W = 44.0, 26.0, 30.0, 200.0
from towers_timeline import ALL_REDUCE_COLOR, TOWER_COLORS  # one palette for every figure


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


TENSOR_RANK = re.compile(
    r"^\s+(rank|tower) (\d+): (?:images (\d+)-(\d+), )?local3 columns (\d+)-(\d+) "
    r"\[(\d+) x (\d+)\], local4 rows (\d+)-(\d+) \[(\d+) x (\d+)\]; replicated (\d+), "
    r"slice (\d+) floats$", re.M)


def tensor_figure(text):
    """Chapter 10's split, drawn from the ranks the program printed (print_tensor_layout):
    one lane per rank, its local3 columns and local4 rows as boxes with their shapes, and
    the collectives where the lanes meet, each with what it does in each pass. Tensor
    parallel: f before local3 (forward: nothing, every rank has x; backward: all-reduce),
    g after local4 (forward: all-reduce of the partial sums; backward: nothing). The
    hybrid: an all-gather of pool2's rows before local3, a reduce-scatter of local4's sums
    after it (backward: the reverse of each)."""
    ranks = [m.groups() for m in TENSOR_RANK.finditer(text)]
    if not ranks:
        raise ValueError("no rank lines (rank R: local3 columns ...) in the output")
    hybrid = ranks[0][0] == "tower"
    batch = re.search(r"of (\d+) images|same (\d+) images", text)
    b = int(next(g for g in batch.groups() if g)) if batch else 0
    rows = b * len(ranks) if hybrid else b
    lane_h, top, left = 74.0, 64.0, 10.0
    width, height = 960.0, top + lane_h * len(ranks) + 40
    cols = [left, 150, 250, 420, 520, 690, 790]  # x of: input, meet 1, local3, h, local4, meet 2, y
    out = []

    def box(x, y, w, h, fill, label, sub, tip):
        out.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="4" fill="{fill}" '
                   f'fill-opacity="0.18" stroke="{fill}"><title>{escape(tip)}</title></rect>')
        out.append(f'<text x="{x + w / 2}" y="{y + 17}" font-size="12" text-anchor="middle">'
                   f'{escape(label)}</text>')
        out.append(f'<text x="{x + w / 2}" y="{y + 33}" font-size="10" text-anchor="middle" '
                   f'fill="#555555">{escape(sub)}</text>')

    def arrow(x1, y, x2):
        out.append(f'<line x1="{x1}" y1="{y}" x2="{x2 - 4}" y2="{y}" stroke="#777777" '
                   f'marker-end="url(#towers-tensor-arrow)"/>')

    first_y = top
    last_y = top + lane_h * (len(ranks) - 1) + 42
    for i, (kind, r, img0, img1, c0, c1, w3r, w3c, r0, r1, w4r, w4c, repl, size) in enumerate(ranks):
        y = top + i * lane_h
        color = TOWER_COLORS[int(r) % len(TOWER_COLORS)]
        c = int(w3c)
        out.append(f'<text x="{cols[2]}" y="{y - 6}" font-size="11" fill="{color}">{kind} {r}: '
                   f'{escape(f"slice of {int(size):,} floats ({int(repl):,} replicated)")}</text>')
        if hybrid:
            box(cols[0], y, 120, 42, color, f"pool2 [{b}, 2304]",
                f"images {img0}-{img1}", "this tower's convolutions, on its own images")
        else:
            box(cols[0], y, 120, 42, color, f"pool2 [{b}, 2304]", "whole, every rank",
                "every rank runs the convolutions on the same batch")
        arrow(cols[0] + 120, y + 21, cols[1])
        arrow(cols[1] + 40, y + 21, cols[2])
        box(cols[2], y, 150, 42, color, f"local3 cols {c0}-{c1}", f"W [{w3r} x {w3c}]",
            "column split: each output a whole dot product over 2304 inputs")
        arrow(cols[2] + 150, y + 21, cols[3])
        box(cols[3], y, 80, 42, color, f"h [{rows}, {c}]", "its columns",
            "relu(x W3_r + b3_r): this rank's columns of local3's output")
        arrow(cols[3] + 80, y + 21, cols[4])
        box(cols[4], y, 150, 42, color, f"local4 rows {r0}-{r1}", f"W [{w4r} x {w4c}]",
            "row split: a partial sum of every output, no bias yet")
        arrow(cols[4] + 150, y + 21, cols[5])
        arrow(cols[5] + 40, y + 21, cols[6])
        box(cols[6], y, 150, 42, color, f"local4 [{b}, 192]",
            "+ bias once, ReLU" if not hybrid else f"its rows, + bias, ReLU",
            "the whole sum (this tower's rows, in the hybrid), then softmax_linear whole")
    # The two places the lanes meet.
    if hybrid:
        meets = [(cols[1], "all-gather", "backward: reduce-scatter", "pool2 of all N x b rows"),
                 (cols[5], "reduce-scatter", "backward: all-gather", "each tower its rows, summed")]
    else:
        meets = [(cols[1], "f", "forward: nothing, backward: all-reduce",
                  "x is whole on every rank; its gradient is a sum over the ranks' columns"),
                 (cols[5], "g", "forward: all-reduce, backward: nothing",
                  "the partial sums added up; the output gradient is whole on every rank")]
    for x, name, passes, tip in meets:
        out.append(f'<rect x="{x}" y="{first_y - 2}" width="40" height="{last_y - first_y + 4}" '
                   f'fill="{ALL_REDUCE_COLOR}" fill-opacity="0.85" rx="3"><title>'
                   f'{escape(name + ": " + passes + "; " + tip)}</title></rect>')
        out.append(f'<text x="{x + 20}" y="{first_y - 22}" font-size="13" font-weight="bold" '
                   f'text-anchor="middle">{escape(name)}</text>')
        out.append(f'<text x="{x + 20}" y="{last_y + 18}" font-size="10" text-anchor="middle" '
                   f'fill="#333333">{escape(passes)}</text>')
    what = (f"{len(ranks)} towers of {b} images: convolutions data-parallel, the FC pair split "
            f"over all {rows} rows" if hybrid else
            f"{len(ranks)} ranks on one batch of {b}: local3 split by columns, local4 by rows")
    legend = (f'<text x="{left}" y="{height - 14}" font-size="11">{escape(what)}. Dark bars: '
              f'where the ranks meet (hover for each pass).</text>')
    marker = ('<defs><marker id="towers-tensor-arrow" viewBox="0 0 8 8" refX="7" refY="4" '
              'markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" '
              'fill="#777777"/></marker></defs>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" font-family="sans-serif" role="img">\n'
            + marker + "\n".join(out) + legend + "\n</svg>\n")


# --- Chapter 11: memory and wire against the mesh shape --------------------------------
# One line of `11_mesh --plan --shapes N`: the shape, the sum of peaks, the three wires.
MESH_SHAPE = re.compile(r"^\s+(\d+)x(\d+)x(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s", re.M)
MESH_DIMENSIONS = (("data", ALL_REDUCE_COLOR), ("tensor", TOWER_COLORS[1]),
                   ("pipeline", TOWER_COLORS[2]))


def mesh_shapes(text):
    """[{shape, dp, tp, pp, sum, data, tensor, pipeline}] of `--plan --shapes N`'s lines."""
    shapes = []
    for m in MESH_SHAPE.finditer(text):
        dp, tp, pp, peak, data, tensor, pipeline = (int(g) for g in m.groups())
        shapes.append({"shape": f"{dp}x{tp}x{pp}", "dp": dp, "tp": tp, "pp": pp, "sum": peak,
                       "data": data, "tensor": tensor, "pipeline": pipeline})
    if not shapes:
        raise ValueError("no shape lines (dp x tp x pp, sum of peaks, wires) in the output")
    return shapes


def mesh_figure(shapes, measured):
    """Two panels over the shapes of one N, in the plan's order: the largest device's sum
    of ledger peaks, and the bytes all devices send per step stacked by dimension. Bars are
    the plan (pale where no program runs the mesh yet: a pipeline of 5 stages or more
    beside tensor parallelism, 11_mesh's split_layers_on_one_stage); a ring marks what a run of this build measured, `measured` being
    {shape: {"sum": bytes, "data": ..., "tensor": ..., "pipeline": ...}}."""
    left, right, top, panel_h, gap = 64.0, 16.0, 40.0, 150.0, 84.0
    slot = 66.0
    width = left + slot * len(shapes) + right
    height = top + 2 * panel_h + gap + 14 + 46  # the shapes' labels, then the legend
    out = []

    def axis(y0, biggest, title):
        out.append(f'<text x="{left}" y="{y0 - 24}" font-size="12" font-weight="bold">'
                   f'{escape(title)}</text>')
        out.append(f'<line x1="{left}" y1="{y0 + panel_h}" x2="{width - right}" '
                   f'y2="{y0 + panel_h}" stroke="#444"/>')
        for tick in (0.5, 1.0):  # two gridlines: half and the tallest bar
            y = y0 + panel_h * (1 - tick)
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" '
                       f'stroke="#ddd"/>')
            out.append(f'<text x="{left - 4}" y="{y + 3:.1f}" font-size="10" text-anchor="end">'
                       f'{biggest * tick / 1e6:.1f} MB</text>')

    def height_of(value, biggest):
        return panel_h * value / biggest if biggest else 0.0

    def ring(x, y, shape):
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#fff" stroke="#222" '
                   f'stroke-width="2"><title>{shape}: measured by this build\'s run</title>'
                   f'</circle>')

    # Panel 1: the largest device's memory.
    y0 = top + 14
    biggest = max(s["sum"] for s in shapes)
    axis(y0, biggest, "memory of the largest device (sum of its ledger's peaks)")
    for i, s in enumerate(shapes):
        x = left + slot * i + slot / 2
        held = s["tp"] == 1 or s["pp"] <= 4
        h = height_of(s["sum"], biggest)
        out.append(f'<rect x="{x - 18:.1f}" y="{y0 + panel_h - h:.1f}" width="36" '
                   f'height="{h:.1f}" fill="{TOWER_COLORS[0]}" '
                   f'fill-opacity="{1 if held else 0.35}"><title>{s["shape"]}: '
                   f'{s["sum"]:,} bytes planned</title></rect>')
        lift = 11 if s["shape"] in measured else 4  # above the ring, if there is one
        out.append(f'<text x="{x:.1f}" y="{y0 + panel_h - h - lift:.1f}" font-size="10" '
                   f'text-anchor="middle">{s["sum"] / 1e6:.1f}</text>')
        if s["shape"] in measured:
            ring(x, y0 + panel_h - height_of(measured[s["shape"]]["sum"], biggest), s["shape"])
        out.append(f'<text x="{x:.1f}" y="{y0 + panel_h + 14:.1f}" font-size="11" '
                   f'text-anchor="middle">{s["shape"]}</text>')

    # Panel 2: the bytes on the wire per step, stacked by dimension.
    y0 = top + panel_h + gap + 14
    total = lambda s: sum(s[d] for d, _ in MESH_DIMENSIONS)
    biggest = max(total(s) for s in shapes)
    axis(y0, biggest, "bytes on the wire per step, all devices, by dimension")
    for i, s in enumerate(shapes):
        x = left + slot * i + slot / 2
        held = s["tp"] == 1 or s["pp"] <= 4
        base = y0 + panel_h
        for dimension, color in MESH_DIMENSIONS:
            h = height_of(s[dimension], biggest)
            if h <= 0:
                continue
            out.append(f'<rect x="{x - 18:.1f}" y="{base - h:.1f}" width="36" height="{h:.1f}" '
                       f'fill="{color}" fill-opacity="{1 if held else 0.35}"><title>'
                       f'{s["shape"]}: {dimension} {s[dimension]:,} bytes planned</title></rect>')
            base -= h
        lift = 11 if s["shape"] in measured else 4
        out.append(f'<text x="{x:.1f}" y="{base - lift:.1f}" font-size="10" '
                   f'text-anchor="middle">{total(s) / 1e6:.1f}</text>')
        if s["shape"] in measured:
            ring(x, y0 + panel_h - height_of(total(measured[s["shape"]]), biggest), s["shape"])
        out.append(f'<text x="{x:.1f}" y="{y0 + panel_h + 14:.1f}" font-size="11" '
                   f'text-anchor="middle">{s["shape"]}</text>')

    # The legend: the dimensions' colours, the pale bars, the rings.
    y = height - 14
    x = left
    for dimension, color in MESH_DIMENSIONS:
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{x + 14}" y="{y}" font-size="11">{dimension}</text>')
        x += 24 + 7 * len(dimension)
    out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{TOWER_COLORS[0]}" '
               f'fill-opacity="0.35"/>')
    out.append(f'<text x="{x + 14}" y="{y}" font-size="11">pale: planned, no program runs it '
               f'yet</text>')
    x += 230
    out.append(f'<circle cx="{x + 5}" cy="{y - 4}" r="5" fill="#fff" stroke="#222" '
               f'stroke-width="2"/>')
    out.append(f'<text x="{x + 14}" y="{y}" font-size="11">measured by this build</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" font-family="sans-serif" role="img">'
            + "".join(out) + "</svg>")
