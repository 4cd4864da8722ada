"""The tracer's core: its exceptions and limits, the random slots a run consumes, one run, the result.

Split from :mod:`specproof.trace.tracer` (which re-exports the public names); the model of each
randomness source is in :mod:`specproof.trace.sources`, the exploration of branches in
:mod:`specproof.trace.explore`.
"""

from __future__ import annotations

import functools
import gc
import math
import os
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from types import FrameType
from typing import Any

import numpy as np

from specproof.errors import SpecProofError

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


class UncontrolledRandomness(UnmodelledRandomness):
    """The sampler's output depends on randomness specproof does not control (no verdict is given).

    Raised for a generator reached through a path that is not patched (a NumPy ``Generator`` or
    ``RandomState`` or a ``random.Random`` the tracer cannot rebind, a function bound before tracing),
    ``os.urandom``/``secrets``, a sampler that seeds its own generator, and a sampler whose output changes
    when a run is replayed with the same supplied draws (or with the clock shifted). The message names the
    source and, where it was seen, the file and line.

    Attributes
    ----------
    source : str
        What drew the randomness (``"numpy.random.Generator (PCG64) at 0x..."``, ``"time.perf_counter"``).
    where : str or None
        ``file:line`` of the call in the sampler's code, where known.
    """

    def __init__(self, message: str, source: str = "", where: str | None = None) -> None:
        super().__init__(message)
        self.source = source
        self.where = where


class NotPiecewiseConstant(SpecProofError):
    """A uniform's effect is not one outcome per interval (not monotone), or takes too many pieces."""


class ContinuousThreshold(NotPiecewiseConstant):
    """A threshold depends continuously on an earlier uniform, so bisection would never end.

    Raised for Gumbel-max on uniforms outside the forms traced as a race (:mod:`specproof.trace.sources.gumbel`:
    ``argmax(log w - log(-log u))`` is traced; the noise squared or used twice is not), a comparison between values
    computed from two different uniforms (``u2 < f(u1)``), a uniform used as a value, and any piece
    search that finds a breakpoint at each of :data:`MAX_CONSECUTIVE_BREAKS` consecutive grid points.
    The message names the construction and what to use instead.
    """


class TraceTooLarge(SpecProofError):
    """The trace needs more re-runs than ``max_runs``."""


class TraceTimeout(TraceTooLarge):
    """The trace passed its time budget (``max_seconds``, ``--timeout``): between runs, or inside a run that did
    not return in time (a hanging sampler, interrupted where Python code runs). The message says how many runs were
    done and where the trace was."""


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
        self.clock_shift = 0.0  # seconds added to the run's frozen clock (the replays that check the clock shift it)
        self.clock_reads = 0  # clock reads so far in the run (its frozen clock advances clock_step a read)
        self.clock_step = 1e-6  # seconds the frozen clock advances a read (the replay of elapsed times: CLOCK_STEP)
        self.clock_sites: set[str] = set()  # the clock reads of this run ("time.perf_counter at file:line")
        self.clock_shift_only: frozenset[str] | None = None  # the read sites clock_shift applies to (None: all)
        self.mode: Any = None  # the _RaceMode watching this run's torch calls, if any
        self.keep: list[Any] = []  # tensors whose ids are keys below stay alive for the run
        self.exp: dict[int, _ExpDraw] = {}  # id(tensor) -> the exponential draw it holds (or a view of)
        self.quotients: dict[int, int] = {}  # id(w / E) -> E's number of dimensions
        self.recips: dict[int, tuple[Any, Any]] = {}  # id(E.reciprocal()) -> (E's draw, E)
        self.taint: dict[int, frozenset[int]] = {}  # id(tensor) -> the uniform slots its values depend on
        self.raw: dict[
            int, tuple[int, int]
        ] = {}  # id(tensor) -> (first slot, count) of the uniforms it holds unchanged
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
        self.gumbel: dict[int, Any] = {}  # id(tensor) -> its node in a chain from uniforms to a race (sources.gumbel)
        self.gumbel_plans: set[tuple] = set()  # the draws to defer as Gumbel noise (the tracer's, shared by its runs)
        self.hashed: dict[int, str | None] = {}  # id(tensor) -> where integer bit-mixing began (hash-based noise)
        self.logs: dict[int, Any] = {}  # id(log w) -> w, for tensors w that hold no uniform (the weights of a race)
        # uniform tensors handed to Triton's interpreter (specproof.trace.sources.triton_reads): (address, element
        # size, first slot, count); the slots a kernel load read; the slots a torch call other than plumbing used
        self.kernel_memory: list[tuple[int, int, int, int]] = []
        self.kernel_read: set[int] = set()
        self.torch_used: set[int] = set()
        self.launching = 0  # nested Triton kernel launches under way (specproof.trace.sources.triton_reads)

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
            raise TraceTooLarge(
                f"one run of the sampler drew more than {MAX_VALUES_PER_RUN} random values (a loop "
                "that waits for a value the trace's default never gives, e.g. `while rand() < "
                "0.5` at u = 0, or resampling until a token other than the first)"
            )
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


