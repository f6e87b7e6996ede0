# SPDX-License-Identifier: MIT
"""Tables gathered from several sources (registered by towers_generated):

    ```{towers-compare}      the chapters of scripts/tutorial.chapters, compared
    ```{towers-gpu-runs}     which paths have run on a GPU, from bench/results/
    ```{towers-layers}       the code's layers, from src/LAYERS
    ```{towers-gpu-chapters} per chapter: its last GPU run, or "only compiled"
"""
import re
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from towers_generated import SummaryDirective
from towers_gpu_status import HEADER, chapter_statuses, table_rows


class CompareDirective(SummaryDirective):
    """The tutorial's comparison table: every chapter of scripts/tutorial.chapters that
    the docs build ran (towers_docs_output in docs/CMakeLists.txt), one column per
    summary line, one row per key of ``:keys:``. A chapter added to both lists appears
    here with no change to the page; one the docs build did not run is named below it.
    A program listed twice (chapter 6: overlap on and off) has a docs run per line:
    PROGRAM, then PROGRAM_SOMETHING (06_overlap_off), each a column.
    """

    required_arguments = 0
    optional_arguments = 0
    TABLES_FROM = (5, 9)  # the chapter numbers the second and third tables start at
    # Programs whose other docs runs (PROGRAM_*) are their own page's, not columns here:
    # chapter 11's meshes of 8 devices and its plans.
    ONE_COLUMN = {"11_mesh"}

    def run(self):
        listed = []
        chapters = Path(self.config.towers_source_dir, "scripts", "tutorial.chapters")
        self.env.note_dependency(str(chapters))
        for line in chapters.read_text().splitlines():
            name = line.split("|")[0].strip()
            if name and not name.startswith("#") and name not in listed:
                listed.append(name)
        generated = Path(self.config.towers_generated_dir)
        ran = []
        for name in listed:
            if (generated / f"{name}.txt").is_file():
                ran.append(name)
                if name not in self.ONE_COLUMN:
                    ran += sorted(path.stem for path in generated.glob(f"{name}_*.txt"))
        if not ran:
            raise self.error(f"no chapter of {chapters} has output in {generated}")
        # Fifteen columns do not fit a page's column at any width: three tables, chapters
        # 0-4 (one process, the towers' first answers), 5-8 (ranks, overlap, graphs,
        # sharding) and 9 on (pipelines, a split layer, the mesh), each with the key and
        # meaning columns.
        result = []
        bounds = (0, *self.TABLES_FROM, 100)
        halves = [[n for n in ran if low <= int(n[:2]) < high]
                  for low, high in zip(bounds, bounds[1:])]
        for half in halves:
            if half:
                self.arguments = half
                result += super().run()
        self.arguments = ran
        skipped = [name for name in listed if name not in ran]
        if skipped:
            para = nodes.paragraph()
            para += nodes.Text("In scripts/tutorial.chapters but not run by the docs build "
                               "(add it to docs/CMakeLists.txt with towers_docs_output): ")
            para += nodes.literal(text=", ".join(skipped))
            result.append(para)
        return result


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
        table, body = SummaryDirective.table(
            ["towers-gpu-runs"], (3, 6, 3),
            [nodes.Text(t) for t in ("path", "tests that passed on the GPU", "run")])
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


class LayersDirective(SphinxDirective):
    """The code's layers, lowest first, read from src/LAYERS (the file that
    tests/layers/check_layers.py enforces): each layer's folders and files and how many
    source files each holds today. The page cannot drift from the order the test checks.
    """

    def run(self):
        import importlib.util
        root = Path(self.config.towers_source_dir)
        checker_path = root / "tests" / "layers" / "check_layers.py"
        spec = importlib.util.spec_from_file_location("towers_check_layers", checker_path)
        checker = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(checker)
        layers_path = root / "src" / "LAYERS"
        self.env.note_dependency(str(layers_path))
        ranks, allowed, forbidden = checker.read_layers(str(layers_path))
        counts = checker.files_per_prefix(str(root), ranks)
        table, body = SummaryDirective.table(
            ["towers-layers"], (1, 8, 2),
            [nodes.Text(t) for t in ("layer", "folders and files", "source files")])
        for rank in sorted(set(ranks.values())):
            prefixes = [p for p in ranks if ranks[p] == rank]
            names = nodes.paragraph()
            for i, prefix in enumerate(prefixes):
                if i:
                    names += nodes.Text(", ")
                names += nodes.literal(text=prefix)
            files = sum(counts[p] for p in prefixes)
            body += SummaryDirective.row([nodes.Text(str(rank)), names, nodes.Text(str(files))])
        note = nodes.paragraph(text=(
            f"{len(set(ranks.values()))} layers; "
            + (f"{len(allowed)} allowed exception(s) listed in src/LAYERS." if allowed
               else "no exception to the order.")
            + (" Whatever the order, " + "; ".join(f"{who} includes no {what}"
                                                  for who, what in forbidden) + "."
               if forbidden else "")))
        return [table, note]


class GpuChaptersDirective(SphinxDirective):
    """Per chapter, the last run of its program on a GPU (date, result, results page and
    commit) or "only compiled": towers_gpu_status.py reads bench/results/*.md and the
    folders chapters/NN_*, so a new results page or chapter changes the table by itself.
    """

    def run(self):
        source = Path(self.config.towers_source_dir)
        results, chapters = source / "bench" / "results", source / "chapters"
        for page in sorted(results.glob("*.md")):
            self.env.note_dependency(str(page))
        try:
            statuses = chapter_statuses(results, chapters)
        except ValueError as error:
            raise self.error(str(error))
        if not statuses:
            raise self.error(f"no chapter folder (NN_name) in {chapters}")
        table, body = SummaryDirective.table(["towers-gpu-chapters"], (3, 2, 4, 4),
                                             [nodes.Text(text) for text in HEADER])
        for chapter, date, result, page in table_rows(statuses):
            body += SummaryDirective.row([nodes.literal(text=chapter), nodes.Text(date),
                                          nodes.Text(result), nodes.Text(page)])
        return [table]
