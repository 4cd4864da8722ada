"""The exploration of branches: replaying a sampler from prefixes of random values, bisecting or reading
each uniform's breakpoints, enumerating or pushing forward each categorical draw."""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from specproof.errors import SpecProofError
from specproof.trace.core import (
    _ACTIVE,
    _RACE_HINT,
    GC_CLOCK_READ,
    MAX_CONSECUTIVE_BREAKS,
    MODE_RUNS,
    ContinuousThreshold,
    NotPiecewiseConstant,
    SamplerRaised,
    TraceTimeout,
    TraceTooLarge,
    UncontrolledRandomness,
    UnmodelledRandomness,
    _Categorical,
    _freeze,
    _hashable,
    _NeedMode,
    _Run,
    _Uniform,
)
from specproof.trace.sources import SOURCES, _install_late, _installed, _states
from specproof.trace.sources.gumbel import _Plan
from specproof.trace.sources.torch_mode import _mark_output_opaque, _race_mode

_MONOTONIC = time.monotonic  # the real clock, whatever the clock's patches do inside a run


#: After this many runs the trace estimates its cost (:meth:`_Tracer.estimate`) and refuses if it is infeasible.
ESTIMATE_AFTER_RUNS = 3
#: A categorical draw with at most this many outcomes is never the reason for a refusal.
ESTIMATE_MIN_OUTCOMES = 1000
#: With no ``max_seconds``, a trace estimated to take longer than this is refused (one hour).
INFEASIBLE_SECONDS = 3600.0


