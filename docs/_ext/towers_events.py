# SPDX-License-Identifier: MIT
"""Who records and who waits in one step: a diagram drawn from a run's Chrome trace.

The trace (src/trace/export.cpp) holds the ops ("ph":"X") and, since streams note them,
every event record and every wait ("ph":"i", "event record" / "event wait", with the
event's number and which record of it). A wait names the record it waited for, so each
(event, record) pair is one arrow: from the stream that recorded it to the stream that
could go on only once it had.

One row per stream that worked in the step. Ops between two markers are one box (a
tower's whole forward and backward pass is one box of its ops); short runs of ops are
drawn op by op. Time runs left to right but is not to scale: each gap between two things
that happened gets a width that grows with a power (0.4) of its length, so that a 2 ms
average after a 130 ms pass stays visible. Durations are written in the boxes and tooltips.
"""
import json
from html import escape

import towers_timeline

from towers_timeline import TOWER_COLORS  # one palette for every figure
HOST = 1000     # the Chrome trace's process id of host spans (src/trace/export.cpp)
RAN_TRACK = 100  # threads >= this hold the cuda kernels' stamped runs, not streams
RECORD, WAIT = "event record", "event wait"  # src/trace/span_names.hpp
LABEL_W, PLOT_W, ROW_H, TOP = 250.0, 740.0, 54.0, 34.0
MIN_GAP, POWER = 0.6, 0.4  # a gap of t ms takes MIN_GAP + t**POWER units of width
GROUP = 8  # runs of more ops than this between two markers are drawn as one box


def load(text):
    """(ops, markers) of a Chrome trace; times in ms, rows as (device, stream)."""
    ops, markers = [], []
    for e in json.loads(text)["traceEvents"]:
        if e.get("pid") == HOST or e.get("tid", 0) >= RAN_TRACK:
            continue
        row = (e.get("pid"), e.get("tid"))
        if e.get("ph") == "X":
            ops.append({"row": row, "tower": e["args"]["tower"], "step": e["args"]["step"],
                        "name": e["name"], "start": e["ts"] / 1000.0,
                        "end": (e["ts"] + e["dur"]) / 1000.0})
        elif e.get("ph") == "i" and e["name"] in (RECORD, WAIT):
            args = e["args"]
            at = e["ts"] / 1000.0
            markers.append({"row": row, "tower": args["tower"], "step": args["step"],
                            "kind": "record" if e["name"] == RECORD else "wait",
                            "key": (args["event"], args["record"]), "event": args["event"],
                            "at": at, "from": at - args.get("waited_us", 0) / 1000.0})
    return ops, markers


def pick_step(ops, step=None):
    """The step drawn: `step`, or the last one that has a next step (whose start it shows)."""
    steps = sorted({op["step"] for op in ops if op["step"] >= 0})
    if not steps:
        raise ValueError("the trace has no ops tagged with a step")
    if step is None:
        return steps[-2] if len(steps) > 1 else steps[-1]
    if step not in steps:
        raise ValueError(f"step {step} is not in the trace (it has steps {steps})")
    return step


def arrows(markers, step):
    """[(record, wait)] for the waits of `step` whose record is in `step` too."""
    records = {m["key"]: m for m in markers if m["kind"] == "record" and m["step"] == step}
    return [(records[m["key"]], m) for m in markers
            if m["kind"] == "wait" and m["step"] == step and m["key"] in records]


def row_order(rows, ops):
    """Towers' streams first, by tower; then streams of no tower (device 0's meeting)."""
    def tower_of(row):
        towers = {op["tower"] for op in ops if op["row"] == row and op["tower"] >= 0}
        return min(towers) if towers else -1
    return sorted(rows, key=lambda r: (tower_of(r) < 0, tower_of(r), r)), tower_of


def row_label(row, tower, ops):
    """A tower's stream by its tower; another by what its ops do, as the timelines do."""
    device, stream = row
    if tower >= 0:
        return f"tower {tower}'s stream (device {device})"
    mine = [dict(op, device=device) for op in ops if op["row"] == row]
    if not mine:
        return f"device {device}: stream {stream}"
    return towers_timeline.row_name(device, stream, mine) + " (no tower)"


class Axis:
    """Maps times to x: each gap between consecutive distinct times gets a width that
    grows as its length to the POWER (and at least MIN_GAP), scaled to `width` in all."""

    def __init__(self, times, x0, width):
        self.times = sorted(set(round(t, 3) for t in times))
        gaps = [MIN_GAP + (b - a) ** POWER for a, b in zip(self.times, self.times[1:])]
        scale = width / sum(gaps) if gaps else 1.0
        self.xs = [x0]
        for gap in gaps:
            self.xs.append(self.xs[-1] + gap * scale)

    def __call__(self, t):
        times, xs = self.times, self.xs
        if t <= times[0]:
            return xs[0]
        for i in range(1, len(times)):
            if t <= times[i]:
                a, b = times[i - 1], times[i]
                return xs[i - 1] + (xs[i] - xs[i - 1]) * ((t - a) / (b - a) if b > a else 1)
        return xs[-1]


