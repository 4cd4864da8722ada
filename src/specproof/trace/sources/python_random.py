"""Python's :mod:`random` module: refused (the names patched)."""

from __future__ import annotations

_PY_RANDOM = ("random", "uniform", "randint", "randrange", "choice", "choices", "sample", "shuffle", "gauss",
              "normalvariate", "expovariate", "getrandbits", "triangular", "betavariate", "binomialvariate",
              "randbytes", "seed", "setstate")
