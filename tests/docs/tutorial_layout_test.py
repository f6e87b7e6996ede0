# SPDX-License-Identifier: MIT
"""scripts/tutorial places the towers on the GPUs there are: ctest docs.TutorialPlacesTowers.

    tutorial_layout_test.py SOURCE_DIR

No GPU is needed: the test puts a stand-in `nvidia-smi` on PATH that lists G GPUs, and
stand-in chapter programs (TOWERS_BIN) that print the flags they were given, and a
stand-in OpenMPI `mpiexec` that prints how it was started and runs the program once. It
checks that every multi-tower chapter of scripts/tutorial.chapters gets --devices D
--towers-per-device K with D <= G and D x K towers, that single-device chapters get no
--devices, that a chapter with a launcher (chapter 5) is started by mpiexec with one
rank per tower (at most one per GPU), --oversubscribe, and no --devices, and is skipped
with a line when there is no mpiexec; that a host-only chapter (gpu-check's host_only
list: chapter 11) gets as many ranks as towers whatever the GPUs, never --backend, and
its {mesh} as --dp a --tp b --pp c of that many devices, composed when the count allows; that other flags reach every chapter; that
[bracketed] flags of the list (chapter 6's --link-gbps) reach the chapter on simulated
devices only, without the brackets; that --help prints the tutorial's own help and exits
0 without running anything; and that a bad --devices is refused before anything runs.
It also checks the closing table: the stand-ins print their chapter's summary keys, and
each row counts what ran at once in its chapter's own unit (towers; ranks for chapter 5;
pipeline stages for chapter 9, which the real program counts only under --probe; ranks
for chapter 11, its row named by its mesh).
"""
import os
import re
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from check_report import verdict

# (GPUs, tutorial flags, towers wanted of a multi-tower chapter or None for the
# list's own count, expected (devices, towers per device) or None to derive from it)
CASES = [
    (1, [], None, None),            # one GPU: the list's towers share it
    (1, ["--devices", "4"], 4, (1, 4)),
    (2, ["--devices", "4"], 4, (2, 2)),
    (8, ["--devices", "3"], 3, (3, 1)),
    (2, ["--devices", "3"], 3, (1, 3)),  # 3 towers do not split over 2 GPUs evenly
    (0, ["--devices", "8", "--backend", "host"], 8, (8, 1)),
    (0, ["--devices", "1", "--backend", "host"], 1, (1, 1)),  # one tower: no link to size
    (2, ["--devices", "6", "--backend=cuda"], 6, (2, 3)),  # --backend=: the host-only get none
]


# The summary keys a stand-in prints (the real program's, values made up) and the row the
# tutorial's table must show for it: (row name, runs on, busy at once). A chapter not
# named here prints DEFAULT_SUMMARY. Chapter 9 prints probe_concurrent_stages only when
# it gets --probe, as the real one does.
DEFAULT_SUMMARY = (["towers=2 max_concurrent_towers=2"], [("{name}", "2 towers", "2 towers")])
SUMMARIES = {
    "00_streams": (["mode=sync towers=4 max_concurrent_towers=1",
                    "mode=enqueue towers=4 max_concurrent_towers=4"],
                   [("00_streams (sync)", "4 towers", "1 tower"),
                    ("00_streams (enqueue)", "4 towers", "4 towers")]),
    "01_single_gpu": (["backend=host steps=40 final_loss=2.5"],
                      [("01_single_gpu", "1 tower", "1 tower")]),
    "05_ranks": (["towers=2 max_concurrent_towers=1 ranks=2 max_concurrent_ranks=2"],
                 [("05_ranks", "2 ranks", "2 ranks")]),
    "09_pipeline": (["schedule=1f1b stages=4 micro_batches=8$probe"],
                    [("09_pipeline (1f1b)", "4 stages", "4 stages")]),
    "11_mesh": (["mesh=2x2x1 devices=4 dp=2 tp=2 pp=1 schedule=1f1b step_ms=3.0"],
                [("11_mesh (2x2x1)", "4 ranks", "-")]),
}
PROBE = "rendezvous=met probe_concurrent_stages=4"


