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
``Tensor.exponential_``        only as an *exponential race* ``argmax(w / E, dim=-1)`` (vLLM,
                               SGLang, FlashInfer): one race per row of E, an exact categorical
                               ``Fraction(w_i) / sum_j Fraction(w_j)`` over the positive finite
                               float weights w that E divides (IDEALIZED: E_i i.i.d. exact
                               Exp(lambda), the division and argmax exact, ties of probability
                               0). A row with a NaN or +inf weight or no positive weight is left
                               to the code's own argmax. E = -0.0 (PyTorch's CPU kernel at u = 0,
                               probability 2^-53 per element; then ``0 / E`` is NaN and argmax
                               returns that zero-weight id; at a -inf weight ``-inf / E`` is
                               +inf, and that id wins) is an explicit option,
                               ``exponential_zeros=True``. Any other use of E or of ``w / E``
                               (``log E``, ``w * E``, a second race on the same E, ``max`` of the
                               values, a flattened argmax) is refused, naming it
NumPy ``Generator.random``     float64 ``k / 2^53`` (``(next_uint64 >> 11) * 2^-53``); float32
                               ``k / 2^24``
NumPy ``Generator.uniform``    ``low + (high - low) * (k / 2^53)`` in float64
NumPy ``Generator.choice``     an exact categorical over ``p`` (``Fraction(p_i) / sum``), or
                               uniform over ``a`` without ``p``; with replacement only (NumPy's
                               own inverse-CDF search is not traced)
============================== =================================================================

Any other source of randomness is refused with :class:`UnmodelledRandomness`, naming the call:
``torch.randn``, ``torch.normal``, ``torch.bernoulli``, ``Tensor.geometric_`` and the other
random tensor methods, every other NumPy ``Generator`` method, NumPy's legacy global functions
(``np.random.rand`` ...), ``np.random.default_rng`` (the sampler must take the generator specproof
provides), and Python's :mod:`random`. As a catch-all, the states of PyTorch's default generator,
NumPy's legacy global generator, Python's :mod:`random` and the provided NumPy generator's bit
generator are compared before and after every run: a sampler that drew from one of them through
a path that was not intercepted (a C++ kernel, a function bound before tracing) is refused.
Invalid weights (NaN, inf, negative, all zero) given to ``torch.multinomial`` or ``Generator.choice``
raise :class:`SamplerRaised`, as the real calls do. torch is imported only if the sampler uses it (a
NumPy-only sampler leaves ``torch`` out of ``sys.modules``; a sampler that imports torch during a run
is run again with torch patched).
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

Thresholds read, not searched (the default, ``read_thresholds=True``): a ``torch.rand`` or
``torch.rand_like`` uniform (one element, an element ``r[i]`` of a vector of them, or a vector
compared elementwise) that the sampler only compares (``<``, ``<=``, ``>``, ``>=``) with values
computed without any uniform is watched by a ``torch.overrides.TorchFunctionMode``: each comparison
is evaluated again, by the same torch call, on grid values, and its breakpoint found there without
re-running the sampler. The runs at the first grid point of each piece report the comparisons met
on that path; new breakpoints split the pieces until none appears. Every grid point of a piece then
takes the same path (each comparison on it has the same result), so its law is the law at the
piece's first point. As a guard against uses the mode cannot see (TorchScript, C++ kernels, other
threads), each piece is also run at its last grid point and at the bisection's probes; a run that
differs there sends the uniform to bisection. A uniform used any other way (arithmetic, ``u *
q < p``, ``.item()``, NumPy) is bisected as below. Measured on transformers' verifier (random float32
logits, same laws; before runs were shared between prefixes): V = 16, gamma = 1: 1,257 runs -> 433; V = 8, gamma = 2: 12,777 -> 1,950; V = 4,
gamma = 3: 29,461 -> 2,439; V = 64, gamma = 1: 16,449 -> 5,554; V = 16, gamma = 2: 69,393 -> 10,225.

A categorical draw pushed forward, not enumerated (the default, ``pushforward=True``): the tensor a
``torch.multinomial`` returns is followed by the same mode, element by element. Calls that only move
its elements (``squeeze``, ``reshape``, ``view``, indexing with values that hold no draw, ``cat``,
``stack``, ``clone``, ``detach``, ``flip``, ``split``, ...) give tensors that hold it too; any other use
(a comparison, arithmetic, ``int()``, ``.item()``, ``.tolist()``, an index, an in-place write, another
dtype) makes the draw *dirty*. Where the last random draw of a run is clean, the output at each
category is read from that one run: the category is written into the tensors holding the draw (the
ones that own their memory, so every view sees it), the output (and ``key``) read, and the drawn value
written back; one run at another category checks it (a use the mode cannot see, such as DLPack or
TorchScript, that changes the run there sends the draw to enumeration). Only the last draw is pushed
forward (an earlier one would need every later run to leave it clean); a dirty draw is enumerated,
one run per category, as before. transformers' verifier draws its residual or bonus token this way:
V = 64, gamma 1: 5,554 runs -> 471 (16,449 by bisection); V = 16, gamma 2: 8,944 -> 4,240. Every run
is also the run of each longer prefix that fixes its later slots to the values they took (the
defaults), so no run is repeated.

Modelling assumption (stated in every result that bisected a uniform): on each piece found this way the rest of the run
behaves the same (the sampler depends on a uniform only through comparisons with thresholds, so
every outcome occupies one interval of the grid). A sampler whose outcome takes the same value
on two separated intervals of a probed range (not monotone) is refused with
:class:`NotPiecewiseConstant`; an interval narrower than the probe spacing whose both neighbours
give the same outcome cannot be seen and is not claimed to be.

Continuous thresholds are named, not bisected forever
=====================================================
Bisection finishes only if each uniform meets thresholds computed from the rows. The first
:data:`MODE_RUNS` runs (and every run of a sampler that draws ``Tensor.exponential_``) go through a
``torch.overrides.TorchFunctionMode`` that follows which uniforms each tensor's values depend on:
an ordering (``argmax``, ``sort``, ``topk``, ``max(dim=...)``) of values computed from two or more
uniforms (Gumbel-max, ``argmax(log w - log(-log u))``) or a comparison of two such values
(``u2 < f(u1)``) raises :class:`ContinuousThreshold` on the first run, naming the construction and
what to use instead (``torch.multinomial`` or an exponential race). Comparisons with row
thresholds through continuous operations (``log u < log p - log q``, ``u * q < p``) stay traced.
Where values leave torch (``float(u)``, NumPy), the piece search raises
:class:`ContinuousThreshold` once it finds breakpoints at :data:`MAX_CONSECUTIVE_BREAKS`
consecutive grid points (the output, or the law of the rest of the run, changes at every grid
point: a uniform used as a value, or a later threshold that moves with it); measured within 2,000
runs on float32 coins. :class:`TraceTooLarge` says where the runs went.

