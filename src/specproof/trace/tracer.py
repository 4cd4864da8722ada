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
                               ``exponential_zeros=True``. vLLM V1's form ``inv = E.reciprocal()``
                               then ``argmax(w * inv)`` is the same race (E set to decide it,
                               ``inv`` set to ``1 / E``). Any other use of E or of ``w / E``
                               (``log E``, ``w * E``, a second race on the same E, ``max`` of the
                               values, a flattened argmax) is refused, naming it
NumPy ``Generator.random``     float64 ``k / 2^53`` (``(next_uint64 >> 11) * 2^-53``); float32
                               ``k / 2^24``
NumPy ``Generator.uniform``    ``low + (high - low) * (k / 2^53)`` in float64
NumPy ``Generator.integers``   exactly uniform on ``[low, high)`` (at most 65,536 values)
NumPy ``Generator.choice``     an exact categorical over ``p`` (``Fraction(p_i) / sum``), or
                               uniform over ``a`` without ``p``; with replacement only (NumPy's
                               own inverse-CDF search is not traced)
NumPy ``RandomState`` and the  ``random_sample``/``rand``/``random``: float64 ``k / 2^53``;
global ``np.random.rand``,     ``uniform``, ``choice`` as the Generator's; ``randint`` exactly
``random_sample``,             uniform on ``[low, high)``
``uniform``, ``choice``,
``randint``
Python ``random.random``       ``k / 2^53`` (CPython's ``genrand_res53``), for the module and every
                               ``random.Random`` instance (the class is patched); ``uniform`` and
                               ``choices`` computed from it by CPython's own code
Python ``randrange``,          ``Random._randbelow(n)``: exactly uniform on ``0 .. n - 1``
``randint``, ``choice``,       (n at most 65,536); ``getrandbits(k)``, k <= 16, exactly uniform
``shuffle``, ``sample``
============================== =================================================================

Never a verdict from uncontrolled randomness (:mod:`specproof.trace.control`): every NumPy ``Generator``
or ``RandomState`` the sampler reaches without being given it (a module-level
``np.random.default_rng(0)``, a closure's, an object's attribute, an argument's) is replaced by a traced
one for the duration of the trace, and ``np.random.default_rng()`` inside a run returns one. Every other
live generator (NumPy's, ``random.Random``) and the global ones (PyTorch's default, NumPy's legacy,
Python's module) are compared before and after every run: a change (a generator kept in a tuple, a
function bound before tracing, a C++ kernel) is refused with :class:`UncontrolledRandomness`, naming the
generator and the line that drew from it. Before any verdict, the first run and one run of each output
(up to 8) are replayed with the same supplied draws under a profiler that sees a random function or
``os.urandom`` bound before tracing, and every run that read the clock (``time.time``,
``perf_counter``, ``monotonic`` ...; frozen in every run) is replayed with the clock shifted: another
output is refused, naming the clock's reads. ``os.urandom`` (``secrets``, ``uuid.uuid4``,
``random.SystemRandom``) and a sampler that seeds its own generator (``random.Random(0)``,
``np.random.default_rng(0)`` inside a run) are refused. A deterministic sampler (greedy) keeps its point
mass. :attr:`Trace.control` says how this was checked.

Any other source of randomness is refused with :class:`UnmodelledRandomness`, naming the call and its
line: ``torch.randn``, ``torch.normal``, ``torch.bernoulli``, ``Tensor.geometric_`` and the other
random tensor methods, every other NumPy ``Generator`` and ``RandomState`` method (and global
function), and Python's continuous laws (``gauss``, ``expovariate`` ...).
Invalid weights (NaN, inf, negative, all zero) given to ``torch.multinomial`` or ``Generator.choice``
raise :class:`SamplerRaised`, as the real calls do. torch is imported only if the sampler uses it (a
NumPy-only sampler leaves ``torch`` out of ``sys.modules``; a sampler that imports torch during a run
is run again with torch patched). Random draws and clock reads of a module's import-time code (a
library imported during a run) use the real generator and clock. A ``generator=`` argument of the
intercepted torch calls is ignored: the value comes from the trace either way.

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
re-running the sampler. Every run of the law at the first grid point of each piece (the later draws
at all the values explored, not only at their defaults, since a later draw may choose which threshold
the uniform meets) reports the comparisons met on its path; new breakpoints split the pieces until none
appears. Every grid point of a piece then takes the same paths (each comparison on it has the same
result), so its law is the law at the piece's first point. As a guard against uses the mode cannot
see (TorchScript, C++ kernels, other threads), each piece is also run at its last grid point and at the bisection's probes; a run that
differs there sends the uniform to bisection. A uniform used any other way (arithmetic, ``u *
q < p``, ``.item()``, NumPy) is bisected as below. Measured on transformers' verifier (random float32
logits, same laws; before runs were shared between prefixes): V = 16, gamma = 1: 1,257 runs -> 433; V = 8, gamma = 2: 12,777 -> 1,950; V = 4,
gamma = 3: 29,461 -> 2,439; V = 64, gamma = 1: 16,449 -> 5,554; V = 16, gamma = 2: 69,393 -> 10,225.

