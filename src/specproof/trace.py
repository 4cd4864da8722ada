"""The exact law of a real sampler, by controlled re-execution.

:func:`trace` runs a sampler callable (PyTorch or NumPy code) many times while specproof
supplies every random number it asks for, and enumerates the outcomes with exact probabilities
(:class:`~fractions.Fraction`). Nothing is sampled: each branch's probability is a count of grid
points or an exact categorical weight.

What is intercepted, and how each call is modelled
==================================================

============================== =================================================================
``torch.rand``,                each element is a uniform on the float grid of its dtype:
``torch.rand_like``            float32 ``k / 2^24``, float64 ``k / 2^53``, k uniform in
                               [0, 2^b) (measured: PyTorch CPU returns multiples of 2^-24 in
                               [0, 1), 0 included); other dtypes are refused
``Tensor.uniform_(a, b)``      ``a + (b - a) * (k / 2^b)``, computed in the tensor's dtype
``torch.multinomial``,         an exact categorical over the float weights it was given:
``Tensor.multinomial``         ``Fraction(w_i) / sum_j Fraction(w_j)`` per row; without
                               replacement, each later draw over the weights left. PyTorch's
                               own kernel (an exponential race in float arithmetic) is NOT
                               traced: its law is not exactly proportional to the weights
``torch.randint``              each element uniform over ``[low, high)`` (at most 65,536 values)
NumPy ``Generator.random``     float64 ``k / 2^53`` (``(next_uint64 >> 11) * 2^-53``); float32
                               ``k / 2^24``
NumPy ``Generator.uniform``    ``low + (high - low) * (k / 2^53)`` in float64
NumPy ``Generator.choice``     an exact categorical over ``p`` (``Fraction(p_i) / sum``), or
                               uniform over ``a`` without ``p``; with replacement only (NumPy's
                               own inverse-CDF search is not traced)
============================== =================================================================

Any other source of randomness is refused with :class:`UnmodelledRandomness`, naming the call:
``torch.randn``, ``torch.normal``, ``torch.bernoulli``, ``Tensor.exponential_`` and the other
random tensor methods, every other NumPy ``Generator`` method, NumPy's legacy global functions
(``np.random.rand`` ...), ``np.random.default_rng`` (the sampler must take the generator specproof
provides), and Python's :mod:`random`. As a catch-all, the states of PyTorch's default generator,
NumPy's legacy global generator, Python's :mod:`random` and the provided NumPy generator's bit
generator are compared before and after every run: a sampler that drew from one of them through
a path that was not intercepted (a C++ kernel, a function bound before tracing) is refused.
Not seen: a private generator the sampler builds itself and draws from through a path that is not
patched (a ``random.Random`` or NumPy ``RandomState`` instance of its own). A ``generator=``
argument of the intercepted torch calls is ignored: the value comes from the trace either way.

How a uniform's probability is found
====================================
The random numbers a run consumes form a sequence of *slots* (one per tensor element, in call
order). A run is replayed from a *prefix*: fixed values for the first slots, defaults after
(uniforms 0, categoricals their first possible value). For a uniform slot the tracer looks at
the run's *signature* (its output, and the kind and parameters of every later random request)
as a function of the grid index k: it evaluates it at ``0, N/4, N/2, 3N/4, N - 1``
(``N = 2^b``) and bisects between probes whose signatures differ, to the exact breakpoints
(about b re-runs per breakpoint). Each maximal interval of equal signature is a *piece*; the
law of the rest of the run is computed recursively at both ends and the middle of each piece, and if they
differ the piece is bisected again on that law. The piece's probability is its number of grid
points over N.

Modelling assumption (stated in every result): on each piece found this way the rest of the run
behaves the same (the sampler depends on a uniform only through comparisons with thresholds, so
every outcome occupies one interval of the grid). A sampler whose outcome takes the same value
on two separated intervals of a probed range (not monotone) is refused with
:class:`NotPiecewiseConstant`; an interval narrower than the probe spacing whose both neighbours
give the same outcome cannot be seen and is not claimed to be.

Cost
====
One run per probe (5 per uniform), about b runs per breakpoint (24 for float32), the law of the
rest at both ends of every piece, and one run per category of every categorical draw: the
number of runs is exponential in the number of random draws. A single verification position (a
draft from V tokens, one coin, a residual draw) costs about ``V * (29 + 4 V)`` runs at most
(V = 64: about 11,000 runs, measured). A block verifier that draws its gamma drafts first (as
transformers' does) is traced over every drafted block, ``V^gamma`` of them, each with about
``4^gamma`` coin pieces: measured 829 runs at V = 16, gamma = 1; 6,249 at V = 8, gamma = 2;
13,717 at V = 4, gamma = 3; 37,841 at V = 16, gamma = 2 (0.4 to 10 ms a run on a loaded 2-core
machine). V = 64 with gamma = 4 is out of reach for a black box (the law alone can have 64^5
blocks); compute such a rule's law with :func:`specproof.audit.block_law` instead. ``max_runs``
bounds the work.

Not thread-safe: the patches are process-wide while a trace runs.

References
----------
The float grids: PyTorch ``aten/src/ATen/core/TransformationHelper.h`` (``uniform_real``) and
NumPy ``numpy/random/src/distributions/distributions.c`` (``next_double``); measured in the
project's NOTES. The verifier these samplers implement: Leviathan et al. 2023, Algorithm 1.

Examples
--------
>>> import torch
>>> def coin():
...     return int(torch.rand(()) < 0.3)
>>> result = trace(coin)
>>> result.law == {0: Fraction(11744051, 2**24), 1: Fraction(5033165, 2**24)}
True
"""

