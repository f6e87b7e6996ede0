# SPDX-License-Identifier: MIT
"""A controlled experiment from this build's runs (registered by towers_generated):

    ```{towers-experiment} 04_queue_device0 04_iterator_device0 04_iterator_ring
    :factors: input allreduce
    :keys: step_ms input_wait_ms allreduce_ms final_loss
    ```

One row per run (its `summary:` line), in the order given: the factors first, then the
measured keys. Each row after the first must differ from the row above in exactly one
factor, which the row names and shows in bold, so the table cannot silently compare two
changes at once. Each key's meaning comes from the chapter README's key table, as in
towers-summary; each run's provenance follows the table.
"""
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives

from towers_generated import SummaryDirective, key_meanings


class ExperimentDirective(SummaryDirective):
    """One factor changed per row; see the module docstring."""

    required_arguments = 2
    optional_arguments = 6
    option_spec = {"factors": directives.unchanged_required,
                   "keys": directives.unchanged_required}

    def summary(self, name):
        rows = self.summaries(name)
        if len(rows) != 1:
            raise self.error(f"{name}.txt has {len(rows)} `summary:` lines; an experiment "
                             "row is one run with one")
        return rows[0]

    def run(self):
        names = list(self.arguments)
        factors, keys = self.options["factors"].split(), self.options["keys"].split()
        rows = [self.summary(name) for name in names]
        for name, row in zip(names, rows):
            absent = [k for k in factors + keys if k not in row]
            if absent:
                raise self.error(f"{name}.txt's summary has no {', '.join(absent)}")
        changed = [None]
        for above, row, name in zip(rows, rows[1:], names[1:]):
            differ = [f for f in factors if row[f] != above[f]]
            if len(differ) != 1:
                raise self.error(f"{name} differs from the run above in {len(differ)} factors "
                                 f"({', '.join(differ) or 'none'}); an experiment changes one")
            changed.append(differ[0])
        # The chapter whose README defines the keys: the one whose number the runs carry.
        chapters = Path(self.config.towers_source_dir, "chapters")
        chapter = next((p.name for p in chapters.glob(names[0].split("_")[0] + "_*")), "")
        meanings = key_meanings(self.config.towers_source_dir, chapter)
        missing = [k for k in factors + keys if k not in meanings]
        if missing:
            raise self.error(f"key(s) {', '.join(missing)} defined in no chapter README's "
                             "key table (| `key` | meaning |)")

        # A summary table (one entry per run and key): at 1280 px it fits; on a phone it
        # may scroll inside its wrapper, as the other summary tables do (towers.css).
        table, body = self.table(["towers-summary", "towers-experiment"],
                                 [3] + [2] * (len(factors) + len(keys)),
                                 [nodes.Text("changed")]
                                 + [nodes.literal(text=k) for k in factors + keys])
        for row, factor in zip(rows, changed):
            cells = [nodes.Text("baseline" if factor is None else f"only {factor}")]
            for f in factors:
                cells.append(nodes.strong(text=row[f]) if f == factor else nodes.Text(row[f]))
            cells += [nodes.Text(row[k]) for k in keys]
            body += self.row(cells)

        meaning_list = nodes.bullet_list()
        for key in factors + keys:
            item = nodes.list_item()
            para = nodes.paragraph()
            para += nodes.literal(text=key)
            para += nodes.Text(": ")
            parsed, _ = self.state.inline_text(meanings[key], self.lineno)
            para += parsed
            item += para
            meaning_list += item
        result = [table, meaning_list]
        for name in names:
            self.arguments = [name]
            result.append(self.provenance())
        self.arguments = names
        return result
