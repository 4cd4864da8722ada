"""pytest's collection from the repository root: README's test command also runs the doctests of
src/specproof (``--doctest-modules``). The numba kernel's module imports numba at its top; without
the fast extra (README's install does not bring it) it is not collected, as its tests skip."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("numba") else ["src/specproof/laws/numeric_numba.py"]
