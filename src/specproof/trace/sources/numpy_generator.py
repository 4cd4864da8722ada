"""NumPy under the tracer's control: ``random``, ``uniform`` and ``choice`` of every generator the sampler uses.

:class:`TracedGenerator` is the ``Generator`` :func:`~specproof.trace.tracer.trace` hands the sampler
(``numpy_rng=``) and puts in place of every ``Generator`` the sampler reaches (a module-level
``np.random.default_rng(0)``, a closure's, an argument's: see :mod:`specproof.trace.control`);
:class:`TracedRandomState` does the same for ``RandomState`` instances and NumPy's legacy global functions
(``np.random.rand``, ``random_sample``, ``uniform``, ``choice``, ``randint``). ``np.random.default_rng()``
called inside a run returns a traced generator; with a seed it is refused (a sampler that seeds itself).
The other random methods are refused, naming the call and its line."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from specproof.trace.core import (
    _ACTIVE,
    MAX_CATEGORIES,
    SamplerRaised,
    UncontrolledRandomness,
    UnmodelledRandomness,
    _call_site,
    _draw_categorical,
    _fraction_weights,
    _refuser,
    _run,
    _uniform_values,
)
from specproof.trace.sources.base import Patcher, Source

_NUMPY_LEGACY = (
    "rand",
    "randn",
    "random",
    "random_sample",
    "ranf",
    "sample",
    "choice",
    "randint",
    "random_integers",
    "uniform",
    "normal",
    "standard_normal",
    "exponential",
    "permutation",
    "shuffle",
    "binomial",
    "multinomial",
    "poisson",
    "gumbel",
    "beta",
    "gamma",
    "default_rng",
    "seed",
    "set_state",
)


class TracedGenerator(np.random.Generator):
    """The NumPy generator :func:`~specproof.trace.tracer.trace` hands the sampler (``numpy_rng=``) and puts in
    place of the generators the sampler reaches: ``random``, ``uniform``, ``choice`` and ``integers`` take their
    values from the trace; every other random method raises :class:`UnmodelledRandomness`."""

    def random(self, size=None, dtype=np.float64, out=None):
        dt = np.dtype(dtype)
        if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise UnmodelledRandomness(f"Generator.random with dtype {dt}: only float64 and float32 are modelled")
        bits = 53 if dt == np.float64 else 24
        if out is not None:  # NumPy fills out (its shape is the size)
            out = np.asarray(out)
            if size is not None and tuple(np.atleast_1d(size)) != out.shape:
                raise SamplerRaised("Generator.random: size and out have different shapes (the real call raises)")
            size = out.shape
        n = 1 if size is None else int(np.prod(size))
        vals = np.array(_uniform_values(_run(), n, bits, "Generator.random"), dtype=dt)
        if size is None:
            return dt.type(vals[0]) if dt == np.float32 else float(vals[0])
        vals = vals.reshape(size)
        if out is not None:
            out[...] = vals
            return out
        return vals

    def uniform(self, low=0.0, high=1.0, size=None):
        return _uniform("Generator.uniform", low, high, size)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        vals = _integers("Generator.integers", low, high, size, endpoint)
        return np.dtype(dtype).type(vals[0]) if size is None else np.array(vals, dtype=dtype).reshape(size)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        return _choice("Generator.choice", a, size, replace, p)


for _name in [
    n
    for n in dir(np.random.Generator)
    if not n.startswith("_") and n not in ("random", "uniform", "choice", "integers", "bit_generator", "spawn")
]:
    setattr(TracedGenerator, _name, _refuser(f"Generator.{_name}"))


class TracedRandomState(np.random.RandomState):
    """A legacy ``RandomState`` whose ``random_sample`` (``random``, ``rand``, ``ranf``, ``sample``), ``uniform``,
    ``choice`` and ``randint`` take their values from the trace; every other random method raises
    :class:`UnmodelledRandomness`. NumPy's global functions are bound to one of these while a trace runs."""

    def random_sample(self, size=None):
        n = 1 if size is None else int(np.prod(size))
        vals = np.array(_uniform_values(_run(), n, 53, "RandomState.random_sample"), dtype=np.float64)
        return float(vals[0]) if size is None else vals.reshape(size)

    def random(self, size=None):
        return self.random_sample(size)

    ranf = sample = random

    def rand(self, *args):
        return self.random_sample(None if not args else tuple(int(a) for a in args))

    def uniform(self, low=0.0, high=1.0, size=None):
        return _uniform("RandomState.uniform", low, high, size)

    def choice(self, a, size=None, replace=True, p=None):
        return _choice("RandomState.choice", a, size, replace, p)

    def randint(self, low, high=None, size=None, dtype=int):
        vals = _integers("RandomState.randint", low, high, size, False)
        return int(vals[0]) if size is None else np.array(vals, dtype=dtype).reshape(size)


def _uniform(call: str, low: Any, high: Any, size: Any) -> Any:
    """``size`` float64 uniforms on [low, high): the 2^-53 grid mapped by low + (high - low) * u."""
    if np.ndim(low) or np.ndim(high):
        raise UnmodelledRandomness(f"{call} with array bounds is not modelled")
    n = 1 if size is None else int(np.prod(size))
    u = np.array(_uniform_values(_run(), n, 53, call), dtype=np.float64)
    vals = np.float64(low) + (np.float64(high) - np.float64(low)) * u
    return float(vals[0]) if size is None else vals.reshape(size)


