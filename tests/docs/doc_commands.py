# SPDX-License-Identifier: MIT
"""Every shell command the docs show runs: ctest docs.CommandsRun.

    doc_commands.py SOURCE_DIR BIN_DIR [--list]

Reads README.md and docs/**/*.md. Every ```sh / ```bash / ```console / ```shell block must
follow a tag line saying how its commands are checked, else this test fails:

    <!-- commands: run -->  each command runs here, in a scratch folder where scripts/,
                            exercises/ and build/bin/ point into this checkout and build,
                            and must exit 0. scripts/tutorial runs with TOWERS_BIN set
                            (the build exists; no setup, no rebuild) and must print its
                            comparison table with every chapter of
                            scripts/tutorial.chapters that was built, chapter 9's row
                            counting pipeline stages, not towers.
    <!-- commands: gpu -->  a GPU command: it runs here too, and must either succeed
                            or stop at once with an `error:` that names the missing GPU
                            or CUDA (never a flag error: the flags shown must exist).
    <!-- commands: ci -->   a command .ci/run itself runs (found there, verbatim, on a
                            line that is not a comment); running it here would recurse.
    <!-- commands: not-run -->  shown, not run: allowed only on the pages of NOT_RUN_PAGES
                            (instructors' commands that grade unsolved stubs or need a
                            release tag), each with its reason there.

A command is a line of the block, without its `# comment`. Identical commands run once.
Whatever the commands leave in the scratch folder (a trace, a checkpoint, the handout)
must be a name the checkout's .gitignore ignores, so that a learner who runs them from
the checkout's root leaves `git status` clean.
--list prints the commands and their tags and runs nothing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from check_report import verdict

FENCE = re.compile(r"^\s*```(sh|bash|console|shell)\s*$")
TAG = re.compile(r"^\s*<!--\s*commands:\s*(run|gpu|ci|not-run)\s*-->\s*$")
# Pages allowed to show commands that no test runs, and why.
NOT_RUN_PAGES = {
    "docs/instructors.md": "grading the unsolved stubs fails by design (CI's last stage "
                           "grades stubs and solutions); a handout from a tag needs the tag",
}


def blocks(path):
    """Yields (line number, tag or None, [commands]) for each shell block of a page."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            start = i
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            tag = TAG.match(lines[j]).group(1) if j >= 0 and TAG.match(lines[j]) else None
            commands = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith("```"):
                command = re.sub(r"\s+#.*$", "", lines[i]).strip()
                if command and not command.startswith("#"):
                    commands.append(command)
                i += 1
            yield start + 1, tag, commands
        i += 1


def tutorial_chapters(source):
    chapters = []
    for line in (source / "scripts/tutorial.chapters").read_text().splitlines():
        name = line.split("|")[0].strip()
        if name and not name.startswith("#"):
            chapters.append(name)
    return chapters


def scratch_folder(source, bin_dir):
    """A folder that looks like the checkout's root, with this build as build/."""
    root = Path(tempfile.mkdtemp(prefix="towers-doc-commands-"))
    for name in ("scripts", "exercises", "chapters", "docs"):
        (root / name).symlink_to(source / name)
    (root / "build").mkdir()
    (root / "build/bin").symlink_to(bin_dir)
    return root


def run_command(command, root, source, bin_dir):
    env = dict(os.environ, TOWERS_BIN=str(bin_dir))
    git_dir = subprocess.run(["git", "-C", str(source), "rev-parse", "--absolute-git-dir"],
                             capture_output=True, text=True)
    if git_dir.returncode == 0:  # exercises/make-handout archives the checkout's commits
        env["GIT_DIR"] = git_dir.stdout.strip()
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", "set -o pipefail; " + command], cwd=root, env=env,
                          capture_output=True, text=True, timeout=900)
    return done, time.monotonic() - started