Cost
====
Bisection (``read_thresholds=False, pushforward=False``): one run per probe (5 per uniform), about b
runs per breakpoint (24 for float32), the law of the rest at both ends of every piece, and one run
per category of every categorical draw: the number of runs is exponential in the number of random
draws. The figures below are bisection's, before runs were shared between prefixes; the default
needs far fewer (see above, and ``docs/performance.md``). A single verification position (a
draft from V tokens, one coin, a residual draw) costs about ``V * (29 + 4 V)`` runs at most
(V = 64: about 11,000 runs, measured). A block verifier that draws its gamma drafts first (as
transformers' does) is traced over every drafted block, ``V^gamma`` of them, each with about
``4^gamma`` coin pieces: measured 829 runs at V = 16, gamma = 1; 6,249 at V = 8, gamma = 2;
13,717 at V = 4, gamma = 3; 37,841 at V = 16, gamma = 2 (0.4 to 10 ms a run on a loaded 2-core
machine). V = 64 with gamma = 4 is out of reach for a black box (the law alone can have 64^5
blocks); compute such a rule's law with :func:`specproof.rules.audit.block_law` instead. ``max_runs``
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
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterator

import numpy as np

from specproof.errors import InvalidDistribution, SpecProofError
from specproof.laws.block import stream_tv as _stream_tv

__all__ = ["UnmodelledRandomness", "NotPiecewiseConstant", "ContinuousThreshold", "TraceTooLarge", "SamplerRaised",
           "Trace", "trace", "intercepted", "stream_tv", "EXPONENTIAL_ZERO"]

#: Largest number of values a single ``torch.randint`` / uniform ``choice`` element may take.
MAX_CATEGORIES = 65_536


#: Most random values one run of a sampler may draw (a run past it is a loop the trace's default
#: values never end).
MAX_VALUES_PER_RUN = 100_000

#: A piece search that finds a breakpoint at this many consecutive grid points of one uniform stops
#: with :class:`ContinuousThreshold` (an outcome, or the law of the rest of the run, that changes at
#: every grid point: a continuous dependence, which bisection cannot finish).
MAX_CONSECUTIVE_BREAKS = 32

#: The first runs of a trace watch every torch call (a TorchFunctionMode) to name Gumbel-max and other
#: continuous uses of uniforms at once; runs after these are watched only if the sampler draws
#: ``Tensor.exponential_`` (the races need the mode), to keep the other runs fast.
MODE_RUNS = 16

#: Probability that one element of PyTorch's CPU ``Tensor.exponential_`` is zero: the kernel computes
#: ``-(1/lambda) log(1 - u)`` in double with ``u = k / 2^53`` (``aten/src/ATen/core/TransformationHelper.h``,
#: ``transformation::exponential``), which is ``-0.0`` exactly at ``k = 0`` and at least about 2^-53
#: otherwise (so float32, bfloat16 and float64 results are zero only there); pytorch issue #22557.
EXPONENTIAL_ZERO = Fraction(1, 2**53)


class UnmodelledRandomness(SpecProofError):
    """The sampler asked for randomness the tracer does not model (the message names the call)."""


class NotPiecewiseConstant(SpecProofError):
    """A uniform's effect is not one outcome per interval (not monotone), or takes too many pieces."""


class ContinuousThreshold(NotPiecewiseConstant):
    """A threshold depends continuously on an earlier uniform, so bisection would never end.

    Raised for Gumbel-max on uniforms (``argmax(log w - log(-log u))``), a comparison between values
    computed from two different uniforms (``u2 < f(u1)``), a uniform used as a value, and any piece
    search that finds a breakpoint at each of :data:`MAX_CONSECUTIVE_BREAKS` consecutive grid points.
    The message names the construction and what to use instead.
    """


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

    def __init__(self, prefix: tuple[int, ...], exponential_zeros: bool = False):
        self.prefix = prefix
        self.slots: list[Any] = []
        self.calls: set[str] = set()
        self.exponential_zeros = exponential_zeros
        self.mode: Any = None  # the _RaceMode watching this run's torch calls, if any
        self.keep: list[Any] = []  # tensors whose ids are keys below stay alive for the run
        self.exp: dict[int, _ExpDraw] = {}  # id(tensor) -> the exponential draw it holds (or a view of)
        self.quotients: dict[int, int] = {}  # id(w / E) -> E's number of dimensions
        self.taint: dict[int, frozenset[int]] = {}  # id(tensor) -> the uniform slots its values depend on
        self.raw: dict[int, int] = {}  # id(tensor) -> the slot of the one uniform it holds unchanged (k / 2^b)
        self.reads: dict[int, set[int]] = {}  # slot -> grid indices where a comparison with it changes its result
        self.opaque: set[int] = set()  # slots used other than by a comparison with a value that depends on no uniform
        self.readable: set[int] = set()  # slots drawn as raw torch uniforms while the mode watched
        self.pushforward = False  # track torch.multinomial's results (set by the tracer when the mode watches)
        # id(tensor) -> (map, slots, root): the tensor's elements that are a torch.multinomial draw past the prefix,
        # as an int64 tensor of its shape holding the draw's slot there and -1 elsewhere; the set of those slots; and
        # the tracked tensor whose memory it shares (itself, unless it is a view or alias made by a move)
        self.lazy: dict[int, tuple[Any, frozenset[int], Any]] = {}
        self.lazy_slots: set[int] = set()  # the slots drawn by torch.multinomial whose results are tracked
        self.dirty: set[int] = set()  # tracked slots whose value was read, branched on or used as other than data

    def make_dirty(self, slots: frozenset[int]) -> None:
        """The draws ``slots`` are used as values: their laws are enumerated, not pushed forward."""
        self.dirty |= slots
        for k in [k for k, (_, s, _) in self.lazy.items() if s <= self.dirty]:
            del self.lazy[k]

    def make_opaque(self, tensor: Any) -> None:
        """The uniforms ``tensor`` holds are used as values: their breakpoints are bisected, not read."""
        if id(tensor) in self.raw:
            first, count = self.raw[id(tensor)]
            self.opaque.update(range(first, first + count))
        self.opaque.update(self.taint.get(id(tensor), ()))

    def track(self, table: dict, tensor: Any, value: Any) -> None:
        self.keep.append(tensor)
        table[id(tensor)] = value

    def take(self, slot: Any) -> int:
        i = len(self.slots)
        if i >= MAX_VALUES_PER_RUN:
            raise TraceTooLarge(f"one run of the sampler drew more than {MAX_VALUES_PER_RUN} random values (a loop "
                                "that waits for a value the trace's default never gives, e.g. `while rand() < "
                                "0.5` at u = 0, or resampling until a token other than the first)")
        self.slots.append(slot)
        self.calls.add(slot.call)
        return self.prefix[i] if i < len(self.prefix) else slot.default()


@dataclass(eq=False)
class _ExpDraw:
    """One ``Tensor.exponential_`` draw E, waiting for the division ``w / E`` that decides its races."""

    shape: tuple[int, ...]
    views: set[int] = field(default_factory=set)  # ids of views of E (only exponential_ may use them)
    resolved: bool = False


class _NeedMode(BaseException):
    """Internal: a run met Tensor.exponential_ without the torch-function mode; the tracer re-runs it."""


_ACTIVE: list[_Run] = []


def _run() -> _Run:
    if not _ACTIVE:  # a patched function called outside a run (cannot happen inside trace)
        raise UnmodelledRandomness("a patched random function was called outside a traced run")
    return _ACTIVE[-1]


def _fraction_weights(values: Any, call: str) -> tuple[Fraction, ...]:
    out = []
    for i, w in enumerate(values):
        w = float(w)
        if not math.isfinite(w) or w < 0:  # torch.multinomial and Generator.choice raise on these
            raise SamplerRaised(f"{call}: weight {i} is {w!r}, not a finite number >= 0, on which the real call "
                                "raises an error")
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


def _taint(run: _Run, tensor: Any, first_slot: int) -> None:
    """Mark ``tensor`` as holding the uniforms drawn from slot ``first_slot`` on (seen by the mode)."""
    if run.mode is not None and len(run.slots) > first_slot:
        run.track(run.taint, tensor, run.taint.get(id(tensor), frozenset()) | frozenset(range(first_slot,
                                                                                              len(run.slots))))


def _mark_raw(run: _Run, tensor: Any, first_slot: int) -> None:
    """Mark a tensor of uniforms (0-d or 1-D, element i from slot ``first_slot + i``), watched by the
    mode, as readable: its comparisons with values computed without any uniform give its breakpoints."""
    n = tensor.numel()
    if run.mode is not None and tensor.dim() <= 1 and len(run.slots) == first_slot + n:
        run.track(run.raw, tensor, (first_slot, n))
        run.readable.update(range(first_slot, first_slot + n))


def _track_draw(run: _Run, tensor: Any, where: Any) -> None:
    """Follow a tensor of torch.multinomial draws (``where``: each element's slot, -1 for one inside the prefix)."""
    slots = frozenset(int(x) for x in where.reshape(-1).tolist() if x >= 0)
    run.lazy_slots |= slots
    run.track(run.lazy, tensor, (where, slots, tensor))


#: Calls that only move a tensor's elements (``args[0]``; other arguments are shapes, dims, indices): the
#: result's elements are copies of the input's, at places that do not depend on the values.
_MOVES = frozenset({"squeeze", "unsqueeze", "reshape", "view", "flatten", "ravel", "clone", "contiguous", "detach",
                    "__getitem__", "narrow", "select", "movedim", "moveaxis", "transpose", "swapaxes", "t",
                    "permute", "unflatten", "flip", "unbind", "split", "chunk", "expand", "cpu", "to", "long"})
#: Calls that concatenate a sequence of tensors (``args[0]``).
_JOINS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack"})


#: Comparisons whose breakpoints are read (each monotone in the uniform for a fixed other operand).
_ORDER_TESTS = frozenset({"lt", "le", "gt", "ge", "less", "less_equal", "greater", "greater_equal", "__lt__",
                          "__le__", "__gt__", "__ge__"})


def _mark_output_opaque(run: _Run, out: Any, depth: int = 0) -> None:
    """A tensor holding uniforms returned by the sampler is used as a value: not readable."""
    if depth > 4:
        return
    if isinstance(out, (list, tuple)):
        for o in out[:1000]:
            _mark_output_opaque(run, o, depth + 1)
    elif isinstance(out, dict):
        for o in list(out.values())[:1000]:
            _mark_output_opaque(run, o, depth + 1)
    else:
        run.make_opaque(out)


def _read_breakpoints(run: _Run, func: Any, args: tuple, kwargs: dict, raw: tuple[int, int], position: int) -> bool:
    """The grid indices where ``func`` (a comparison, the uniforms at ``position`` of ``args``) changes
    its result, found by evaluating the same torch call on grid values (exact, no run of the sampler).
    One uniform: every element of the result is its; a vector of uniforms: an elementwise comparison,
    element j the uniform j's. False (nothing read) for any other shape."""
    import torch

    first, count = raw
    u = args[position]
    bits = run.slots[first].bits
    n = 1 << bits

    def outcome(k: int) -> tuple:
        probe = torch.full_like(u, k / n)
        new = list(args)
        new[position] = probe
        got = func(*new, **kwargs)
        return tuple(got.reshape(-1).tolist()) if isinstance(got, torch.Tensor) else (bool(got),)

    ends = (outcome(0), outcome(n - 1))
    if count > 1:
        got = func(*args, **kwargs)
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(u.shape):
            return False
    for j in range(len(ends[0])):  # one threshold per element of the result
        found = run.reads.setdefault(first + (j if count > 1 else 0), set())
        if ends[0][j] == ends[1][j]:
            continue
        lo, hi = 0, n - 1  # outcome(lo)[j] == ends[0][j] != outcome(hi)[j]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if outcome(mid)[j] == ends[0][j]:
                lo = mid
            else:
                hi = mid
        found.add(hi)
    return True


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
        run = _run()
        first = len(run.slots)
        vals = _uniform_values(run, math.prod(shape), bits, "torch.rand")
        t = torch.tensor(vals, dtype=dtype).reshape(shape)
        t = finish(t if device is None else t.to(device), out, requires_grad)
        _taint(run, t, first)
        if out is None:  # an out= buffer may be read through views the mode never sees: bisect it
            _mark_raw(run, t, first)
        return t

    def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        dtype = dtype or input.dtype
        bits = _grid_bits(dtype, "torch.rand_like")
        run = _run()
        first = len(run.slots)
        vals = _uniform_values(run, input.numel(), bits, "torch.rand_like")
        t = torch.tensor(vals, dtype=dtype).reshape(input.shape)
        t = finish(t.to(input.device if device is None else device), None, requires_grad)
        _taint(run, t, first)
        _mark_raw(run, t, first)
        return t

    def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
        if "from" in kw:
            from_ = kw.pop("from")
        bits = _grid_bits(self.dtype, "Tensor.uniform_")
        run = _run()
        first = len(run.slots)
        vals = _uniform_values(run, self.numel(), bits, "Tensor.uniform_")
        # PyTorch's CPU kernel (measured on seeded draws): the bounds in the tensor's dtype, then
        # u * (b - a) + a in double, then rounded to the tensor's dtype
        lo, hi = (torch.tensor(x, dtype=self.dtype).item() for x in (from_, to))
        u = torch.tensor(vals, dtype=torch.float64).reshape(self.shape) * (hi - lo) + lo
        with torch.no_grad():
            self.copy_(u.to(self.dtype))
        _taint(run, self, first)
        return self

    def exponential_(self, lambd=1.0, *, generator=None):
        run = _run()
        run.calls.add("Tensor.exponential_")
        if run.mode is None:
            raise _NeedMode()
        if not float(lambd) > 0:
            raise SamplerRaised(f"Tensor.exponential_: lambd is {lambd!r}, not > 0, on which the real call raises")
        if not self.is_floating_point():
            raise SamplerRaised(f"Tensor.exponential_ on a {self.dtype} tensor (the real call raises)")
        held = run.exp.get(id(self))
        if held is not None and not held.resolved:  # drawn again (a row redrawn with its own generator): same law
            return self
        if self.dim() == 0:
            raise UnmodelledRandomness("Tensor.exponential_ on a 0-dimensional tensor: only races argmax(w / E) "
                                       "over a last dimension are modelled")
        with torch.no_grad():
            self.fill_(float("nan"))  # no value is decided until the division w / E is seen
        run.track(run.exp, self, _ExpDraw(tuple(self.shape)))
        return self

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
        call = "torch.multinomial"
        if input.dim() not in (1, 2):
            raise UnmodelledRandomness(f"{call}: input has {input.dim()} dimensions, not 1 or 2")
        run = _run()
        if id(input) in run.quotients or id(input) in run.exp:
            raise UnmodelledRandomness(f"the quotient w / E of an exponential race (or E itself) is passed to {call}: "
                                       "only its argmax over the last dimension is modelled")
        rows = input.detach().to("cpu", torch.float64).reshape(-1, input.shape[-1]).tolist()
        result, where = [], []
        for row in rows:
            probs = list(_fraction_weights(row, call))
            if not replacement and num_samples > sum(1 for w in probs if w):
                raise UnmodelledRandomness(f"{call}: {num_samples} samples without replacement from "
                                           f"{sum(1 for w in probs if w)} categories with positive weight")
            drawn = []
            for _ in range(num_samples):
                total = sum(probs, Fraction(0))
                where.append(len(run.slots) if len(run.slots) >= len(run.prefix) else -1)
                j = _draw_categorical(run, tuple(range(len(probs))), tuple(w / total for w in probs), call)
                drawn.append(j)
                if not replacement:
                    probs[j] = Fraction(0)
            result.append(drawn)
        shape = (num_samples,) if input.dim() == 1 else (len(rows), num_samples)
        t = torch.tensor(result, dtype=torch.int64, device=input.device).reshape(shape).clone()
        if out is None and run.pushforward and run.mode is not None and max(where) >= 0:
            _track_draw(run, t, torch.tensor(where, dtype=torch.int64).reshape(shape))
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
            "tensor_multinomial": tensor_multinomial, "randint": randint, "exponential_": exponential_}


