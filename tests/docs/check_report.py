# SPDX-License-Identifier: MIT
"""How the docs checks end: one `FAIL <what>` line per failure, then the exit status."""


def verdict(failures, summary=None, checked=None, nothing_checked=""):
    """Prints each failure, then `summary` (what was checked) if given; returns 1 when
    anything failed, or when `checked` is 0: a check that found nothing to check
    (`nothing_checked` says what was missing) must not pass; else 0."""
    for failure in failures:
        print("FAIL " + failure)
    if summary is not None:
        print(summary)
    if checked == 0:
        print("FAIL " + nothing_checked + ": the check found nothing to check")
        return 1
    return 1 if failures else 0
