# SPDX-License-Identifier: MIT
"""Files named in the text link to their source (registered by towers_generated).

A page that says `chapters/03_stream_towers/main.cpp` means the reader to open it. Every
inline literal that is the path of a file of this checkout (under one of SOURCE_ROOTS)
becomes a link to a page of that file's source, highlighted, with numbered lines
(_code/PATH.html in the HTML output, written when the build finishes). A literal that
only looks like a path (a file the program writes, `build/bin/...`) stays plain text.
tests/docs/source_links_check.py checks the links against the checkout.
"""
from html import escape
from pathlib import Path

from docutils import nodes
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound
from sphinx.util.osutil import relative_uri

SOURCE_ROOTS = ("chapters/", "src/", "kernels/", "tests/", "scripts/", "exercises/",
                "bench/", "cmake/", "fuzz/", "docs/", ".ci/")
CODE_DIR = "_code"


def source_file(app, text):
    """The checkout's file that TEXT names, or None."""
    if not text.startswith(SOURCE_ROOTS) or any(c in text for c in " *?<>{}$"):
        return None
    root = Path(app.config.towers_source_dir).resolve()
    path = (root / text).resolve()
    if root not in path.parents or not path.is_file():
        return None
    return path.relative_to(root).as_posix()


def link_sources(app, doctree, docname):
    if app.builder.format != "html":
        return
    linked = app.builder.__dict__.setdefault("towers_sources", set())
    for literal in list(doctree.findall(nodes.literal)):
        if isinstance(literal.parent, nodes.reference):
            continue
        name = source_file(app, literal.astext().strip())
        if name is None:
            continue
        uri = relative_uri(app.builder.get_target_uri(docname), f"{CODE_DIR}/{name}.html")
        link = nodes.reference("", "", internal=True, refuri=uri,
                               classes=["towers-source-link"])
        literal.replace_self(link)
        link += literal
        linked.add(name)


def note_source_dependencies(app, doctree):
    """A page that names a file depends on it: when the file changes, an incremental build
    reads the page again, links it again and so rewrites the file's source page (without
    this, only a fresh build refreshed the _code pages)."""
    root = Path(app.config.towers_source_dir)
    for literal in doctree.findall(nodes.literal):
        name = source_file(app, literal.astext().strip())
        if name is not None:
            app.env.note_dependency(str(root / name))


def write_source_pages(app, exception):
    if exception or app.builder.format != "html":
        return
    root = Path(app.config.towers_source_dir)
    formatter = HtmlFormatter(linenos="inline", anchorlinenos=True, lineanchors="L",
                              style="default")  # inline: a wide line scrolls its <pre>
    style = formatter.get_style_defs(".highlight")
    for name in sorted(app.builder.__dict__.get("towers_sources", ())):
        text = (root / name).read_text(errors="replace")
        try:
            lexer = get_lexer_for_filename(name, stripnl=False)
        except ClassNotFound:
            lexer = TextLexer(stripnl=False)
        out = Path(app.outdir, CODE_DIR, name + ".html")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(name)}</title><style>{style}\n"
            "body { font-family: sans-serif; margin: 1em; }"
            " .highlight pre { font-size: 13px; margin: 0; overflow-x: auto; }"
            " .linenos { color: #999; user-select: none; }</style></head><body>"
            f"<h1 style=\"font-size: 1.2em\"><code>{escape(name)}</code></h1>"
            "<p>This checkout's file, as the docs were built.</p>"
            f"{highlight(text, lexer, formatter)}</body></html>\n")


def setup(app):
    app.connect("doctree-read", note_source_dependencies)
    app.connect("doctree-resolved", link_sources)
    app.connect("build-finished", write_source_pages)
