#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws bench_overlap's table as an SVG bar chart, measurement beside the analytic model.

    bench/plot_overlap.py RESULTS [RESULTS ...] --svg OUT.svg
    bench/plot_overlap.py RESULTS [RESULTS ...] --svg OUT.svg --check   # exit 1 if OUT differs

RESULTS is bench_overlap's output, or a page of bench/results/ that quotes it: every line
with the ten columns of its table (Gb/s, buckets, comm(ms), off(ms), on(ms), saved,
hidden, expect, on/expect, same loss) is a row; the header and other lines are skipped. A
(link, buckets) pair seen twice keeps its last row. Per link one group of bars: overlap
off, then overlap on for each bucket count, each with a tick at `expect`, the analytic
expectation max(C, A) + A × last/total (see bench/overlap_bench.cpp). Nothing is measured
here, and nothing but the table is read: the SVG is the same for the same rows.
"""
import argparse
import re

from svg_chart import (NUMBER, chart_arguments, fail, frame, nice_step, number, read_lines,
                       regenerate_command, write_or_check, y_axis)

PROGRAM = "plot_overlap"
ROW = re.compile(rf"^\s*({NUMBER})\s+([0-9]+)\s+({NUMBER})\s+({NUMBER})\s+({NUMBER})\s+"
                 rf"({NUMBER})%\s+({NUMBER})\s+({NUMBER})\s+({NUMBER})\s+(yes|NO|no)\s*$")
COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]  # on: per bucket count
OFF_COLOR = "#b0b0b0"


def read_rows(paths):
    """{(link, buckets): row} from every table line of the files, in file order. The
    columns drawn must be finite (a one-line error names the file, line and column); the
    hidden share and on/expect are not drawn, so inf or nan there is read as it is."""
    rows = {}
    for path in paths:
        for lineno, line in enumerate(read_lines(PROGRAM, path), start=1):
            m = ROW.match(line)
            if not m:
                continue
            link, buckets, comm, off, on, saved, hidden, expect, ratio, same = m.groups()
            where = f"{path}:{lineno}"
            value = {name: number(PROGRAM, text, name, where) for name, text in
                     (("Gb/s", link), ("comm(ms)", comm), ("off(ms)", off), ("on(ms)", on),
                      ("saved", saved), ("expect", expect))}
            rows[(value["Gb/s"], int(buckets))] = {
                "link": value["Gb/s"], "buckets": int(buckets), "comm": value["comm(ms)"],
                "off": value["off(ms)"], "on": value["on(ms)"], "saved": value["saved"],
                "expect": value["expect"], "same": same}
    if not rows:
        fail(PROGRAM, "no bench_overlap table rows in " + ", ".join(map(str, paths)) +
             "; give bench_overlap's output or a results page that quotes its table")
    return rows


def link_label(link):
    return "unlimited" if link == 0 else f"{link:g} Gb/s"


def saved_text(saved):
    """'+14%', '-8%', '0%' (never '-0%')."""
    rounded = round(saved)
    return f"{rounded:+d}%" if rounded else "0%"


def svg(rows, title):
    # Links from fastest (unlimited first) to slowest; bucket counts from most to one.
    links = sorted({r["link"] for r in rows.values()}, key=lambda g: (g != 0, -g))
    counts = sorted({r["buckets"] for r in rows.values()}, reverse=True)
    color = {n: COLORS[i % len(COLORS)] for i, n in enumerate(counts)}
    bars_per_group = 1 + len(counts)
    bar, gap = 30, 36
    left, right, top, bottom = 64, 20, 64, 84
    group_w = bars_per_group * bar
    width = left + right + len(links) * group_w + (len(links) + 1) * gap
    height = 420
    plot_h = height - top - bottom
    highest = max(max(r["off"], r["on"], r["expect"]) for r in rows.values())
    step = nice_step(highest * 1.08)
    y_max = step * (int(highest * 1.08 / step) + 1)

    def y(ms):
        return top + plot_h * (1 - ms / y_max)

    out = frame(width, height, left, title, [
        "bars: measured step_ms (mean step, first excluded); black ticks: the analytic "
        "expectation,",
        "off = C + A, on = max(C, A) + A × the last bucket's share of the gradients "
        "(A: off's exposed all-reduce time)"])
    out += y_axis(y, y_max, step, left, width - right, top, plot_h, "step (ms)")
    for g, link in enumerate(links):
        x0 = left + gap + g * (group_w + gap)
        comm = next(r["comm"] for r in rows.values() if r["link"] == link)
        off = next(r["off"] for r in rows.values() if r["link"] == link)
        bars = [("off", off, off, OFF_COLOR, None)]
        for n in counts:
            r = rows.get((link, n))
            if r:
                bars.append((f"{n} bucket{'s' if n > 1 else ''}", r["on"], r["expect"], color[n],
                             r["saved"]))
        for b, (name, measured, expect, fill, saved) in enumerate(bars):
            x = x0 + b * bar
            tip = f"{link_label(link)}, {'overlap off' if saved is None else 'on, ' + name}: " \
                  f"{measured:g} ms measured, {expect:g} ms expected"
            out.append(f'<rect x="{x + 2}" y="{y(measured):.1f}" width="{bar - 4}" '
                       f'height="{y(0) - y(measured):.1f}" fill="{fill}">'
                       f'<title>{tip}</title></rect>')
            out.append(f'<line x1="{x}" x2="{x + bar}" y1="{y(expect):.1f}" y2="{y(expect):.1f}" '
                       f'stroke="black" stroke-width="2"/>')
            if saved is not None:
                out.append(f'<text x="{x + bar / 2:.1f}" y="{min(y(measured), y(expect)) - 4:.1f}" '
                           f'text-anchor="middle" font-size="9">{saved_text(saved)}</text>')
        center = x0 + group_w / 2
        out.append(f'<text x="{center:.1f}" y="{y(0) + 16:.1f}" text-anchor="middle">'
                   f'{link_label(link)}</text>')
        out.append(f'<text x="{center:.1f}" y="{y(0) + 30:.1f}" text-anchor="middle" '
                   f'fill="#444">A = {comm:g} ms</text>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(0):.1f}" y2="{y(0):.1f}" '
               f'stroke="black"/>')
    legend = [("overlap off", OFF_COLOR)] + [
        (f"on, {n} bucket{'s' if n > 1 else ''}", color[n]) for n in counts]
    lx = left
    for name, fill in legend:
        out.append(f'<rect x="{lx}" y="{height - 30}" width="12" height="12" fill="{fill}"/>')
        out.append(f'<text x="{lx + 16}" y="{height - 20}">{name}</text>')
        lx += 28 + 7 * len(name)
    out.append(f'<line x1="{lx}" x2="{lx + 16}" y1="{height - 24}" y2="{height - 24}" '
               f'stroke="black" stroke-width="2"/>')
    out.append(f'<text x="{lx + 20}" y="{height - 20}">expected</text>')
    out.append(f'<text x="{left}" y="{height - 6}" fill="#444" font-size="9">above the bars: '
               f'step saved by overlap, measured; A: one all-reduce with nothing beside it</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="bench_overlap output or a results page")
    chart_arguments(parser, "bench_overlap: step time, overlap off and on, 2 simulated devices")
    args = parser.parse_args()
    text = svg(read_rows(args.results), args.title)
    write_or_check(PROGRAM, args.svg, text, args.check,
                   regenerate_command(["bench/plot_overlap.py", *args.results, "--svg", args.svg]))


if __name__ == "__main__":
    main()
