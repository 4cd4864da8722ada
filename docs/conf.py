"""Sphinx configuration of specproof's documentation (``sphinx-build -W -b html docs docs/_build/html``)."""

import shutil
from pathlib import Path

import specproof

project = "specproof"
author = "the specproof developers"
copyright = "2026, the specproof developers"
release = version = specproof.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# API reference: one page per module, generated from the numpydoc docstrings into generated/,
# emptied first so that a module renamed or removed leaves no stale page behind.
shutil.rmtree(Path(__file__).parent / "generated", ignore_errors=True)
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
# the tracer's NumPy stand-ins would otherwise show NumPy's docstrings, whose labels are not ours
autodoc_inherit_docstrings = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = f"specproof {release}"
html_theme_options = {"navigation_with_keys": False}


def _skip_type_aliases(app, what, name, obj, skip, options):
    """Type aliases (``Facts = dict[str, Any]``) are not classes: autodoc cannot format them as such."""
    import types
    import typing

    if isinstance(obj, (types.GenericAlias, typing._GenericAlias, types.UnionType)):  # noqa: SLF001
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_type_aliases)
