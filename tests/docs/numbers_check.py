# SPDX-License-Identifier: MIT
"""Every number a learner reads on a page is this build's: ctest docs.NumbersFromThisBuild.

    numbers_check.py SOURCE_DIR GENERATED_DIR            check (GENERATED_DIR: the docs
                                                         build's runs, build/docs/generated)
    numbers_check.py SOURCE_DIR GENERATED_DIR --update   rewrite the tagged sample outputs
                                                         from those runs, then check

The pages: README.md, chapters/*/README.md, docs/*.md, docs/chapters/*.md. The docs'
own pages mostly show generated output (```{towers-output}``` and friends, never typed);
what is typed is checked here, in three ways.

1. A sample output (a fenced block with a `summary:` line) is one of the docs build's
   runs, named by a tag line right before the block:

       <!-- output: 02_serial_towers -->         the whole block is that run's output
       <!-- output: 02_serial_towers keys=final_loss,global_step -->
                                                 another run (a resume), whose listed
                                                 keys must equal that run's

       <!-- output: 01_learning varies=final_loss,precision_at_1 -->
                                                 the whole block is that run's output, but
                                                 the listed keys differ from machine to
                                                 machine (the page must say why); they are
                                                 checked present, not compared

   Without keys=, every summary line of the block must have the run's keys, in order,
   and the same value for each key that is not a measurement (a measurement: a key ending
   in _ms, _us or _per_sec, or naming an overlap or share; those vary from run to run).
   So a sample shows what this build prints, and its `final_loss`, `graph_nodes`,
   `rendezvous`, ... are this build's. `--update` replaces such a block by the run's
   output (a `$ command` first line is kept, as the run's command; the docs' own
   "trace: wrote" lines are left out), measurements included; run it after the docs
   build when a check fails on a sample.

2. A measured number in prose (outside code: a number with ms, µs, s, seconds, %, ×,
   examples/sec or sec/batch) or a comparison (faster, slower) must sit in a paragraph
   (lines up to a blank line; a list or table counts as one) that carries a tag saying
   where it comes from:

       <!-- numbers: check 03_stream_towers.step_ms < 0.75 * 02_serial_towers.step_ms -->
           an expression over the runs' summary values (RUN.key), evaluated here: the
           claim in the paragraph ("about half", "shorter") holds in this build's runs;
       <!-- numbers: from src/harness/tower_training.cpp bench/results/X.md -->
           each such number of the paragraph appears, as a number, in one of these files
           (a constant of the code, a recorded benchmark, a test): it is a setting or a
           recorded result, not a run of the docs;

   A `check` over measured keys (step_ms, ...) that fails is reported SKIP, not a
   problem, when a run it reads started on a busy machine (its stamp's 1-minute load
   average above its cores + 2; run_program.cmake notes both): other work's timings say
   nothing about the lesson. On a quiet machine, as in CI's docs stage, it must hold.

   A paragraph may carry both. A number inside `code` is a flag or a literal, not checked,
   except a summary pair: `final_loss=4.6864` in prose must be printed, key and value, by
   some run of the docs build (or the paragraph names its file with `from`).

3. A count of exercises in prose ("Eight exercises") equals the folders exercises/NN_*.

Prints "docs not built" and exits 0 (ctest: skipped) when GENERATED_DIR has no runs.
"""
import re
import sys
from pathlib import Path

OUTPUT_TAG = re.compile(
    r"^\s*<!--\s*output:\s*(\S+)(?:\s+keys=(\S+))?(?:\s+varies=(\S+))?\s*-->\s*$")
NUMBERS_TAG = re.compile(r"<!--\s*numbers:\s*(check|from)\s+(.*?)\s*-->")
FENCE = re.compile(r"^\s*(```|~~~)")
MEASURED_KEY = re.compile(r"(_ms|_us|_per_sec)$|overlap$|overlap_comm|_share$")
# A number with a unit of time, a share or a ratio; not 24×24 (a size) nor 2×2.
MEASURED = re.compile(
    r"(?<![\w.×/-])(\d+(?:\.\d+)?)(\s?(?:ms|µs|s|seconds|minutes|min|%|examples/sec|sec/batch)"
    r"|×)(?![\w/×\d])")  # 2× is a ratio, 8 × bytes a product
COMPARISON = re.compile(r"\b(faster|slower)\b", re.I)
WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
         "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
EXERCISE_COUNT = re.compile(r"\b(\d+|" + "|".join(WORDS) + r")\s+(?:graded\s+)?"
                            r"(?:classroom\s+)?exercises\b", re.I)


def pages(source):
    return ([source / "README.md"] + sorted(source.glob("chapters/*/README.md"))
            + sorted(source.glob("docs/*.md")) + sorted(source.glob("docs/chapters/*.md")))