from __future__ import annotations

import contextlib
import copy
import math
import random as _pyrandom
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterator

import numpy as np

from .errors import InvalidDistribution, SpecProofError

__all__ = ["UnmodelledRandomness", "NotPiecewiseConstant", "TraceTooLarge", "SamplerRaised", "Trace", "trace",
           "intercepted", "stream_tv"]

#: Largest number of values a single ``torch.randint`` / uniform ``choice`` element may take.
MAX_CATEGORIES = 65_536


#: Most random values one run of a sampler may draw (a run past it is a loop the trace's default
#: values never end).
MAX_VALUES_PER_RUN = 100_000


class UnmodelledRandomness(SpecProofError):
    """The sampler asked for randomness the tracer does not model (the message names the call)."""


class NotPiecewiseConstant(SpecProofError):
    """A uniform's effect is not one outcome per interval (not monotone), or takes too many pieces."""


class TraceTooLarge(SpecProofError):
    """The trace needs more re-runs than ``max_runs``."""


class SamplerRaised(SpecProofError):
    """The sampler raised an exception on one of the replayed runs (the cause is attached)."""


# --------------------------------------------------------------------------- one run


@dataclass(frozen=True)
class _Uniform:
    bits: int
    call: str

    def default(self) -> int:
        return 0


@dataclass(frozen=True)
class _Categorical:
    values: tuple  # the category labels (token ids, or array elements)
    probs: tuple[Fraction, ...]
    call: str

    def default(self) -> int:
        return next(i for i, w in enumerate(self.probs) if w)


class _Run:
    """One replay: values for the first slots (the prefix), defaults after; records every slot."""

    def __init__(self, prefix: tuple[int, ...]):
        self.prefix = prefix
        self.slots: list[Any] = []
        self.calls: set[str] = set()

    def take(self, slot: Any) -> int:
        i = len(self.slots)
        if i >= MAX_VALUES_PER_RUN:
            raise TraceTooLarge(f"one run of the sampler drew more than {MAX_VALUES_PER_RUN} random values (a loop "
                                "that waits for a value the trace's default never gives, e.g. `while rand() < "
                                "0.5` at u = 0, or resampling until a token other than the first)")
        self.slots.append(slot)
        self.calls.add(slot.call)
        return self.prefix[i] if i < len(self.prefix) else slot.default()


_ACTIVE: list[_Run] = []


def _run() -> _Run:
    if not _ACTIVE:  # a patched function called outside a run (cannot happen inside trace)
        raise UnmodelledRandomness("a patched random function was called outside a traced run")
    return _ACTIVE[-1]


