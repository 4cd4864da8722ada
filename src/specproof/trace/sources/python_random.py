"""Python's :mod:`random` under the tracer's control: the module's functions and every ``random.Random``.

``random.random()`` is a uniform on the grid ``k / 2^53`` (CPython's ``genrand_res53``: ``(a * 2^26 + b) /
2^53`` from two 32-bit outputs, every k equally likely); the integer draws (``randrange``, ``randint``,
``choice``, ``shuffle``, ``sample``) go through ``Random._randbelow(n)``, exactly uniform on ``0 .. n - 1``
(rejection sampling on ``getrandbits``); ``uniform`` and ``choices`` are computed by CPython's own code from
``random()``. Both are patched on the class ``random.Random``, so a private instance the sampler keeps
(``rng = random.Random(0)`` at module level) is controlled too, and on the module (its functions are bound
methods of a hidden instance). The continuous distributions (``gauss``, ``expovariate``, ...), ``randbytes``,
large ``getrandbits``, seeding inside a run, and ``random.SystemRandom`` (``os.urandom``, also behind
:mod:`secrets`) are refused, naming the call and its line.
"""

from __future__ import annotations

import random as _pyrandom
import secrets
from fractions import Fraction
from typing import Any

from specproof.trace.core import (
    _ACTIVE,
    MAX_CATEGORIES,
    UncontrolledRandomness,
    UnmodelledRandomness,
    _call_site,
    _draw_categorical,
    _importing,
    _refuser,
    _run,
    _uniform_values,
)
from specproof.trace.sources.base import Patcher, Source

#: Methods of random.Random that are refused (continuous laws computed from random(), and seeding)
_PY_REFUSED = (
    "gauss",
    "normalvariate",
    "lognormvariate",
    "expovariate",
    "vonmisesvariate",
    "gammavariate",
    "betavariate",
    "paretovariate",
    "weibullvariate",
    "triangular",
    "binomialvariate",
    "randbytes",
)
_PY_SEEDING = ("seed", "setstate")

_ORIGINAL_RANDOM = _pyrandom.Random.random
_ORIGINAL_RANDBELOW = _pyrandom.Random._randbelow  # type: ignore[attr-defined]
_ORIGINAL_GETRANDBITS = _pyrandom.Random.getrandbits


def _random(self: Any = None) -> float:
    if not _ACTIVE or _importing():  # outside a run, or a module's import-time code: the real generator
        return _ORIGINAL_RANDOM(self if self is not None else _pyrandom._inst)
    return _uniform_values(_run(), 1, 53, "random.random")[0]


def _randbelow(self: Any, n: int) -> int:
    if not _ACTIVE or _importing():
        return _ORIGINAL_RANDBELOW(self, n)
    if not 0 < n <= MAX_CATEGORIES:
        where = _call_site(2)
        raise UnmodelledRandomness(
            f"random: an integer draw below {n}{f' at {where}' if where else ''} "
            f"(randrange, randint, choice, shuffle or sample): 1 to {MAX_CATEGORIES} values "
            "are modelled"
        )
    values = tuple(range(n))
    return _draw_categorical(_run(), values, (Fraction(1, n),) * n, "random.randrange")


def _getrandbits(self: Any = None, k: int = 0) -> int:
    if self is not None and not isinstance(self, _pyrandom.Random):  # the module function: getrandbits(k)
        self, k = None, self
    if not _ACTIVE or _importing():
        return _ORIGINAL_GETRANDBITS(self if self is not None else _pyrandom._inst, k)
    if not 0 <= k <= 16:
        where = _call_site(2)
        raise UnmodelledRandomness(
            f"random.getrandbits({k}){f' at {where}' if where else ''}: up to 16 bits are modelled"
        )
    values = tuple(range(1 << k))
    return _draw_categorical(_run(), values, (Fraction(1, 1 << k),) * len(values), "random.getrandbits")


def _seeding(name: str, module: bool = False) -> Any:
    original = getattr(_pyrandom.Random, name)

    def refuse(*args: Any, **kwargs: Any) -> None:
        call = (_pyrandom._inst, *args) if module else args
        seed = call[1] if len(call) > 1 else kwargs.get("a", kwargs.get("state"))
        if (
            not _ACTIVE or (name == "seed" and seed is None) or _importing()
        ):  # outside a run, or from the system's entropy
            return original(*call, **kwargs)
        where = _call_site(2)
        raise UncontrolledRandomness(
            f"the sampler seeds a Python random generator (random.{name}{f' at {where}' if where else ''}; "
            "random.Random(seed) seeds too): a sampler that seeds itself draws the same values on every call, and "
            "its law is not that of its draws; build the generator once, outside the sampler (a module-level "
            "random.Random is controlled)",
            f"random.{name}",
            where,
        )

    refuse.__name__ = name
    return refuse


def _system(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> None:
        where = _call_site(2)
        raise UncontrolledRandomness(
            f"the sampler draws from random.SystemRandom.{name}{f' at {where}' if where else ''} (os.urandom, "
            "also behind the secrets module): operating-system entropy cannot be replayed, so specproof does not "
            "model it; draw with random.random / a random.Random instance, NumPy or torch instead",
            f"random.SystemRandom.{name} (os.urandom)",
            where,
        )

    refuse.__name__ = name
    return refuse


class PythonRandomSource(Source):
    """Python's :mod:`random`: ``random()`` on the 2^-53 grid and the integer draws exactly uniform, for the module
    and every ``random.Random`` instance; the rest refused; the module's hidden instance watched."""

    name = "python-random"
    module = None
    assumptions = {
        "random.random": "random.random (the module's or a random.Random instance's): k/2^53, k uniform on the grid "
        "(CPython's genrand_res53); uniform(a, b) and choices() computed from it by CPython's own code",
        "random.randrange": "random.randrange, randint, choice, shuffle, sample (Random._randbelow(n)): exactly uniform "
        "on 0 .. n - 1 (CPython's rejection sampling on getrandbits is exact)",
        "random.getrandbits": "random.getrandbits(k), k <= 16: exactly uniform on 0 .. 2^k - 1",
    }

    def install(self, patcher: Patcher) -> None:
        cls = _pyrandom.Random
        patcher.set(cls, "random", _random)
        patcher.set(cls, "_randbelow", _randbelow)
        patcher.set(cls, "getrandbits", _getrandbits)
        patcher.set(_pyrandom, "random", _random)
        patcher.set(_pyrandom, "getrandbits", _getrandbits)
        for name in _PY_REFUSED:
            refuse = _refuser(f"random.{name}", " (a continuous law of random.random, not modelled)")
            patcher.set(cls, name, refuse)
            patcher.set(_pyrandom, name, refuse)
        for name in _PY_SEEDING:
            patcher.set(cls, name, _seeding(name))
            patcher.set(_pyrandom, name, _seeding(name, module=True))
        for name in ("random", "getrandbits", "randbytes", "_randbelow"):
            patcher.set(_pyrandom.SystemRandom, name, _system(name))
        # secrets.randbits is its SystemRandom's getrandbits bound at import, not looked up on the class
        patcher.set(secrets, "randbits", _system("getrandbits"))

    def state(self) -> tuple:
        return _pyrandom.getstate()