def summary_rows(text):
    rows = []
    for line in text.splitlines():
        if line.startswith("summary:"):
            rows.append(dict(pair.split("=", 1) for pair in line.split()[1:] if "=" in pair))
    return rows


# Runs that started on a busy machine: name -> "load L on N cores" (from their stamps).
BUSY = {}


def load_runs(generated):
    runs, commands = {}, {}
    for txt in sorted(generated.glob("*.txt")):
        runs[txt.stem] = summary_rows(txt.read_text())
        stamp = txt.with_suffix(".stamp")
        if stamp.is_file():
            fields = dict(line.split("=", 1) for line in stamp.read_text().splitlines()
                          if "=" in line)
            if "command" in fields:
                commands[txt.stem] = fields["command"]
            try:
                load, cores = float(fields["load_before"]), int(fields["cores"])
            except (KeyError, ValueError):
                continue
            if load > cores + 2:
                BUSY[txt.stem] = f"load {load:g} on {cores} cores"
    return runs, commands


def busy_runs(expression):
    """The busy runs whose measured keys the expression reads."""
    return sorted({f"{run} ({BUSY[run]})" for run, key in VALUE.findall(expression)
                   if run in BUSY and MEASURED_KEY.search(key)})


def split_blocks(lines):
    """Yields (kind, start, end) over the page: 'code' for a fenced block (fences
    included), 'text' for the lines between."""
    i, start = 0, 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            if start < i:
                yield "text", start, i
            fence = FENCE.match(lines[i]).group(1)
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence):
                j += 1
            yield "code", i, min(j + 1, len(lines))
            i = start = j + 1
            continue
        i += 1
    if start < len(lines):
        yield "text", start, len(lines)


def tag_before(lines, start):
    j = start - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    return OUTPUT_TAG.match(lines[j]) if j >= 0 else None


def check_sample(where, block, tag, runs):
    """Problems of one sample block against its run."""
    if not tag:
        return [f"{where}: a sample output with a `summary:` line but no "
                "<!-- output: RUN --> tag before it (tests/docs/numbers_check.py)"]
    name, keys = tag.group(1), tag.group(2)
    if name not in runs:
        return [f"{where}: <!-- output: {name} -->: the docs build has no run {name} "
                "(docs/CMakeLists.txt, towers_docs_output)"]
    shown, ran = summary_rows("\n".join(block)), runs[name]
    problems = []
    if keys:
        wanted = keys.split(",")
        for row in shown:
            for key in wanted:
                if key not in row or key not in ran[-1] or row[key] != ran[-1][key]:
                    problems.append(f"{where}: {key}={row.get(key, '(none)')}, but {name} "
                                    f"prints {key}={ran[-1].get(key, '(none)')}")
        return problems
    varies = set(tag.group(3).split(",")) if tag.group(3) else set()
    if len(shown) != len(ran):
        return [f"{where}: {len(shown)} summary line(s), {name} prints {len(ran)}; "
                "rerun with --update"]
    for row, run in zip(shown, ran):
        if list(row) != list(run):
            problems.append(f"{where}: keys {' '.join(row)} differ from {name}'s "
                            f"{' '.join(run)}; rerun with --update")
            continue
        for key, value in row.items():
            if not MEASURED_KEY.search(key) and key not in varies and value != run[key]:
                problems.append(f"{where}: {key}={value}, but this build's {name} prints "
                                f"{key}={run[key]}; rerun with --update")
    return problems


def updated_block(block, name, generated, commands):
    """The block with the run's output (and its command on a `$` first line, if any)."""
    out = [line for line in (generated / f"{name}.txt").read_text().rstrip("\n").splitlines()
           if not line.startswith("trace: wrote ")]  # the docs' --trace, not on the page
    head = [block[0]]
    if len(block) > 1 and block[1].startswith("$ ") and name in commands:
        head.append("$ " + commands[name].split(" --trace ")[0])
    return head + out + [block[-1]]


VALUE = re.compile(r"\b(\w+)\.([a-z][a-z0-9_]*)\b")


def evaluate(expression, runs):
    """An expression over RUN.key values (the run's last summary line)."""
    def value(match):
        run, key = match.group(1), match.group(2)
        if run not in runs:
            raise KeyError(f"no run {run}")
        if key not in runs[run][-1]:
            raise KeyError(f"{run} prints no {key}")
        text = runs[run][-1][key]
        try:
            return repr(float(text))
        except ValueError:
            return repr(text)
    python = VALUE.sub(value, expression)
    return eval(python, {"__builtins__": {}}, {"abs": abs, "min": min, "max": max}), python