def _fraction_weights(values: Any, call: str) -> tuple[Fraction, ...]:
    out = []
    for i, w in enumerate(values):
        w = float(w)
        if not math.isfinite(w) or w < 0:
            raise UnmodelledRandomness(f"{call}: weight {i} is {w!r}, not a finite number >= 0")
        out.append(Fraction(w))
    total = sum(out, Fraction(0))
    if total == 0:
        raise SamplerRaised(f"{call}: the weights sum to 0, on which the real call raises an error")
    return tuple(w / total for w in out)


def _draw_categorical(run: _Run, values: tuple, probs: tuple[Fraction, ...], call: str) -> Any:
    return values[run.take(_Categorical(values, probs, call))]


def _grid_bits(dtype: Any, call: str) -> int:
    import torch

    if dtype == torch.float32:
        return 24
    if dtype == torch.float64:
        return 53
    raise UnmodelledRandomness(f"{call} with dtype {dtype}: only the float32 (k/2^24) and float64 (k/2^53) grids "
                               "are modelled")


def _uniform_values(run: _Run, n: int, bits: int, call: str) -> list[float]:
    scale = 2.0 ** -bits
    return [run.take(_Uniform(bits, call)) * scale for _ in range(n)]


# --------------------------------------------------------------------------- the patches


def _size(args: tuple, kwargs: dict) -> tuple[int, ...]:
    if "size" in kwargs:
        args = (kwargs.pop("size"),)
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or (len(args) == 1 and type(args[0]).__name__ == "Size"):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _torch_patches() -> dict[str, Callable]:
    import torch

    def finish(t, out, requires_grad=False):
        if out is not None:
            out.copy_(t)
            return out
        if requires_grad:
            t.requires_grad_(True)
        return t

    def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False, names=None, **kw):
        shape = _size(size, kw)
        dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
        bits = _grid_bits(dtype, "torch.rand")
        vals = _uniform_values(_run(), math.prod(shape), bits, "torch.rand")
        t = torch.tensor(vals, dtype=dtype).reshape(shape)
        return finish(t if device is None else t.to(device), out, requires_grad)

    def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        dtype = dtype or input.dtype
        bits = _grid_bits(dtype, "torch.rand_like")
        vals = _uniform_values(_run(), input.numel(), bits, "torch.rand_like")
        t = torch.tensor(vals, dtype=dtype).reshape(input.shape)
        return finish(t.to(input.device if device is None else device), None, requires_grad)

    def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
        if "from" in kw:
            from_ = kw.pop("from")
        bits = _grid_bits(self.dtype, "Tensor.uniform_")
        vals = _uniform_values(_run(), self.numel(), bits, "Tensor.uniform_")
        # PyTorch's CPU kernel (measured on seeded draws): the bounds in the tensor's dtype, then
        # u * (b - a) + a in double, then rounded to the tensor's dtype
        lo, hi = (torch.tensor(x, dtype=self.dtype).item() for x in (from_, to))
        u = torch.tensor(vals, dtype=torch.float64).reshape(self.shape) * (hi - lo) + lo
        with torch.no_grad():
            self.copy_(u.to(self.dtype))
        return self

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
        call = "torch.multinomial"
        if input.dim() not in (1, 2):
            raise UnmodelledRandomness(f"{call}: input has {input.dim()} dimensions, not 1 or 2")
        rows = input.detach().to("cpu", torch.float64).reshape(-1, input.shape[-1]).tolist()
        run = _run()
        result = []
        for row in rows:
            probs = list(_fraction_weights(row, call))
            if not replacement and num_samples > sum(1 for w in probs if w):
                raise UnmodelledRandomness(f"{call}: {num_samples} samples without replacement from "
                                           f"{sum(1 for w in probs if w)} categories with positive weight")
            drawn = []
            for _ in range(num_samples):
                total = sum(probs, Fraction(0))
                j = _draw_categorical(run, tuple(range(len(probs))), tuple(w / total for w in probs), call)
                drawn.append(j)
                if not replacement:
                    probs[j] = Fraction(0)
            result.append(drawn)
        t = torch.tensor(result, dtype=torch.int64, device=input.device)
        if input.dim() == 1:
            t = t.reshape(num_samples)
        return finish(t, out)

    def tensor_multinomial(self, num_samples, replacement=False, *, generator=None):
        return multinomial(self, num_samples, replacement)

    def randint(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
                requires_grad=False, pin_memory=False):
        call = "torch.randint"
        if size is None:
            *bounds, size = args
        else:
            bounds = list(args)
        low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
        low, high = int(low), int(high)
        if not 0 < high - low <= MAX_CATEGORIES:
            raise UnmodelledRandomness(f"{call}: range [{low}, {high}) has {high - low} values; 1 to "
                                       f"{MAX_CATEGORIES} are modelled")
        shape = _size((size,), {})
        run = _run()
        values = tuple(range(low, high))
        probs = tuple(Fraction(1, high - low) for _ in values)
        vals = [_draw_categorical(run, values, probs, call) for _ in range(math.prod(shape))]
        t = torch.tensor(vals, dtype=dtype or torch.int64).reshape(shape)
        return finish(t if device is None else t.to(device), out)

    return {"rand": rand, "rand_like": rand_like, "uniform_": uniform_, "multinomial": multinomial,
            "tensor_multinomial": tensor_multinomial, "randint": randint}


