"""The operating system's randomness and the clock: ``os.urandom`` refused, the clock's reads recorded.

``os.urandom`` (behind :mod:`secrets`, ``uuid.uuid4`` and ``random.SystemRandom``) cannot be replayed: it is
refused, naming the line. The clock (``time.time``, ``perf_counter``, ``monotonic``, ``process_time``, ``thread_time``
and their ``_ns`` forms; ``clock_gettime`` and ``localtime``, ``gmtime``, ``ctime``, ``asctime`` and ``strftime`` without
a time read through them) is not random, but a choice driven by it is not a function of the supplied draws: each read
inside a run is recorded with its line and returns a frozen clock: the whole seconds of its value when the trace
began plus :data:`FROZEN_FRACTION`, advancing 1 microsecond a read, the same in every run (so the runs are a function of the draws and a wait loop ends); the
replays that check that the output does not depend on it shift it by multiples of
:data:`specproof.trace.control.CLOCK_SHIFT`. A clock function bound before tracing (``from time import perf_counter``)
is not patched; the replays' profiler sees it (:mod:`specproof.trace.control`). Reads made by the garbage collector's
callbacks (``gc.callbacks``) inside a run get the same frozen, shifted clock, without advancing it (a callback timing
a collection sees it take no time), and are recorded under their own name (``"time.perf_counter in a garbage
collector's callback at file:line"``): such a callback may store the time where the sampler reads it, so the replays
must show the output does not depend on it; one that only times collections (Hypothesis's) is not named as the
sampler's read. Automatic collections are off during a run (:meth:`specproof.trace.explore._Tracer._execute`), so the
callbacks run in a run only where it forces a collection, the same in every replay.
"""

from __future__ import annotations

import math
import os
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from specproof.trace.core import (
    _ACTIVE,
    GC_CLOCK_READ,
    UncontrolledRandomness,
    _call_site,
    _importing,
    _in_gc_callback,
)
from specproof.trace.sources.base import Patcher, Source

_CLOCKS = (
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


#: The frozen clock's start after its whole seconds: 500500500.5 ns, so counted in seconds, milliseconds, microseconds or
#: nanoseconds it is in the middle of a unit (fraction 0.5005005005, 0.5005005, 0.5005, 0.5), and the shifts of the
#: replays (:data:`specproof.trace.control.CLOCK_SHIFT`, 7919.003003003 s) move each count by a whole number, never
#: across a unit's edge by rounding. The ``_ns`` clocks start at 500500500 ns past the second.
FROZEN_FRACTION = 0.5005005005


def _clock(name: str, original: Callable[[], Any]) -> Callable[[], Any]:
    ns = name.endswith("_ns")
    # the frozen clock of the replays starts here: the whole seconds of the real clock (its magnitude: an epoch for
    # time.time), then the middle of every unit
    base = original() // 10**9 * 10**9 + 500_500_500 if ns else math.floor(original()) + FROZEN_FRACTION

    def clock() -> Any:
        if not _ACTIVE or _importing():
            return original()
        run = _ACTIVE[-1]
        where = _call_site(2)
        # a frozen clock (the same in every run, so the runs are a function of the draws), advancing 1 microsecond
        # a read of the sampler's (so a wait loop ends); shifted in the replays that check that the output does not
        # depend on it. A garbage collector's callback reads it without advancing it (a collection takes no time)
        # and is named as such: not the sampler's code, but it may store the time where the sampler reads it
        if _in_gc_callback(sys._getframe(1)):
            site = f"time.{name} {GC_CLOCK_READ}" + (f" at {where}" if where else "")
        else:
            site = f"time.{name} at {where}" if where else f"time.{name}"
            run.clock_reads += 1
        run.clock_sites.add(site)
        # a replay that names the read a dependence comes from shifts one site only
        shift = run.clock_shift if run.clock_shift_only is None or site in run.clock_shift_only else 0.0
        if ns:  # 7919003003003 ns a shift
            return base + round(shift * 1e9) + run.clock_reads * round(run.clock_step * 1e9)
        return base + shift + run.clock_reads * run.clock_step

    clock.__name__ = name
    return clock


def _calendar(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``time.localtime``, ``gmtime``, ``ctime``, ``asctime`` and ``strftime`` without a time: the current time they
    read (in C, not through ``time.time``) becomes the patched ``time.time``'s, recorded and shifted like it."""
    given = 2 if name == "strftime" else 1  # how many arguments mean the time was given

    def calendar(*args: Any) -> Any:
        if not _ACTIVE or _importing() or (len(args) >= given and args[given - 1] is not None):
            return original(*args)
        if name in ("asctime", "strftime"):
            return original(*args[: given - 1], time.localtime())
        return original(time.time())

    calendar.__name__ = name
    return calendar


#: ``time.clock_gettime(clk_id)``'s clocks read through the patched clock of the same kind (any other id: ``monotonic``).
_CLOCK_IDS = {
    getattr(time, "CLOCK_REALTIME", None): "time",
    getattr(time, "CLOCK_PROCESS_CPUTIME_ID", None): "process_time",
    getattr(time, "CLOCK_THREAD_CPUTIME_ID", None): "thread_time",
}


def _clock_gettime(name: str, original: Callable[[int], Any]) -> Callable[[int], Any]:
    ns = name.endswith("_ns")

    def clock_gettime(clk_id: int) -> Any:
        if not _ACTIVE or _importing():
            return original(clk_id)
        clock = _CLOCK_IDS.get(clk_id, "monotonic") + ("_ns" if ns else "")
        return getattr(time, clock)()

    clock_gettime.__name__ = name
    return clock_gettime


def _refusing(name: str, original: Callable[..., Any], why: Callable[[str], str]) -> Callable[..., Any]:
    """``original`` outside a run; in a run, UncontrolledRandomness with ``why(" at FILE:LINE")``."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        if not _ACTIVE or _importing():
            return original(*args, **kwargs)
        where = _call_site(2)
        raise UncontrolledRandomness(why(f" at {where}" if where else ""), name, where)

    refuse.__name__ = name.rsplit(".", 1)[-1]
    return refuse


def _urandom(original: Callable[[int], bytes]) -> Callable[..., Any]:
    return _refusing(
        "os.urandom",
        original,
        lambda at: (
            f"the sampler draws from os.urandom{at} (also behind secrets, uuid.uuid4 "
            "and random.SystemRandom): operating-system entropy cannot be replayed, so specproof does not model it; "
            "draw with random.random / a random.Random instance, NumPy or torch instead"
        ),
    )


def _uuid1(original: Callable[..., Any]) -> Callable[..., Any]:
    return _refusing(
        "uuid.uuid1",
        original,
        lambda at: (
            f"the sampler calls uuid.uuid1{at}: it reads the real clock in C (and a "
            "random clock sequence), which cannot be replayed, so specproof does not model it"
        ),
    )


class SystemSource(Source):
    """``os.urandom`` refused; the clock's reads recorded and shifted in the replays."""

    name = "system"
    module = None

    def install(self, patcher: Patcher) -> None:
        patcher.set(os, "urandom", _urandom(os.urandom))
        patcher.set(uuid, "uuid1", _uuid1(uuid.uuid1))
        for name in _CLOCKS:
            if hasattr(time, name):
                patcher.set(time, name, _clock(name, getattr(time, name)))
        for name in ("localtime", "gmtime", "ctime", "asctime", "strftime"):
            patcher.set(time, name, _calendar(name, getattr(time, name)))
        for name in ("clock_gettime", "clock_gettime_ns"):
            if hasattr(time, name):
                patcher.set(time, name, _clock_gettime(name, getattr(time, name)))