def _duration(seconds: float) -> str:
    """``seconds`` for people: s, min, h or days."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


class _Tracer:
    #: seconds the frozen clock advances a read in the runs made now (the replay of elapsed times sets CLOCK_STEP)
    clock_step = 1e-6

    def __init__(
        self,
        sampler,
        args,
        kwargs,
        key,
        generator,
        max_runs,
        check_pieces=True,
        exponential_zeros=False,
        progress=None,
        read_thresholds=True,
        pushforward=True,
        control=None,
    ):
        self.sampler, self.args, self.kwargs, self.key = sampler, args, kwargs, key
        self.control = control  # the generators rebound and watched (specproof.trace.control.Control), if any
        self.deadline: float | None = None  # time.monotonic() past which the trace stops (max_seconds)
        self.max_seconds: float | None = None
        self.executed: list[tuple[int, ...]] = []  # the prefixes run, in order
        self.clocked: dict[tuple[int, ...], frozenset[str]] = {}  # prefix -> the clock reads of its run
        self.progress = progress
        self.generator, self.max_runs, self.check_pieces = generator, max_runs, check_pieces
        self.runs = 0
        self.run_seconds: list[float] = []  # wall time of each run (the estimate after ESTIMATE_AFTER_RUNS)
        self.calls: set[str] = set()
        self.exponential_zeros = exponential_zeros
        self.need_mode = False  # set once a run calls Tensor.exponential_ or draws a Gumbel noise
        self.gumbel_plans: set[tuple] = set()  # the uniform draws deferred as Gumbel noise (sources.gumbel)
        self._where: list[list] = []  # the uniforms being bisected: [slot index, call, breakpoints found, what]
        self._runs: dict[tuple[int, ...], tuple[Any, tuple]] = {}
        self.read_thresholds = read_thresholds
        self.read_slots = 0  # uniforms whose breakpoints were read from comparisons
        self.bisected_slots = 0  # uniforms whose breakpoints were found by bisection
        # uniforms no run of their law read (a Triton kernel's unused coin): given the law at their default
        self.unread_slots = 0
        self._unread: dict[tuple[int, ...], frozenset[int]] = {}  # prefix -> the uniforms its run did not read
        # prefix -> (the uniform slots of that run read only through comparisons, slot -> breakpoints)
        self._reads: dict[tuple[int, ...], tuple[frozenset[int], dict[int, frozenset[int]]]] = {}
        self._laws: dict[tuple[int, ...], dict[Any, Fraction]] = {}
        # prefix -> the runs (their prefixes) its law was computed from; the open laws' sets being filled
        self._law_runs: dict[tuple[int, ...], frozenset[tuple[int, ...]]] = {}
        self._collecting: list[set[tuple[int, ...]]] = []
        self.pushforward = pushforward
        # prefix -> (the run's last slot, a function giving the output at each of that draw's categories) where the
        # last draw was a torch.multinomial whose result the run only moved into its output
        self._push: dict[tuple[int, ...], tuple[int, Callable[[], dict[int, Any] | None]]] = {}
        self.pushed_slots = 0  # categorical draws whose law was pushed forward from one run
        self.push_refuted = 0  # pushforwards whose check run disagreed (then enumerated)

    def run(self, prefix: tuple[int, ...]) -> tuple[Any, tuple]:
        """(output key, the slots the run requested)."""
        if self._collecting:
            self._collecting[-1].add(prefix)
        if prefix in self._runs:
            return self._runs[prefix]
        if self.runs >= self.max_runs:
            raise TraceTooLarge(self._too_large())
        if self.deadline is not None and _MONOTONIC() > self.deadline:
            raise TraceTimeout(self.timed_out())
        self.runs += 1
        if self.progress is not None:
            self.progress(1)
        started = _MONOTONIC()
        while True:
            try:
                got = self._run_once(prefix)
                self.executed.append(prefix)
                break
            except _NeedMode:  # Tensor.exponential_ needs the torch-function mode: run again with it
                self.need_mode = True
            except _Plan as plan:  # a Gumbel race on uniforms: run again with that draw deferred
                if plan.key in self.gumbel_plans:
                    raise UnmodelledRandomness(f"a Gumbel noise drawn by {plan.key[1]} could not be deferred") from None
                self.gumbel_plans.add(plan.key)
                self.need_mode = True
        self.run_seconds.append(_MONOTONIC() - started)
        # the run is also the run of every longer prefix that fixes its later slots to the defaults they took
        slots, longer = got[1], prefix
        for i in range(len(prefix), len(slots) + 1):
            if i > len(prefix):
                longer = longer + (slots[i - 1].default(),)
            if longer not in self._runs:
                self._runs[longer] = got
                if prefix in self._reads:
                    self._reads[longer] = self._reads[prefix]
                if prefix in self._unread:
                    self._unread[longer] = self._unread[prefix]
                if prefix in self._push:
                    self._push[longer] = self._push[prefix]
        if self.runs == 1:
            self._refuse_if_infeasible(margin=10.0)  # the first run's time includes warming up: only a clear case
        elif self.runs == ESTIMATE_AFTER_RUNS:
            self._refuse_if_infeasible()
        return got

    def _execute(
        self, prefix: tuple[int, ...], clock_shift: float = 0.0, shift_only: frozenset[str] | None = None
    ) -> tuple[_Run, Any]:
        """One run of the sampler with ``prefix`` supplied: (the run's record, the sampler's return value); the clock
        shifted by ``clock_shift`` seconds (at the read sites ``shift_only`` only, if given)."""
        r = _Run(prefix, self.exponential_zeros)
        r.gumbel_plans = self.gumbel_plans
        r.clock_shift = clock_shift
        r.clock_shift_only = shift_only
        r.clock_step = self.clock_step
        if "torch" in _installed() and (
            self.need_mode or self.read_thresholds or self.pushforward or self.runs <= MODE_RUNS
        ):
            r.mode = _race_mode(r)
            r.pushforward = self.pushforward
        if self.control is not None:
            self.control.gc_callbacks()  # a clock bound in a callback registered since the last run is rebound
        # automatic collections are off during a run: the garbage collector's callbacks (which may read the clock
        # where the sampler reads what they store) run only where the sampler forces a collection, in every replay
        collecting = gc.isenabled()
        gc.disable()
        _ACTIVE.append(r)
        try:
            memo = {} if self.generator is None else {id(self.generator): self.generator}  # the traced generator stays
            if self.control is not None:
                memo.update(self.control.memo)  # so do the generators rebound for the trace
            args, kwargs = copy.deepcopy((self.args, self.kwargs), memo)  # fresh buffers, as an engine passes each step
            with r.mode if r.mode is not None else contextlib.nullcontext():
                out = self.sampler(*args, **kwargs)
        except (SpecProofError, _NeedMode):
            raise
        except Exception as exc:
            cause = exc.__cause__ or exc.__context__
            for _ in range(8):  # a tracer error wrapped by the sampler's framework (Triton's interpreter): that error
                if cause is None or isinstance(cause, SpecProofError):
                    break
                cause = cause.__cause__ or cause.__context__
            if isinstance(cause, SpecProofError):
                raise cause from None
            raise SamplerRaised(
                f"the sampler raised {type(exc).__name__}: {exc} (on a run with the random values "
                f"{self._describe(prefix)})"
            ) from exc
        finally:
            _ACTIVE.pop()
            if collecting:
                gc.enable()
        return r, out

    def _watched(self) -> tuple:
        return _states(self.generator), (self.control.states() if self.control is not None else ())

    def _uncontrolled(self, prefix: tuple[int, ...], before: tuple) -> None:
        """Refuse a run that changed a watched generator's state, naming it and the line that drew from it."""
        state_fns: list[tuple[str, Callable[[], Any]]] = []
        if self.control is not None:
            from specproof.trace.control import _state

            for what, obj in self.control.changed(before[1]):
                state_fns.append((f"{what} at {id(obj):#x}", functools.partial(_state, obj)))
        if _states(self.generator) != before[0]:
            names = [s.name for s in SOURCES if s.module is None or s.module in sys.modules]
            for i, (a, b) in enumerate(zip(_states(self.generator), before[0])):
                if a != b:
                    what = (
                        f"the global generator of source {names[i]!r} (PyTorch's default, NumPy's legacy global "
                        "or Python's random module)"
                        if i < len(names)
                        else "the provided NumPy generator"
                    )
                    state_fns.append((what, functools.partial(self._global_state, i)))
        what, state = state_fns[0] if state_fns else ("a watched generator", lambda: 0)
        from specproof.trace.control import Control

        where = Control.locate(lambda: self._execute(prefix), state) if state_fns else None
        raise UncontrolledRandomness(
            f"the sampler drew from {what}{f' at {where}' if where else ''} through a path specproof.trace.tracer "
            "did not intercept (its state changed during a run): for example a generator specproof could not "
            "rebind (kept in a tuple, or reached through an object it does not search), a random function bound "
            "before tracing, torch.nn.functional.dropout or a C++ kernel; no verdict. Pass the generator as an "
            "argument, keep it in a module-level name or an attribute, or use numpy_rng=",
            what,
            where,
        )

    def _global_state(self, i: int) -> Any:
        return _states(self.generator)[i]

    def _run_once(
        self,
        prefix: tuple[int, ...],
        clock_shift: float = 0.0,
        record: bool = True,
        shift_only: frozenset[str] | None = None,
    ) -> tuple:
        before = self._watched()
        r, out = self._execute(prefix, clock_shift, shift_only)
        if _install_late():  # the sampler imported a source's module (torch) during the run: patch it, run again
            return self._run_once(prefix, clock_shift, record, shift_only)
        if self._watched() != before:
            self._uncontrolled(prefix, before)
        if any(not d.resolved for d in set(r.exp.values())):
            raise UnmodelledRandomness(
                "the sampler drew E with Tensor.exponential_ but never divided a weight tensor by it (nor multiplied "
                "one by E.reciprocal()): specproof.trace.tracer models Tensor.exponential_ only as the exponential race "
                "argmax(w / E, dim=-1)"
            )
        if len(r.slots) < len(prefix):
            raise NotPiecewiseConstant(
                f"the sampler drew {len(r.slots)} random values on a run where an earlier run drew at least "
                f"{len(prefix)} with the same values: it is not deterministic given its random numbers"
            )
        if r.mode is not None:
            _mark_output_opaque(r, out)
        key = _freeze(out if self.key is None else self.key(out))
        if not record:
            return key, tuple(r.slots), frozenset(r.clock_sites)
        if r.clock_sites:
            self.clocked[prefix] = frozenset(r.clock_sites)
        self.calls |= r.calls
        self._reads[prefix] = (frozenset(r.readable - r.opaque), {k: frozenset(v) for k, v in r.reads.items()})
        if r.kernel_memory and _discrete(key):  # an output holding floats may hold a uniform read outside the mode
            from specproof.trace.sources.triton_reads import unread

            self._unread[prefix] = unread(r)
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
        roots = {
            id(root): root for t, (m, s, root) in ((t, r.lazy[id(t)]) for t in r.keep if id(t) in r.lazy) if last in s
        }
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

    def estimate(self) -> tuple[int, float, str] | None:
        """A lower bound on the trace's cost from its first runs: (runs, seconds, the draw) where the first run's
        first categorical draw is not its last draw (so each of its K outcomes needs a run of its own, at
        least), and K exceeds :data:`ESTIMATE_MIN_OUTCOMES`; else None."""
        first = self._runs.get(())
        if first is None or not self.run_seconds:
            return None
        slots = first[1]
        for slot in slots[:-1]:
            if isinstance(slot, _Categorical):
                k = sum(1 for w in slot.probs if w)
                if k <= ESTIMATE_MIN_OUTCOMES:
                    return None
                per_run = sorted(self.run_seconds)[len(self.run_seconds) // 2]  # the median: the first run warms up
                return k, k * per_run, slot.call
        return None

    def _refuse_if_infeasible(self, margin: float = 1.0) -> None:
        """Refuse a trace whose lower-bound cost (:meth:`estimate`) is past ``margin`` times its budget
        (``max_seconds``, else :data:`INFEASIBLE_SECONDS`), after its first runs, with the estimate."""
        found = self.estimate()
        budget = self.max_seconds if self.max_seconds is not None else INFEASIBLE_SECONDS
        if found is None or found[1] <= margin * budget:
            return
        k, seconds, call = found
        per_run = seconds / k
        what = (
            f"the first run's draw from {call} has {k} outcomes, and each needs at least one run of the sampler "
            f"(about {per_run:.2g} s a run here): at least {k} runs, about {_duration(seconds)}"
        )
        after = f"refused after {self.runs} run{'s' if self.runs != 1 else ''}: {what}"
        if self.max_seconds is not None:
            raise TraceTimeout(
                f"{after}, past the time budget of {self.max_seconds:g} s; trace a smaller vocabulary "
                "or raise max_seconds (--timeout)"
            )
        raise TraceTooLarge(
            f"{after}, past {_duration(INFEASIBLE_SECONDS)}; trace a smaller vocabulary, or pass "
            "max_seconds (--timeout) to try it within a budget"
        )

    def timed_out(self) -> str:
        """The message of a trace past its time budget."""
        where = ""
        if self._where:
            n, call, breaks, what = self._where[-1]
            where = f", while bisecting {what} on uniform #{n} from {call}"
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''}"
        return (
            f"the trace passed its time budget of {self.max_seconds:g} s after {runs} of the sampler"
            f"{where}; raise max_seconds (--timeout), or trace fewer positions or a smaller vocabulary"
        )

    def _too_large(self) -> str:
        msg = f"the trace needs more than max_runs = {self.max_runs} runs of the sampler"
        if self._where:
            n, call, breaks, what = self._where[-1]
            msg += (
                f" (stopped while bisecting {what} on uniform #{n} from {call}, {breaks} breakpoints found there "
                f"so far, {len(self._where)} uniforms deep)"
            )
        return msg + (
            "; the number of runs grows exponentially with the number of random draws (see the Cost "
            "section of specproof.trace.tracer): raise max_runs, or trace fewer positions or a smaller vocabulary"
        )

    @staticmethod
    def _describe(prefix: tuple[int, ...]) -> str:
        return (
            "[" + ", ".join(map(str, prefix[:8])) + (", ..." if len(prefix) > 8 else "") + "] (grid indices/categories)"
        )

    def law(self, prefix: tuple[int, ...]) -> dict[Any, Fraction]:
        """The law of the output given the draws ``prefix``; the runs it came from are kept in ``_law_runs``."""
        if prefix in self._laws:
            if self._collecting:
                self._collecting[-1] |= self._law_runs[prefix]
            return self._laws[prefix]
        self._collecting.append(set())
        try:
            out = self._law(prefix)
        finally:
            used = frozenset(self._collecting.pop())
        self._law_runs[prefix] = used
        if self._collecting:
            self._collecting[-1] |= used
        return out

    def _law(self, prefix: tuple[int, ...]) -> dict[Any, Fraction]:
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
            unread = (
                self._unread_law(prefix, slots[n])
                if self.read_thresholds and n in self._unread.get(prefix, ())
                else None
            )
            out = unread if unread is not None else self._uniform_law(prefix, slots[n])
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

    def _pieces(
        self,
        prefix,
        slot: _Uniform,
        f: Callable[[int], Any],
        lo: int,
        hi: int,
        probes: tuple[int, ...],
        what: str = "the output",
    ) -> list[tuple[int, int, Any]]:
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
                    "with thresholds, e.g. u < p/q or an inverse CDF)"
                )
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
            cause = (
                "the uniform is used as a value (returned, or in arithmetic whose result is returned), not only "
                "in comparisons with thresholds; return a discrete outcome, or pass key= to map the output to "
                "one"
            )
        else:
            cause = (
                "a later random draw's threshold depends continuously on this uniform (e.g. u2 < f(u1), "
                "Gumbel-max argmax(log w - log(-log u)) over uniforms, or a weight computed from u); the trace's "
                f"bisection cannot finish; {_RACE_HINT}"
            )
        raise ContinuousThreshold(
            f"{what} changes at each of {MAX_CONSECUTIVE_BREAKS} consecutive grid points of uniform #{len(prefix)} "
            f"(from {slot.call}, grid 2^{slot.bits}) near grid index {b}: {cause}"
        )

    def _read_law(self, prefix, slot: _Uniform) -> dict[Any, Fraction] | None:
        """The law over a uniform whose every use is a comparison with a value computed without any
        uniform: its breakpoints are read from those comparisons in every run of the law at each piece's
        first grid point (the later draws at all their values, not only at their defaults: a later draw
        may decide which threshold this uniform is compared with), until no new one appears (then every
        run of that law takes the same path at every grid point of the piece, so the law of the piece is
        the law at its first point). None if some run used it otherwise."""
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
                self.law(prefix + (a,))
                for run in self._law_runs[prefix + (a,)]:  # masked at the later draws' defaults: compared there
                    readable, reads = self._reads[run]
                    if n not in readable:
                        return None
                    known |= reads.get(n, frozenset())
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

    def _unread_law(self, prefix, slot: _Uniform) -> dict[Any, Fraction] | None:
        """The law over a uniform that no run of the law at its default read (handed to a Triton kernel that loaded
        none of its bytes, and no torch call on it but the interpreter's plumbing): every run at another grid point
        is the same run, so the law is that law. Guarded as a read threshold is: the runs at the bisection's probes
        must agree with the run at the default. None (then read or bisected) if some run read it."""
        n, n_grid, d = len(prefix), 1 << slot.bits, slot.default()
        out = self.law(prefix + (d,))
        if any(n not in self._unread.get(run, ()) for run in self._law_runs[prefix + (d,)]):
            return None
        at_default = self._signature(prefix, d)
        for k in (n_grid // 4, n_grid // 2, 3 * n_grid // 4, n_grid - 1):
            if k != d and self._signature(prefix, k) != at_default:
                return None
        self.unread_slots += 1
        return out

    def _signature(self, prefix, k: int) -> tuple:
        """The output and the later random requests of the run with ``k`` at slot ``len(prefix)``."""
        key, slots = self.run(prefix + (k,))
        return key, slots[len(prefix) + 1 :]

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
            return key, slots[n + 1 :]

        out: dict[Any, Fraction] = {}
        for a, b, _ in self._pieces(prefix, slot, signature, 0, n_grid - 1, probes):
            first = self.law(prefix + (a,))
            last = self.law(prefix + (b,)) if self.check_pieces else first
            middle = self.law(prefix + ((a + b) // 2,)) if self.check_pieces and first == last else first
            if first == last == middle:
                parts = [(a, b, first)]
            else:  # the rest of the run changes inside the piece: bisect on its law
                quarter = (b - a) // 4  # the ends and the middle were looked at: bisect from all three
                parts = self._pieces(
                    prefix,
                    slot,
                    lambda k: self.law(prefix + (k,)),
                    a,
                    b,
                    (a + quarter, (a + b) // 2, b - quarter),
                    "the law of the rest of the run",
                )
            for lo, hi, sub in parts:
                w = Fraction(hi - lo + 1, n_grid)
                for k, m in sub.items():
                    out[k] = out.get(k, Fraction(0)) + w * m
        return out

    def replay_check(self) -> None:
        """Before any verdict: replay the first run and the first run of each output (up to ``REPLAYS``), and every
        run that read the clock with the clock shifted too; refuse if any output or draw differs, or if the profiler
        sees a random function or os.urandom called through a name bound before tracing."""
        from specproof.trace.control import CLOCK_REPLAYS, CLOCK_SHIFT, CLOCK_STEP, REPLAYS, Control

        control = self.control
        chosen: list[tuple[int, ...]] = []
        outputs: set = set()
        for prefix in self.executed:
            if len(chosen) >= REPLAYS:
                break
            out = repr(self._runs[prefix][0])
            if not chosen or out not in outputs:
                chosen.append(prefix)
                outputs.add(out)
        chosen += [p for p in self.clocked if p not in chosen][:REPLAYS]
        for prefix in chosen:
            expected = self._runs[prefix]
            (key, slots, clock), seen = Control.profiled(
                lambda prefix=prefix: self._run_once(prefix, clock_shift=0.0, record=False)
            )
            early = set()
            for what, where in seen:
                if what.startswith("time."):
                    early.add(f"{what} at {where} (bound before tracing: not shifted)")
                    continue
                raise UncontrolledRandomness(
                    f"the sampler calls {what} at {where}, which specproof.trace.tracer does not control (a random "
                    "function bound before tracing, or the operating system's entropy); no verdict. Call it through "
                    "its module (random.random(), not a name imported from random) or use numpy_rng=",
                    what,
                    where,
                )
            control.replayed += 1
            clock = clock | self.clocked.get(prefix, frozenset()) | early
            if not _same((key, slots), expected):
                if clock:
                    self._clock_dependence(prefix, clock, "(the clock not shifted)", key, expected[0], key)
                raise UncontrolledRandomness(
                    f"the sampler returned {_short(key)} on a replay of a run that returned {_short(expected[0])} with "
                    f"the same supplied draws {self._describe(prefix)}{_drew(slots, expected[1])}: its output depends on "
                    "randomness or state specproof does not control (a generator it does not see, or state kept "
                    "between calls); no verdict",
                    "an unknown source (the replay differs)",
                    None,
                )
            if clock:
                control.clock_sites |= clock
                control.shifted += 1
                for k in range(1, CLOCK_REPLAYS + 1):
                    key2, slots2, _ = self._run_once(prefix, clock_shift=k * CLOCK_SHIFT, record=False)
                    if not _same((key2, slots2), expected):
                        self._clock_dependence(
                            prefix, clock, f"and the clock shifted by {k} x {CLOCK_SHIFT} s", key2, expected[0], key
                        )
                # elapsed times: the frozen clock advancing CLOCK_STEP a read, not 1 microsecond (a fallback taken when
                # the sampler is slow, `perf_counter() - start > 0.05`, is a choice driven by the clock too)
                self.clock_step = CLOCK_STEP
                try:
                    key2, slots2, _ = self._run_once(prefix, record=False)
                finally:
                    self.clock_step = 1e-6
                if not _same((key2, slots2), expected):
                    self._clock_dependence(
                        prefix, clock, f"and the clock advancing {CLOCK_STEP} s a read", key2, expected[0], key
                    )

    def seed_check(self) -> None:
        """Before any verdict: replay the first run, the first of another output and the other runs (up to
        SEED_EVERY_RUN), with each argument named like a seed changed (a top-level argument, a dict entry or an attribute whose name contains "seed", holding an
        integer or an integer array or tensor); refuse if the output or the draws change: seeded or hash-based noise
        (vLLM 0.34's Gumbel from a murmur3 hash of (seed, position, token)) that specproof does not control."""
        seeds = _seed_arguments(self.sampler, self.args, self.kwargs)
        if not seeds:
            return
        chosen: list[tuple[int, ...]] = []
        outputs: set = set()
        for prefix in self.executed:
            out = repr(self._runs[prefix][0])
            if out not in outputs:
                chosen.append(prefix)
                outputs.add(out)
            if len(chosen) >= 2:
                break
        # and every other run (up to SEED_EVERY_RUN): a hash may be read only on some paths (vLLM 0.34 hashes only
        # after a rejection, while the first runs of two outputs may both accept)
        others = [prefix for prefix in self.executed if prefix not in chosen][:SEED_EVERY_RUN]
        args, kwargs = self.args, self.kwargs
        try:
            for label, value, replace in seeds:
                for k in SEED_SHIFTS:
                    changed = _perturbed(value, k)
                    self.args, self.kwargs = replace(changed)
                    for prefix in chosen + others:
                        expected = self._runs[prefix]
                        try:
                            key, slots, _ = self._run_once(prefix, record=False)
                        except SamplerRaised:
                            continue
                        if self.control is not None:
                            self.control.seeds_replayed += 1
                        if not _same((key, slots), expected):
                            raise UncontrolledRandomness(
                                f"the sampler's output depends on its seed argument {label}: a replay with the same "
                                f"supplied draws {self._describe(prefix)} and {label} changed by {k} returned "
                                f"{_short(key)}, not {_short(expected[0])}{_drew(slots, expected[1])}: seeded or "
                                "hash-based noise (such as vLLM 0.34's Gumbel from a seeded murmur3 hash of (seed, "
                                "position, token)) that specproof does not control; no verdict. Draw the noise through "
                                "the modelled calls (torch.rand, Tensor.exponential_, a torch.Generator per request is "
                                "fine: its draws are supplied) to trace it",
                                f"the seed argument {label}",
                                None,
                            )
                if self.control is not None and label not in self.control.seed_args:
                    self.control.seed_args.append(label)
        finally:
            self.args, self.kwargs = args, kwargs

    def _clock_dependence(
        self, prefix: tuple[int, ...], clock: frozenset, how: str, got: Any, expected: Any, baseline: Any
    ) -> None:
        """Refuse a run whose output moved with the clock, naming first the read site whose shift alone moves the
        unshifted replay's output ``baseline`` (else the sampler's own reads before a garbage collector's callbacks')."""
        ordered = sorted(clock, key=lambda site: (GC_CLOCK_READ in site, site))
        cause = self._clock_cause(prefix, ordered, baseline)
        if cause is not None:
            ordered = [cause] + [site for site in ordered if site != cause]
        first = ordered[0]
        source, _, where = first.partition(" at ")
        raise UncontrolledRandomness(
            f"the sampler's output depends on the clock ({', '.join(ordered[:3])}): a replay with the same "
            f"supplied draws {self._describe(prefix)} {how} returned {_short(got)}, not {_short(expected)}; a "
            "clock-driven choice is not a function of the draws; no verdict",
            source,
            where.replace(" (bound before tracing: not shifted)", "") or None,
        )

    def _clock_cause(self, prefix: tuple[int, ...], sites: list[str], baseline: Any) -> str | None:
        """The first of ``sites`` (at most CLOCK_CAUSE_SITES, patched reads only) whose shift alone changes the
        output of the unshifted replay, ``baseline``; None if the unshifted replay does not repeat itself (a clock
        read the trace cannot shift) or no site alone moves it. A collection's timing callback is not named for a
        dependence on the sampler's reads, nor the other way round."""
        from specproof.trace.control import CLOCK_REPLAYS, CLOCK_SHIFT

        shiftable = [site for site in sites if not site.endswith("(bound before tracing: not shifted)")]
        if len(shiftable) < 2:
            return shiftable[0] if len(shiftable) == 1 and len(sites) == 1 else None
        # only to name the read: a replay that raises is passed over (one read shifted alone can break the sampler's
        # own invariant, perf_counter() >= start), and the refusal stands whatever these replays find
        try:
            if self._run_once(prefix, record=False)[0] != baseline:
                return None
        except SpecProofError:
            return None
        for site in shiftable[:CLOCK_CAUSE_SITES]:
            for k in range(1, CLOCK_REPLAYS + 1):
                try:
                    moved = self._run_once(prefix, k * CLOCK_SHIFT, False, frozenset([site]))[0] != baseline
                except SpecProofError:
                    break
                if moved:
                    return site
        return None


#: The most clock read sites a refusal replays one at a time to name the one the output depends on.
CLOCK_CAUSE_SITES = 8


#: The changes made to an argument named like a seed in the replays of :meth:`_Tracer.seed_check` (several: a hash of
#: a few outcomes can agree on one changed seed by chance).
SEED_SHIFTS = (1, 2, 3, 7919)
#: How many runs besides those two are replayed with each shift (every run of most small traces).
SEED_EVERY_RUN = 64


def _perturbed(value: Any, k: int) -> Any:
    """``value`` (an integer, or an integer array or tensor) plus ``k``."""
    return value + k


def _is_seed_value(value: Any) -> bool:
    import numpy as np

    if isinstance(value, bool):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "iu" and value.size > 0
    if "torch" in sys.modules and isinstance(value, sys.modules["torch"].Tensor):
        torch = sys.modules["torch"]
        return (
            not value.is_floating_point() and not value.is_complex() and value.dtype != torch.bool and value.numel() > 0
        )
    return False


def _seed_arguments(sampler: Any, args: tuple, kwargs: dict) -> list[tuple[str, Any, Callable[[Any], tuple]]]:
    """The arguments named like a seed: (label, value, a function giving (args, kwargs) with the value replaced)."""
    import inspect

    names: list[str | None] = [None] * len(args)
    try:
        params = list(inspect.signature(sampler).parameters.values())
        for i in range(len(args)):
            if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
                names[i] = params[i].name
    except (TypeError, ValueError):
        pass
    found: list[tuple[str, Any, Callable[[Any], tuple]]] = []

    def inside(value: Any, label: str, put: Callable[[Any], tuple]) -> None:
        if isinstance(value, dict):
            for k, v in list(value.items())[:64]:
                if isinstance(k, str) and "seed" in k.lower() and _is_seed_value(v):

                    def item(new: Any, k: str = k, d: dict = value) -> tuple:
                        return put({**d, k: new})

                    found.append((f"{label}[{k!r}]", v, item))
        elif hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
            for k, v in list(vars(value).items())[:64]:
                if "seed" in k.lower() and _is_seed_value(v):

                    def setter(new: Any, k: str = k, obj: Any = value) -> tuple:
                        other = copy.copy(obj)
                        setattr(other, k, new)
                        return put(other)

                    found.append((f"{label}.{k}", v, setter))

    for i, a in enumerate(args):
        put = lambda new, i=i: (args[:i] + (new,) + args[i + 1 :], kwargs)  # noqa: E731
        name = names[i]
        label = name or f"argument {i}"
        if name and "seed" in name.lower() and _is_seed_value(a):
            found.append((label, a, put))
        else:
            inside(a, label, put)
    for k, a in kwargs.items():
        put = lambda new, k=k: (args, {**kwargs, k: new})  # noqa: E731
        if "seed" in k.lower() and _is_seed_value(a):
            found.append((k, a, put))
        else:
            inside(a, k, put)
    return found[:8]


def _discrete(key: Any, depth: int = 0) -> bool:
    """``key`` is made of integers, booleans, strings and None only (in tuples, up to a depth of 8)."""
    if isinstance(key, (bool, int, str)) or key is None:
        return True
    if isinstance(key, tuple) and depth < 8:
        return all(_discrete(k, depth + 1) for k in key)
    return False


def _same(a: Any, b: Any) -> bool:
    return a == b or repr(a) == repr(b)  # repr: a NaN output equals itself


def _short(key: Any) -> str:
    text = repr(key)
    return text if len(text) <= 60 else text[:57] + "..."


def _drew(slots: tuple, expected: tuple) -> str:
    if slots == expected:
        return ""
    return f" (and drew {len(slots)} random values, not {len(expected)}, or of other kinds)"


def _clock_text(clock: frozenset) -> str:
    return f" (the clock was read: {', '.join(sorted(clock)[:3])})" if clock else ""
