"""NumPy under the tracer's control: the generator :func:`~specproof.trace.tracer.trace` provides
(``random``, ``uniform``, ``choice``) and NumPy's legacy global functions (refused)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from specproof.trace.sources.base import Patcher, Source
from specproof.trace.core import (
    MAX_CATEGORIES,
    SamplerRaised,
    UnmodelledRandomness,
    _draw_categorical,
    _fraction_weights,
    _refuser,
    _run,
    _uniform_values,
)

_NUMPY_LEGACY = ("rand", "randn", "random", "random_sample", "ranf", "sample", "choice", "randint",
                 "random_integers", "uniform", "normal", "standard_normal", "exponential", "permutation",
                 "shuffle", "binomial", "multinomial", "poisson", "gumbel", "beta", "gamma", "default_rng",
                 "seed", "set_state")


class TracedGenerator(np.random.Generator):
    """The NumPy generator :func:`trace` hands the sampler: ``random``, ``uniform`` and ``choice``
    take their values from the trace; every other random method raises
    :class:`UnmodelledRandomness`."""

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
        if np.ndim(low) or np.ndim(high):
            raise UnmodelledRandomness("Generator.uniform with array bounds is not modelled")
        n = 1 if size is None else int(np.prod(size))
        u = np.array(_uniform_values(_run(), n, 53, "Generator.uniform"), dtype=np.float64)
        vals = np.float64(low) + (np.float64(high) - np.float64(low)) * u
        return float(vals[0]) if size is None else vals.reshape(size)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        call = "Generator.choice"
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


for _name in [n for n in dir(np.random.Generator) if not n.startswith("_")
              and n not in ("random", "uniform", "choice", "bit_generator", "spawn")]:
    setattr(TracedGenerator, _name, _refuser(f"Generator.{_name}"))


class NumpySource(Source):
    """NumPy: the provided generator's ``random``, ``uniform`` and ``choice`` modelled (:class:`TracedGenerator`);
    NumPy's legacy global functions refused; NumPy's legacy global generator watched."""

    name = "numpy"
    module = None
    assumptions = {
        "Generator.random": "numpy Generator.random: k/2^53 (float64) or k/2^24 (float32), k uniform on the grid",
        "Generator.uniform": "numpy Generator.uniform(a, b): a + (b - a) * k/2^53 in float64",
        "Generator.choice": "numpy Generator.choice: an exact categorical over p (Fraction(p_i) / sum), uniform "
                            "without p; NumPy's own inverse-CDF search is not traced",
    }

    def install(self, patcher: Patcher) -> None:
        for name in _NUMPY_LEGACY:
            hint = ("; take the generator trace() provides (numpy_rng=...)" if name == "default_rng"
                    else " (NumPy's global legacy generator)")
            patcher.set(np.random, name, _refuser(f"numpy.random.{name}", hint))

    def state(self) -> tuple:
        name, keys, pos, has_gauss, cached = np.random.mtrand._rand.get_state(legacy=True)
        return keys.tobytes(), pos, has_gauss, cached

