"""Python's :mod:`random` module: refused (the names patched), its hidden instance's state watched."""

from __future__ import annotations

import random as _pyrandom

from specproof.trace.core import _refuser
from specproof.trace.sources.base import Patcher, Source

_PY_RANDOM = ("random", "uniform", "randint", "randrange", "choice", "choices", "sample", "shuffle", "gauss",
              "normalvariate", "expovariate", "getrandbits", "triangular", "betavariate", "binomialvariate",
              "randbytes", "seed", "setstate")


class PythonRandomSource(Source):
    """Python's :mod:`random`: its module functions refused; the module's hidden instance watched."""

    name = "python-random"
    module = None

    def install(self, patcher: Patcher) -> None:
        for name in _PY_RANDOM:
            patcher.set(_pyrandom, name, _refuser(f"random.{name}", " (Python's random module)"))

    def state(self) -> tuple:
        return _pyrandom.getstate()
