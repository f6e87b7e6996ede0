# SPDX-License-Identifier: MIT
"""Shows what this build's programs printed, with where it came from.

docs/CMakeLists.txt runs each program listed there (towers_docs_output) on the host
backend and writes, into ``towers_generated_dir``:

    NAME.txt    its stdout          NAME.svg    its --trace-svg timeline
    NAME.stamp  key=value lines: command, run_id, commit, time, SHA-256 of the binary

A page shows them with three directives::

    ```{towers-output} 00_streams
    ```
    ```{towers-summary} 00_streams
    ```
    ```{towers-timeline} 00_streams
    The caption.
    ```

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
from sphinx.util.docutils import SphinxDirective

import towers_diagrams
import towers_timeline


def read_stamp(path):
    stamp = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            stamp[key] = value
    return stamp


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


KEY_ROW = re.compile(r"^\|\s*`([a-z][a-z0-9_]*)`\s*\|(.*)\|\s*$")


def key_meanings(source_dir, first):
    """Each summary key's meaning, from the key tables of the chapter READMEs.

    A chapter README defines its keys in rows ``| `key` | meaning |``; the chapter named
    ``first`` wins, then the others in order (later chapters say "as in chapter 2").
    """
    meanings = {}
    readmes = sorted(Path(source_dir, "chapters").glob("*/README.md"))
    readmes.sort(key=lambda path: path.parent.name != first)
    for readme in readmes:
        for line in readme.read_text().splitlines():
            match = KEY_ROW.match(line)
            if match:
                meaning = match.group(2).split("|")[-1].strip()
                meanings.setdefault(match.group(1), meaning)
    return meanings


class SummaryDirective(GeneratedDirective):
    """The runs' `summary:` lines as one table, transposed so it always fits the page:
    one row per key, one column per summary line (a run, or a mode of a run), and the
    key's meaning from the chapter README. ``:keys:`` limits the rows to the keys the page
    discusses, in that order.

        ```{towers-summary} 02_serial_towers 03_stream_towers
        :keys: max_concurrent_towers overlap step_ms
        ```
    """

    optional_arguments = 8
    option_spec = {"keys": directives.unchanged}

    def run(self):
        columns = []  # (label, {key: value})
        names = self.arguments
        for name in names:
            self.arguments = [name]
            lines = [line for line in self.generated(".txt").read_text().splitlines()
                     if line.startswith("summary: ")]
            if not lines:
                raise self.error(f"{name}.txt has no `summary:` line")
            for line in lines:
                row = dict(pair.split("=", 1) for pair in line.split()[1:] if "=" in pair)
                label = "chapter " + name.split("_")[0].lstrip("0").rjust(1, "0")
                if "mode" in row:
                    label += f", {row['mode']}"
                columns.append((label, row))
        keys = []
        if "keys" in self.options:
            keys = self.options["keys"].split()
            for key in keys:
                if not any(key in row for _, row in columns):
                    raise self.error(f"key `{key}` is in no summary line of {' '.join(names)}")
        else:
            for _, row in columns:
                keys += [k for k in row if k not in keys]
        meanings = key_meanings(self.config.towers_source_dir, names[-1])
        missing = [k for k in keys if k not in meanings]
        if missing:
            raise self.error(f"summary key(s) {', '.join(missing)} defined in no chapter "
                             "README's key table (| `key` | meaning |)")
        table = nodes.table(classes=["towers-summary"])
        group = nodes.tgroup(cols=len(columns) + 2)
        table += group
        group += nodes.colspec(colwidth=3)
        for _ in columns:
            group += nodes.colspec(colwidth=2)
        group += nodes.colspec(colwidth=8)
        head = nodes.thead()
        group += head
        head += self.row([nodes.Text("key")] + [nodes.Text(label) for label, _ in columns]
                         + [nodes.Text("meaning")])
        body = nodes.tbody()
        group += body
        for key in keys:
            meaning, _ = self.state.inline_text(meanings[key], self.lineno)
            body += self.row([nodes.literal(text=key)]
                             + [nodes.Text(row.get(key, "—")) for _, row in columns]
                             + [meaning])
        result = [table]
        for name in names:
            self.arguments = [name]
            result.append(self.provenance())
        self.arguments = names
        return result

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
        figure = nodes.figure(classes=["towers-figure"])
        figure += nodes.raw("", svg, format="html")
        if self.content:
            caption = nodes.caption()
            parsed, _ = self.state.inline_text(" ".join(self.content), self.lineno)
            caption += parsed
            figure += caption
        return [figure, self.provenance()]


class StepsDirective(GeneratedDirective):
    """The steps of one or more runs as one inline SVG figure on a shared time axis
    (towers_timeline.py), drawn from their Chrome traces; bars have tooltips.

        ```{towers-steps} 02_serial_towers 03_stream_towers
        :titles: chapter 2: the loop waits; chapter 3: the loop enqueues
        :zoom: ring
        The caption.
        ```
    """

    optional_arguments = 4
    has_content = True
    option_spec = {"titles": directives.unchanged, "zoom": directives.unchanged,
                   "zoom-through": directives.flag,
                   "first-step": directives.nonnegative_int}

    def run(self):
        names = list(self.arguments)
        titles = [t.strip() for t in self.options.get("titles", "").split(";") if t.strip()]
        if titles and len(titles) != len(names):
            raise self.error(f":titles: names {len(titles)} runs, the directive {len(names)}")
        runs, traces = [], []
        for i, name in enumerate(names):
            self.arguments = [name]
            ops = towers_timeline.load(self.generated(".json"))
            traces.append(read_stamp(self.generated(".stamp")).get("json_sha256", "?"))
            runs.append((titles[i] if titles else name, ops))
        try:
            svg = towers_timeline.figure(runs, self.options.get("first-step", 1),
                                         self.options.get("zoom"),
                                         "zoom-through" in self.options)
        except ValueError as error:
            raise self.error(str(error))
        figure = nodes.figure(classes=["towers-figure"])
        # The traces' SHA-256: tests/docs/check_fresh.cmake finds this build's runs here.
        svg = svg.replace("<svg ", f'<svg data-traces="{" ".join(traces)}" ', 1)
        figure += nodes.raw("", svg, format="html")
        if self.content:
            caption = nodes.caption()
            parsed, _ = self.state.inline_text(" ".join(self.content), self.lineno)
            caption += parsed
            figure += caption
        result = [figure]
        for name in names:
            self.arguments = [name]
            result.append(self.provenance())
        self.arguments = names
        return result


class CompareDirective(SummaryDirective):
    """The tutorial's comparison table: every chapter of scripts/tutorial.chapters that
    the docs build ran (towers_docs_output in docs/CMakeLists.txt), one column per
    summary line, one row per key of ``:keys:``. A chapter added to both lists appears
    here with no change to the page; one the docs build did not run is named below it.
    """

    required_arguments = 0
    optional_arguments = 0

    def run(self):
        listed = []
        chapters = Path(self.config.towers_source_dir, "scripts", "tutorial.chapters")
        self.env.note_dependency(str(chapters))
        for line in chapters.read_text().splitlines():
            name = line.split("|")[0].strip()
            if name and not name.startswith("#"):
                listed.append(name)
        generated = Path(self.config.towers_generated_dir)
        ran = [name for name in listed if (generated / f"{name}.txt").is_file()]
        if not ran:
            raise self.error(f"no chapter of {chapters} has output in {generated}")
        self.arguments = ran
        result = super().run()
        skipped = [name for name in listed if name not in ran]
        if skipped:
            para = nodes.paragraph()
            para += nodes.Text("In scripts/tutorial.chapters but not run by the docs build "
                               "(add it to docs/CMakeLists.txt with towers_docs_output): ")
            para += nodes.literal(text=", ".join(skipped))
            result.append(para)
        return result


class RingDirective(SphinxDirective):
    """The ring all-reduce step by step, drawn from the real ring's record
    (docs/tools/ring_schedule.cpp writes NAME.jsonl; towers_diagrams.ring_figure draws it).

        ```{towers-ring} ring4
        The caption.
        ```
    """

    required_arguments = 1
    has_content = True

    def run(self):
        path = Path(self.config.towers_generated_dir) / (self.arguments[0] + ".jsonl")
        if not path.is_file():
            raise self.error(f"{path} does not exist: build the docs target, which runs "
                             "docs_ring_schedule (docs/CMakeLists.txt)")
        self.env.note_dependency(str(path))
        figure = nodes.figure(classes=["towers-figure"])
        figure += nodes.raw("", towers_diagrams.ring_figure(path.read_text()), format="html")
        if self.content:
            caption = nodes.caption()
            parsed, _ = self.state.inline_text(" ".join(self.content), self.lineno)
            caption += parsed
            figure += caption
        return [figure]


class GpuRunsDirective(SphinxDirective):
    """Which code paths have run on a real GPU, read from bench/results/*.md.

    A GPU results page (its title starts with "# GPU check") lists what passed on the GPU
    in a table whose header is ``| area | tests |`` and what did not run under a heading
    "## Not run on a GPU". This directive puts every such page's rows in one table (with
    the page, its date and commit) and quotes each "not run" section, so the docs never
    claim more GPU coverage than bench/results/ records.
    """

    def run(self):
        results = Path(self.config.towers_source_dir, "bench", "results")
        table = nodes.table(classes=["towers-gpu-runs"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (3, 6, 3):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += SummaryDirective.row([nodes.Text(t) for t in ("path", "tests that passed on the GPU", "run")])
        body = nodes.tbody()
        group += body
        not_run = []
        pages = 0
        for page in sorted(results.glob("*.md")):
            lines = page.read_text().splitlines()
            if not lines or not lines[0].startswith("# GPU check"):
                continue
            pages += 1
            self.env.note_dependency(str(page))
            title = lines[0].lstrip("# ").strip()
            commit = re.search(r"commit `([0-9a-f]{6,40})`", "\n".join(lines))
            where = f"{title} (bench/results/{page.name}" + (
                f", commit {commit.group(1)})" if commit else ")")
            in_table, in_not_run = False, False
            for line in lines[1:]:
                if line.startswith("## "):
                    in_not_run = line.strip().lower() == "## not run on a gpu"
                    in_table = False
                    continue
                if in_not_run and line.strip():
                    not_run.append((where, line.strip()))
                if re.match(r"^\|\s*area\s*\|\s*tests\s*\|", line):
                    in_table = True
                    continue
                if in_table and line.startswith("|") and not line.startswith("|---"):
                    cells = [c.strip() for c in line.strip().strip("|").split("|")]
                    area, _ = self.state.inline_text(cells[0], self.lineno)
                    tests, _ = self.state.inline_text(cells[1], self.lineno)
                    body += SummaryDirective.row([area, tests, nodes.Text(where)])
                elif in_table and not line.startswith("|"):
                    in_table = False
        if not pages:
            raise self.error(f"no GPU results page (# GPU check ...) in {results}")
        result = [table]
        if not_run:
            block = nodes.block_quote()
            para = nodes.paragraph()
            para += nodes.strong(text="Not run on a GPU yet, as recorded there: ")
            for where, text in not_run:
                parsed, _ = self.state.inline_text(text + " ", self.lineno)
                para += parsed
            block += para
            result.append(block)
        return result


def setup(app):
    app.add_config_value("towers_generated_dir", "", "env")
    app.add_config_value("towers_source_dir", "", "env")
    app.add_directive("towers-output", OutputDirective)
    app.add_directive("towers-summary", SummaryDirective)
    app.add_directive("towers-steps", StepsDirective)
    app.add_directive("towers-gpu-runs", GpuRunsDirective)
    app.add_directive("towers-compare", CompareDirective)
    app.add_directive("towers-ring", RingDirective)
    app.add_directive("towers-timeline", TimelineDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
