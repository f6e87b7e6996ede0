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
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


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


class SummaryDirective(GeneratedDirective):
    """The program's `summary:` lines as a table, one row per line, one column per key."""

    def run(self):
        rows = []
        for line in self.generated(".txt").read_text().splitlines():
            if line.startswith("summary: "):
                rows.append(dict(pair.split("=", 1) for pair in line.split()[1:] if "=" in pair))
        if not rows:
            raise self.error(f"{self.arguments[0]}.txt has no `summary:` line")
        keys = []
        for row in rows:
            keys += [k for k in row if k not in keys]
        table = nodes.table(classes=["towers-summary"])
        group = nodes.tgroup(cols=len(keys))
        table += group
        for _ in keys:
            group += nodes.colspec(colwidth=1)
        head = nodes.thead()
        group += head
        head += self.row(keys)
        body = nodes.tbody()
        group += body
        for row in rows:
            body += self.row([row.get(k, "") for k in keys])
        return [table, self.provenance()]

    @staticmethod
    def row(cells):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += nodes.paragraph(text=cell)
            row += entry
        return row


class TimelineDirective(GeneratedDirective):
    """The program's SVG timeline as a figure; the directive's content is the caption."""

    has_content = True
    option_spec = {"alt": directives.unchanged}

    def run(self):
        svg = self.generated(".svg")
        # Image paths are relative to the page; the file lives in the build tree.
        page_dir = Path(self.env.srcdir) / Path(self.env.docname).parent
        uri = os.path.relpath(svg, page_dir).replace(os.sep, "/")
        figure = nodes.figure(classes=["towers-timeline"])
        figure += nodes.image(uri=uri, alt=self.options.get("alt", f"timeline of {svg.name}"))
        if self.content:
            caption = nodes.caption()
            text = " ".join(self.content)
            parsed, _ = self.state.inline_text(text, self.lineno)
            caption += parsed
            figure += caption
        return [figure, self.provenance()]


def setup(app):
    app.add_config_value("towers_generated_dir", "", "env")
    app.add_directive("towers-output", OutputDirective)
    app.add_directive("towers-summary", SummaryDirective)
    app.add_directive("towers-timeline", TimelineDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
