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
   and the same value for each key that is neither a measurement (a key ending in _ms,
   _us or _per_sec, naming an overlap or share, or link_gbps, chapter 6's link sized from
   a measured backward pass; those vary from run to run) nor the
   bits of the machine's kernels (final_loss, final_cross_entropy, precision_at_1, a
   *_hash: the sums of a matrix product come out in the order the BLAS kernels OpenBLAS
   picks for the CPU add them in, so these differ from machine to machine, and a page can
   only show one machine's as an example). So a sample shows what this build prints, and
   its `graph_nodes`, `rendezvous`, byte counts, ... are this build's. `--update` replaces such a block by the run's
   output (a `$ command` first line is kept, as the run's command; the docs' own
   "trace: wrote" lines are left out), measurements included; run it after the docs
   build when a check fails on a sample.

2. A measured number in prose (outside code: a number with ms, µs, s, seconds, %, ×,
   examples/sec or sec/batch) or a comparison (faster, slower) must sit in a paragraph
   (lines up to a blank line; a list or table counts as one) that carries a tag saying
   where it comes from:

       <!-- numbers: check 03_stream_towers.step_ms < 0.75 * 02_serial_towers.step_ms -->
           an expression over the runs' summary values (RUN.key: the run's last summary
           line; RUN[WORD].key: its line whose first value is WORD, e.g.
           00_streams[sync].step_ms), evaluated here: the claim in the paragraph ("about
           half", "shorter") holds in this build's runs. A claim must hold on every
           machine, so a check may compare a time (a key ending in _ms, _us, _per_sec)
           only with another quantity of this build's runs, never with a number typed on
           the page, and the kernels' bits (final_loss, a *_hash, ...) only with another
           run's, or with a bound (<, >), never equal to a typed number;
       <!-- numbers: from src/harness/tower_training.cpp bench/results/X.md -->
           each such number of the paragraph appears, as a number, in one of these files
           (a constant of the code, a recorded benchmark, a test): it is a setting or a
           recorded result, not a run of the docs;

   A `check` over measured keys (step_ms, ...) that fails is reported SKIP, not a
   problem, when a run it reads started on a busy machine (its stamp's 1-minute load
   average above its cores + 2; run_program.cmake notes both): other work's timings say
   nothing about the lesson. On a quiet machine, as in CI's docs stage, it must hold.

   A paragraph may carry both. A number inside `code` is a flag or a literal, not checked,
   except a summary pair: `graph_nodes=112` in prose must be printed, key and value, by
   some run of the docs build (or the paragraph names its file with `from`); a pair of a
   kernels' bits key (`final_loss=4.6864`) is an example, and only its key must be printed.

3. A count of exercises in prose ("Eight exercises") equals the folders exercises/NN_*.

Prints "docs not built" and exits 0 (ctest: skipped) when GENERATED_DIR has no runs.
"""
import ast
import re
import sys
from pathlib import Path

OUTPUT_TAG = re.compile(
    r"^\s*<!--\s*output:\s*(\S+)(?:\s+keys=(\S+))?(?:\s+varies=(\S+))?\s*-->\s*$")
NUMBERS_TAG = re.compile(r"<!--\s*numbers:\s*(check|from)\s+(.*?)\s*-->")
FENCE = re.compile(r"^\s*(```|~~~)")
# link_gbps: chapter 6's link as --link-gbps auto sized it from a measured backward pass.
MEASURED_KEY = re.compile(r"(_ms|_us|_per_sec)$|overlap$|overlap_comm|_share$|^link_gbps$")
# Times: never compared with a typed number (they scale with the machine's speed).
TIME_KEY = re.compile(r"(_ms|_us|_per_sec)$")
# The bits of the floating-point kernels: equal within one build's runs, not across
# machines (OpenBLAS picks the kernels, and so the order of the sums, per CPU).
BITS_KEY = re.compile(r"^(final_loss|final_cross_entropy|precision_at_1)$|_hash$")
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
    return sorted({f"{run} ({BUSY[run]})" for run, _, key in VALUE.findall(expression)
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
            if (not MEASURED_KEY.search(key) and not BITS_KEY.search(key) and key not in varies
                    and value != run[key]):
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


VALUE = re.compile(r"\b(\w+)(?:\[(\w+)\])?\.([a-z][a-z0-9_]*)\b")


def summary_row(runs, run, word):
    """The run's last summary line, or (word) its line whose first value is `word`."""
    if run not in runs:
        raise KeyError(f"no run {run}")
    if word is None:
        return runs[run][-1]
    for row in runs[run]:
        if row and next(iter(row.values())) == word:
            return row
    raise KeyError(f"{run} prints no summary line starting with {word}")


def evaluate(expression, runs):
    """An expression over RUN.key and RUN[WORD].key values (see the module's text)."""
    def value(match):
        run, word, key = match.group(1), match.group(2), match.group(3)
        row = summary_row(runs, run, word)
        if key not in row:
            raise KeyError(f"{run} prints no {key}")
        text = row[key]
        try:
            return repr(float(text))
        except ValueError:
            return repr(text)
    python = VALUE.sub(value, expression)
    return eval(python, {"__builtins__": {}}, {"abs": abs, "min": min, "max": max}), python


def typed_comparisons(expression):
    """Comparisons of a check that hold on one machine only: a time against a number
    typed on the page, or the kernels' bits equal (or not) to one. Returns messages."""
    keys = []

    def name(match):
        keys.append(match.group(3))
        return f"v{len(keys) - 1}"
    try:
        tree = ast.parse(VALUE.sub(name, expression), mode="eval")
    except SyntaxError:
        return []  # evaluate() reports it

    def read(node):
        return {keys[int(n.id[1:])] for n in ast.walk(node)
                if isinstance(n, ast.Name) and re.fullmatch(r"v\d+", n.id)}

    def is_time(node):
        """Whether `node` is a time (a ratio of two times is not)."""
        if isinstance(node, ast.Name) and re.fullmatch(r"v\d+", node.id):
            return bool(TIME_KEY.search(keys[int(node.id[1:])]))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return is_time(node.left) != is_time(node.right)
        if isinstance(node, ast.BinOp):
            return is_time(node.left) or is_time(node.right)
        if isinstance(node, ast.UnaryOp):
            return is_time(node.operand)
        if isinstance(node, ast.Call):
            return any(is_time(arg) for arg in node.args)
        return False
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left] + node.comparators
        for op, left, right in zip(node.ops, sides, sides[1:]):
            for side, other in ((left, right), (right, left)):
                if read(other):
                    continue  # both sides read this build's runs
                times = sorted(k for k in read(side) if TIME_KEY.search(k))
                bits = sorted(k for k in read(side) if BITS_KEY.search(k))
                if times and is_time(side):
                    problems.append(f"compares {', '.join(times)} with a number typed on the "
                                    "page, which holds on one machine's speed only: compare "
                                    "with another time of this build's runs")
                elif bits and isinstance(op, (ast.Eq, ast.NotEq)):
                    problems.append(f"compares {', '.join(bits)} with a typed value, the bits "
                                    "of one machine's kernels: compare with another run's")
    return problems


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
            for typed in typed_comparisons(argument):
                problems.append(f"{where}: check `{argument}` {typed}")
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
        if BITS_KEY.search(key):
            if key not in printed:
                problems.append(f"{where}: `{key}={value}`: no run of the docs build prints {key}")
            continue  # an example of one machine's bits: the key must exist, not the value
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
