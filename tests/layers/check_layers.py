#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when a lower layer includes a header of a higher one (the order: src/LAYERS).

    check_layers.py ROOT [LAYERS]

Reads every #include "..." of the files under the folders LAYERS names, resolves it the
way the build does (against the including file's folder, ROOT/src and ROOT), and reports
each include whose header belongs to a layer listed after the including file's own.
Includes that resolve to no file of the tree (system and library headers) are skipped.
Exit status 1 with one line per violation, 0 with a one-line count otherwise.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
ANY_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
SOURCES = (".hpp", ".cpp", ".cuh", ".cu", ".h")


def read_layers(path):
    """(rank of each path prefix, [(including prefix, included header)] allowed,
    [(including prefix, header prefix)] forbidden whatever the layers say)."""
    ranks, allowed, forbidden = {}, [], []
    for line in open(path, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("forbid "):
            who, _, what = line[len("forbid "):].partition("->")
            if not what.strip():
                sys.exit(f"{path}: 'forbid' needs '<path> -> <header prefix>': {line}")
            forbidden.append((who.strip(), what.strip()))
            continue
        if line.startswith("allow "):
            who, _, what = line[len("allow "):].partition("->")
            if not what.strip():
                sys.exit(f"{path}: 'allow' needs '<path> -> <header>': {line}")
            allowed.append((who.strip(), what.strip()))
            continue
        rank = len(set(ranks.values()))
        for prefix in line.split():
            if prefix in ranks:
                sys.exit(f"{path}: {prefix} is named twice")
            ranks[prefix] = rank
    return ranks, allowed, forbidden


def layer_of(rel, ranks):
    """(prefix, rank) of the longest prefix of `rel` in ranks, or None."""
    best = None
    for prefix, rank in ranks.items():
        if rel == prefix or rel.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, rank)
    return best


def resolve(root, including_rel, header):
    for base in (os.path.dirname(including_rel), "src", ""):
        rel = os.path.normpath(os.path.join(base, header))
        if os.path.isfile(os.path.join(root, rel)):
            return rel
    return None


def files_per_prefix(root, ranks):
    """{prefix: number of source files that belong to it} (each file to its longest prefix):
    the docs' layer table (towers-layers on the API page) shows the tree by layer with it."""
    counts = {prefix: 0 for prefix in ranks}
    for prefix in ranks:
        top = os.path.join(root, prefix)
        paths = [prefix] if os.path.isfile(top) else [
            os.path.relpath(os.path.join(d, f), root)
            for d, _, fs in os.walk(top) for f in fs if f.endswith(SOURCES)]
        for rel in paths:
            mine = layer_of(rel, ranks)
            if mine and mine[0] == prefix:
                counts[prefix] += 1
    return counts


def violations(root, ranks, allowed, forbidden=()):
    found, files = [], 0
    for prefix in sorted(ranks):
        top = os.path.join(root, prefix)
        if os.path.isfile(top):
            paths = [prefix]
        else:
            paths = [os.path.relpath(os.path.join(d, f), root)
                     for d, _, fs in os.walk(top) for f in fs if f.endswith(SOURCES)]
        for rel in sorted(paths):
            mine = layer_of(rel, ranks)
            if mine is None or mine[0] != prefix:
                continue  # counted under its longer prefix
            files += 1
            text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
            for match in ANY_INCLUDE.finditer(text):
                for who, what in forbidden:
                    if (rel + "/").startswith(who.rstrip("/") + "/") and match.group(1).startswith(what):
                        line = text.count("\n", 0, match.start()) + 1
                        found.append(f"{rel}:{line}: {who} may not include {match.group(1)} "
                                     f"(src/LAYERS: forbid {who} -> {what})")
            for match in INCLUDE.finditer(text):
                header = resolve(root, rel, match.group(1))
                theirs = header and layer_of(header, ranks)
                if not theirs or theirs[1] <= mine[1]:
                    continue
                if any((rel + "/").startswith(who.rstrip("/") + "/") and header == what
                       for who, what in allowed):
                    continue
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{rel}:{line}: {mine[0]} (layer {mine[1]}) includes {header} "
                             f"of {theirs[0]} (layer {theirs[1]}), a higher layer")
    return found, files


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    root = argv[1]
    ranks, allowed, forbidden = read_layers(argv[2] if len(argv) == 3
                                            else os.path.join(root, "src", "LAYERS"))
    found, files = violations(root, ranks, allowed, forbidden)
    for v in found:
        print(v)
    print(f"layers: {len(found)} violation(s) in {files} files, {len(set(ranks.values()))} layers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
