# SPDX-License-Identifier: MIT
"""Every timeline figure on a page offers the Chrome traces it was drawn from:
ctest docs.TracesDownloadable.

    trace_downloads_check.py HTML_DIR GENERATED_DIR

For each built page with a timeline figure (an <svg data-traces="SHA ...">, drawn by
```{towers-steps}```), the page links one downloadable NAME.json per trace; each link's
file exists in the HTML output, parses as a Chrome trace (traceEvents with complete "X"
slices) and is byte for byte GENERATED_DIR/NAME.json, this build's run. Prints
"docs not built" and exits 0 (ctest: skipped) when there is no HTML.
"""
import json
import re
import sys
from pathlib import Path

from check_report import verdict

FIGURE = re.compile(r'<svg\b[^>]*?\bdata-traces="([^"]*)"')
DOWNLOAD = re.compile(r'class="reference download internal" download="" href="([^"]+\.json)"')


def main(html_dir, generated_dir):
    pages = sorted(html_dir.rglob("*.html"))
    if not pages:
        print("docs not built")
        return 0
    problems, figures, links_seen = [], 0, 0
    for page in pages:
        text = page.read_text(errors="replace")
        traces = sum(len(m.split()) for m in FIGURE.findall(text))
        if not traces:
            continue
        figures += 1
        links = set(DOWNLOAD.findall(text))
        if len(links) < len(set(" ".join(FIGURE.findall(text)).split())):
            problems.append(f"{page.relative_to(html_dir)}: {traces} trace(s) in figures, "
                            f"{len(links)} distinct download link(s)")
        for href in links:
            links_seen += 1
            path = (page.parent / href).resolve()
            if not path.is_file():
                problems.append(f"{page.relative_to(html_dir)}: {href} is not in the HTML")
                continue
            try:
                events = json.loads(path.read_text())["traceEvents"]
            except (ValueError, KeyError) as error:
                problems.append(f"{href}: not a Chrome trace ({error})")
                continue
            if not any(e.get("ph") == "X" for e in events):
                problems.append(f"{href}: no complete (X) slices")
            source = generated_dir / path.name
            if not source.is_file() or source.read_bytes() != path.read_bytes():
                problems.append(f"{href}: not this build's {source}")
    return verdict(problems,
                   f"{figures} page(s) with timeline figures, {links_seen} trace download(s) checked",
                   checked=figures, nothing_checked="no page has a timeline figure")


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
