#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every test a page names exists: docs/reliability.md and docs/proofs.md back each promise
with test names (`Suite.Name`), and a name that no test carries (renamed, moved to another
suite, never written) is a promise nothing checks.

    tests/docs/test_names_check.py SOURCE_DIR [PAGE ...]   # default: the two pages above

A name (`Suite.Name`, or a CMake test such as `scripts.Name`) is found when a TEST, TEST_F or TEST_P of the sources defines it, or an add_test
NAME of a CMakeLists.txt (${var} in a CMake name matches anything; in a function that adds
`prefix.${name}`, its calls `function(Name ...)` name the tests); `Suite.Prefix*`
matches any test that starts so. Reads sources only, so a build without MPI or the
benchmarks checks the same names. Exit 1 listing each missing name with its page."""
import re
import sys
from pathlib import Path

PLACEHOLDERS = {"Suite.Name"}  # proofs.md explains its columns with it


def defined_tests(root):
    """(names of TEST/TEST_F/TEST_P, patterns of CMake add_test names) under `root`."""
    names, patterns = set(), []
    skip = {"build", ".git"}
    for path in root.rglob("*"):
        if skip & set(path.relative_to(root).parts) or not path.is_file():
            continue
        if path.suffix == ".cpp":
            for m in re.finditer(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)",
                                 path.read_text(errors="replace")):
                names.add(f"{m[1]}.{m[2]}")
        elif path.name == "CMakeLists.txt":
            text = path.read_text(errors="replace")
            # A function whose test is `prefix.${name}` (towers_script_test, towers_docs_check)
            # names its tests in its calls: `fn(Name ...)` adds prefix.Name.
            for fn in re.finditer(r"\bfunction\((\w+) name\b.*?\bendfunction\(\)", text, re.S):
                test = re.search(r"add_test\(\s*NAME\s+(\w+)\.\$\{name\}\s", fn[0])
                if test:
                    names.update(f"{test[1]}.{call[1]}"
                                 for call in re.finditer(rf"\b{fn[1]}\(\s*(\w+)", text[fn.end():]))
                text = text.replace(fn[0], "")
            for m in re.finditer(r"add_test\(\s*NAME\s+(\S+)", text):
                patterns.append(re.compile(re.sub(r"\\\$\\\{\w+\\\}", ".+", re.escape(m[1])) + "$"))
    return names, patterns


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: tests/docs/test_names_check.py SOURCE_DIR [PAGE ...]")
    root = Path(sys.argv[1])
    pages = sys.argv[2:] or ["docs/reliability.md", "docs/proofs.md"]
    names, patterns = defined_tests(root)
    missing = []
    for page in pages:
        text = (root / page).read_text()
        for name in sorted(set(re.findall(r"`([A-Za-z]\w*\.[A-Z][\w.*]*)`", text)) - PLACEHOLDERS):
            if name.endswith("*"):
                prefix = name[:-1]
                found = any(n.startswith(prefix) for n in names) or \
                    any(p.match(prefix + "x") for p in patterns)
            else:
                found = name in names or any(p.match(name) for p in patterns)
            if not found:
                missing.append(f"{page}: `{name}` names no test (renamed or moved?)")
    for line in missing:
        print(line)
    if missing:
        sys.exit(1)
    print(f"every test named in {', '.join(pages)} exists")


if __name__ == "__main__":
    main()
