# SPDX-License-Identifier: MIT
"""Shows what this build's programs printed, with where it came from.

docs/CMakeLists.txt runs each program listed there (towers_docs_output) on the host
backend and writes, into ``towers_generated_dir``:

    NAME.txt    its stdout          NAME.svg    its --trace-svg timeline
    NAME.json   its --trace         NAME.stamp  key=value lines: command, run_id,
                                                commit, time, SHA-256 of each file

A page shows them with these directives::

    ```{towers-output} 00_streams
    ```
    ```{towers-summary} 02_serial_towers 03_stream_towers
    :keys: max_concurrent_towers overlap step_ms
    ```
    ```{towers-timeline} 00_streams
    The caption.
    ```

and with those of towers_figures.py (towers-steps, towers-ring, towers-events: figures
drawn from the runs), towers_pages.py (towers-compare, towers-gpu-runs, towers-gpu-chapters, towers-layers: tables across
sources) and
towers_experiment.py (towers-experiment: runs that change one factor per row).

Each one names the run (its ``run_id``) under what it shows, so a reader can tell the
build it came from and tests/docs/check_fresh.cmake can check that the HTML shows the
current run. A missing file is an error, and sphinx-build -W fails: the docs never show
output that this build did not produce.
"""
import os
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective



def read_stamp(path):
    stamp = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            stamp[key] = value
    return stamp


# The smallest text a figure may show, in CSS px. A figure scales to its column; on a
# phone's 412 px a 990-unit-wide timeline would print its 11-unit labels at 4.6 px. So a
# figure is never narrower than the width at which its smallest text is this size: on a
# narrow screen it scrolls sideways inside its own box (towers.css) instead of shrinking.
MIN_TEXT_PX = 8.0


def readable_svg(svg):
    """The inline `svg` in a sideways-scrolling box, with a min-width that keeps its
    smallest text at MIN_TEXT_PX or more (tests/docs/browser_test.py checks it)."""
    head = re.search(r"<svg\b[^>]*>", svg)
    if not head:
        return svg
    box = re.search(r'viewBox="[-0-9.]+ [-0-9.]+ ([0-9.]+) [0-9.]+"', head.group(0))
    width = re.search(r'\bwidth="([0-9.]+)"', head.group(0))
    native = float(box.group(1) if box else width.group(1) if width else 0)
    sizes = [float(v) for v in re.findall(r'font-size="([0-9.]+)"', svg)]
    if native > 0 and sizes:
        min_width = native * MIN_TEXT_PX / min(sizes)
        svg = svg.replace("<svg ", f'<svg style="min-width: {min_width:.0f}px" ', 1)
    return f'<div class="towers-figure-scroll">{svg}</div>'


def svg_figure(directive, svg):
    """A figure of the inline `svg`, captioned by the directive's content if it has any."""
    figure = nodes.figure(classes=["towers-figure"])
    figure += nodes.raw("", readable_svg(svg), format="html")
    if directive.content:
        caption = nodes.caption()
        parsed, _ = directive.state.inline_text(" ".join(directive.content), directive.lineno)
        caption += parsed
        figure += caption
    return figure


class GeneratedDirective(SphinxDirective):
    """Common part: find NAME's files and note them as dependencies of the page."""

    required_arguments = 1

    def generated(self, suffix):
        directory = Path(self.config.towers_generated_dir)
        path = directory / (self.arguments[0] + suffix)
        if not path.is_file():
            raise self.error(
                f"{path} does not exist: the docs show only output of this build. Build "
                f"them with `cmake --build build --target docs`, and list the program in "
                f"docs/CMakeLists.txt with towers_docs_output({self.arguments[0]} ...).")
        self.env.note_dependency(str(path))
        return path

    def summaries(self, name):
        """NAME's `summary: key=value ...` lines as dicts, in order (every program ends
        with at least one; the keys are documented in its chapter's README)."""
        self.arguments = [name]
        lines = [line for line in self.generated(".txt").read_text().splitlines()
                 if line.startswith("summary: ")]
        if not lines:
            raise self.error(f"{name}.txt has no `summary:` line")
        return [dict(pair.split("=", 1) for pair in line.split()[1:] if "=" in pair)
                for line in lines]

    def trace_downloads(self, names):
        """Links that download the runs' Chrome traces, the files this figure was drawn
        from, to open in Perfetto: the reader can zoom into any op the figure shows."""
        para = nodes.paragraph(classes=["towers-trace-download"])
        para += nodes.Text("The trace" + ("s" if len(names) > 1 else "") + " to open in "
                           "Perfetto (ui.perfetto.dev, Open trace file): ")
        for i, name in enumerate(names):
            self.arguments = [name]
            path = self.generated(".json")
            # A target starting with / is relative to the docs' source folder (Sphinx's
            # download role); the build copies the file into the HTML's _downloads.
            target = "/" + os.path.relpath(path, self.env.srcdir)
            link = addnodes.download_reference("", "", reftarget=target, refexplicit=True,
                                               refdoc=self.env.docname)
            link += nodes.literal(text=f"{name}.json")
            para += nodes.Text(", " if i else "")
            para += link
        para += nodes.Text(".")
        return para

    def provenance(self):
        """Where the output came from; in full the first time a page shows a run."""
        stamp = read_stamp(self.generated(".stamp"))
        para = nodes.paragraph(classes=["towers-provenance"])
        shown = self.state.document.__dict__.setdefault("towers_runs_shown", set())
        if stamp.get("run_id") in shown:
            para += nodes.Text("The same run (id ")
            para += nodes.literal(text=stamp.get("run_id", "?"))
            para += nodes.Text(").")
            return para
        shown.add(stamp.get("run_id"))
        para += nodes.Text("Printed by ")
        para += nodes.literal(text=stamp.get("command", "?"))
        para += nodes.Text(" in the build of these docs (commit "
                           f"{stamp.get('commit', '?')}, {stamp.get('time', '?')}; run id ")
        para += nodes.literal(text=stamp.get("run_id", "?"))
        para += nodes.Text(").")
        return para