A uniform nothing reads, under Triton's interpreter (with ``read_thresholds=True``): a ``torch.rand`` or
``torch.rand_like`` tensor handed to a kernel has its memory recorded, the interpreter's loads mark the
uniforms whose bytes they read, and a torch call on it other than reading its shape and layout (or the
launch's own plumbing) marks its uniforms used (:mod:`specproof.trace.sources.triton_reads`). A uniform
that no run of the law at its default read gets that law, after the runs at the bisection's probes agree
with the run at the default (SGLang's last coin, which its kernel never loads: 364 runs -> 199 at gamma 1).

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
Gumbel-max in the forms that are an exponential race in disguise (``argmax(l - log(-log u))``,
``topk(l + G, k)``, ``argmax(w / (-log u))``, ``argmax(l - log E)``) is traced exactly as that race
(:mod:`specproof.trace.sources.gumbel`); any other ordering (``argmax``, ``sort``, ``topk``,
``max(dim=...)``) of values computed from two or more uniforms or a comparison of two such values
(``u2 < f(u1)``) raises :class:`ContinuousThreshold` on the first run, naming the construction and
what to use instead (``torch.multinomial`` or an exponential race; ``assert_lossless(...,
statistical=True)`` tests such a sampler statistically and says so). Comparisons with row
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
bounds the work, ``max_seconds`` its time (:class:`TraceTimeout`).

Not thread-safe: the patches are process-wide while a trace runs.

Where the parts are: :mod:`specproof.trace.core` (the slots, one run, :class:`Trace`),
:mod:`specproof.trace.explore` (the exploration of branches), :mod:`specproof.trace.sources` (one module
per randomness source behind :class:`specproof.trace.sources.base.Source`; a new source is one module
and its tests), and this module (:func:`trace`, the assumptions it states, :func:`rows_stream_tv`).

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
import math
import signal
import threading
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from specproof.errors import InvalidDistribution, SpecProofError, renamed
from specproof.laws.block import stream_tv as _stream_tv
from specproof.trace.assumptions import _EXPONENTIAL_ZEROS, _GENERAL, _READ_ALL, _pushed_note
from specproof.trace.control import Control
from specproof.trace.core import (  # noqa: F401  (re-exported: the public names and limits)
    _ACTIVE,
    EXPONENTIAL_ZERO,
    MAX_CATEGORIES,
    MAX_CONSECUTIVE_BREAKS,
    MAX_VALUES_PER_RUN,
    MODE_RUNS,
    ContinuousThreshold,
    NotPiecewiseConstant,
    SamplerRaised,
    Trace,
    TraceTimeout,
    TraceTooLarge,
    UncontrolledRandomness,
    UnmodelledRandomness,
)
from specproof.trace.explore import _Tracer
from specproof.trace.sources import _call_assumption, intercepted
from specproof.trace.sources.numpy_generator import TracedGenerator

__all__ = [
    "UnmodelledRandomness",
    "UncontrolledRandomness",
    "NotPiecewiseConstant",
    "ContinuousThreshold",
    "TraceTooLarge",
    "TraceTimeout",
    "SamplerRaised",
    "Trace",
    "trace",
    "intercepted",
    "rows_stream_tv",
    "EXPONENTIAL_ZERO",
]


def trace(
    sampler: Callable[..., Any],
    args: tuple = (),
    kwargs: dict | None = None,
    *,
    numpy_rng: str | None = None,
    key: Callable[[Any], Any] | None = None,
    max_runs: int = 200_000,
    check_pieces: bool = True,
    exponential_zeros: bool = False,
    progress: Callable[[int], Any] | None = None,
    read_thresholds: bool = True,
    pushforward: bool = True,
    max_seconds: float | None = None,
) -> Trace:
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

    max_seconds : float, optional
        A time budget in seconds (default: none): checked before every run, and, in the main thread
        where no other SIGALRM handler is installed, also inside a run (a timer interrupts a sampler
        that does not return, where Python code runs); past it :class:`TraceTimeout`.

    Returns
    -------
    Trace
        ``law`` (output -> Fraction, summing to 1), ``runs``, ``assumptions``, ``calls``, ``control``
        (how the trace checked that the law is a function of the draws it supplied).

    Raises
    ------
    UnmodelledRandomness
        The sampler called a random function that is not modelled (the message names it and its line).
    UncontrolledRandomness
        (An UnmodelledRandomness.) The output depends on randomness specproof does not control: a
        generator drawn from through a path that was not intercepted, ``os.urandom``, a sampler that
        seeds itself, a clock-driven choice, or a replay with the same draws that differs; the
        message names the source and, where seen, the line (``.source``, ``.where``).
    NotPiecewiseConstant
        An outcome appears on two separated intervals of a uniform's grid, or the sampler is not
        deterministic given its random numbers.
    ContinuousThreshold
        (A NotPiecewiseConstant.) Gumbel-max on uniforms outside the race forms, a comparison between values of two
        uniforms, a uniform used as a value, or a piece search finding a breakpoint at each of
        :data:`MAX_CONSECUTIVE_BREAKS` consecutive grid points.
    TraceTooLarge
        More than ``max_runs`` runs would be needed.
    TraceTimeout
        (A TraceTooLarge.) The trace passed ``max_seconds``.
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
    if max_seconds is not None and (
        isinstance(max_seconds, bool)
        or not isinstance(max_seconds, (int, float))
        or not max_seconds > 0
        or not math.isfinite(max_seconds)
    ):
        raise SpecProofError(f"max_seconds is {max_seconds!r}, not a number of seconds > 0")
    kwargs = dict(kwargs or {})
    generator = None
    if numpy_rng is not None:
        generator = TracedGenerator(np.random.PCG64(0))
        kwargs[numpy_rng] = generator
    control = Control(sampler, tuple(args), kwargs)
    tracer = _Tracer(
        sampler,
        tuple(args),
        kwargs,
        key,
        generator,
        max_runs,
        bool(check_pieces),
        bool(exponential_zeros),
        progress,
        bool(read_thresholds),
        bool(pushforward),
        control,
    )
    with intercepted(), control.bound(), _budget(tracer, max_seconds):
        law = tracer.law(())
        tracer.replay_check()  # before any verdict: the law is a function of the supplied draws
        tracer.seed_check()  # ... and not of a seed argument (seeded or hash-based noise)
    try:
        law = dict(sorted(law.items()))
    except TypeError:
        pass
    general: tuple[str, ...] = (
        _GENERAL
        if check_pieces
        else (
            _GENERAL[0],
            _GENERAL[1].replace(
                "the law of the rest is recomputed at both ends and the middle of every interval",
                "check_pieces=False: the law of the rest is computed at the first grid point of each interval only, "
                "assumed the same on the whole interval",
            ),
            *_GENERAL[2:],
        )
    )
    if tracer.read_slots and not tracer.bisected_slots:  # every uniform read from its comparisons: no bisection
        general = (general[0], _READ_ALL, *general[2:])
    elif tracer.read_slots:
        general = (
            *general,
            f"the breakpoints of {tracer.read_slots} of the {tracer.read_slots + tracer.bisected_slots} "
            "uniform draws traced (at their prefixes) were read exactly from their comparisons; the others "
            "were bisected, under the assumption above",
        )
    if tracer.unread_slots:
        general = (
            *general,
            f"{tracer.unread_slots} uniform draws (at their prefixes) were read by no run of their law: handed to a "
            "Triton kernel under the interpreter that loaded none of their bytes, with no torch call on them but the "
            "interpreter's plumbing; each was given the law at its default, checked by runs at the bisection's probes "
            "(a use neither the mode nor the interpreter's loads see, such as C++ reading the memory, is assumed "
            "absent)",
        )
    if tracer.pushed_slots or tracer.push_refuted:
        general = (*general, _pushed_note(tracer.pushed_slots, tracer.push_refuted))
    assumptions = general + tuple(_call_assumption(c) for c in sorted(tracer.calls))
    if exponential_zeros and "Tensor.exponential_" in tracer.calls:
        assumptions += (_EXPONENTIAL_ZEROS,)
    return Trace(
        law, tracer.runs, assumptions, tuple(sorted(tracer.calls)), control.statement(tracer.runs, bool(tracer.calls))
    )


@contextlib.contextmanager
def _budget(tracer: _Tracer, max_seconds: float | None) -> Iterator[None]:
    """``max_seconds`` for ``tracer``: a deadline checked before every run and, in the main thread where no other
    SIGALRM handler is set, a timer that interrupts a run past it (cancelled before the patches are undone)."""
    if max_seconds is None:
        yield
        return
    tracer.max_seconds = float(max_seconds)
    tracer.deadline = time.monotonic() + float(max_seconds)
    alarm = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.SIG_IGN, None)
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )
    if not alarm:
        yield
        return

    def expired(signum, frame):
        raise TraceTimeout(tracer.timed_out())

    depth = len(_ACTIVE)
    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, float(max_seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        del _ACTIVE[depth:]  # a run the timer interrupted between its start and its own cleanup


def rows_stream_tv(law: dict[tuple[int, ...], Fraction], rows: Any) -> Fraction:
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
    >>> rows_stream_tv({(0,): Fraction(1, 2), (1, 1): Fraction(1, 2)}, [half, half])
    Fraction(1, 4)
    """
    n = len(rows)
    for b in law:
        if not 1 <= len(b) <= n:
            raise InvalidDistribution(f"block {b} has {len(b)} ids, not 1 to {n}")
    return _stream_tv(law, lambda prefix: rows[len(prefix)], n - 1)


_RENAMED = {
    "stream_tv": ("rows_stream_tv", "specproof.laws.block.stream_tv is the block engine's, with another signature")
}

__getattr__ = renamed(__name__, _RENAMED, globals())