def paragraphs(lines, start, end):
    """(first line, [lines]) of each paragraph of a text region; a tag line alone just
    before a paragraph belongs to it."""
    para, first = [], start
    for i in range(start, end):
        if lines[i].strip():
            if not para:
                first = i
            para.append(lines[i])
        elif para and not all(NUMBERS_TAG.fullmatch(l.strip()) for l in para):
            yield first, para
            para = []
    if para:
        yield first, para


def check_prose(where_page, first, para, runs, source):
    text = "\n".join(para)
    tags = NUMBERS_TAG.findall(text)
    prose = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    prose = re.sub(r"`[^`]*`", "CODE", prose)
    prose = re.sub(r"\]\([^)]*\)", "]", prose)  # link targets
    numbers = [m.group(1) for m in MEASURED.finditer(prose)]
    pairs = re.findall(r"`([a-z][a-z0-9_]*)=([0-9][0-9.]*)`", re.sub(r"<!--.*?-->", "", text))
    compares = COMPARISON.findall(prose)
    where = f"{where_page}:{first + 1}"
    problems = []
    if (numbers or compares) and not tags:
        what = ", ".join([f"{n}{u}" for n, u in MEASURED.findall(prose)] + compares)
        return [f"{where}: measured number(s) or comparison ({what}) with no "
                "<!-- numbers: check ... --> or <!-- numbers: from ... --> tag: generate it, "
                "check it or remove it (tests/docs/numbers_check.py)"]
    sources = []
    for kind, argument in tags:
        if kind == "check":
            try:
                holds, python = evaluate(argument, runs)
            except (KeyError, SyntaxError, NameError, TypeError) as error:
                problems.append(f"{where}: check `{argument}`: {error}")
                continue
            busy = busy_runs(argument) if not holds else []
            print(f"{'ok' if holds else 'SKIP' if busy else 'FAIL':4} {where}: {argument}  "
                  f"({python})" + (f": a busy machine's timing, {', '.join(busy)}" if busy else ""))
            if not holds and not busy:
                problems.append(f"{where}: the page claims `{argument}`, which this "
                                f"build's runs contradict: {python}")
        else:
            for name in argument.split():
                path = source / name
                if not path.is_file():
                    problems.append(f"{where}: numbers from {name}, which does not exist")
                else:
                    sources.append(path.read_text())
    printed = {}
    for rows in runs.values():
        for row in rows:
            for key, value in row.items():
                printed.setdefault(key, set()).add(value)
    for key, value in pairs:
        if key in printed and value not in printed[key] and not any(
                kind == "from" for kind, _ in tags):
            problems.append(f"{where}: `{key}={value}`: no run of the docs build prints it "
                            f"(they print {key}={', '.join(sorted(printed[key]))})")
    if any(kind == "from" for kind, _ in tags):
        for number in numbers:
            pattern = re.compile(r"(?<!\d)" + re.escape(number) + r"(?!\d)")
            if not any(pattern.search(text) for text in sources):
                problems.append(f"{where}: {number} is in none of the files its tag names")
    return problems


def check_exercise_counts(where_page, lines, source):
    count = len([p for p in (source / "exercises").glob("[0-9][0-9]_*") if p.is_dir()])
    problems = []
    for i, line in enumerate(lines):
        for match in EXERCISE_COUNT.finditer(line):
            said = match.group(1).lower()
            said = int(said) if said.isdigit() else WORDS[said]
            if said != count:
                problems.append(f"{where_page}:{i + 1}: says {match.group(0)!r}; "
                                f"exercises/ has {count}")
    return problems


def main():
    source, generated = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    update = "--update" in sys.argv
    runs, commands = load_runs(generated) if generated.is_dir() else ({}, {})
    if not runs:
        print(f"docs not built: no runs in {generated}; build the `docs` target first")
        return 0
    problems = []
    for page in pages(source):
        lines = page.read_text().splitlines()
        rel = page.relative_to(source)
        for kind, start, end in list(split_blocks(lines)):
            if kind == "text":
                for first, para in paragraphs(lines, start, end):
                    problems += check_prose(rel, first, para, runs, source)
                continue
            block = lines[start:end]
            if not any(line.startswith("summary:") for line in block):
                continue
            tag = tag_before(lines, start)
            if update and tag and not tag.group(2) and tag.group(1) in runs:
                new = updated_block(block, tag.group(1), generated, commands)
                if new != block:  # write it, then start again: the offsets moved
                    lines[start:end] = new
                    page.write_text("\n".join(lines) + "\n")
                    print(f"updated {rel}:{start + 1} from {tag.group(1)}")
                    return main()
            problems += check_sample(f"{rel}:{start + 1}", block, tag, runs)
        problems += check_exercise_counts(rel, lines, source)
    for problem in problems:
        print("FAIL " + problem)
    print(f"{len(problems)} problem(s) in the numbers of {len(pages(source))} pages")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
