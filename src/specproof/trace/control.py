"""No verdict from uncontrolled randomness: generators found and rebound, the others watched, runs replayed.

Before a trace, the generators the sampler reaches are brought under control: every NumPy ``Generator`` or
``RandomState`` found in what the sampler's code names (its globals and the attributes of the modules it
names, its closure, its defaults, the object of a bound method, the arguments, recursively a few levels
deep) is replaced by a traced one for the duration of the trace (:func:`bound`); Python's ``random.Random``
instances need no rebinding (the class is patched). Every other live NumPy generator and ``random.Random``
instance (found by the garbage collector) is watched: its state is compared before and after every run,
and a change is refused with :class:`~specproof.trace.core.UncontrolledRandomness`, naming the generator
and the line that drew from it (found by replaying that run line by line). After the law is computed and
before any verdict, runs are replayed with the same supplied draws (the first run and one run of each
output, up to :data:`REPLAYS`), under a profiler that sees a random function or a clock bound before
tracing (``from random import random``, ``from time import perf_counter``); runs that read the clock
through ``time`` (frozen in every run at its value when the trace began) are replayed with the clock shifted by
:data:`CLOCK_REPLAYS` multiples of :data:`CLOCK_SHIFT` seconds. A replay with
another output, or other draws, is refused, naming the clock reads seen. The garbage collector's callbacks read the
same frozen clock (:mod:`specproof.trace.sources.system`): a clock bound before tracing that a callback names is
rebound to it for the trace (:meth:`Control.gc_callbacks`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import random as _pyrandom
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from specproof.trace.core import GC_CLOCK_READ, _in_gc_callback, _library_file
from specproof.trace.sources.base import Patcher
from specproof.trace.sources.numpy_generator import TracedGenerator, TracedRandomState

#: Runs replayed before any verdict (the first, and the first of each output, up to this many).
REPLAYS = 8
#: The shift of the clock in the replays of runs that read it, in seconds, applied 1, 2 and 3 times: in whole seconds,
#: milliseconds, microseconds and nanoseconds it is 7919, 7919003, 7919003003 and 7919003003003, each odd and 2 modulo
#: 3, so with the frozen clock's own replay every residue modulo 2 and 3 of the clock counted in any of these units is
#: met (the frozen clock starts in the middle of each unit, :data:`specproof.trace.sources.system.FROZEN_FRACTION`, so
#: rounding never decides), and a choice driven by it changes. (7919.001001 s, before 2026-12-04, is 0 modulo 3 in
#: milliseconds, and a float clock's nanoseconds were rounding's.)
CLOCK_SHIFT = 7919.003003003
#: How many shifted replays (the shifts CLOCK_SHIFT * 1, 2, ...).
CLOCK_REPLAYS = 3
#: The seconds the frozen clock advances a read in one more replay of each run that read the clock (1 microsecond in
#: the others): an elapsed time compared with a threshold up to about 2 hours (a fallback when the sampler is slow)
#: then crosses it. (Before 2026-12-04, evening, elapsed times were 1 microsecond a read in every replay: a choice on
#: them got a verdict.)
CLOCK_STEP = CLOCK_SHIFT
#: How deep the search for the sampler's generators goes (functions, objects, containers).
DEPTH = 4
#: The clock functions patched (and seen by the profiler when bound before tracing).
CLOCKS = (
    "time",
    "time_ns",
    "perf_counter",
    "perf_counter_ns",
    "monotonic",
    "monotonic_ns",
    "process_time",
    "process_time_ns",
    "thread_time",
    "thread_time_ns",
)

#: The clock functions and os.urandom as they were before any trace (the profiler looks for these objects).
_ORIGINAL_CLOCKS = {id(getattr(time, name)): f"time.{name}" for name in CLOCKS if hasattr(time, name)}
_ORIGINAL_URANDOM = os.urandom
#: The clock functions as they were before any trace that a name bound before tracing is rebound from, for the trace, in
#: the functions the sampler reaches and the garbage collector's callbacks (the calendar functions and
#: ``clock_gettime`` too: patched in :mod:`specproof.trace.sources.system`, and not watched by the profiler, which
#: would name ``time.localtime(t)`` as a clock read).
_REBINDABLE_CLOCKS = {
    f"time.{name}": getattr(time, name)
    for name in (*CLOCKS, "clock_gettime", "clock_gettime_ns", "localtime", "gmtime", "ctime", "asctime", "strftime")
    if hasattr(time, name)
}

_SKIP_MODULES = (
    "numpy",
    "torch",
    "specproof",
    "builtins",
    "typing",
    "functools",
    "collections",
    "abc",
    "random",
    "copy",
    "contextlib",
    "dataclasses",
    "enum",
    "re",
    "os",
    "sys",
    "math",
    "fractions",
)


def _describe(obj: Any) -> str:
    if isinstance(obj, np.random.Generator):
        return f"numpy.random.Generator ({type(obj.bit_generator).__name__})"
    if isinstance(obj, np.random.RandomState):
        return "numpy.random.RandomState"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _state(obj: Any) -> Any:
    if isinstance(obj, np.random.Generator):
        return repr(obj.bit_generator.state)
    if isinstance(obj, np.random.RandomState):
        name, keys, pos, has_gauss, cached = obj.get_state(legacy=True)
        return np.asarray(keys).tobytes(), pos, has_gauss, cached
    return obj.getstate()


#: The live NumPy generators found by the garbage collector, and when (a scan costs 15 to 60 ms with torch
#: loaded: it is reused for :data:`SCAN_SECONDS`, so a search that traces hundreds of rows pays it rarely).
_SCAN: list[Any] = [-1e300, []]
SCAN_SECONDS = 5.0
_MONOTONIC = time.monotonic


def _live_generators() -> list[Any]:
    """NumPy ``Generator`` and ``RandomState`` instances alive (not traced ones, not NumPy's global one).

    ``random.Random`` instances are not listed: their class is patched, so every draw through a method looked
    up at call time is controlled, and a method bound before tracing is seen by the replays' profiler."""
    now = _MONOTONIC()
    if now - _SCAN[0] < SCAN_SECONDS:
        return _SCAN[1]
    objs = gc.get_objects()
    kinds = (np.random.Generator, np.random.RandomState)
    hits = {
        t
        for t in set(map(type, objs))
        if issubclass(t, kinds) and not issubclass(t, (TracedGenerator, TracedRandomState))
    }
    found = [o for o in objs if type(o) in hits and o is not np.random.mtrand._rand] if hits else []
    _SCAN[:] = [_MONOTONIC(), found]
    return found


def _library(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in _SKIP_MODULES


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


class Control:
    """The generators a trace controls and watches, and what its check found (see the module docstring)."""

    def __init__(self, sampler: Any, args: tuple, kwargs: dict) -> None:
        self.rebound: list[tuple[str, str]] = []  # (where it is bound, what it is)
        self.memo: dict[int, Any] = {}  # for the per-run deep copy of the arguments: each rebound generator stays
        self.unbindable: list[tuple[str, Any]] = []  # found, but in something that cannot be written (a tuple)
        self._found: list[tuple[str, Any, Any, Any]] = []
        self._functions: list[types.FunctionType] = []  # the sampler's functions found: a clock bound in them rebound
        self._search(sampler, args, kwargs)
        self.watched: list[tuple[str, Any]] = []
        self.replayed = 0
        self.shifted = 0
        self.clock_sites: set[str] = set()
        self.seed_args: list[str] = []  # the arguments named like a seed that were changed in replays
        self.seeds_replayed = 0
        self._patcher: Patcher | None = None  # while bound(): undoes the rebinding of clocks in gc callbacks too
        self._callbacks: list[Any] = []  # the garbage collector's callbacks searched for a bound clock (kept alive)

    # ------------------------------------------------------------------ finding and rebinding generators

    def _search(self, sampler: Any, args: tuple, kwargs: dict) -> None:
        seen: set[int] = set()
        budget = [20_000]

        def visit(value: Any, kind: str, where: Any, key: Any, label: str, depth: int) -> None:
            if budget[0] <= 0:
                return
            budget[0] -= 1
            if isinstance(value, (TracedGenerator, TracedRandomState)):
                return
            if isinstance(value, (np.random.Generator, np.random.RandomState)):
                if value is np.random.mtrand._rand:  # NumPy's global generator: its functions are patched
                    return
                if kind in ("tuple", "skip"):  # cannot be written: watched, and refused if drawn from
                    self.unbindable.append((label, value))
                elif all(v is not value or k != kind or w is not where or kk != key for k, w, kk, v in self._found):
                    self._found.append((kind, where, key, value))
                    if (label, _describe(value)) not in self.rebound:
                        self.rebound.append((label, _describe(value)))
                return
            if (
                depth <= 0
                or id(value) in seen
                or isinstance(value, (str, bytes, int, float, complex, bool, type(None)))
            ):
                return
            seen.add(id(value))
            if isinstance(value, types.FunctionType):
                if not _library(getattr(value, "__module__", None)):
                    visit_function(value, depth - 1)
            elif isinstance(value, types.MethodType):
                visit(value.__self__, "skip", None, None, label + ".__self__", depth - 1)
                visit(value.__func__, "skip", None, None, label, depth)
            elif isinstance(value, functools.partial):
                visit(value.func, "skip", None, None, label, depth - 1)
                for i, a in enumerate(value.args):
                    visit(a, "tuple", None, i, f"{label}.args[{i}]", depth - 1)
                for k, a in value.keywords.items():
                    visit(a, "item", value.keywords, k, f"{label}.keywords[{k!r}]", depth - 1)
            elif isinstance(value, types.ModuleType):
                return  # a module's attributes are visited by name, from the code that names them
            elif isinstance(value, list):
                for i, a in enumerate(value[:256]):
                    visit(a, "item", value, i, f"{label}[{i}]", depth - 1)
            elif isinstance(value, tuple):
                for i, a in enumerate(value[:256]):
                    visit(a, "tuple", None, i, f"{label}[{i}]", depth - 1)
            elif isinstance(value, dict):
                for k, a in list(value.items())[:256]:
                    visit(a, "item", value, k, f"{label}[{k!r}]", depth - 1)
            elif isinstance(value, type):  # a class the code names: a generator kept as its attribute
                if not _library(value.__module__):
                    for k, a in list(vars(value).items())[:256]:
                        if isinstance(a, (np.random.Generator, np.random.RandomState)):
                            visit(a, "attr", value, k, f"{value.__qualname__}.{k}", depth - 1)
            elif not _library(type(value).__module__):
                attrs = getattr(value, "__dict__", None)
                if isinstance(attrs, dict):
                    for k, a in list(attrs.items())[:256]:
                        visit(a, "attr", value, k, f"{label}.{k}", depth - 1)
                if not isinstance(value, type):  # a generator kept as a class attribute (self.rng from the class)
                    for k, a in list(vars(type(value)).items())[:256]:
                        if isinstance(a, (np.random.Generator, np.random.RandomState)):
                            visit(a, "attr", type(value), k, f"{type(value).__qualname__}.{k}", depth - 1)
                call = next((vars(c)["__call__"] for c in type(value).__mro__ if "__call__" in vars(c)), None)
                if isinstance(call, types.FunctionType):
                    visit(call, "skip", None, None, f"{label}.__call__", depth - 1)

        def visit_function(f: types.FunctionType, depth: int) -> None:
            self._functions.append(f)
            names = _code_names(f.__code__)
            module = f.__globals__.get("__name__", "?")
            for name in sorted(names):
                if name not in f.__globals__:
                    continue
                value = f.__globals__[name]
                if isinstance(value, types.ModuleType):
                    if _library(value.__name__):
                        continue
                    for attr in sorted(names):
                        if attr in vars(value):
                            visit(vars(value)[attr], "item", vars(value), attr, f"{value.__name__}.{attr}", depth)
                else:
                    visit(value, "item", f.__globals__, name, f"{module}.{name}", depth)
            for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                visit(value, "cell", cell, None, f"{f.__qualname__} (closure: {name})", depth)
            for i, value in enumerate(f.__defaults__ or ()):
                visit(value, "tuple", None, i, f"{f.__qualname__} (default {i})", depth)
            for k, value in (f.__kwdefaults__ or {}).items():
                visit(value, "item", f.__kwdefaults__, k, f"{f.__qualname__} (default {k})", depth)

        visit(sampler, "skip", None, None, getattr(sampler, "__qualname__", "the sampler"), DEPTH + 1)
        for i, a in enumerate(args):
            visit(a, "arg", None, i, f"argument {i}", DEPTH)
        for k, a in kwargs.items():
            visit(a, "arg", None, k, f"argument {k}", DEPTH)

    @contextlib.contextmanager
    def bound(self) -> Iterator[None]:
        """Every generator found replaced by a traced one (restored on exit); the others watched."""
        patcher = Patcher()
        replacement: dict[int, Any] = {}
        try:
            for kind, where, key, value in self._found:
                new = replacement.get(id(value))
                if new is None:
                    new = (
                        TracedGenerator(np.random.PCG64(0))
                        if isinstance(value, np.random.Generator)
                        else TracedRandomState(0)
                    )
                    replacement[id(value)] = new
                    self.memo[id(value)] = new
                    self.memo[id(new)] = new
                if kind in ("item",):
                    old = where[key]
                    where[key] = new
                    patcher.at_exit(functools.partial(where.__setitem__, key, old))
                elif kind == "attr":
                    old = vars(where)[key]
                    setattr(where, key, new)
                    patcher.at_exit(functools.partial(setattr, where, key, old))
                elif kind == "cell":
                    where.cell_contents = new
                    patcher.at_exit(functools.partial(setattr, where, "cell_contents", value))
            self._watch()
            self._patcher = patcher
            self.gc_callbacks()
            for f in self._functions:  # `from time import perf_counter` in the sampler's module: frozen and shifted
                self._rebind_clocks(f, patcher)
            yield
        finally:
            self._patcher = None
            patcher.undo()

    def gc_callbacks(self) -> None:
        """Rebind, for the trace, a clock function bound before tracing (``from time import perf_counter``, or
        ``_perf_counter = time.perf_counter`` as Hypothesis keeps) that a garbage collector's callback not seen before
        names (a global or a module's attribute its code names, its closure, its defaults, its object's attributes)
        to the patched clock: the callback's reads in a run are then frozen and shifted like the sampler's (it may
        store the time where the sampler reads it). A clock reached deeper is seen by the replays' profiler."""
        patcher = self._patcher
        if patcher is None:
            return
        for cb in list(gc.callbacks):
            if any(cb is seen for seen in self._callbacks):
                continue
            self._callbacks.append(cb)
            self._rebind_clocks(cb, patcher)

    def _rebind_clocks(self, cb: Any, patcher: Patcher) -> None:
        def patched(value: Any) -> Any:
            """The patched clock for ``value`` if it is a clock function as it was before any trace, else None."""
            name = next((k for k, v in _REBINDABLE_CLOCKS.items() if v is value), None)
            if name is None:
                return None
            new = getattr(time, name[5:], None)
            return new if new is not None and new is not value else None

        owner = getattr(cb, "__self__", None)
        fn = getattr(cb, "__func__", cb)
        if isinstance(fn, functools.partial):
            fn = fn.func
        if not isinstance(fn, types.FunctionType):
            return
        names = _code_names(fn.__code__)
        for name in sorted(names):
            value = fn.__globals__.get(name)
            new = patched(value)
            if new is not None:
                fn.__globals__[name] = new
                patcher.at_exit(functools.partial(fn.__globals__.__setitem__, name, value))
            elif isinstance(value, types.ModuleType) and value is not time:
                for attr in sorted(names):
                    new = patched(vars(value).get(attr))
                    if new is not None:
                        patcher.set(value, attr, new)
        for cell in fn.__closure__ or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            new = patched(value)
            if new is not None:
                cell.cell_contents = new
                patcher.at_exit(functools.partial(setattr, cell, "cell_contents", value))
        if fn.__defaults__ and any(patched(v) is not None for v in fn.__defaults__):
            old = fn.__defaults__
            fn.__defaults__ = tuple(patched(v) or v for v in old)
            patcher.at_exit(functools.partial(setattr, fn, "__defaults__", old))
        attrs = getattr(owner, "__dict__", None)
        if isinstance(attrs, dict):
            for k, value in list(attrs.items()):
                new = patched(value)
                if new is not None:
                    try:
                        setattr(owner, k, new)
                    except (AttributeError, TypeError):  # read-only: its reads are the profiler's to see
                        continue
                    patcher.at_exit(functools.partial(setattr, owner, k, value))

    def _watch(self) -> None:
        """Every live NumPy generator not under control, to be compared before and after each run (the
        generators found but not rebound first)."""
        rebound = {id(v) for _, _, _, v in self._found}  # replaced wherever they were found
        out = [(f"{_describe(v)} ({label})", v) for label, v in self.unbindable]
        seen = {id(v) for _, v in out} | rebound
        for obj in _live_generators():
            if id(obj) not in seen:
                seen.add(id(obj))
                out.append((_describe(obj), obj))
        self.watched = out

    def states(self) -> tuple:
        """The watched generators' states."""
        return tuple(_state(obj) for _, obj in self.watched)

    def changed(self, before: tuple) -> list[tuple[str, Any]]:
        """The watched generators whose state differs from ``before``."""
        return [w for w, s in zip(self.watched, before) if _state(w[1]) != s]

    # ------------------------------------------------------------------ locating a draw, replaying runs

    @staticmethod
    def locate(replay: Any, state: Any) -> str | None:
        """``file:line`` of the line after which ``state()`` changed, by replaying a run line by line."""
        last: list[Any] = [None, state()]
        found: list[str] = []

        def local(frame, event, arg):
            if found:
                return None
            if event == "line" or event == "return":
                now = state()
                if now != last[1] and last[0] is not None:
                    found.append(last[0])
                    return None
                last[1] = now
                name = frame.f_code.co_filename
                if event == "line" and not _library_file(name):
                    last[0] = f"{name}:{frame.f_lineno}"
            return local

        def global_(frame, event, arg):
            return local

        old = sys.gettrace()
        if old is not None:  # a debugger or coverage is tracing: do not replace it
            return None
        sys.settrace(global_)
        try:
            replay()
        except Exception:  # the replay is only to find the line
            pass
        finally:
            sys.settrace(None)
        return found[0] if found else last[0]

    @staticmethod
    def profiled(replay: Any) -> tuple[Any, list[tuple[str, str]]]:
        """Run ``replay()`` under a profiler; return its result and the uncontrolled calls seen: (what, where) for
        a clock function, os.urandom or a random.Random method called through a name bound before tracing."""
        clocks = _ORIGINAL_CLOCKS
        urandom = id(_ORIGINAL_URANDOM)
        seen: list[tuple[str, str]] = []

        def hook(frame, event, arg):
            if event != "c_call":
                return
            what = clocks.get(id(arg))
            if what is None and id(arg) == urandom:
                what = "os.urandom"
            if (
                what is None
                and isinstance(getattr(arg, "__self__", None), _pyrandom.Random)
                and getattr(arg, "__name__", "") in ("random", "getrandbits", "randbytes", "seed", "setstate")
            ):
                what = f"random.{arg.__name__} (a bound method of a random.Random, taken before tracing)"
            if what is not None:
                name = frame.f_code.co_filename
                # not the tracer's or random.py's; a clock read in a garbage collector's callback named as its
                if not _library_file(name):
                    if what.startswith("time.") and _in_gc_callback(frame):
                        what = f"{what} {GC_CLOCK_READ}"
                    seen.append((what, f"{name}:{frame.f_lineno}"))

        if sys.getprofile() is not None:  # another profiler (cProfile) is active: do not replace it
            return replay(), seen
        sys.setprofile(hook)
        try:
            got = replay()
        finally:
            sys.setprofile(None)
        return got, seen

    def statement(self, runs: int, draws: bool) -> str:
        """How the trace checked that its law is a function of the draws it supplied (one sentence)."""
        parts = []
        if self.rebound:
            names = ", ".join(f"{where} ({what})" for where, what in self.rebound[:4])
            more = f" and {len(self.rebound) - 4} more" if len(self.rebound) > 4 else ""
            parts.append(f"rebound to traced generators for the trace: {names}{more}")
        parts.append(
            f"{len(self.watched)} other NumPy generator(s) watched, and PyTorch's, NumPy's and Python's global "
            "generators unchanged after every run"
        )
        parts.append(
            f"{self.replayed} of the {runs} runs replayed with the same supplied draws (under a profiler "
            "watching for a clock, os.urandom or a random method bound before tracing): the same outputs "
            "and draws"
        )
        own = sorted(site for site in self.clock_sites if GC_CLOCK_READ not in site)
        collector = sorted(site.replace(f" {GC_CLOCK_READ}", "") for site in self.clock_sites if GC_CLOCK_READ in site)
        if own or collector:
            read = []
            if own:
                frozen = (
                    "frozen in every run, except a read bound before tracing: the real clock"
                    if any(site.endswith("(bound before tracing: not shifted)") for site in own)
                    else "frozen in every run"
                )
                read.append(f"the clock was read ({', '.join(own[:3])}; {frozen})")
            if collector:
                read.append(
                    f"a garbage collector's callback read the clock in a collection the sampler forced "
                    f"({', '.join(collector[:3])}; not the sampler's code, frozen in every run too)"
                )
            parts.append(
                f"{' and '.join(read)}: {self.shifted} run(s) replayed with it shifted by {CLOCK_REPLAYS} multiples "
                f"of {CLOCK_SHIFT} s, and with it advancing {CLOCK_STEP} s a read, gave the same outputs"
            )
        if self.seed_args:
            parts.append(
                f"the seed argument(s) {', '.join(self.seed_args[:3])} changed in {self.seeds_replayed} "
                "replay(s) with the same supplied draws: the same outputs (no seeded or hash-based noise)"
            )
        head = (
            "randomness under control: every draw went through the modelled calls"
            if draws
            else "no random draw: the sampler is deterministic"
        )
        return head + "; " + "; ".join(parts)
