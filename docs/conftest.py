"""The documentation's examples run as tests: every ```python block of docs/*.md, doctest or code.

Sybil (https://sybil.readthedocs.io) reads the MyST pages; a page's blocks share one namespace, in
order. ``% invisible-code-block: python`` runs code the page does not show (calling the tests an
example defines); ``% skip: start if(torch_missing, ...)`` skips examples that need torch when
the ``models`` extra is not installed.
"""

import importlib.util
from doctest import ELLIPSIS, NORMALIZE_WHITESPACE

from sybil import Sybil
from sybil.parsers.myst import PythonCodeBlockParser, SkipParser

collect_ignore = ["conf.py", "_build", "generated"]


def _setup(namespace):
    namespace["torch_missing"] = importlib.util.find_spec("torch") is None


pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(doctest_optionflags=ELLIPSIS | NORMALIZE_WHITESPACE), SkipParser()],
    patterns=["*.md"],
    setup=_setup,
).pytest()