# ------------------------------------------------------------- exponential races, uniforms' uses

_META = frozenset({"size", "dim", "numel", "__len__", "stride", "is_contiguous", "is_floating_point", "element_size",
                   "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout", "names", "grad_fn",
                   "is_leaf", "data_ptr", "storage_offset", "nelement", "ndimension", "get_device", "__repr__",
                   "__format__"})
#: Pass-through calls that still reveal a tensor's values outside torch (its uniforms become opaque).
_REVEALING = frozenset({"__repr__", "__format__", "data_ptr"})
_DIVISIONS = frozenset({"div", "div_", "divide", "divide_", "true_divide", "true_divide_", "__truediv__",
                        "__itruediv__", "__idiv__", "__div__"})
_RDIVISIONS = frozenset({"__rdiv__", "__rtruediv__"})
_COMPARISONS = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "less", "less_equal", "greater", "greater_equal",
                          "not_equal", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "searchsorted",
                          "bucketize", "isclose", "lt_", "le_", "gt_", "ge_", "eq_", "ne_"})
_DISCRETE = frozenset({"floor", "ceil", "round", "trunc", "long", "int", "bool", "floor_", "ceil_", "round_",
                       "trunc_", "isnan", "isinf", "isfinite", "signbit", "sign"})
_ORDERINGS = frozenset({"argmax", "argmin", "sort", "argsort", "topk", "kthvalue", "msort", "max", "min", "median",
                        "mode", "nanmedian", "unique", "cummax", "cummin"})
