# SPDX-License-Identifier: MIT
"""Figures drawn from what this build's programs did (registered by towers_generated):

    ```{towers-steps} RUN [RUN...]    the steps of runs on one time axis (their traces)
    ```{towers-ring} ringN            the ring all-reduce step by step (docs_ring_schedule)
    ```{towers-events} RUN            one step's records, waits and who waits for whom
    ```{towers-tensor} RUN            chapter 10's split: each rank's shards, f and g
    ```{towers-mesh} SHAPES           chapter 11: memory and wire bytes per mesh shape
"""
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

import towers_diagrams
import towers_events
import towers_timeline
from towers_generated import GeneratedDirective, read_stamp, readable_svg, svg_figure


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
        # The traces' SHA-256: tests/docs/check_fresh.cmake finds this build's runs here.
        svg = svg.replace("<svg ", f'<svg data-traces="{" ".join(traces)}" ', 1)
        result = [svg_figure(self, svg)]
        for name in names:
            self.arguments = [name]
            result.append(self.provenance())
        result.append(self.trace_downloads(names))
        self.arguments = names
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
        return [svg_figure(self, towers_diagrams.ring_figure(path.read_text()))]


class EventsDirective(GeneratedDirective):
    """One step of a run as streams, ops, event records and the waits on them, with an
    arrow from each record to each wait (towers_events.py), drawn from the run's trace.

        ```{towers-events} 03_stream_towers
        :step: 3
        The caption.
        ```

    Without :step:, the last step that has a next one. The caption gets a sentence saying
    which build's run the figure was drawn from.
    """

    has_content = True
    option_spec = {"step": directives.nonnegative_int}

    def run(self):
        name = self.arguments[0]
        try:
            svg = towers_events.events_figure(self.generated(".json").read_text(),
                                              self.options.get("step"))
        except (ValueError, KeyError) as error:
            raise self.error(f"{name}.json: {error}")
        stamp = read_stamp(self.generated(".stamp"))
        # The trace's SHA-256: tests/docs/check_fresh.cmake finds this build's run here.
        svg = svg.replace("<svg ", f'<svg data-traces="{stamp.get("json_sha256", "?")}" '
                                   f'data-run="{name}" ', 1)
        figure = nodes.figure(classes=["towers-figure"])
        figure += nodes.raw("", readable_svg(svg), format="html")
        caption = nodes.caption()
        if self.content:
            parsed, _ = self.state.inline_text(" ".join(self.content), self.lineno)
            caption += parsed
            caption += nodes.Text(" ")
        caption += nodes.Text("Drawn by the docs build from the trace of this build's run "
                              "of ")
        caption += nodes.literal(text=name)
        caption += nodes.Text(f" (run id {stamp.get('run_id', '?')}): the records and waits "
                              "are the ones the streams noted, not drawn by hand.")
        figure += caption
        return [figure, self.provenance()]


class TensorDirective(GeneratedDirective):
    """Chapter 10's split as the run set it up: one lane per rank with its columns of
    local3 and rows of local4 (from the lines the program printed), and f and g (or the
    hybrid's all-gather and reduce-scatter) where the lanes meet
    (towers_diagrams.tensor_figure).

        ```{towers-tensor} 10_tensor
        The caption.
        ```
    """

    has_content = True

    def run(self):
        name = self.arguments[0]
        try:
            svg = towers_diagrams.tensor_figure(self.generated(".txt").read_text())
        except ValueError as error:
            raise self.error(f"{name}.txt: {error}")
        return [svg_figure(self, svg), self.provenance()]


class MeshDirective(GeneratedDirective):
    """Chapter 11's memory and wire bytes against the mesh shape
    (towers_diagrams.mesh_figure): the plan of every shape of N devices from SHAPES's
    output (`11_mesh --plan --shapes N`), and a ring where a run of this build measured the
    shape (`:runs:`, each a composed run's output of the same batch and micro-batches).

        ```{towers-mesh} 11_mesh_shapes
        :runs: 11_mesh_8x1x1 11_mesh_4x2x1
        The caption.
        ```

    A run whose plan is not the shapes' line of its mesh (another batch or micro-batch
    count), or whose mesh is not among them, fails the build: the rings would compare
    different configurations.
    """

    has_content = True
    option_spec = {"runs": directives.unchanged}

    def run(self):
        shapes_name = self.arguments[0]
        try:
            shapes = towers_diagrams.mesh_shapes(self.generated(".txt").read_text())
        except ValueError as error:
            raise self.error(f"{shapes_name}.txt: {error}")
        planned = {s["shape"]: s for s in shapes}
        measured = {}
        names = self.options.get("runs", "").split()
        for name in names:
            row = self.summaries(name)[-1]
            shape = planned.get(row.get("mesh"))
            if row.get("measured") != "yes" or shape is None:
                raise self.error(f"{name} is not a measured run of a mesh of {shapes_name}")
            if int(row["plan_sum_bytes"]) != shape["sum"] or any(
                    int(row[f"plan_wire_{d}_bytes_per_step"]) != shape[d]
                    for d in ("data", "tensor", "pipeline")):
                raise self.error(f"{name}'s plan is not {shapes_name}'s line of {row['mesh']}: "
                                 "run both at the same --batch-size and --micro-batches")
            measured[row["mesh"]] = {
                "sum": sum(int(v) for k, v in row.items()
                           if k.startswith("peak_") and k.endswith("_bytes")),
                **{d: int(row[f"wire_{d}_bytes_per_step"]) for d in ("data", "tensor", "pipeline")}}
        self.arguments = [shapes_name]
        svg = towers_diagrams.mesh_figure(shapes, measured)
        # The runs' own provenance is under the tables that show them; the plan's is here.
        return [svg_figure(self, svg), self.provenance()]
