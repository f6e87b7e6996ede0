# SPDX-License-Identifier: MIT
# Sphinx configuration for the towers docs: MyST Markdown pages, Breathe over Doxygen XML,
# and the outputs of this build's programs (docs/_ext/towers_generated.py).
#
# Build with `cmake --build build --target docs` (docs/CMakeLists.txt), which sets
# TOWERS_DOCS_XML and TOWERS_DOCS_GENERATED. Run by hand, sphinx-build falls back to
# build/docs/..., so build the docs target once first. Use the Debian sphinx-build
# (/usr/bin/sphinx-build): `python3 -m sphinx` may find a python without Sphinx.
import os
import sys
from pathlib import Path

docs_dir = Path(__file__).resolve().parent
sys.path.insert(0, str(docs_dir / "_ext"))
default_build = docs_dir.parent / "build" / "docs"

project = "towers"
author = "the towers authors"
copyright = "the towers authors (MIT)"

extensions = ["breathe", "myst_parser", "towers_generated"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]

primary_domain = "cpp"
highlight_language = "cpp"
# Kernel signatures carry CUDA qualifiers (and TOWERS_HD, kernels/common.hpp); the C++
# domain must know them as attributes or Breathe cannot parse those declarations.
cpp_id_attributes = ["__global__", "__device__", "__host__", "__forceinline__", "TOWERS_HD"]
cpp_paren_attributes = ["__launch_bounds__"]

breathe_projects = {"towers": os.environ.get("TOWERS_DOCS_XML",
                                             str(default_build / "doxygen" / "xml"))}
breathe_default_project = "towers"
breathe_default_members = ("members",)

# The checkout: the summary tables read each key's meaning from the chapter READMEs.
towers_source_dir = str(Path(__file__).resolve().parent.parent)

# Where run_program.cmake wrote each program's output, timeline and stamp.
towers_generated_dir = os.environ.get("TOWERS_DOCS_GENERATED",
                                      str(default_build / "generated"))

html_theme = "sphinx_rtd_theme"
html_static_path = ["_static"]
html_css_files = ["towers.css"]
html_title = "towers: are the towers parallel?"