_RACE_HINT = ("use torch.multinomial(w, 1) for a categorical draw, or the exponential race "
              "argmax(w / torch.empty_like(w).exponential_(), dim=-1), which specproof.trace.tracer models exactly")


def _fname(func: Any) -> str:
    """The name of the torch function the mode sees (``shape`` for the ``Tensor.shape`` getter)."""
    name = getattr(func, "__name__", "") or ""
    if name == "__get__":
        return getattr(getattr(func, "__self__", None), "__name__", name)
    return name


def _race_mode(run: _Run) -> Any:
    """A TorchFunctionMode that decides exponential races and names continuous uses of uniforms."""
    import torch

    def tensors(args, kwargs):
        for a in (*args, *kwargs.values()):
            if isinstance(a, torch.Tensor):
                yield a
            elif isinstance(a, (list, tuple)):
                yield from (b for b in a if isinstance(b, torch.Tensor))

    def tensors_in(obj, depth=0):  # every tensor in nested arguments (a slice's bounds included)
        if isinstance(obj, torch.Tensor):
            yield obj
        elif isinstance(obj, slice):
            yield from tensors_in((obj.start, obj.stop, obj.step), depth + 1)
        elif depth < 6 and isinstance(obj, (list, tuple)):
            for o in obj:
                yield from tensors_in(o, depth + 1)
        elif depth < 6 and isinstance(obj, dict):
            for o in obj.values():
                yield from tensors_in(o, depth + 1)

    def refuse_exp(name: str) -> None:
        hint = {"log": "; -log(E) is a Gumbel variable: write the race as argmax(w / E) instead of "
                       "argmax(log w - log E)",
                "reciprocal": "; write w / E rather than w * E.reciprocal()",
                "mul": "; write w / E rather than w * (1 / E)"}.get(name.rstrip("_"), "")
        raise UnmodelledRandomness(
            f"the exponential draw E from Tensor.exponential_ is used by {name}: specproof.trace.tracer models only the "
            "exponential race argmax(w / E, dim=-1) (E divides a weight tensor w once, by w / E, w.div(E), "
            f"w.div_(E) or torch.div(w, E), and the quotient is used only by argmax over its last dimension){hint}")

    def resolve(draw: _ExpDraw, w: Any, e: Any) -> None:
        if draw.resolved:
            raise UnmodelledRandomness(
                "the exponential draw E from Tensor.exponential_ divides a second weight tensor: two races sharing "
                "one noise E are correlated, which specproof.trace.tracer does not model (the rule race-reuse in "
                "specproof.rules.policy computes that law); draw a fresh E for each race")
        if tuple(e.shape) != draw.shape:
            refuse_exp("a view of E as the divisor")
        if not isinstance(w, torch.Tensor):
            w = torch.tensor(w)
        if torch.broadcast_shapes(tuple(w.shape), draw.shape) != draw.shape:
            raise UnmodelledRandomness(f"Tensor.exponential_: w / E broadcasts E of shape {list(draw.shape)} to "
                                       f"{list(torch.broadcast_shapes(tuple(w.shape), draw.shape))}: several races "
                                       "would share one noise E, which is not modelled")
        v = draw.shape[-1]
        rows = torch.broadcast_to(w.detach(), draw.shape).reshape(-1, v).to("cpu", torch.float64).tolist()
        fill = torch.full((len(rows), v), float("inf"), dtype=torch.float64)
        for r, row in enumerate(rows):
            fill[r] = _decide_race(run, row, r, fill[r])
        draw.resolved = True
        e.copy_(fill.reshape(draw.shape).to(e.dtype))

    class _RaceMode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if run.lazy:
                held = [t for t in tensors_in((args, kwargs)) if id(t) in run.lazy]
                if held:
                    return self.draw_use(func, _fname(func), args, kwargs, held)
            return self.dispatch(func, args, kwargs)

        def draw_use(self, func, name, args, kwargs, held):
            """A call on a tensor holding torch.multinomial draws: a move of its elements (squeeze, indexing with
            values that hold no draw, cat, ...) gives a tensor that holds them too; any other use (a comparison,
            arithmetic, .item(), int(), .tolist(), an index, an in-place write) makes the draws it holds dirty."""
            slots = frozenset().union(*(run.lazy[id(t)][1] for t in held))
            if name in _META and name not in _REVEALING:
                return self.dispatch(func, args, kwargs)
            maps = None
            if "out" not in kwargs and args and not any(id(t) in run.lazy for t in tensors_in((args[1:], kwargs))):
                if name in _MOVES and isinstance(args[0], torch.Tensor):
                    maps = lambda: func(run.lazy[id(args[0])][0], *args[1:], **kwargs)  # noqa: E731
                elif name in _JOINS and isinstance(args[0], (list, tuple)) and \
                        all(isinstance(a, torch.Tensor) for a in args[0]):
                    maps = lambda: func([run.lazy[id(a)][0] if id(a) in run.lazy else  # noqa: E731
                                         torch.full(a.shape, -1, dtype=torch.int64) for a in args[0]],
                                        *args[1:], **kwargs)
            out = self.dispatch(func, args, kwargs)
            if maps is None:
                run.make_dirty(slots)
                return out
            outs, where = (out, maps()) if isinstance(out, (tuple, list)) else ((out,), (maps(),))
            if len(outs) != len(where) or not all(isinstance(o, torch.Tensor) and o.dtype == torch.int64 and
                                                   tuple(o.shape) == tuple(w.shape) for o, w in zip(outs, where)):
                run.make_dirty(slots)
                return out
            source = args[0] if name in _MOVES else None
            for o, w in zip(outs, where):
                kept = frozenset(int(x) for x in w.unique().tolist() if x >= 0)
                if o is source or not kept:  # returned itself (.to, .contiguous), or holds no draw past the prefix
                    continue
                shares = source is not None and o.numel() and \
                    o.untyped_storage().data_ptr() == source.untyped_storage().data_ptr()
                run.track(run.lazy, o, (w, kept, run.lazy[id(source)][2] if shares else o))
            return out

        def dispatch(self, func, args, kwargs):
            if not (run.exp or run.taint or run.quotients):
                return func(*args, **kwargs)
            name = _fname(func)
            ts = list(tensors(args, kwargs))
            if name in _META:
                if name in _REVEALING:  # the values leave torch: the uniforms they hold are not readable
                    for t in ts:
                        run.make_opaque(t)
                return func(*args, **kwargs)
            if any(id(t) in run.exp for t in ts):
                return self.exp_use(func, name, args, kwargs)
            if any(id(t) in run.quotients for t in ts):
                return self.quotient_use(func, name, args, kwargs)
            if name == "__getitem__" and len(args) == 2 and isinstance(args[0], torch.Tensor) and \
                    id(args[0]) in run.raw and isinstance(args[1], int) and not isinstance(args[1], bool):
                (first, count), i = run.raw[id(args[0])], args[1]
                out = func(*args, **kwargs)  # one element of a vector of uniforms: itself readable
                if -count <= i < count and isinstance(out, torch.Tensor):
                    run.track(run.raw, out, (first + i % count, 1))
                    run.track(run.taint, out, frozenset({first + i % count}))
                return out
            if any(id(t) in run.raw for t in ts):
                self.raw_use(func, name, args, kwargs, ts)
            marks = [run.taint[id(t)] for t in ts if id(t) in run.taint]
            if not marks:
                return func(*args, **kwargs)
            return self.tainted_use(func, name, args, kwargs, ts, marks)

        def exp_use(self, func, name, args, kwargs):
            if name in _DIVISIONS and len(args) >= 2:
                w, e = args[0], args[1]
            elif name in _RDIVISIONS and len(args) >= 2:
                e, w = args[0], args[1]
            else:
                w = e = None
            first = args[0] if args else None
            if name == "__getitem__" and isinstance(first, torch.Tensor) and id(first) in run.exp:
                draw = run.exp[id(first)]
                if not draw.resolved:  # a row of E, to be drawn again (engines pass a generator per request)
                    out = func(*args, **kwargs)
                    draw.views.add(id(out))
                    run.track(run.exp, out, draw)
                    return out
            if e is None or not isinstance(e, torch.Tensor) or id(e) not in run.exp or (
                    isinstance(w, torch.Tensor) and id(w) in run.exp) or kwargs.get("rounding_mode") is not None:
                refuse_exp(name)
            draw = run.exp[id(e)]
            if id(e) in draw.views:
                refuse_exp("a view of E as the divisor")
            resolve(draw, w, e)
            out = func(*args, **kwargs)
            if isinstance(out, torch.Tensor):
                run.track(run.quotients, out, len(draw.shape))
            return out

        def raw_use(self, func, name, args, kwargs, ts):
            """Read the breakpoints of a comparison of one raw uniform with a value that depends on no
            uniform; any other use makes the uniforms it touches opaque (found by bisection instead)."""
            raws = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and id(a) in run.raw]
            others = [a for i, a in enumerate(args) if i not in raws]
            clean = all(not (isinstance(a, torch.Tensor) and (id(a) in run.taint or id(a) in run.raw))
                        for a in (*others, *kwargs.values()))
            if name in _ORDER_TESTS and len(args) == 2 and len(raws) == 1 and clean and not kwargs and \
                    _read_breakpoints(run, func, args, kwargs, run.raw[id(args[raws[0]])], raws[0]):
                return
            for t in ts:
                run.make_opaque(t)

        def quotient_use(self, func, name, args, kwargs):
            if name == "argmax" and args and id(args[0]) in run.quotients:
                ndim = run.quotients[id(args[0])]
                dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
                if (dim is None and ndim == 1) or (dim is not None and int(dim) % ndim == ndim - 1):
                    return func(*args, **kwargs)
            raise UnmodelledRandomness(
                f"the quotient w / E of an exponential race is used by {name}: specproof.trace.tracer models only its "
                "argmax over the last dimension (one race per row); its values are not modelled (the tracer sets E "
                "to decide the winner)")

        def tainted_use(self, func, name, args, kwargs, ts, marks):
            joint = frozenset().union(*marks)
            if name in _COMPARISONS:
                if len(marks) >= 2 and len(joint) >= 2:
                    raise ContinuousThreshold(
                        f"{name} compares two values computed from different uniforms (slots "
                        f"{_slots(joint)}): the threshold of the later uniform depends continuously on the earlier "
                        "one (e.g. u2 < f(u1), or a race between uniforms), so the trace's bisection would never "
                        "end. Compare a uniform with thresholds computed from the rows only")
                return func(*args, **kwargs)
            if name in _ORDERINGS and args and id(args[0]) in run.taint and len(run.taint[id(args[0])]) >= 2 and (
                    name not in ("max", "min", "median", "nanmedian") or len(args) > 1 or "dim" in kwargs):
                raise ContinuousThreshold(
                    f"{name} orders values computed from {len(run.taint[id(args[0])])} different uniforms (Gumbel-max "
                    "on uniforms, argmax(log w - log(-log u)), or another race between uniforms): which one wins "
                    "depends on every uniform at once, a threshold that moves continuously with each, and the "
                    f"trace's bisection would never end; {_RACE_HINT}")
            out = func(*args, **kwargs)
            if name in _DISCRETE or name in _COMPARISONS or name in _ORDERINGS:
                return out
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for o in outs:
                if isinstance(o, torch.Tensor):
                    run.track(run.taint, o, run.taint.get(id(o), frozenset()) | joint)
            if (name.endswith("_") and not name.startswith("__")) or name in ("__setitem__", "copy_"):
                if args and isinstance(args[0], torch.Tensor):  # written in place
                    run.track(run.taint, args[0], run.taint.get(id(args[0]), frozenset()) | joint)
            return out

    return _RaceMode()