def summaries(name):
    return SUMMARIES.get(name, DEFAULT_SUMMARY)


def check_table(case, out, source, failures):
    """The closing table's row of each chapter: what it runs on and how many at once."""
    if "Chapters compared" not in out:
        failures.append(f"{case}: no closing table")
        return
    rows = {}
    for line in out.split("Chapters compared", 1)[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5:
            rows[cells[0]] = cells[1:3]
    done = set()
    for name, _, _ in chapters(source):
        if name in done:  # a program listed twice (chapter 6): its rows carry a mode
            continue
        done.add(name)
        for row, runs_on, busy in summaries(name)[1]:
            row = row.format(name=name)
            got = rows.get(row)
            if got is None and name not in SUMMARIES:  # e.g. "06_overlap (overlap on)"
                got = next((v for k, v in rows.items() if k.startswith(name + " ")), None)
            if got != [runs_on, busy]:
                failures.append(f"{case}: table row {row}: {got}, expected runs on {runs_on!r}, "
                                f"busy at once {busy!r}")


def chapter_lines(source):
    """[program, towers, arguments, launcher] of each line of the list."""
    rows = []
    for line in (source / "scripts/tutorial.chapters").read_text().splitlines():
        fields = [f.strip() for f in line.split("|")] + [""]
        if fields[0] and not fields[0].startswith("#"):
            rows.append(fields[:4])
    return rows


def host_only(source):
    """gpu-check's host_only list: the chapters with no CUDA path (the tutorial reads it)."""
    text = (source / "scripts/gpu-bench.d/1-40-new-chapters.sh").read_text()
    found = re.search(r"^host_only=\((.*)\)$", text, re.M)
    return set(found[1].split()) if found else set()


def check_mesh(case, name, args, towers, failures):
    """{mesh}: --dp a --tp b --pp c of as many devices as towers, two dimensions above one
    whenever the count is even and at least 4 (chapter 11 composes them)."""
    degrees = re.search(r"--dp (\d+) --tp (\d+) --pp (\d+)", args)
    if not degrees:
        failures.append(f"{case}: {name} got no mesh (--dp --tp --pp): {args}")
        return
    dp, tp, pp = (int(d) for d in degrees.groups())
    if dp * tp * pp != towers:
        failures.append(f"{case}: {name}'s mesh {dp}x{tp}x{pp} is not {towers} devices")
    if towers % 2 == 0 and towers >= 4 and sum(d > 1 for d in (dp, tp, pp)) < 2:
        failures.append(f"{case}: {name}'s mesh {dp}x{tp}x{pp} composes nothing")
    if "{" in args or "--backend" in args:
        failures.append(f"{case}: host-only {name} got a placeholder or --backend: {args}")


def chapters(source):
    """(program, towers, launcher) of each chapter the tutorial runs."""
    return [(name, towers, launcher) for name, towers, _, launcher in chapter_lines(source)]


# The link the stand-in chapter 6 "sizes" with --link-gbps auto.
SIZED_LINK = "0.8125"


def check_simulated_only(case, source, out, gpus, towers, failures):
    """[flags] of the list reach their chapter without brackets, only with no GPU; {link}
    as the link the tutorial sized once (the same number in every run that has it), and
    with one tower not at all (nothing crosses a link)."""
    runs = re.findall(r"^ran (\S+): (.*)$", out, re.M)
    for name, _, args, _ in chapter_lines(source):
        for only in re.findall(r"\[([^]]*)\]", args):
            if "{link}" in only and towers == 1:
                got = [given for ran, given in runs
                       if ran == name and "--link-gbps" in given and "auto" not in given]
                if got:
                    failures.append(f"{case}: {name} got a link with one tower: {got[0]}")
                continue
            only = only.replace("{link}", SIZED_LINK)
            got = [given for ran, given in runs if ran == name and only in given]
            if gpus == 0 and not got:
                failures.append(f"{case}: {name} did not get [{only}] on simulated devices")
            if gpus and got:
                failures.append(f"{case}: {name} got [{only}] on {gpus} GPU(s): {got[0]}")
    if any("[" in given or "]" in given for _, given in runs):
        failures.append(f"{case}: brackets reached a chapter: {runs}")


# A stand-in OpenMPI mpiexec: says how it was started, reads its stdin to the end (the
# real one forwards it to rank 0, so it would eat the tutorial's list of chapters), then
# runs the program once.
MPIEXEC = """#!/bin/sh
case "$1" in --version) echo 'mpiexec (OpenRTE) 4.1.4'; exit 0 ;; esac
echo "launched: mpiexec $*"
cat >/dev/null
while [ $# -gt 0 ]; do
  case "$1" in -n|-np) shift 2 ;; -*) shift ;; *) break ;; esac
done
exec "$@"
"""


def stand_ins(root, source, gpus):
    bin_dir, path_dir = root / "bin", root / "path"
    bin_dir.mkdir()
    path_dir.mkdir()
    for name, _, _ in chapters(source):
        program = bin_dir / name
        lines = "".join(f'echo "summary: {keys}"\n' for keys in summaries(name)[0])
        # --link-gbps auto (the tutorial sizing chapter 6's link once): the link it chose.
        # One tower has no link to size: like the real program, no link_gbps then.
        sizing = (f"case \" $* \" in *' --devices 1 --towers-per-device 1 '*' --link-gbps auto '*) "
                  f"echo 'link: --link-gbps auto: one tower, no link needed'; "
                  f"echo 'summary: towers=1'; exit 0 ;; "
                  f"*' --link-gbps auto '*) echo 'summary: link_gbps={SIZED_LINK}'; exit 0 ;; esac\n")
        program.write_text(f"#!/bin/sh\necho \"ran {name}: $*\"\n" + sizing +
                           f"probe=''\ncase \" $* \" in *' --probe '*) probe=' {PROBE}' ;; esac\n"
                           + lines)
        program.chmod(program.stat().st_mode | stat.S_IEXEC)
    smi = path_dir / "nvidia-smi"
    lines = "".join(f"echo 'GPU {i}: stand-in (UUID: GPU-{i})'\n" for i in range(gpus))
    smi.write_text("#!/bin/sh\n" + lines)
    (path_dir / "mpiexec").write_text(MPIEXEC)
    for tool in (smi, path_dir / "mpiexec"):
        tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return bin_dir, path_dir


def check_launched(case, name, out, args, towers, gpus, failures, host=False):
    """A launcher chapter: mpiexec with one rank per tower (at most one per GPU, unless
    the chapter runs on the host backend alone)."""
    ranks = min(towers, gpus) if gpus and not host else towers
    launched = re.search(rf"^launched: mpiexec (.*?) \S*/{re.escape(name)}( |$)", out, re.M)
    if not launched:
        failures.append(f"{case}: {name} was not started by mpiexec")
        return
    if f"-n {ranks}" not in launched[1] or "--oversubscribe" not in launched[1]:
        failures.append(f"{case}: {name} launched with '{launched[1]}', expected -n {ranks} "
                        "and --oversubscribe")
    if "--devices" in args:
        failures.append(f"{case}: {name}'s ranks got --devices: {args}")


def without_mpiexec(source):
    """No mpiexec: the launcher chapters are skipped with a line, the others still run."""
    with tempfile.TemporaryDirectory() as tmp:
        bin_dir, path_dir = stand_ins(Path(tmp), source, 0)
        env = dict(os.environ, TOWERS_BIN=str(bin_dir), TOWERS_MPIEXEC="/nonexistent/mpiexec",
                   PATH=f"{path_dir}:{os.environ['PATH']}")
        done = subprocess.run([str(source / "scripts/tutorial"), "--backend", "host"],
                              env=env, capture_output=True, text=True, timeout=120)
    failures = []
    if done.returncode != 0:
        return [f"without mpiexec: exit {done.returncode}: {done.stderr.strip()}"]
    for name, _, launcher in chapters(source):
        ran = re.search(rf"^ran {re.escape(name)}:", done.stdout, re.M)
        skipped = f"tutorial: {name} needs mpiexec" in done.stdout and "skipped" in done.stdout
        if launcher.startswith("mpiexec") and (ran or not skipped):
            failures.append(f"without mpiexec: {name} was not skipped with a line:\n{done.stdout}")
        if not launcher and not ran:
            failures.append(f"without mpiexec: {name} did not run")
    return failures


def main():
    source = Path(sys.argv[1]).resolve()
    failures = []
    hosts = host_only(source)
    if not hosts & {name for name, _, _ in chapters(source)}:
        failures.append("no chapter of scripts/tutorial.chapters is on gpu-check's host_only "
                        "list: the host-only checks below check nothing")
    for gpus, flags, towers, expected in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            bin_dir, path_dir = stand_ins(Path(tmp), source, gpus)
            env = dict(os.environ, TOWERS_BIN=str(bin_dir),
                       PATH=f"{path_dir}:{os.environ['PATH']}")
            done = subprocess.run([str(source / "scripts/tutorial"), *flags, "--seed", "7"],
                                  env=env, capture_output=True, text=True, timeout=120)
        case = f"{gpus} GPU(s), scripts/tutorial {' '.join(flags)}"
        if done.returncode != 0:
            failures.append(f"{case}: exit {done.returncode}: {done.stderr.strip()}")
            continue
        given = dict(re.findall(r"^ran (\S+): (.*)$", done.stdout, re.M))
        for name, default, launcher in chapters(source):
            args = given.get(name)
            if args is None:
                failures.append(f"{case}: {name} did not run")
                continue
            if "--seed 7" not in args:
                failures.append(f"{case}: {name} did not get --seed 7: {args}")
            placed = re.search(r"--devices (\d+) --towers-per-device (\d+)", args)
            if default == "one":
                if "--devices" in args:
                    failures.append(f"{case}: single-device {name} got --devices: {args}")
                continue
            want_towers = towers or int(default)
            if name in hosts:
                check_mesh(case, name, args, want_towers, failures)
            if launcher:
                check_launched(case, name, done.stdout, args, want_towers, gpus, failures,
                               host=name in hosts)
                continue
            want = expected or ((1, want_towers) if gpus == 1 else (want_towers, 1))
            if not placed or (int(placed[1]), int(placed[2])) != want:
                failures.append(f"{case}: {name} got '{args}', expected --devices {want[0]} "
                                f"--towers-per-device {want[1]}")
            elif gpus and int(placed[1]) > gpus:
                failures.append(f"{case}: {name} asked for more GPUs than the {gpus} there are")
        check_simulated_only(case, source, done.stdout, gpus, towers, failures)
        check_table(case, done.stdout, source, failures)
        print(f"{case}: " + " / ".join(f"{k}: {v}" for k, v in given.items()))
    failures += without_mpiexec(source)
    helped = subprocess.run([str(source / "scripts/tutorial"), "--help"],
                            env=dict(os.environ, TOWERS_BIN="/nonexistent"),
                            capture_output=True, text=True, timeout=60)
    if helped.returncode != 0 or "scripts/tutorial --devices" not in helped.stdout:
        failures.append(f"--help: exit {helped.returncode}, not the tutorial's help: "
                        f"{helped.stdout[:200]}{helped.stderr[:200]}")
    refused = subprocess.run([str(source / "scripts/tutorial"), "--devices", "0"],
                             env=dict(os.environ, TOWERS_BIN="/nonexistent"),
                             capture_output=True, text=True, timeout=60)
    if refused.returncode != 2 or "--devices takes a positive number" not in refused.stderr:
        failures.append(f"--devices 0 was not refused with a message: {refused.stderr}")
    return verdict(failures)


if __name__ == "__main__":
    sys.exit(main())