_TORCH_REFUSED = ("randn", "randn_like", "randint_like", "randperm", "normal", "bernoulli", "poisson",
                  "binomial", "_standard_gamma", "_sample_dirichlet", "rrelu",
                  "manual_seed", "seed", "set_rng_state")  # a sampler that seeds itself is not random
_TENSOR_REFUSED = ("normal_", "bernoulli_", "bernoulli", "exponential_", "geometric_", "cauchy_",
                   "log_normal_", "random_")
_NUMPY_LEGACY = ("rand", "randn", "random", "random_sample", "ranf", "sample", "choice", "randint",
                 "random_integers", "uniform", "normal", "standard_normal", "exponential", "permutation",
                 "shuffle", "binomial", "multinomial", "poisson", "gumbel", "beta", "gamma", "default_rng",
                 "seed", "set_state")
_PY_RANDOM = ("random", "uniform", "randint", "randrange", "choice", "choices", "sample", "shuffle", "gauss",
              "normalvariate", "expovariate", "getrandbits", "triangular", "betavariate", "binomialvariate",
              "randbytes", "seed", "setstate")


def _refuser(name: str, hint: str = "") -> Callable:
    def refuse(*args, **kwargs):
        raise UnmodelledRandomness(f"the sampler called {name}, which specproof.trace does not model{hint}; "
                                   "modelled: torch.rand, torch.rand_like, Tensor.uniform_, torch.multinomial, "
                                   "torch.randint, and the provided NumPy generator's random/uniform/choice")
    refuse.__name__ = name.rsplit(".", 1)[-1]
    return refuse


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


@contextlib.contextmanager
def intercepted() -> Iterator[None]:
    """Patch every modelled and refused random function for the duration of the block.

    The originals are restored on exit, also when the block raises. Within the block the modelled
    functions take their values from the active run (see :func:`trace`).
    """
    undo: list[Callable[[], None]] = []

    def patch(owner: Any, name: str, new: Any) -> None:
        if name in vars(owner):
            old = vars(owner)[name]
            undo.append(lambda: setattr(owner, name, old))
        elif hasattr(owner, name):
            undo.append(lambda: delattr(owner, name))
        else:
            return
        setattr(owner, name, new)

    try:
        try:
            import torch
        except ImportError:  # a NumPy-only sampler
            torch = None
        if torch is not None:
            # tiny tensors: one intra-op thread (measured: softmax of a [1, 3, 16] tensor took ~13 ms with
            # the default thread pool on a shared 2-core machine, ~10 us with one thread); restored below
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            undo.append(lambda: torch.set_num_threads(threads))
            fns = _torch_patches()
            for name in ("rand", "rand_like", "multinomial", "randint"):
                patch(torch, name, fns[name])
            patch(torch.Tensor, "uniform_", fns["uniform_"])
            patch(torch.Tensor, "multinomial", fns["tensor_multinomial"])
            for name in _TORCH_REFUSED:
                patch(torch, name, _refuser(f"torch.{name}"))
            for name in _TENSOR_REFUSED:
                patch(torch.Tensor, name, _refuser(f"Tensor.{name}"))
        for name in _NUMPY_LEGACY:
            hint = ("; take the generator trace() provides (numpy_rng=...)" if name == "default_rng"
                    else " (NumPy's global legacy generator)")
            patch(np.random, name, _refuser(f"numpy.random.{name}", hint))
        for name in _PY_RANDOM:
            patch(_pyrandom, name, _refuser(f"random.{name}", " (Python's random module)"))
        yield
    finally:
        for fn in reversed(undo):
            fn()