def _slots(s: frozenset[int]) -> str:
    items = sorted(s)
    return ", ".join(f"#{i}" for i in items[:4]) + (", ..." if len(items) > 4 else "")


def _decide_race(run: _Run, row: list[float], r: int, fill: Any) -> Any:
    """Decide one race ``argmax_i w_i / E_i``; return the E row that makes the code compute that winner."""
    decided = any(math.isnan(x) or x == math.inf for x in row)  # a NaN or +inf wins whatever E is
    if decided or max(row) <= 0:
        if max(row) < 0 and not any(math.isnan(x) for x in row):
            raise UnmodelledRandomness(
                f"Tensor.exponential_: race row {r} has only negative weights, a race whose law is not w / sum(w); "
                "not modelled")
        if decided or not run.exponential_zeros or max(row) < 0:
            fill[:] = 1.0  # the argmax does not depend on E
            return fill
    call = "Tensor.exponential_"
    minus_inf = [i for i, x in enumerate(row) if x == -math.inf]

    def winner(z: int) -> Any:  # E = -0.0 at z, +inf elsewhere (1 at a -inf weight: -inf / inf would be NaN)
        fill[:] = math.inf
        for i in minus_inf:
            fill[i] = 1.0
        fill[z] = -0.0
        return fill

    if run.exponential_zeros:
        # PyTorch's kernel gives E_i = -0.0 with probability 2^-53 per element. At a zero weight w_i / E_i is NaN,
        # and argmax returns the first NaN: the first zero-weight id with E = -0.0 wins whatever else holds. Else, at
        # a -inf weight -inf / -0.0 = +inf: the first such id with E = -0.0 wins (pytorch #192577 with a -inf weight)
        eps = EXPONENTIAL_ZERO
        for ids in ([i for i, x in enumerate(row) if x == 0], minus_inf):
            if ids:
                probs = [(1 - eps) ** len(ids)] + [eps * (1 - eps) ** k for k in range(len(ids))]
                z = _draw_categorical(run, (None, *ids), tuple(probs), call)
                if z is not None:
                    return winner(z)
    if max(row) <= 0:  # zeros and -infs only, no E = -0.0 drawn: 0 / E = 0 wins, the code's argmax decides
        fill[:] = 1.0
        return fill
    weights = [Fraction(x) if x > 0 else Fraction(0) for x in row]
    total = sum(weights, Fraction(0))
    j = _draw_categorical(run, tuple(range(len(row))), tuple(x / total for x in weights), call)
    fill[:] = math.inf
    fill[j] = 1.0
    for i in minus_inf:  # -inf / inf would be NaN; -inf / 1 = -inf loses, as it does in the code
        fill[i] = 1.0
    return fill


_TORCH_REFUSED = ("randn", "randn_like", "randint_like", "randperm", "normal", "bernoulli", "poisson",
                  "binomial", "_standard_gamma", "_sample_dirichlet", "rrelu",
                  "manual_seed", "seed", "set_rng_state")  # a sampler that seeds itself is not random