def boxes(row_ops, row_marks):
    """The row's ops cut at its markers: [[op, ...]], each list one run between markers."""
    cuts = sorted(m["at"] for m in row_marks)
    runs, current, next_cut = [], [], 0
    for op in sorted(row_ops, key=lambda o: o["start"]):
        crossed = False
        while next_cut < len(cuts) and cuts[next_cut] <= op["start"]:
            next_cut, crossed = next_cut + 1, True
        if crossed and current:
            runs.append(current)
            current = []
        current.append(op)
    if current:
        runs.append(current)
    out = []
    for run in runs:  # long runs are one box, short ones op by op
        out.extend([run] if len(run) > GROUP else [[op] for op in run])
    return out


def fill_of(tower):
    return TOWER_COLORS[tower % len(TOWER_COLORS)] if tower >= 0 else "#7f7f7f"


def events_figure(text, step=None):
    """The SVG of one step's streams, ops, records, waits and the arrows between them."""
    ops, markers = load(text)
    step = pick_step(ops, step)
    shown_ops = [op for op in ops if op["step"] == step]
    shown_marks = [m for m in markers if m["step"] == step]
    pairs = arrows(markers, step)
    rows, tower_of = row_order({op["row"] for op in shown_ops} |
                               {m["row"] for m in shown_marks}, ops)
    # The next step's first op on each row: where the waits on the last record lead.
    following = {}
    for op in ops:
        if op["step"] == step + 1 and op["row"] in rows:
            if op["row"] not in following or op["start"] < following[op["row"]]["start"]:
                following[op["row"]] = op
    # The boxes of each row; only their ends, the markers and the next step's start take
    # room on the axis (not the boundaries inside a box of many ops).
    runs = {row: boxes([op for op in shown_ops if op["row"] == row],
                       [m for m in shown_marks if m["row"] == row]) for row in rows}
    times = [t for row in rows for run in runs[row]
             for t in (run[0]["start"], max(op["end"] for op in run))]
    times += [t for m in shown_marks for t in (m["at"], m["from"])]
    times += [op["start"] for op in following.values()]
    if not times:
        raise ValueError(f"step {step} has no ops")
    t0 = min(times)
    stub = 70.0 if following else 0.0
    x = Axis(times, LABEL_W, PLOT_W - stub)
    y_of = {row: TOP + 30 + i * ROW_H for i, row in enumerate(rows)}
    out = []
    for row in rows:
        y = y_of[row]
        tower = tower_of(row)
        out.append(f'<text x="4" y="{y + 4}" font-size="12">{escape(row_label(row, tower, ops))}</text>')
        out.append(f'<line x1="{LABEL_W}" x2="{LABEL_W + PLOT_W}" y1="{y}" y2="{y}" '
                   f'stroke="#dddddd"/>')
        row_marks = [m for m in shown_marks if m["row"] == row]
        below = [0.0, 0.0, 0.0]  # where each line of labels under the boxes ends
        for run in runs[row]:
            start, end = run[0]["start"], max(op["end"] for op in run)
            x0, x1 = x(start), max(x(end), x(start) + 1.5)
            ms = sum(op["end"] - op["start"] for op in run)
            if len(run) == 1:
                label, tip = run[0]["name"], f'{run[0]["name"]} · {ms:.2f} ms'
            else:
                label = f"{len(run)} ops · {ms:.1f} ms"
                tip = (f"{len(run)} ops, {run[0]['name']} … {run[-1]['name']} · "
                       f"{end - start:.2f} ms")
            tip += f" · tower {run[0]['tower']} · step {step}"
            out.append(f'<rect class="towers-op" x="{x0:.1f}" y="{y - 9}" '
                       f'width="{x1 - x0:.1f}" height="18" fill="{fill_of(run[0]["tower"])}" '
                       f'stroke="#ffffff" stroke-width="0.5"><title>{escape(tip)}</title></rect>')
            if 6.2 * len(label) + 6 < x1 - x0:
                out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y + 4}" font-size="11" '
                           f'fill="#ffffff" text-anchor="middle">{escape(label)}</text>')
            else:  # under the box, on the first of three lines where it collides with nothing
                half = 2.6 * len(label)
                line = next((i for i, end in enumerate(below) if end < (x0 + x1) / 2 - half), 2)
                below[line] = (x0 + x1) / 2 + half + 4
                out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{y + 20 + 9 * line}" '
                           f'font-size="9" text-anchor="middle">{escape(label)}</text>')
        for m in row_marks:
            if m["kind"] == "wait" and m["at"] - m["from"] > 0.001:
                out.append(f'<line x1="{x(m["from"]):.1f}" x2="{x(m["at"]):.1f}" y1="{y}" '
                           f'y2="{y}" stroke="#444444" stroke-width="2" stroke-dasharray="2,3">'
                           f'<title>waits {m["at"] - m["from"]:.2f} ms for event '
                           f'{m["event"]}</title></line>')
        if row in following:
            nx = x(following[row]["start"])
            out.append(f'<rect x="{nx:.1f}" y="{y - 9}" width="{LABEL_W + PLOT_W - nx:.1f}" '
                       f'height="18" fill="{fill_of(tower)}" fill-opacity="0.35">'
                       f'<title>step {step + 1} starts: {escape(following[row]["name"])}'
                       f'</title></rect><text x="{nx + 4:.1f}" y="{y + 4}" font-size="11">'
                       f'step {step + 1} →</text>')
    for record, wait in pairs:
        x1, y1 = x(record["at"]), y_of[record["row"]]
        x2, y2 = x(wait["at"]), y_of[wait["row"]]
        bend = 24 + 0.25 * abs(y2 - y1)
        color = fill_of(tower_of(record["row"]))
        tip = (f"event {record['event']}: recorded by {row_label(record['row'], tower_of(record['row']), ops)} "
               f"at {record['at'] - t0:.2f} ms; {row_label(wait['row'], tower_of(wait['row']), ops)} "
               f"waited for it and went on at {wait['at'] - t0:.2f} ms")
        out.append(f'<path class="towers-arrow" data-event="{record["event"]}" '
                   f'data-from-tower="{tower_of(record["row"])}" '
                   f'data-to-tower="{tower_of(wait["row"])}" '
                   f'd="M{x1:.1f},{y1:.1f} C{x1 + bend:.1f},{y1:.1f} {x2 - bend:.1f},{y2:.1f} '
                   f'{x2 - 4:.1f},{y2:.1f}" fill="none" stroke="{color}" stroke-width="1.6" '
                   f'marker-end="url(#towers-arrowhead)"><title>{escape(tip)}</title></path>')
    for m in shown_marks:
        mx, my = x(m["at"]), y_of[m["row"]]
        if m["kind"] == "record":
            out.append(f'<circle class="towers-record" cx="{mx:.1f}" cy="{my}" r="4.5" '
                       f'fill="#000000"><title>records event {m["event"]} at '
                       f'{m["at"] - t0:.2f} ms</title></circle>')
        else:
            out.append(f'<circle class="towers-wait" cx="{mx:.1f}" cy="{my}" r="4.5" '
                       f'fill="#ffffff" stroke="#000000" stroke-width="1.5"><title>waits for '
                       f'event {m["event"]}; goes on at {m["at"] - t0:.2f} ms</title></circle>')
    bottom = TOP + 30 + len(rows) * ROW_H - 6
    t_end = max(times)
    out.append(f'<text x="{LABEL_W}" y="{bottom + 4}" font-size="11">0 ms</text>'
               f'<text x="{LABEL_W + PLOT_W}" y="{bottom + 4}" font-size="11" '
               f'text-anchor="end">{t_end - t0:.1f} ms (not to scale: a gap of t ms is drawn '
               f'as wide as t^0.4)</text>')
    legend_y = bottom + 22
    legend = (
        f'<circle cx="{LABEL_W + 6}" cy="{legend_y}" r="4.5" fill="#000000"/>'
        f'<text x="{LABEL_W + 16}" y="{legend_y + 4}" font-size="11">record (the stream '
        f'got here)</text>'
        f'<circle cx="{LABEL_W + 196}" cy="{legend_y}" r="4.5" fill="#ffffff" '
        f'stroke="#000000" stroke-width="1.5"/>'
        f'<text x="{LABEL_W + 206}" y="{legend_y + 4}" font-size="11">wait (goes on here)'
        f'</text>'
        f'<line x1="{LABEL_W + 356}" x2="{LABEL_W + 386}" y1="{legend_y}" y2="{legend_y}" '
        f'stroke="#444444" stroke-width="2" stroke-dasharray="2,3"/>'
        f'<text x="{LABEL_W + 392}" y="{legend_y + 4}" font-size="11">stream blocked</text>'
        f'<path d="M{LABEL_W + 500},{legend_y} L{LABEL_W + 530},{legend_y}" '
        f'stroke="#555555" stroke-width="1.6" marker-end="url(#towers-arrowhead)"/>'
        f'<text x="{LABEL_W + 538}" y="{legend_y + 4}" font-size="11">same event: '
        f'record → wait</text>'
        f'<text x="4" y="{legend_y + 22}" font-size="11">Boxes: ops, coloured by tower '
        f'(grey: no tower); a box of "N ops" is a run of ops between two events. Step '
        f'{step} of the run; point at anything for its times.</text>')
    height = legend_y + 34
    width = LABEL_W + PLOT_W + 10
    defs = ('<defs><marker id="towers-arrowhead" viewBox="0 0 10 10" refX="9" refY="5" '
            'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
            '<path d="M0,0 L10,5 L0,10 z" fill="#333333"/></marker></defs>')
    title = (f'<text x="4" y="18" font-weight="bold" font-size="13">Step {step}: who records '
             f'and who waits ({len(pairs)} record → wait pairs)</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="towers-events" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
            f'font-family="sans-serif" role="img">\n{defs}\n{title}\n' + "\n".join(out)
            + legend + "\n</svg>\n")