# --------------------------------------------------------------------------- the trace


def _freeze(x: Any) -> Any:
    """A hashable key for a sampler's output: tensors and arrays become nested tuples."""
    if hasattr(x, "detach") and hasattr(x, "tolist"):  # a torch tensor
        return _freeze(x.detach().cpu().tolist())
    if isinstance(x, np.ndarray):
        return _freeze(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    hash(x)
    return x


def _states(generator: TracedGenerator | None) -> tuple:
    out: list[Any] = [_pyrandom.getstate()]
    name, keys, pos, has_gauss, cached = np.random.mtrand._rand.get_state(legacy=True)
    out.append((keys.tobytes(), pos, has_gauss, cached))
    try:
        import torch

        out.append(bytes(torch.default_generator.get_state().numpy()))
    except ImportError:
        pass
    if generator is not None:
        out.append(repr(generator.bit_generator.state))
    return tuple(out)


@dataclass(frozen=True)
class Trace:
    """The exact law of a traced sampler.

    Attributes
    ----------
    law : dict of output -> Fraction
        P(the sampler returns each output), exact; the masses sum to 1. Outputs are the
        sampler's return values made hashable (tensors and arrays as nested tuples of Python
        numbers), or ``key(output)`` when a key was given.
    runs : int
        How many times the sampler was run.
    assumptions : tuple of str
        Every modelling assumption the law rests on (the general ones, then one per kind of
        random call the sampler made).
    calls : tuple of str
        The intercepted calls the sampler made (sorted names).
    """

    law: dict[Any, Fraction]
    runs: int
    assumptions: tuple[str, ...]
    calls: tuple[str, ...] = field(default=())


_GENERAL = (
    "the sampler is deterministic given the random numbers it draws through the intercepted calls "
    "(checked after each run: PyTorch's default generator, NumPy's legacy global generator, Python's random "
    "module and the provided NumPy generator are left untouched)",
    "each uniform affects the rest of the run only through comparisons, and every outcome occupies one interval "
    "of the grid: ASSUMED, not proved. Breakpoints are found by bisection between probes at 0, N/4, N/2, 3N/4, "
    "N - 1; an outcome seen on two separated intervals is refused; the law of the rest is recomputed at both ends "
    "and the middle of every interval. An interval between two probes that give the same outcome is not seen "
    "(a sampler whose outcome changes only on [15/64, 1/4), say, is traced wrongly)",
    "the sampler does not depend on anything else that changes between runs (its arguments are deep-copied for "
    "every run, so a sampler may write into them)",
)

_CALL_ASSUMPTIONS = {
    "torch.rand": "torch.rand: each element k/2^24 (float32) or k/2^53 (float64), k uniform on the grid",
    "torch.rand_like": "torch.rand_like: each element k/2^24 (float32) or k/2^53 (float64), k uniform on the grid",
    "Tensor.uniform_": "Tensor.uniform_(a, b): the bounds in the tensor's dtype, u (b - a) + a in double with u = "
                       "k/2^24 (float32) or k/2^53 (float64), rounded to the tensor's dtype (PyTorch's CPU kernel)",
    "torch.multinomial": "torch.multinomial: an exact categorical over the float weights as given (Fraction(w_i) "
                         "/ sum); PyTorch's own sampling kernel (a float exponential race) is not traced",
    "torch.randint": "torch.randint: each element exactly uniform over [low, high); PyTorch's CPU kernel takes a "
                     "random 32- or 64-bit integer modulo the range, off from uniform by at most range / 2^32 "
                     "(not modelled)",
    "Generator.random": "numpy Generator.random: k/2^53 (float64) or k/2^24 (float32), k uniform on the grid",
    "Generator.uniform": "numpy Generator.uniform(a, b): a + (b - a) * k/2^53 in float64",
    "Generator.choice": "numpy Generator.choice: an exact categorical over p (Fraction(p_i) / sum), uniform "
                        "without p; NumPy's own inverse-CDF search is not traced",
}


class _Tracer:
    def __init__(self, sampler, args, kwargs, key, generator, max_runs, check_pieces=True):
        self.sampler, self.args, self.kwargs, self.key = sampler, args, kwargs, key
        self.generator, self.max_runs, self.check_pieces = generator, max_runs, check_pieces
        self.runs = 0
        self.calls: set[str] = set()
        self._runs: dict[tuple[int, ...], tuple[Any, tuple]] = {}
        self._laws: dict[tuple[int, ...], dict[Any, Fraction]] = {}

    def run(self, prefix: tuple[int, ...]) -> tuple[Any, tuple]:
        """(output key, the slots the run requested)."""
        if prefix in self._runs:
            return self._runs[prefix]
        if self.runs >= self.max_runs:
            raise TraceTooLarge(f"the trace needs more than max_runs = {self.max_runs} runs of the sampler")
        self.runs += 1
        r = _Run(prefix)
        before = _states(self.generator)
        _ACTIVE.append(r)
        try:
            memo = {} if self.generator is None else {id(self.generator): self.generator}  # the traced generator stays
            args, kwargs = copy.deepcopy((self.args, self.kwargs), memo)  # fresh buffers, as an engine passes each step
            out = self.sampler(*args, **kwargs)
        except SpecProofError:
            raise
        except Exception as exc:
            raise SamplerRaised(f"the sampler raised {type(exc).__name__}: {exc} (on a run with the random values "
                                f"{self._describe(prefix)})") from exc
        finally:
            _ACTIVE.pop()
        if _states(self.generator) != before:
            raise UnmodelledRandomness(
                "the sampler drew randomness through a path specproof.trace did not intercept (PyTorch's default "
                "generator, NumPy's global generator, Python's random module or the provided generator changed "
                "state during a run): for example torch.nn.functional.dropout, a C++ kernel, or a random function "
                "bound before tracing")
        if len(r.slots) < len(prefix):
            raise NotPiecewiseConstant(
                f"the sampler drew {len(r.slots)} random values on a run where an earlier run drew at least "
                f"{len(prefix)} with the same values: it is not deterministic given its random numbers")
        key = _freeze(out if self.key is None else self.key(out))
        self.calls |= r.calls
        self._runs[prefix] = (key, tuple(r.slots))
        return self._runs[prefix]

    @staticmethod
    def _describe(prefix: tuple[int, ...]) -> str:
        return "[" + ", ".join(map(str, prefix[:8])) + (", ..." if len(prefix) > 8 else "") + "] (grid indices/categories)"

    def law(self, prefix: tuple[int, ...]) -> dict[Any, Fraction]:
        if prefix in self._laws:
            return self._laws[prefix]
        key, slots = self.run(prefix)
        n = len(prefix)
        if len(slots) == n:
            out = {key: Fraction(1)}
        elif isinstance(slots[n], _Categorical):
            out = {}
            for j, w in enumerate(slots[n].probs):
                if w:
                    for k, m in self.law(prefix + (j,)).items():
                        out[k] = out.get(k, Fraction(0)) + w * m
        else:
            out = self._uniform_law(prefix, slots[n])
        self._laws[prefix] = out
        return out

    def _pieces(self, prefix, slot: _Uniform, f: Callable[[int], Any], lo: int, hi: int,
                probes: tuple[int, ...]) -> list[tuple[int, int, Any]]:
        """Maximal intervals [a, b] of lo..hi on which f looks constant, by bisection between probes."""
        pts = sorted({lo, hi, *(p for p in probes if lo <= p <= hi)})
        vals = {k: f(k) for k in pts}
        breaks: list[int] = []  # k with f(k - 1) != f(k)
        stack = list(zip(pts, pts[1:]))
        while stack:
            a, b = stack.pop()
            if vals[a] == vals[b]:
                continue
            if b == a + 1:
                breaks.append(b)
                continue
            m = (a + b) // 2
            vals[m] = f(m)
            stack.extend([(a, m), (m, b)])
        breaks.sort()
        starts = [lo, *breaks]
        ends = [b - 1 for b in breaks] + [hi]
        pieces = [(a, b, vals[a] if a in vals else f(a)) for a, b in zip(starts, ends)]
        seen: dict[Any, tuple[int, int]] = {}
        for a, b, v in pieces:
            hv = _hashable(v)
            if hv in seen:
                a0, b0 = seen[hv]
                raise NotPiecewiseConstant(
                    f"uniform #{len(prefix)} (from {slot.call}, grid 2^{slot.bits}) is not monotone: the same outcome "
                    f"on grid indices [{a0}, {b0}] and again on [{a}, {b}] with another outcome between; "
                    "specproof.trace needs every outcome on one interval (a uniform used only in comparisons "
                    "with thresholds, e.g. u < p/q or an inverse CDF)")
            seen[hv] = (a, b)
        return pieces

    def _uniform_law(self, prefix, slot: _Uniform) -> dict[Any, Fraction]:
        n_grid = 1 << slot.bits
        probes = (0, n_grid // 4, n_grid // 2, 3 * n_grid // 4, n_grid - 1)
        n = len(prefix)

        def signature(k):
            key, slots = self.run(prefix + (k,))
            return key, slots[n + 1:]

        out: dict[Any, Fraction] = {}
        for a, b, _ in self._pieces(prefix, slot, signature, 0, n_grid - 1, probes):
            first = self.law(prefix + (a,))
            last = self.law(prefix + (b,)) if self.check_pieces else first
            middle = self.law(prefix + ((a + b) // 2,)) if self.check_pieces and first == last else first
            if first == last == middle:
                parts = [(a, b, first)]
            else:  # the rest of the run changes inside the piece: bisect on its law
                quarter = (b - a) // 4  # the ends and the middle were looked at: bisect from all three
                parts = self._pieces(prefix, slot, lambda k: self.law(prefix + (k,)), a, b,
                                     (a + quarter, (a + b) // 2, b - quarter))
            for lo, hi, sub in parts:
                w = Fraction(hi - lo + 1, n_grid)
                for k, m in sub.items():
                    out[k] = out.get(k, Fraction(0)) + w * m
        return out


def _hashable(v: Any) -> Any:
    if isinstance(v, dict):
        return frozenset(v.items())
    return v


def trace(sampler: Callable[..., Any], args: tuple = (), kwargs: dict | None = None, *,
          numpy_rng: str | None = None, key: Callable[[Any], Any] | None = None,
          max_runs: int = 200_000, check_pieces: bool = True) -> Trace:
    """The exact law of ``sampler(*args, **kwargs)`` under the modelled random calls.

    Parameters
    ----------
    sampler : callable
        A deterministic function of the random numbers it draws through the intercepted calls
        (see the module docstring). It is called many times.
    args, kwargs : optional
        Passed to every call.
    numpy_rng : str, optional
        If given, the sampler also receives the tracer's NumPy generator (a
        :class:`numpy.random.Generator` whose ``random``, ``uniform`` and ``choice`` are traced) as
        this keyword argument.
    key : callable, optional
        Maps the sampler's return value to the output whose law is wanted (default: the value
        itself, tensors and arrays as nested tuples of Python numbers).
    max_runs : int, optional
        Largest number of runs (default 200,000).
    check_pieces : bool, optional
        Recompute the law of the rest of the run at both ends and the middle of every interval
        of a uniform (default), bisecting where they differ. False computes it at the interval's
        first grid point only: about 2^u times fewer runs for u uniforms in a row, but a sampler
        whose later thresholds depend on an earlier uniform (not only its output) is then traced
        wrongly, without an error; the result's assumptions say so. Even with True, a later
        threshold that varies inside an interval yet agrees at its ends and middle is not seen.

    Returns
    -------
    Trace
        ``law`` (output -> Fraction, summing to 1), ``runs``, ``assumptions``, ``calls``.

    Raises
    ------
    UnmodelledRandomness
        The sampler called a random function that is not modelled (the message names it), or
        drew from a generator through a path that was not intercepted.
    NotPiecewiseConstant
        An outcome appears on two separated intervals of a uniform's grid, or the sampler is not
        deterministic given its random numbers.
    TraceTooLarge
        More than ``max_runs`` runs would be needed.
    SamplerRaised
        The sampler raised on one of the replayed runs.

    Notes
    -----
    The patches (:func:`intercepted`) are in place only while ``trace`` runs and are restored
    afterwards, also on error. Cost: see the module docstring.

    Examples
    --------
    >>> def pick(rng):
    ...     return int(rng.choice(3, p=[0.5, 0.25, 0.25]))
    >>> trace(pick, numpy_rng="rng").law
    {0: Fraction(1, 2), 1: Fraction(1, 4), 2: Fraction(1, 4)}
    """
    if isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1:
        raise SpecProofError(f"max_runs is {max_runs!r}, not an integer >= 1")
    if not callable(sampler):
        raise SpecProofError(f"the sampler {sampler!r} is not callable")
    kwargs = dict(kwargs or {})
    generator = None
    if numpy_rng is not None:
        generator = TracedGenerator(np.random.PCG64(0))
        kwargs[numpy_rng] = generator
    tracer = _Tracer(sampler, tuple(args), kwargs, key, generator, max_runs, bool(check_pieces))
    with intercepted():
        law = tracer.law(())
    try:
        law = dict(sorted(law.items()))
    except TypeError:
        pass
    general = _GENERAL if check_pieces else (_GENERAL[0], _GENERAL[1].replace(
        "the law of the rest is recomputed at both ends and the middle of every interval",
        "check_pieces=False: the law of the rest is computed at the first grid point of each interval only, "
        "assumed the same on the whole interval"), *_GENERAL[2:])
    assumptions = general + tuple(_CALL_ASSUMPTIONS[c] for c in sorted(tracer.calls))
    return Trace(law, tracer.runs, assumptions, tuple(sorted(tracer.calls)))


def stream_tv(law: dict[tuple[int, ...], Fraction], rows: Any) -> Fraction:
    """Exact TV between a block law continued by ``rows`` and the product of ``rows``.

    Parameters
    ----------
    law : dict of tuple of int -> Fraction
        Blocks of 1 to len(rows) ids and their masses (summing to 1).
    rows : sequence of rows of Fraction, shape [n, V]
        The reference's row at each position (independent of the earlier tokens).

    Returns
    -------
    Fraction
        ``(1/2) sum_s |M(s) - R(s)|`` over sequences s of n ids, where M continues each block by
        sampling ``rows`` and R is their product; computed on the trie of the blocks, in
        O(blocks * n * V), never by enumerating V^n sequences.

    Examples
    --------
    >>> half = (Fraction(1, 2), Fraction(1, 2))
    >>> stream_tv({(0,): Fraction(1, 2), (1, 1): Fraction(1, 2)}, [half, half])
    Fraction(1, 4)
    """
    n = len(rows)
    ends: dict[tuple[int, ...], Fraction] = {}
    inner: dict[tuple[int, ...], set[int]] = {}
    for b, m in law.items():
        if not 1 <= len(b) <= n:
            raise InvalidDistribution(f"block {b} has {len(b)} ids, not 1 to {n}")
        ends[b] = ends.get(b, Fraction(0)) + m
        for k in range(len(b)):
            inner.setdefault(b[:k], set()).add(b[k])
    total = Fraction(0)
    stack: list[tuple[tuple[int, ...], Fraction, Fraction]] = [((), Fraction(0), Fraction(1))]
    while stack:
        a, mine, ref = stack.pop()  # mine: blocks ended within a, continued to a; ref: R(a)
        mine += ends.get(a, Fraction(0))
        kids = inner.get(a)
        if not kids or len(a) == n:
            total += abs(mine - ref)
            continue
        row = rows[len(a)]
        rest = Fraction(1) - sum((row[y] for y in kids), Fraction(0))
        total += abs(mine - ref) * rest
        for y in kids:
            stack.append((a + (y,), mine * row[y], ref * row[y]))
    return total / 2