_TENSOR_REFUSED = ("normal_", "bernoulli_", "bernoulli", "geometric_", "cauchy_",
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
        raise UnmodelledRandomness(f"the sampler called {name}, which specproof.trace.tracer does not model{hint}; "
                                   "modelled: torch.rand, torch.rand_like, Tensor.uniform_, torch.multinomial, "
                                   "torch.randint, Tensor.exponential_ (as a race argmax(w / E)), and the provided "
                                   "NumPy generator's random/uniform/choice")
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

    def patch_torch() -> None:
        import torch

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
        patch(torch.Tensor, "exponential_", fns["exponential_"])
        for name in _TENSOR_REFUSED:
            patch(torch.Tensor, name, _refuser(f"Tensor.{name}"))
        _TORCH_PATCHED.append(True)

    try:
        if "torch" in sys.modules:  # a NumPy-only sampler does not import torch
            patch_torch()
        _LATE_TORCH.append(patch_torch)
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
        _TORCH_PATCHED.clear()
        if _LATE_TORCH:
            _LATE_TORCH.pop()


#: While :func:`intercepted` is active: the function that patches torch (called when a sampler imports
#: torch during a run), and whether torch is patched.
_LATE_TORCH: list[Callable[[], None]] = []
_TORCH_PATCHED: list[bool] = []


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
    try:
        hash(x)
    except TypeError:
        raise SpecProofError(f"the sampler returned a {type(x).__name__}, which cannot be an outcome (not hashable): "
                             "return a token id, a tuple of ids or a tensor, or pass key= to map it to one") from None
    return x


def _states(generator: TracedGenerator | None) -> tuple:
    out: list[Any] = [_pyrandom.getstate()]
    name, keys, pos, has_gauss, cached = np.random.mtrand._rand.get_state(legacy=True)
    out.append((keys.tobytes(), pos, has_gauss, cached))
    torch = sys.modules.get("torch")
    if torch is not None:
        out.append(bytes(torch.default_generator.get_state().numpy()))
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

_READ_ALL = ("every uniform was used, as far as PyTorch's function mode sees, only in comparisons (<, <=, >, >=) "
             "with values computed without any uniform: each breakpoint was read from the comparison itself (the same "
             "torch call on grid values), and each piece's run checked at its last grid point and at 0, N/4, N/2, "
             "3N/4, N - 1. A use the mode cannot see (TorchScript, C++ kernels, another thread) that changes the "
             "outcome only between those points would be missed, as it would by bisection")

def _pushed_note(pushed: int, refuted: int) -> str:
    """The result's note on the draws pushed forward (and on those whose check run disagreed)."""
    def prefixes(n: int) -> str:
        return f"{n} prefix{'es' if n != 1 else ''}"

    notes = []
    if pushed:
        notes.append(
            f"at {prefixes(pushed)} the last random draw, a torch.multinomial, was only moved into the output "
            "(squeeze, reshape, indexing, cat, stack), as far as PyTorch's function mode sees, and never compared, "
            "converted or computed with: the output at each of its categories was read from that one run (the "
            "category written into the tensors holding the draw) instead of one run per category, and checked by "
            "one run at another category. A use the mode cannot see (TorchScript, DLPack, C++ kernels, another "
            "thread) that changes the run only at unchecked categories would be missed, as a comparison's unseen "
            "use would be")
    if refuted:
        notes.append(f"at {prefixes(refuted)} the check run disagreed and every category was run (a use of the draw "
                     "the function mode did not see)")
    return "pushforward: " + "; ".join(notes)


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
    "Tensor.exponential_": "Tensor.exponential_, traced only as the race argmax(w / E, dim=-1): IDEALIZED: E_i "
                           "i.i.d. exact Exp(lambda), the division and the argmax exact, so row r's winner is i with "
                           "probability w_i / sum_j w_j over its positive finite float weights (ties have probability "
                           "0; zero and negative weights never win); a row with a NaN or +inf weight or no positive "
                           "weight is decided by the code's own argmax (it does not depend on E). PyTorch's CPU kernel "
                           "is not traced: it computes E = -(1/lambda) log(1 - u) in double, u = k/2^53, a discrete "
                           "E that is -0.0 at k = 0 (probability 2^-53 per element, pytorch issues #22557, #192577), "
                           "where w_i / E_i is NaN at a zero weight and argmax returns that zero-weight id: with "
                           "exponential_zeros=False (the default) that edge is NOT in this law",
    "Generator.random": "numpy Generator.random: k/2^53 (float64) or k/2^24 (float32), k uniform on the grid",
    "Generator.uniform": "numpy Generator.uniform(a, b): a + (b - a) * k/2^53 in float64",
    "Generator.choice": "numpy Generator.choice: an exact categorical over p (Fraction(p_i) / sum), uniform "
                        "without p; NumPy's own inverse-CDF search is not traced",
}


_EXPONENTIAL_ZEROS = (
    "exponential_zeros=True: in each race with zero weights, the first zero-weight id (in index order) whose E_i is "
    "-0.0 wins through the NaN of 0 / -0.0, each E_i being -0.0 independently with probability 2^-53 (PyTorch's CPU "
    "kernel at u = 0); the code's argmax decides that race with E = -0.0 there and +inf elsewhere. Failing that, the "
    "first -inf-weight id whose E_i is -0.0 wins through -inf / -0.0 = +inf (same probabilities). A zero E_i at a "
    "positive weight (-inf there, so that id loses) is still not modelled: it changes a race with P positive weights "
    "by at most 1 - (1 - 2^-53)^P")


