# SPDX-License-Identifier: MIT
"""docs/_ext/towers_generated.py's key_meanings (the meaning column of ```{towers-summary}```)
on planted chapter READMEs: a row of one key, a row of several keys of one meaning
(`a`, `b`), a key with a placeholder (`plan_<category>_bytes`) that covers the names a page
asks for but not a name its own README defines in a row of its own, and the run's own
chapter winning over an earlier chapter that defines the same key.

    /usr/bin/python3 key_meanings_test.py SOURCE_DIR    (needs Sphinx: prints "no sphinx"
                                                         and exits 0 where it is missing)
"""
import sys
import tempfile
from pathlib import Path

READMES = {
    "02_early": "| key | meaning |\n|---|---|\n| `step_ms` | early's step |\n"
                "| `plan_other_bytes` | early's other |\n",
    "11_mesh": "| key | meaning |\n|---|---|\n"
               "| `plan_<category>_bytes` | the plan's bytes of a category |\n"
               "| `plan_sum_bytes` | the sum of those |\n"
               "| `wire_data_bytes`, `wire_tensor_bytes` | bytes per dimension |\n"
               "| `step_ms` | the mesh's step \\| its mean |\n",
}


def main():
    sys.path.insert(0, str(Path(sys.argv[1], "docs", "_ext")))
    try:
        from towers_generated import key_meanings
    except ImportError as error:
        print(f"no sphinx ({error}): skipped")
        return 0
    with tempfile.TemporaryDirectory() as root:
        for chapter, text in READMES.items():
            Path(root, "chapters", chapter).mkdir(parents=True)
            Path(root, "chapters", chapter, "README.md").write_text(text)
        asked = ["plan_parameters_bytes", "plan_sum_bytes", "plan_other_bytes"]
        mesh = key_meanings(root, "11_mesh_4x2x1", asked)
        early = key_meanings(root, "02_early", asked)
    expected = [
        (mesh, "plan_parameters_bytes", "the plan's bytes of a category"),
        (mesh, "plan_sum_bytes", "the sum of those"),  # its own row, not the placeholder's
        (mesh, "plan_other_bytes", "the plan's bytes of a category"),  # own chapter first
        (mesh, "wire_data_bytes", "bytes per dimension"),
        (mesh, "wire_tensor_bytes", "bytes per dimension"),
        (mesh, "step_ms", "the mesh's step | its mean"),
        (early, "step_ms", "early's step"),
        (early, "plan_other_bytes", "early's other"),
        (early, "plan_parameters_bytes", "the plan's bytes of a category"),
    ]
    failures = [f"{key}: {found.get(key)!r}, expected {want!r}"
                for found, key, want in expected if found.get(key) != want]
    if "plan_gradients_bytes" in mesh:  # not asked for: a placeholder names no key itself
        failures.append("plan_gradients_bytes resolved though no page asked for it")
    for failure in failures:
        print(failure)
    print("key_meanings: " + ("FAILED" if failures else f"{len(expected)} meanings as expected"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
