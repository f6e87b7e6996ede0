# SPDX-License-Identifier: MIT
"""Timeline figures from the Chrome traces of the docs' runs (NAME.json, --trace).

The program's own --trace-svg draws the whole run at one scale. For the pages, this
draws what a reader needs to see: only the steps (start-up and the warm-up step 0 are
cut, and the figure says how long they took), step boundaries, a time axis, a legend,
and rows named for what the stream does. Several runs in one figure share one time axis,
so chapter 2's staircase and chapter 3's overlap compare at a glance. Each bar has a
tooltip: the op, its tower, its step and its duration.
"""
import json
from collections import Counter
from html import escape

# The palette of every figure, the programs' --trace-svg included (src/trace/export.cpp;
# ctest docs.OneFigureStyle compares the two): a colour per tower, one for communication.
TOWER_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"]
ALL_REDUCE_COLOR = "#222222"
HOST = 1000  # the Chrome trace's process id of host spans (src/trace/export.cpp)
LABEL_W, PLOT_W, ROW_H = 230.0, 760.0, 20.0


def load(path):
    """The trace's ops: dicts with device, stream, tower, step, name, start, end (ms)."""
    ops = []
    for e in json.loads(path.read_text())["traceEvents"]:
        if e.get("ph") != "X":
            continue
        ops.append({"device": e["pid"], "stream": e["tid"], "tower": e["args"]["tower"],
                    "step": e["args"]["step"], "name": e["name"], "cat": e.get("cat", ""),
                    "start": e["ts"] / 1000.0, "end": (e["ts"] + e["dur"]) / 1000.0})
    return ops


def kind(op):
    """What an op is for, as the legend names it."""
    name = op["name"]
    if op["device"] == HOST:
        return "host: enqueue" if name == "enqueue" else "host: " + name
    if op.get("cat") == "all-reduce":  # the program decides (src/trace/export.cpp, category)
        return "all-reduce"
    if name == "copy input":
        return "input copy"
    if name == "rendezvous":
        return "rendezvous probe"
    if op["tower"] < 0:
        return "no tower (average, update)"
    return "tower"


def row_name(device, stream, ops):
    """A row is named for what its ops do, not for its stream number."""
    if device == HOST:
        names = {op["name"] for op in ops}
        return "host: tower loop" + (" + average" if len(names) > 1 else "")
    kinds = Counter(kind(op) for op in ops)
    if kinds.get("input copy"):
        what = "input copies"
    elif kinds.get("tower"):
        what = "compute" + (" + all-reduce" if kinds.get("all-reduce") else "")
    elif kinds.get("all-reduce"):  # chapter 4's --allreduce device0: a stream of its own
        what = "all-reduce"
    elif any("peer copy" in op["name"] for op in ops):
        what = "average + update"
    else:
        what = Counter(op["name"] for op in ops).most_common(1)[0][0]
    return f"device {device}: {what}"


def color(op):
    k = kind(op)
    if k == "tower" or k == "input copy":
        return TOWER_COLORS[op["tower"] % len(TOWER_COLORS)]
    return {"all-reduce": ALL_REDUCE_COLOR, "host: enqueue": "#c7c7c7", "rendezvous probe": "#c00060",
            "no tower (average, update)": "#7f7f7f"}.get(k, "#9c755f")


def nice_step(span_ms):
    """A round tick interval giving 4-10 ticks."""
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000):
        if span_ms / step <= 10:
            return step
    return 10000


def panel(title, ops, t0, t1, scale, y, boundaries=True):
    """SVG of one run's ops between t0 and t1 (ms); returns (svg text, height)."""
    rows = sorted({(op["device"], op["stream"]) for op in ops})
    out = [f'<text x="4" y="{y + 14}" font-weight="bold">{escape(title)}</text>']
    top = y + 40
    x = lambda t: LABEL_W + (t - t0) * scale
    for i, (device, stream) in enumerate(rows):
        mine = [op for op in ops if (op["device"], op["stream"]) == (device, stream)]
        ry = top + i * ROW_H
        out.append(f'<text x="4" y="{ry + 14}">{escape(row_name(device, stream, mine))}</text>')
        out.append(f'<line x1="{LABEL_W}" x2="{LABEL_W + PLOT_W}" y1="{ry + ROW_H}" '
                   f'y2="{ry + ROW_H}" stroke="#eeeeee"/>')
        for op in mine:
            width = max(0.6, (op["end"] - op["start"]) * scale)
            tip = (f'{op["name"]} · tower {op["tower"]} · step {op["step"]} · '
                   f'{op["end"] - op["start"]:.3f} ms')
            faint = ' fill-opacity="0.5"' if kind(op) == "input copy" else ""
            out.append(f'<rect x="{x(op["start"]):.2f}" y="{ry + 3}" width="{width:.2f}" '
                       f'height="{ROW_H - 6}" fill="{color(op)}"{faint}><title>{escape(tip)}'
                       f'</title></rect>')
    bottom = top + len(rows) * ROW_H
    if boundaries:
        starts = {}
        for op in ops:
            starts[op["step"]] = min(starts.get(op["step"], op["start"]), op["start"])
        for step, start in sorted(starts.items()):
            out.append(f'<line x1="{x(start):.2f}" x2="{x(start):.2f}" y1="{top - 12}" '
                       f'y2="{bottom}" stroke="#444444" stroke-dasharray="3,3"/>')
            out.append(f'<text x="{x(start) + 3:.2f}" y="{top - 3}" font-size="11">'
                       f'step {step}</text>')
    tick = nice_step(t1 - t0)
    t = 0.0
    out.append(f'<line x1="{LABEL_W}" x2="{LABEL_W + PLOT_W}" y1="{bottom + 2}" '
               f'y2="{bottom + 2}" stroke="#000000"/>')
    while t <= (t1 - t0) + 1e-9:
        tx = LABEL_W + t * scale
        if tx <= LABEL_W + PLOT_W + 0.5:
            out.append(f'<line x1="{tx:.2f}" x2="{tx:.2f}" y1="{bottom + 2}" y2="{bottom + 6}" '
                       f'stroke="#000000"/><text x="{tx:.2f}" y="{bottom + 18}" font-size="11" '
                       f'text-anchor="middle">{t:g}</text>')
        t += tick
    out.append(f'<text x="{LABEL_W + PLOT_W}" y="{bottom + 32}" font-size="11" '
               f'text-anchor="end">ms</text>')
    return "\n".join(out), bottom + 36 - y


