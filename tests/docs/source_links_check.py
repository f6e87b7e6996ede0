# SPDX-License-Identifier: MIT
"""Files named on a page link to their source: ctest docs.SourceLinks.

    source_links_check.py SOURCE_DIR HTML_DIR

On every built page: each inline literal that is the path of a file of the checkout
(under docs/_ext/towers_sources.py's roots) is inside a link, each such link leads to
_code/PATH.html, that page exists and shows the file's current text. Prints "docs not
built" and exits 0 (ctest: skipped) when there is no HTML.
"""
import html
import re
import sys
from pathlib import Path

from check_report import verdict

ROOTS = ("chapters/", "src/", "kernels/", "tests/", "scripts/", "exercises/", "bench/",
         "cmake/", "fuzz/", "docs/", ".ci/")
LITERAL = re.compile(r'(<a class="towers-source-link[^"]*" href="([^"]+)">)?'
                     r'<code class="docutils literal notranslate">(.*?)</code>', re.S)


def main(source, html_dir):
    pages = sorted(p for p in html_dir.rglob("*.html")
                   if not {"_code", "_static", "_sources"} & set(p.relative_to(html_dir).parts))
    if not pages:
        print("docs not built")
        return 0
    problems, links = [], 0
    for page in pages:
        for match in LITERAL.finditer(page.read_text(errors="replace")):
            text = html.unescape(re.sub(r"<[^>]+>", "", match.group(3))).strip()
            is_file = text.startswith(ROOTS) and (source / text).is_file()
            where = page.relative_to(html_dir)
            if is_file and not match.group(1):
                problems.append(f"{where}: `{text}` names a file but links nowhere")
            if match.group(1):
                links += 1
                target = (page.parent / match.group(2)).resolve()
                if not target.is_file():
                    problems.append(f"{where}: `{text}` links to {match.group(2)}, not built")
                    continue
                body = html.unescape(re.sub(r"<[^>]+>", "", target.read_text()))
                lines = [l for l in (source / text).read_text(errors="replace").splitlines()
                         if l.strip()]
                if not is_file or any(l.strip() not in body for l in lines[:40]):
                    problems.append(f"{where}: {match.group(2)} does not show {text}")
    return verdict(problems, f"{len(pages)} page(s), {links} source link(s) checked",
                   checked=links, nothing_checked="no source links at all")


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
