"""Sphinx configuration of veil's user guide and API reference.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (warnings are errors; the
test ``tests/test_docs_build.py`` runs exactly this in CI). The guides are the Markdown pages of
this folder (read with MyST); the API reference is generated from the numpy-style docstrings of
every public module (numpydoc). The tutorials in ``tutorials/`` are MyST-Markdown notebooks that
myst-nb executes on every build (``nb_execution_mode = "force"``) on the real data of
``../shared/data`` (``$VEIL_SHARED/data`` when set); an error or a failed ``assert`` in any cell
fails the build.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src")))

import veil  # noqa: E402

project = "veil"
author = "veil developers"
copyright = "2026, veil developers"
release = veil.__version__
version = veil.__version__

extensions = [
    "myst_nb",          # MyST Markdown for the guides, and executed notebooks for the tutorials
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "notebooks/*.ipynb_checkpoints"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# Guides link to source files of the repository (benchmarks/..., examples/...): not documents.
suppress_warnings = ["myst.xref_missing"]

# Tutorials: executed on every build, in their own folder (relative paths work), one kernel
# each; any exception (a failed assert included) fails the build.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 180
nb_execution_show_tb = True
nb_merge_streams = True

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"   # the numpy-style "Parameters" sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "alabaster"
html_title = f"veil {release}"
html_static_path: list[str] = []