def legend(ops, y):
    kinds = {}
    for op in ops:
        k = kind(op)
        if k in ("tower", "input copy"):
            k = f"tower {op['tower']}" + (" input copy" if kind(op) == "input copy" else "")
        kinds.setdefault(k, (color(op), kind(op) == "input copy"))
    out, lx = [], LABEL_W
    for k, (fill, faint) in sorted(kinds.items()):
        width = 18 + 7 * len(k)
        if lx + width > LABEL_W + PLOT_W:
            lx, y = LABEL_W, y + 18
        opacity = ' fill-opacity="0.5"' if faint else ""
        out.append(f'<rect x="{lx}" y="{y}" width="12" height="12" fill="{fill}"{opacity}/>'
                   f'<text x="{lx + 16}" y="{y + 10}" font-size="11">{escape(k)}</text>')
        lx += width + 12
    return "\n".join(out), y + 24


def figure(runs, first_step=1, zoom=None, zoom_through=False):
    """An SVG of several runs [(title, ops)] on one time axis, from `first_step` on.

    zoom: an op-name prefix (e.g. "ring"); adds, per run, a panel around those ops in the
    last step that has them, at its own scale, so short transfers are visible.
    zoom_through: the zoom panel runs on to the end of the work of the zoomed ops' rows
    in that step (e.g. from the first peer copy to the last update of the average).
    """
    shown = []
    for title, ops in runs:
        steps = [op for op in ops if op["step"] >= first_step]
        if not steps:
            raise ValueError(f"{title}: no ops in steps >= {first_step}")
        t0 = min(op["start"] for op in steps)
        t1 = max(op["end"] for op in steps)
        cut = t0 - min(op["start"] for op in ops)
        shown.append((title, steps, t0, t1, cut))
    span = max(t1 - t0 for _, _, t0, t1, _ in shown)
    scale = PLOT_W / span
    parts, y = [], 0
    for title, steps, t0, t1, cut in shown:
        note = f"{title} — start-up and steps before {first_step} cut ({cut:.0f} ms)"
        svg, height = panel(note, steps, t0, t0 + span, scale, y)
        parts.append(svg)
        y += height + 8
        if zoom:
            with_zoom = [op["step"] for op in steps if op["name"].startswith(zoom)]
            last = max(with_zoom) if with_zoom else None
            hits = [op for op in steps if op["step"] == last and op["name"].startswith(zoom)]
            if hits:
                z0, z1 = min(op["start"] for op in hits), max(op["end"] for op in hits)
                if zoom_through:
                    rows = {(op["device"], op["stream"]) for op in hits}
                    z1 = max(op["end"] for op in steps
                             if op["step"] == last and (op["device"], op["stream"]) in rows)
                margin = (z1 - z0) * 0.15 + 0.05
                z0, z1 = z0 - margin, z1 + margin
                window = [op for op in steps if op["end"] > z0 and op["start"] < z1]
                clipped = [dict(op, start=max(op["start"], z0), end=min(op["end"], z1))
                           for op in window]
                what = f"from the first {zoom} op to the end of its row" if zoom_through \
                    else f"the {zoom} ops"
                svg, height = panel(f"zoom: {what}, step {last} ({z1 - z0:.2f} ms)",
                                    clipped, z0, z1, PLOT_W / (z1 - z0), y, boundaries=False)
                parts.append(svg)
                y += height + 8
    svg, y = legend([op for _, steps, *_ in shown for op in steps], y + 4)
    parts.append(svg)
    total_w = LABEL_W + PLOT_W + 10
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {total_w:.0f} {y:.0f}" '
            f'width="{total_w:.0f}" height="{y:.0f}" font-family="sans-serif" font-size="12" '
            f'role="img">\n' + "\n".join(parts) + "\n</svg>\n")