def _integers(call: str, low: Any, high: Any, size: Any, endpoint: bool) -> list[int]:
    """The draws of ``size`` integers uniform on [low, high) (``endpoint``: [low, high]), exactly."""
    if high is None:
        low, high = 0, low
    if np.ndim(low) or np.ndim(high):
        raise UnmodelledRandomness(f"{call} with array bounds is not modelled")
    low, high = int(low), int(high) + (1 if endpoint else 0)
    if not 0 < high - low <= MAX_CATEGORIES:
        raise UnmodelledRandomness(
            f"{call}: range [{low}, {high}) has {high - low} values; 1 to {MAX_CATEGORIES} are modelled"
        )
    values = tuple(range(low, high))
    probs = tuple(Fraction(1, high - low) for _ in values)
    run = _run()
    n = 1 if size is None else int(np.prod(size))
    return [_draw_categorical(run, values, probs, call) for _ in range(n)]


def _choice(call: str, a: Any, size: Any, replace: bool, p: Any) -> Any:
    n_out = 1 if size is None else int(np.prod(size))
    if not replace and n_out > 1:
        raise UnmodelledRandomness(f"{call} without replacement (size > 1) is not modelled")
    pool = tuple(range(int(a))) if np.ndim(a) == 0 else tuple(np.asarray(a).tolist())
    if not pool:
        raise UnmodelledRandomness(f"{call}: empty population")
    if len(pool) > MAX_CATEGORIES:
        raise UnmodelledRandomness(f"{call}: {len(pool)} categories; at most {MAX_CATEGORIES} are modelled")
    if p is None:
        probs = tuple(Fraction(1, len(pool)) for _ in pool)
    else:
        if len(p) != len(pool):
            raise UnmodelledRandomness(f"{call}: p has {len(p)} entries for {len(pool)} categories")
        probs = _fraction_weights(p, call)
    run = _run()
    vals = [_draw_categorical(run, pool, probs, call) for _ in range(n_out)]
    return vals[0] if size is None else np.array(vals).reshape(size)


_RS_MODELLED = ("random_sample", "random", "ranf", "sample", "rand", "uniform", "choice", "randint")
for _name in [
    n
    for n in dir(np.random.RandomState)
    if not n.startswith("_") and n not in _RS_MODELLED and n not in ("get_state", "set_state", "seed")
]:
    setattr(TracedRandomState, _name, _refuser(f"RandomState.{_name}"))

#: The legacy global functions while a trace runs (bound methods of one traced RandomState).
_LEGACY = TracedRandomState(0)
_ORIGINAL_DEFAULT_RNG = np.random.default_rng


def _default_rng(seed: Any = None) -> np.random.Generator:
    """``np.random.default_rng`` while a trace runs: inside a run, a traced generator (seeded: refused)."""
    if not _ACTIVE:
        return _ORIGINAL_DEFAULT_RNG(seed)
    if seed is not None and not isinstance(seed, TracedGenerator):
        where = _call_site(2)
        raise UncontrolledRandomness(
            f"the sampler seeds a NumPy generator (numpy.random.default_rng({seed!r}){f' at {where}' if where else ''}): "
            "a sampler that seeds itself draws the same values on every call, and its law is not that of its draws; "
            "build the generator once, outside the sampler (a module-level generator is controlled), or take the "
            "one trace() provides (numpy_rng=...)",
            "numpy.random.default_rng",
            where,
        )
    return seed if seed is not None else TracedGenerator(np.random.PCG64(0))


class NumpySource(Source):
    """NumPy: ``random``, ``uniform`` and ``choice`` of the provided and the rebound generators
    (:class:`TracedGenerator`), NumPy's legacy global functions ``rand``, ``random_sample``, ``uniform``,
    ``choice``, ``randint`` (:class:`TracedRandomState`); the rest refused; NumPy's legacy global generator
    watched."""

    name = "numpy"
    module = None
    assumptions = {
        "Generator.random": "numpy Generator.random: k/2^53 (float64) or k/2^24 (float32), k uniform on the grid",
        "Generator.uniform": "numpy Generator.uniform(a, b): a + (b - a) * k/2^53 in float64",
        "Generator.choice": "numpy Generator.choice: an exact categorical over p (Fraction(p_i) / sum), uniform "
        "without p; NumPy's own inverse-CDF search is not traced",
        "RandomState.random_sample": "numpy RandomState.random_sample / rand / random (and the global functions "
        "np.random.rand, random_sample, random): k/2^53, k uniform on the grid",
        "RandomState.uniform": "numpy RandomState.uniform(a, b) (and np.random.uniform): a + (b - a) * k/2^53 in "
        "float64",
        "RandomState.choice": "numpy RandomState.choice (and np.random.choice): an exact categorical over p "
        "(Fraction(p_i) / sum), uniform without p; NumPy's own inverse-CDF search is not traced",
        "Generator.integers": "numpy Generator.integers: exactly uniform on [low, high) ([low, high] with endpoint)",
        "RandomState.randint": "numpy RandomState.randint (and np.random.randint): exactly uniform on [low, high)",
    }

    def install(self, patcher: Patcher) -> None:
        for name in _NUMPY_LEGACY:
            if name in _RS_MODELLED:
                patcher.set(np.random, name, getattr(_LEGACY, name))
            elif name == "default_rng":
                patcher.set(np.random, name, _default_rng)
            else:
                patcher.set(np.random, name, _refuser(f"numpy.random.{name}", " (NumPy's global legacy generator)"))

    def state(self) -> tuple:
        name, keys, pos, has_gauss, cached = np.random.mtrand._rand.get_state(legacy=True)
        return np.asarray(keys).tobytes(), pos, has_gauss, cached