def exact_float_sum(values: Any) -> tuple[list[int], int] | None:
    """Floats as integers over one power of two: ``(numerators, 2^k)`` with ``values[i] == numerators[i] / 2^k``
    exactly, or None where an entry is not a finite float. Exact sums of long rows cost integer additions
    (a V = 128,256 row in milliseconds), not a Fraction addition per entry."""
    pairs = []
    for w in values:
        if not isinstance(w, float) or not math.isfinite(w):
            return None
        pairs.append(w.as_integer_ratio())
    if not pairs:
        return None
    d = max(b for _, b in pairs)  # every denominator is a power of two, so each divides the largest
    return [a * (d // b) for a, b in pairs], d


def _fraction_weights(values: Any, call: str) -> tuple[Fraction, ...]:
    """The weights as exact fractions of their exact sum (refusing what the real call raises on); a row
    seen before (every run of a trace draws from the same rows) is read from a cache."""
    values = tuple(float(w) for w in values)
    if values in _WEIGHTS:
        return _WEIGHTS[values]
    out = _exact_weights(values, call)
    global _WEIGHTS_HELD
    if len(values) <= WEIGHTS_CACHED:  # a longer row is not held
        while _WEIGHTS and _WEIGHTS_HELD + len(values) > WEIGHTS_CACHED:  # the oldest rows go first
            _WEIGHTS_HELD -= len(_WEIGHTS.pop(next(iter(_WEIGHTS))))
        _WEIGHTS[values] = out
        _WEIGHTS_HELD += len(values)
    return out


#: Rows of weights made exact, by their float values (NaN never equals itself: such rows are refused, not cached),
#: at most :data:`WEIGHTS_CACHED` entries in all (about 40 MB).
_WEIGHTS: dict[tuple[float, ...], tuple[Fraction, ...]] = {}
WEIGHTS_CACHED = 1 << 18
_WEIGHTS_HELD = 0


def _exact_weights(values: tuple[float, ...], call: str) -> tuple[Fraction, ...]:
    for i, w in enumerate(values):
        if not math.isfinite(w) or w < 0:  # torch.multinomial and Generator.choice raise on these
            raise SamplerRaised(
                f"{call}: weight {i} is {w!r}, not a finite number >= 0, on which the real call raises an error"
            )
    nums, _ = exact_float_sum(values) or ([], 1)
    total = sum(nums)
    if total == 0:
        raise SamplerRaised(f"{call}: the weights sum to 0, on which the real call raises an error")
    return tuple(Fraction(n, total) for n in nums)


def _draw_categorical(run: _Run, values: tuple, probs: tuple[Fraction, ...], call: str) -> Any:
    return values[run.take(_Categorical(values, probs, call))]


def _uniform_values(run: _Run, n: int, bits: int, call: str) -> list[float]:
    scale = 2.0**-bits
    return [run.take(_Uniform(bits, call)) * scale for _ in range(n)]


def _real_dir(path: str) -> str:
    """``path``'s directory, resolved, with forward slashes and a trailing one."""
    return os.path.dirname(os.path.realpath(path)).replace("\\", "/") + "/"


#: The tracer's own directory (specproof/trace/), specproof's, and the standard library's: files are told apart by
#: where they are, never by a name a user's folder could also have (a clone of the repository is a "specproof").
TRACE_DIR = _real_dir(__file__)
PACKAGE_DIR = _real_dir(os.path.dirname(os.path.realpath(__file__)))
STDLIB_DIR = os.path.realpath(sysconfig.get_paths()["stdlib"]).replace("\\", "/") + "/"


@functools.lru_cache(maxsize=4096)
def real_file(name: str) -> str:
    """A code object's file name, resolved, with forward slashes (``<frozen ...>`` and the like as given)."""
    if name.startswith("<"):
        return name
    return os.path.realpath(name).replace("\\", "/")


def module_dir(module: str) -> str | None:
    """The resolved directory of an imported package (``"torch"``, ``"numpy.random"``), else None."""
    m = sys.modules.get(module)
    where = getattr(m, "__file__", None)
    return _real_dir(where) if where else None


def in_stdlib(name: str, *files: str) -> bool:
    """True if ``name`` (a resolved file name) is one of the standard library's ``files`` (``"random.py"``)."""
    return name.startswith(STDLIB_DIR) and name[len(STDLIB_DIR) :] in files


def _library_file(name: str) -> bool:
    """A frame that is not "the sampler's code" when a call site is named: the tracer, the modules whose random
    functions are patched (the standard library's random, secrets, uuid, tempfile; NumPy's random) and their
    helpers (contextlib, functools)."""
    real = real_file(name)
    if real.startswith(TRACE_DIR):
        return True
    if in_stdlib(real, "random.py", "secrets.py", "uuid.py", "tempfile.py", "contextlib.py", "functools.py"):
        return True
    numpy_random = module_dir("numpy.random")
    return numpy_random is not None and real.startswith(numpy_random)


def _call_site(skip: int = 1) -> str | None:
    """``file:line`` of the innermost frame outside the tracer and the patched libraries (None if none)."""
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None:
        if not _library_file(frame.f_code.co_filename):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


#: How a clock read made by a garbage collector's callback is named ("time.perf_counter in a garbage collector's
#: callback at file:line"): not the sampler's code, but frozen and shifted like its reads (it may store the time where
#: the sampler reads it).
GC_CLOCK_READ = "in a garbage collector's callback"


def _in_gc_callback(frame: FrameType | None) -> bool:
    """True where ``frame`` is, or was called by, one of the garbage collector's callbacks (``gc.callbacks``):
    their clock reads are named as theirs, not the sampler's (Hypothesis times every collection with
    ``perf_counter``), and still frozen and shifted (a callback may store the time where the sampler reads it)."""
    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    codes.discard(None)
    while frame is not None and codes:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _importing() -> bool:
    """True while a module is being imported (its import-time code, not the sampler, draws or reads the clock)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _refuser(name: str, hint: str = "") -> Callable:
    def refuse(*args, **kwargs):
        where = _call_site(2)
        raise UnmodelledRandomness(
            f"the sampler called {name}{f' at {where}' if where else ''}, which "
            f"specproof.trace.tracer does not model{hint}; modelled: torch.rand, "
            "torch.rand_like, Tensor.uniform_, torch.multinomial, torch.randint, "
            "Tensor.exponential_ (as a race argmax(w / E)), NumPy's random/uniform/choice "
            "(of any Generator or RandomState the sampler reaches, and the global "
            "functions), Python's random.random, randrange, randint, choice, choices, "
            "shuffle, sample and uniform (the module's and any random.Random's)"
        )

    refuse.__name__ = name.rsplit(".", 1)[-1]
    refuse.__doc__ = f"Refused under the tracer: {name} is not modelled (raises UnmodelledRandomness)."
    return refuse


_RACE_HINT = (
    "use torch.multinomial(w, 1) for a categorical draw, or the exponential race "
    "argmax(w / torch.empty_like(w).exponential_(), dim=-1), which specproof.trace.tracer models exactly"
)


# --------------------------------------------------------------------------- the result


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
        raise SpecProofError(
            f"the sampler returned a {type(x).__name__}, which cannot be an outcome (not hashable): "
            "return a token id, a tuple of ids or a tensor, or pass key= to map it to one"
        ) from None
    return x


def _hashable(v: Any) -> Any:
    if isinstance(v, dict):
        return frozenset(v.items())
    return v


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
    control : str
        How the trace checked that the law is a function of the draws it supplied: the generators
        rebound and watched, the runs replayed, the clock (:mod:`specproof.trace.control`).
    """

    law: dict[Any, Fraction]
    runs: int
    assumptions: tuple[str, ...]
    calls: tuple[str, ...] = field(default=())
    control: str = ""