class _Tracer:
    def __init__(self, sampler, args, kwargs, key, generator, max_runs, check_pieces=True, exponential_zeros=False,
                 progress=None, read_thresholds=True, pushforward=True):
        self.sampler, self.args, self.kwargs, self.key = sampler, args, kwargs, key
        self.progress = progress
        self.generator, self.max_runs, self.check_pieces = generator, max_runs, check_pieces
        self.runs = 0
        self.calls: set[str] = set()
        self.exponential_zeros = exponential_zeros
        self.need_mode = False  # set once a run calls Tensor.exponential_
        self._where: list[list] = []  # the uniforms being bisected: [slot index, call, breakpoints found, what]
        self._runs: dict[tuple[int, ...], tuple[Any, tuple]] = {}
        self.read_thresholds = read_thresholds
        self.read_slots = 0  # uniforms whose breakpoints were read from comparisons
        self.bisected_slots = 0  # uniforms whose breakpoints were found by bisection
        # prefix -> (the uniform slots of that run read only through comparisons, slot -> breakpoints)
        self._reads: dict[tuple[int, ...], tuple[frozenset[int], dict[int, frozenset[int]]]] = {}
        self._laws: dict[tuple[int, ...], dict[Any, Fraction]] = {}
        self.pushforward = pushforward
        # prefix -> (the run's last slot, a function giving the output at each of that draw's categories) where the
        # last draw was a torch.multinomial whose result the run only moved into its output
        self._push: dict[tuple[int, ...], tuple[int, Callable[[], dict[int, Any] | None]]] = {}
        self.pushed_slots = 0  # categorical draws whose law was pushed forward from one run
        self.push_refuted = 0  # pushforwards whose check run disagreed (then enumerated)

    def run(self, prefix: tuple[int, ...]) -> tuple[Any, tuple]:
        """(output key, the slots the run requested)."""
        if prefix in self._runs:
            return self._runs[prefix]
        if self.runs >= self.max_runs:
            raise TraceTooLarge(self._too_large())
        self.runs += 1
        if self.progress is not None:
            self.progress(1)
        while True:
            try:
                got = self._run_once(prefix)
                break
            except _NeedMode:  # Tensor.exponential_ needs the torch-function mode: run again with it
                self.need_mode = True
        # the run is also the run of every longer prefix that fixes its later slots to the defaults they took
        slots, longer = got[1], prefix
        for i in range(len(prefix), len(slots) + 1):
            if i > len(prefix):
                longer = longer + (slots[i - 1].default(),)
            if longer not in self._runs:
                self._runs[longer] = got
                if prefix in self._reads:
                    self._reads[longer] = self._reads[prefix]
                if prefix in self._push:
                    self._push[longer] = self._push[prefix]
        return got

    def _run_once(self, prefix: tuple[int, ...]) -> tuple[Any, tuple]:
        r = _Run(prefix, self.exponential_zeros)
        torch_patched = bool(_TORCH_PATCHED)
        before = _states(self.generator)
        if torch_patched and (self.need_mode or self.read_thresholds or self.pushforward or self.runs <= MODE_RUNS):
            r.mode = _race_mode(r)
            r.pushforward = self.pushforward
        _ACTIVE.append(r)
        try:
            memo = {} if self.generator is None else {id(self.generator): self.generator}  # the traced generator stays
            args, kwargs = copy.deepcopy((self.args, self.kwargs), memo)  # fresh buffers, as an engine passes each step
            with r.mode if r.mode is not None else contextlib.nullcontext():
                out = self.sampler(*args, **kwargs)
        except (SpecProofError, _NeedMode):
            raise
        except Exception as exc:
            raise SamplerRaised(f"the sampler raised {type(exc).__name__}: {exc} (on a run with the random values "
                                f"{self._describe(prefix)})") from exc
        finally:
            _ACTIVE.pop()
        if not torch_patched and "torch" in sys.modules and _LATE_TORCH:
            _LATE_TORCH[-1]()  # the sampler imported torch during the run: patch it, then run again
            return self._run_once(prefix)
        if _states(self.generator) != before:
            raise UnmodelledRandomness(
                "the sampler drew randomness through a path specproof.trace.tracer did not intercept (PyTorch's default "
                "generator, NumPy's global generator, Python's random module or the provided generator changed "
                "state during a run): for example torch.nn.functional.dropout, a C++ kernel, or a random function "
                "bound before tracing")
        if any(not d.resolved for d in set(r.exp.values())):
            raise UnmodelledRandomness(
                "the sampler drew E with Tensor.exponential_ but never divided a weight tensor by it: specproof.trace.tracer "
                "models Tensor.exponential_ only as the exponential race argmax(w / E, dim=-1)")
        if len(r.slots) < len(prefix):
            raise NotPiecewiseConstant(
                f"the sampler drew {len(r.slots)} random values on a run where an earlier run drew at least "
                f"{len(prefix)} with the same values: it is not deterministic given its random numbers")
        if r.mode is not None:
            _mark_output_opaque(r, out)
        key = _freeze(out if self.key is None else self.key(out))
        self.calls |= r.calls
        self._reads[prefix] = (frozenset(r.readable - r.opaque), {k: frozenset(v) for k, v in r.reads.items()})
        last = len(r.slots) - 1
        if last >= len(prefix) and last in r.lazy_slots and last not in r.dirty:
            self._push[prefix] = (last, self._outputs_at(r, out, last))
        return key, tuple(r.slots)

    def _outputs_at(self, r: _Run, out: Any, last: int) -> Callable[[], dict[int, Any] | None]:
        """The output of the run at each category of its last draw (a torch.multinomial result the run only moved
        into tensors, as the mode saw): those tensors' elements are written with the category, in place, the output
        read, and the default written back."""
        import torch

        slot = r.slots[last]
        # writing the tensors that own their memory (the draw's own result, copies, joins) writes every view of them
        roots = {id(root): root for t, (m, s, root) in ((t, r.lazy[id(t)]) for t in r.keep if id(t) in r.lazy)
                 if last in s}
        writes = [(root, r.lazy[id(root)][0] == last) for root in roots.values() if id(root) in r.lazy]
        key = self.key

        def outputs() -> dict[int, Any] | None:
            if len(writes) != len(roots):
                return None  # a tensor owning a draw's memory is no longer followed
            got: dict[int, Any] = {}
            default = slot.values[slot.default()]
            try:
                with torch.no_grad():
                    for j, w in enumerate(slot.probs):
                        if w:
                            for t, mask in writes:
                                t.masked_fill_(mask, slot.values[j])
                            got[j] = _freeze(out if key is None else key(out))
            finally:
                with torch.no_grad():
                    for t, mask in writes:
                        t.masked_fill_(mask, default)
            return got

        return outputs

    def _too_large(self) -> str:
        msg = f"the trace needs more than max_runs = {self.max_runs} runs of the sampler"
        if self._where:
            n, call, breaks, what = self._where[-1]
            msg += (f" (stopped while bisecting {what} on uniform #{n} from {call}, {breaks} breakpoints found there "
                    f"so far, {len(self._where)} uniforms deep)")
        return msg + ("; the number of runs grows exponentially with the number of random draws (see the Cost "
                      "section of specproof.trace.tracer): raise max_runs, or trace fewer positions or a smaller vocabulary")

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
            pushed = self._pushed(prefix, key, slots)
            out = {}
            for j, w in enumerate(slots[n].probs):
                if w:
                    for k, m in (self.law(prefix + (j,)) if pushed is None else {pushed[j]: 1}).items():
                        out[k] = out.get(k, Fraction(0)) + w * m
        else:
            out = self._uniform_law(prefix, slots[n])
        self._laws[prefix] = out
        return out

    def _pushed(self, prefix, key, slots) -> dict[int, Any] | None:
        """The output at each category of the draw at slot ``len(prefix)``, from the run at ``prefix`` alone, if it
        was the run's last draw, a torch.multinomial whose result the run only moved into its output (the
        pushforward of the draw's law); checked by one run at another category. None: enumerate the categories."""
        n = len(prefix)
        if not self.pushforward or self._push.get(prefix, (None,))[0] != n:
            return None
        outputs = self._push[prefix][1]()
        if outputs is None:
            return None
        slot = slots[n]
        if outputs[slot.default()] != key:  # the output read again differs (a key that is not a function of it)
            self.push_refuted += 1
            return None
        others = [j for j, w in enumerate(slot.probs) if w and j != slot.default()]
        if others:  # a use the mode cannot see (TorchScript, DLPack, C++) that changes the run shows here
            key_j, slots_j = self.run(prefix + (others[-1],))
            if key_j != outputs[others[-1]] or slots_j != slots:
                self.push_refuted += 1
                return None
        self.pushed_slots += 1
        return outputs

    def _pieces(self, prefix, slot: _Uniform, f: Callable[[int], Any], lo: int, hi: int,
                probes: tuple[int, ...], what: str = "the output") -> list[tuple[int, int, Any]]:
        """Maximal intervals [a, b] of lo..hi on which f looks constant, by bisection between probes."""
        where = [len(prefix), slot.call, 0, what]
        self._where.append(where)
        pts = sorted({lo, hi, *(p for p in probes if lo <= p <= hi)})
        vals = {k: f(k) for k in pts}
        breaks: list[int] = []  # k with f(k - 1) != f(k)
        found: set[int] = set()
        stack = list(zip(pts, pts[1:]))
        while stack:
            a, b = stack.pop()
            if vals[a] == vals[b]:
                continue
            if b == a + 1:
                breaks.append(b)
                found.add(b)
                where[2] = len(breaks)
                self._check_consecutive(prefix, slot, found, b, what)
                continue
            m = (a + b) // 2
            vals[m] = f(m)
            stack.extend([(a, m), (m, b)])
        self._where.pop()
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
                    "specproof.trace.tracer needs every outcome on one interval (a uniform used only in comparisons "
                    "with thresholds, e.g. u < p/q or an inverse CDF)")
            seen[hv] = (a, b)
        return pieces

    @staticmethod
    def _check_consecutive(prefix, slot: _Uniform, found: set[int], b: int, what: str) -> None:
        """Stop a piece search that finds a breakpoint at every grid point (a continuous dependence)."""
        left = right = 0
        while left < MAX_CONSECUTIVE_BREAKS and b - left - 1 in found:
            left += 1
        while right < MAX_CONSECUTIVE_BREAKS and b + right + 1 in found:
            right += 1
        if left + right + 1 < MAX_CONSECUTIVE_BREAKS:
            return
        if what == "the output":
            cause = ("the uniform is used as a value (returned, or in arithmetic whose result is returned), not only "
                     "in comparisons with thresholds; return a discrete outcome, or pass key= to map the output to "
                     "one")
        else:
            cause = ("a later random draw's threshold depends continuously on this uniform (e.g. u2 < f(u1), "
                     "Gumbel-max argmax(log w - log(-log u)) over uniforms, or a weight computed from u); the trace's "
                     f"bisection cannot finish; {_RACE_HINT}")
        raise ContinuousThreshold(
            f"{what} changes at each of {MAX_CONSECUTIVE_BREAKS} consecutive grid points of uniform #{len(prefix)} "
            f"(from {slot.call}, grid 2^{slot.bits}) near grid index {b}: {cause}")

    def _read_law(self, prefix, slot: _Uniform) -> dict[Any, Fraction] | None:
        """The law over a uniform whose every use is a comparison with a value computed without any
        uniform: its breakpoints are read from those comparisons in the runs at each piece's first grid
        point, until no new one appears (then every grid point of a piece takes the same path, so the
        law of the piece is the law at its first point). None if some run used it otherwise."""
        n, n_grid = len(prefix), 1 << slot.bits
        known: set[int] = set()
        visited: set[int] = set()
        while True:
            starts = sorted({0, *(b for b in known if 0 < b < n_grid)})
            todo = [a for a in starts if a not in visited]
            if not todo:
                break
            for a in todo:
                visited.add(a)
                self.run(prefix + (a,))
                readable, reads = self._reads[prefix + (a,)]
                if n not in readable or n not in reads:  # used otherwise, or not seen at all: bisect
                    return None
                known |= reads[n]
        # checked where bisection would probe, and at each piece's last point: a use the mode cannot see
        # (TorchScript, C++, another thread) that changes the run there sends the uniform to bisection
        ends = [*starts[1:], n_grid]
        piece_of = lambda k: max(i for i, a in enumerate(starts) if a <= k)  # noqa: E731
        checks = {0, n_grid // 4, n_grid // 2, 3 * n_grid // 4, n_grid - 1, *(b - 1 for b in ends)}
        for k in sorted(checks):
            a = starts[piece_of(k)]
            if k != a and self._signature(prefix, k) != self._signature(prefix, a):
                return None
        out: dict[Any, Fraction] = {}
        for a, b in zip(starts, [*starts[1:], n_grid]):
            for k, m in self.law(prefix + (a,)).items():
                out[k] = out.get(k, Fraction(0)) + Fraction(b - a, n_grid) * m
        return out

    def _signature(self, prefix, k: int) -> tuple:
        """The output and the later random requests of the run with ``k`` at slot ``len(prefix)``."""
        key, slots = self.run(prefix + (k,))
        return key, slots[len(prefix) + 1:]

    def _uniform_law(self, prefix, slot: _Uniform) -> dict[Any, Fraction]:
        if self.read_thresholds:
            read = self._read_law(prefix, slot)
            if read is not None:
                self.read_slots += 1
                return read
        self.bisected_slots += 1
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
                                     (a + quarter, (a + b) // 2, b - quarter), "the law of the rest of the run")
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
          max_runs: int = 200_000, check_pieces: bool = True, exponential_zeros: bool = False,
          progress: Callable[[int], Any] | None = None, read_thresholds: bool = True,
          pushforward: bool = True) -> Trace:
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
    exponential_zeros : bool, optional
        Model PyTorch's CPU ``Tensor.exponential_`` returning -0.0 (at ``u = 0``, probability
        :data:`EXPONENTIAL_ZERO` = 2^-53 per element): in each race with zero weights, the first
        zero-weight id whose E is -0.0 wins through the NaN of ``0 / -0.0``, as the code's argmax
        decides; failing that, the first ``-inf``-weight id whose E is -0.0 wins through
        ``-inf / -0.0 = +inf``. Default False: the race is idealized and the edge is stated, not
        in the law.
    progress : callable, optional
        Called with 1 after each run of the sampler (for a progress bar on a long trace).
    read_thresholds : bool, optional
        Default True: a ``torch.rand`` uniform (one element) that the sampler only compares
        (``<``, ``<=``, ``>``, ``>=``) with values computed without any uniform has its breakpoints
        read from those comparisons (the same torch call evaluated on grid values), exactly and
        without the bisection's assumption; every other uniform is bisected as before. False:
        bisect every uniform (with ``pushforward=False`` too, the mode that watches torch calls then runs only
        on the first runs).
    pushforward : bool, optional
        Default True: where a run's last random draw is a ``torch.multinomial`` whose result the
        run only moves into its output (squeeze, reshape, indexing with values that hold no draw,
        ``cat``, ``stack``, as far as PyTorch's function mode sees) and the sampler returns it (or a
        tensor holding it), the output at every category is read from that one run (the law of the
        draw pushed forward) and checked by one run at another category; a draw the sampler
        compares, converts (``int``, ``.item()``, ``.tolist()``), indexes with or computes with is
        enumerated, one run per category, as with False.

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
    ContinuousThreshold
        (A NotPiecewiseConstant.) Gumbel-max on uniforms, a comparison between values of two
        uniforms, a uniform used as a value, or a piece search finding a breakpoint at each of
        :data:`MAX_CONSECUTIVE_BREAKS` consecutive grid points.
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

    An exponential race, as vLLM draws a recovered token (idealized; see the assumptions):

    >>> import torch
    >>> w = torch.tensor([0.5, 0.0, 0.25, 0.25])
    >>> trace(lambda: int(torch.argmax(w / torch.empty_like(w).exponential_()))).law
    {0: Fraction(1, 2), 2: Fraction(1, 4), 3: Fraction(1, 4)}
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
    tracer = _Tracer(sampler, tuple(args), kwargs, key, generator, max_runs, bool(check_pieces),
                     bool(exponential_zeros), progress, bool(read_thresholds), bool(pushforward))
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
    if tracer.read_slots and not tracer.bisected_slots:  # every uniform read from its comparisons: no bisection
        general = (general[0], _READ_ALL, *general[2:])
    elif tracer.read_slots:
        general = (*general, f"the breakpoints of {tracer.read_slots} of the {tracer.read_slots + tracer.bisected_slots} "
                   "uniform draws traced (at their prefixes) were read exactly from their comparisons; the others "
                   "were bisected, under the assumption above")
    if tracer.pushed_slots or tracer.push_refuted:
        general = (*general, _pushed_note(tracer.pushed_slots, tracer.push_refuted))
    assumptions = general + tuple(_CALL_ASSUMPTIONS[c] for c in sorted(tracer.calls))
    if exponential_zeros and "Tensor.exponential_" in tracer.calls:
        assumptions += (_EXPONENTIAL_ZEROS,)
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
        sampling ``rows`` and R is their product: :func:`specproof.laws.block.stream_tv` with the
        row ``rows[i]`` after every prefix of i ids (O(blocks * n * V), never V^n sequences).

    Raises
    ------
    InvalidDistribution
        A block of no ids or of more than ``len(rows)``.

    Examples
    --------
    >>> half = (Fraction(1, 2), Fraction(1, 2))
    >>> stream_tv({(0,): Fraction(1, 2), (1, 1): Fraction(1, 2)}, [half, half])
    Fraction(1, 4)
    """
    n = len(rows)
    for b in law:
        if not 1 <= len(b) <= n:
            raise InvalidDistribution(f"block {b} has {len(b)} ids, not 1 to {n}")
    return _stream_tv(law, lambda prefix: rows[len(prefix)], n - 1)
