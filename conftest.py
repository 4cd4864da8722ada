"""pytest's collection from the repository root: README's test command also runs the doctests of
src/specproof (``--doctest-modules``). The numba kernel's module imports numba at its top; without
the fast extra (README's install does not bring it) it is not collected, as its tests skip. The tracer's
modules' examples run torch samplers: without torch (an install without the models extra) they are not
collected either; their tests skip."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("numba") else ["src/specproof/laws/numeric_numba.py"]
if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["src/specproof/trace/*"]
