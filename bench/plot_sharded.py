#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws bench_sharded's memory columns as an SVG: bytes per device against N, per ZeRO stage.

    bench/plot_sharded.py RESULTS --svg OUT.svg
    bench/plot_sharded.py RESULTS --svg OUT.svg --check   # exit 1 if OUT differs

RESULTS is bench_sharded's output, or a page of bench/results/ that quotes it: every line
with its fourteen columns (optimizer, zero, N, Gb/s, step, ring, state, model, formula,
activ., total, wire, hidden, same) is a row; other lines are skipped. One optimizer (the
first seen) and one link speed (the fastest: memory does not depend on the link) are
drawn. Per stage a line of `model` (parameters + gradients + optimizer state, the
largest device's peak) with a ring at `formula`, ZeRO's closed form; the activations as
one dashed line, the same for every stage. Nothing is measured here: the SVG is the same
for the same rows.
"""
import argparse
import math
import re

from svg_chart import (NUMBER, chart_arguments, fail, frame, number, read_lines, regenerate_command,
                       write_or_check, y_axis)

PROGRAM = "plot_sharded"
ROW = re.compile(rf"^\s*(\w+)\s+([0-3])\s+([0-9]+)\s+({NUMBER})" + rf"\s+({NUMBER})" * 8
                 + r"\s+(" + NUMBER + r"|-)\s+(yes|NO|no)\s*$")
# One colour per stage; the activations grey (they are not what sharding divides).
STAGE_COLORS = ["#b0b0b0", "#1f77b4", "#2ca02c", "#9467bd"]
ACTIVATION_COLOR = "#d62728"


def read_rows(path):
    """{(zero, N): {"model", "formula", "activations"}} for the first optimizer, fastest link.
    bench_sharded writes an unlimited link as "inf" Gb/s: the fastest there is. The columns
    drawn must be finite, N at least 1 (the x axis is log2 N); a one-line error names the
    file, line and column otherwise."""
    found = []
    for lineno, line in enumerate(read_lines(PROGRAM, path), start=1):
        m = ROW.match(line)
        if m:
            g = m.groups()
            where = f"{path}:{lineno}"
            if int(g[2]) < 1:
                fail(PROGRAM, f"{where}: N is {g[2]}; a row needs at least one device")
            found.append({"optimizer": g[0], "zero": int(g[1]), "n": int(g[2]),
                          "link": number(PROGRAM, g[3], "Gb/s", where, allow_inf=True),
                          "model": number(PROGRAM, g[7], "model", where),
                          "formula": number(PROGRAM, g[8], "formula", where),
                          "activations": number(PROGRAM, g[9], "activ.", where)})
    if not found:
        fail(PROGRAM, f"no bench_sharded table rows in {path}; give bench_sharded's output or a "
                      "results page that quotes its table")
    optimizer = found[0]["optimizer"]
    link = max(r["link"] for r in found if r["optimizer"] == optimizer)
    return {(r["zero"], r["n"]): r for r in found
            if r["optimizer"] == optimizer and r["link"] == link}, optimizer


def svg(rows, optimizer, title):
    stages = sorted({z for z, _ in rows})
    ns = sorted({n for _, n in rows})
    width, height = 600, 380
    left, right, top, bottom = 64, 180, 56, 52
    plot_w, plot_h = width - left - right, height - top - bottom
    highest = max(max(r["model"], r["formula"], r["activations"]) for r in rows.values())
    step = 5.0 if highest <= 40 else 10.0
    y_max = step * (math.floor(highest * 1.1 / step) + 1)

    def x(n):
        span = math.log2(ns[-1]) - math.log2(ns[0]) or 1
        return left + plot_w * (math.log2(n) - math.log2(ns[0])) / span

    def y(mb):
        return top + plot_h * (1 - mb / y_max)

    out = frame(width, height, left, title, [
        f"lines: parameters + gradients + optimizer state ({optimizer}), largest device's peak;",
        "rings: ZeRO's formula; dashed: activations (not sharded)"])
    out += y_axis(y, y_max, step, left, left + plot_w, top, plot_h, "MB per device")
    for n in ns:
        out.append(f'<text x="{x(n):.1f}" y="{y(0) + 16:.1f}" text-anchor="middle">{n}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{y(0) + 34:.1f}" text-anchor="middle">'
               f'N, towers (one per device)</text>')
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(0):.1f}" y2="{y(0):.1f}" '
               f'stroke="black"/>')
    activations = [(n, rows[(stages[0], n)]["activations"]) for n in ns if (stages[0], n) in rows]
    points = " ".join(f"{x(n):.1f},{y(mb):.1f}" for n, mb in activations)
    out.append(f'<polyline points="{points}" fill="none" stroke="{ACTIVATION_COLOR}" '
               f'stroke-width="2" stroke-dasharray="6 4"/>')
    legend = []
    for z in stages:
        color = STAGE_COLORS[z % len(STAGE_COLORS)]
        line = [(n, rows[(z, n)]) for n in ns if (z, n) in rows]
        points = " ".join(f"{x(n):.1f},{y(r['model']):.1f}" for n, r in line)
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>')
        for n, r in line:
            tip = f"ZeRO-{z}, N = {n}: {r['model']:g} MB measured, {r['formula']:g} MB formula"
            out.append(f'<circle cx="{x(n):.1f}" cy="{y(r["formula"]):.1f}" r="4" fill="none" '
                       f'stroke="black"><title>{tip}</title></circle>')
        legend.append((f"ZeRO-{z}" if z else "ZeRO-0 (chapter 4)", color, False))
    legend.append(("activations", ACTIVATION_COLOR, True))
    for i, (name, color, dashed) in enumerate(legend):
        ly = top + 10 + 18 * i
        lx = left + plot_w + 16
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        out.append(f'<line x1="{lx}" x2="{lx + 22}" y1="{ly}" y2="{ly}" stroke="{color}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 28}" y="{ly + 4}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="bench_sharded output or a results page quoting it")
    chart_arguments(parser, "bench_sharded: memory per device against N, per ZeRO stage")
    args = parser.parse_args()
    rows, optimizer = read_rows(args.results)
    text = svg(rows, optimizer, args.title)
    write_or_check(PROGRAM, args.svg, text, args.check,
                   regenerate_command(["bench/plot_sharded.py", args.results, "--svg", args.svg]))


if __name__ == "__main__":
    main()