def check_tutorial(command, output, source, bin_dir):
    """scripts/tutorial ended with its table, one row per built chapter (and mode)."""
    problems = []
    if "Chapters compared" not in output:
        return ["printed no comparison table"]
    table = output.split("Chapters compared", 1)[1]
    for chapter in tutorial_chapters(source):
        if (bin_dir / chapter).exists() and f"| {chapter}" not in table:
            problems.append(f"comparison table has no row for {chapter}")
    for line in table.splitlines():  # a pipeline's row counts its stages, both columns
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].startswith("09_pipeline") and not all(
                re.fullmatch(r"\d+ stages?", c) for c in cells[1:3]):
            problems.append(f"chapter 9's row does not count stages: {line}")
    wanted = re.search(r"--devices[ =](\d+)", command)
    if wanted:  # every multi-tower chapter ran with that many towers
        for line in output.splitlines():
            if line.startswith("summary:") and "towers_meet=" in line:
                if f" towers={wanted.group(1)} " not in line + " ":
                    problems.append(f"asked for {wanted.group(1)} towers, ran: {line}")
    return problems


def left_behind(root, source):
    """Files the commands wrote into the scratch root that git would not ignore."""
    ours = {"scripts", "exercises", "chapters", "docs", "build"}
    problems = []
    for path in sorted(root.iterdir()):
        if path.name in ours:
            continue
        name = path.name + ("/" if path.is_dir() else "")
        ignored = subprocess.run(["git", "-C", str(source), "check-ignore", "-q", "--no-index",
                                  name], capture_output=True)
        print(f"{'ok' if ignored.returncode == 0 else 'FAIL':4} left  {name}")
        if ignored.returncode != 0:
            problems.append(f"the commands leave {name} in the checkout's root, which "
                            ".gitignore does not ignore: ignore it, or write it under build/")
    return problems


def main():
    source, bin_dir = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    pages = [source / "README.md"] + sorted((source / "docs").rglob("*.md"))
    ci_lines = [line for line in (source / ".ci/run").read_text().splitlines()
                if not line.lstrip().startswith("#")]
    failures, seen, todo = [], set(), []
    for page in pages:
        for line, tag, commands in blocks(page):
            where = f"{page.relative_to(source)}:{line}"
            if tag is None:
                failures.append(f"{where}: shell block without a tag line before it; add "
                                "<!-- commands: run|gpu|ci --> (see tests/docs/doc_commands.py)")
                continue
            for command in commands:
                # A command two pages show runs once, except chapter 5's two machines: a
                # block's `scripts/two-hosts status` and `down` belong to its own `up`
                # (deduplicated, 11_mesh.md's block ran its `up` without its `down` and
                # left its pair of namespaces behind).
                if command.startswith("scripts/two-hosts") or (tag, command) not in seen:
                    seen.add((tag, command))
                    todo.append((where, tag, command))
    if "--list" in sys.argv:
        for where, tag, command in todo:
            print(f"{tag:4} {where:28} {command}")
        return verdict(failures)
    root = scratch_folder(source, bin_dir)
    for where, tag, command in todo:
        if tag == "not-run":
            ok = where.split(":")[0] in NOT_RUN_PAGES
            print(f"{'skip' if ok else 'FAIL':4} not-run {where}: {command}")
            if not ok:
                failures.append(f"{where}: `{command}` is tagged not-run, which only "
                                f"{', '.join(NOT_RUN_PAGES)} may use; make it run")
            continue
        if tag == "ci":
            ok = any(command in line for line in ci_lines)
            print(f"{'ok' if ok else 'FAIL':4} ci   {where}: {command}")
            if not ok:
                failures.append(f"{where}: `{command}` is tagged ci but .ci/run never runs it")
            continue
        done, seconds = run_command(command, root, source, bin_dir)
        output = done.stdout + done.stderr
        problems = []
        if tag == "run":
            if done.returncode != 0:
                problems.append(f"exit {done.returncode}")
            elif command.startswith("scripts/tutorial"):
                problems += check_tutorial(command, done.stdout, source, bin_dir)
        else:  # gpu
            gpu_error = re.search(r"error:.*(GPU|CUDA|cuda)", output)
            flag_error = re.search(r"(not expected|Could not convert|is not a valid|ArgumentMismatch)", output)
            if done.returncode != 0 and (not gpu_error or flag_error):
                problems.append(f"exit {done.returncode} without a no-GPU error")
        print(f"{'FAIL' if problems else 'ok':4} {tag:4} {where}: {command} ({seconds:.1f} s)")
        if problems:
            failures.append(f"{where}: `{command}`: {'; '.join(problems)}\n"
                            + "\n".join(output.splitlines()[-25:]))
    failures += left_behind(root, source)
    shutil.rmtree(root, ignore_errors=True)
    for failure in failures:
        print("\nFAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