class OutputDirective(GeneratedDirective):
    """The program's stdout, verbatim."""

    def run(self):
        text = self.generated(".txt").read_text()
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block, self.provenance()]


KEY_ROW = re.compile(r"^\|\s*(`[a-z<][a-z0-9_<>]*`(?:\s*,\s*`[a-z<][a-z0-9_<>]*`)*)\s*\|(.*)\|\s*$")
KEY_NAME = re.compile(r"`([a-z<][a-z0-9_<>]*)`")
CELL_BORDER = re.compile(r"(?<!\\)\|")  # a table's `|`, not an escaped `\|` inside a cell


def key_meanings(source_dir, first, keys=()):
    """Each summary key's meaning, from the key tables of the chapter READMEs.

    A chapter README defines its keys in rows ``| `key` | meaning |``, or several keys of
    one meaning ``| `a`, `b` | meaning |``, where ``<word>`` in a key stands for any part
    of a name (``plan_<category>_bytes``: ``plan_parameters_bytes``, ...; resolved for the
    names in ``keys``). The chapter whose folder ``first`` (a run's name, e.g.
    ``11_mesh_4x2x1``) starts with wins, then the others in order (later chapters say "as
    in chapter 2").
    """
    meanings = {}
    readmes = sorted(Path(source_dir, "chapters").glob("*/README.md"))
    readmes.sort(key=lambda path: not first.startswith(path.parent.name))
    for readme in readmes:
        patterns = []  # (pattern, meaning): after the README's own names, which they cover
        for line in readme.read_text().splitlines():
            match = KEY_ROW.match(line)
            if not match:
                continue
            # The last cell; `\|` is a `|` of the text (GitHub's escape in tables).
            cell = CELL_BORDER.split(match.group(2))[-1]
            meaning = cell.replace("\\|", "|").strip()
            for name in KEY_NAME.findall(match.group(1)):
                if "<" in name:
                    patterns.append((re.sub(r"<[a-z_]+>", "[a-z0-9_]+", name), meaning))
                else:
                    meanings.setdefault(name, meaning)
        for pattern, meaning in patterns:
            for key in keys:
                if re.fullmatch(pattern, key):
                    meanings.setdefault(key, meaning)
    return meanings


class SummaryDirective(GeneratedDirective):
    """The runs' `summary:` lines as one table, transposed so it always fits the page:
    one row per key, one column per summary line (a run, or a mode of a run), and the
    key's meaning from the chapter README. ``:keys:`` limits the rows to the keys the page
    discusses, in that order.

        ```{towers-summary} 02_serial_towers 03_stream_towers
        :keys: max_concurrent_ranks/max_concurrent_towers overlap step_ms
        ```

    A ``a/b`` row shows, in each column, the first of the keys that its line has.
    """

    optional_arguments = 8
    option_spec = {"keys": directives.unchanged}

    def run(self):
        columns = []  # (label, {key: value})
        names = self.arguments
        for name in names:
            for row in self.summaries(name):
                label = "chapter " + name.split("_")[0].lstrip("0").rjust(1, "0")
                if "mode" in row:
                    label += f", {row['mode']}"
                if "overlap_mode" in row:
                    label += f", overlap {row['overlap_mode']}"
                if "mesh" in row:  # chapter 11: one run per mesh shape, dp x tp x pp
                    label += f", mesh {row['mesh']}"
                elif "schedule" in row:  # chapter 9: one run per pipeline schedule
                    label += f", {row['schedule']}"
                columns.append((label, row))
        # Runs of one chapter and mode (chapter 10 on 2 and 4 devices) are told apart by
        # their devices and batch.
        labels = [label for label, _ in columns]
        columns = [(label + (f", {row.get('devices', '?')} devices, batch "
                             f"{row.get('batch_size', '?')}" if labels.count(label) > 1 else ""),
                    row) for label, row in columns]
        # A row is one key, or alternatives "a/b": in each column the first of them that
        # the column's summary has (chapter 5 counts ranks, max_concurrent_ranks, where
        # the others count towers).
        rows = []
        if "keys" in self.options:
            rows = [token.split("/") for token in self.options["keys"].split()]
            for alternatives in rows:
                if not any(k in row for k in alternatives for _, row in columns):
                    raise self.error(f"key `{'/'.join(alternatives)}` is in no summary line "
                                     f"of {' '.join(names)}")
        else:
            for _, row in columns:
                rows += [[k] for k in row if [k] not in rows]
        meanings = key_meanings(self.config.towers_source_dir, names[-1],
                                [k for alternatives in rows for k in alternatives])
        missing = [k for alternatives in rows for k in alternatives if k not in meanings]
        if missing:
            raise self.error(f"summary key(s) {', '.join(missing)} defined in no chapter "
                             "README's key table (| `key` | meaning |)")
        table, body = self.table(["towers-summary"], [3] + [2] * len(columns) + [8],
                                 [nodes.Text("key")] + [nodes.Text(label) for label, _ in columns]
                                 + [nodes.Text("meaning")])
        for alternatives in rows:
            used = []  # the alternatives some column shows, in order
            values = []
            for _, row in columns:
                key = next((k for k in alternatives if k in row), None)
                values.append(nodes.Text(row[key] if key else "—"))
                if key and key not in used:
                    used.append(key)
            name = nodes.inline()
            for i, key in enumerate(used):
                name += nodes.Text(" or " if i else "")
                name += nodes.literal(text=key)
            text = meanings[used[0]] if len(used) == 1 else " ".join(
                f"`{key}`: {meanings[key]}." for key in used)
            meaning, _ = self.state.inline_text(text, self.lineno)
            body += self.row([name] + values + [meaning])
        result = [table]
        for name in names:
            self.arguments = [name]
            result.append(self.provenance())
        self.arguments = names
        return result

    @staticmethod
    def table(classes, widths, header):
        """A table with a column per width in `widths` and `header` (cells, as row() takes
        them) as its head; returns it and its body, for the rows."""
        table = nodes.table(classes=classes)
        group = nodes.tgroup(cols=len(widths))
        table += group
        for width in widths:
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += SummaryDirective.row(header)
        body = nodes.tbody()
        group += body
        return table, body

    @staticmethod
    def row(cells):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            para = nodes.paragraph()
            para += cell if isinstance(cell, nodes.Node) else cell
            entry += para
            row += entry
        return row


class TimelineDirective(GeneratedDirective):
    """The program's own --trace-svg timeline, inline in the page so that each bar's
    tooltip (its op, tower, step and duration) shows on hover; the content is the caption.
    """

    has_content = True
    option_spec = {"alt": directives.unchanged}

    def run(self):
        svg = self.generated(".svg").read_text()
        stamp = read_stamp(self.generated(".stamp"))
        size = re.search(r'<svg[^>]*?width="([0-9.]+)" height="([0-9.]+)"', svg)
        if not size:
            raise self.error(f"{self.arguments[0]}.svg has no width and height")
        # A viewBox lets the picture scale to the column; the trace's SHA-256 lets
        # tests/docs/check_fresh.cmake find this run in the HTML.
        attributes = (f'viewBox="0 0 {size.group(1)} {size.group(2)}" role="img" '
                      f'aria-label="{self.options.get("alt", "timeline")}" '
                      f'data-traces="{stamp.get("json_sha256", "?")}" ')
        svg = re.sub(r"^<\?xml[^>]*>\s*", "", svg).replace("<svg ", "<svg " + attributes, 1)
        return [svg_figure(self, svg), self.provenance(), self.trace_downloads(self.arguments)]


def setup(app):
    # Figures drawn from the runs, and tables across pages, live in their own modules.
    from towers_experiment import ExperimentDirective
    from towers_figures import (EventsDirective, MeshDirective, RingDirective, StepsDirective,
                                TensorDirective)
    from towers_pages import CompareDirective, GpuChaptersDirective, GpuRunsDirective, LayersDirective
    import towers_sources

    app.add_config_value("towers_generated_dir", "", "env")
    app.add_config_value("towers_source_dir", "", "env")
    directives = {"output": OutputDirective, "summary": SummaryDirective,
                  "steps": StepsDirective, "gpu-runs": GpuRunsDirective,
                  "layers": LayersDirective, "gpu-chapters": GpuChaptersDirective,
                  "compare": CompareDirective, "experiment": ExperimentDirective,
                  "ring": RingDirective, "events": EventsDirective, "tensor": TensorDirective,
                  "mesh": MeshDirective,
                  "timeline": TimelineDirective}
    for name, directive in directives.items():  # used in the pages as towers-NAME
        app.add_directive("towers-" + name, directive)
    towers_sources.setup(app)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
