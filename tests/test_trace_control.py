"""specproof.trace.control: never a verdict from uncontrolled randomness (issue 33, item 1).

Generators the sampler reaches are rebound to traced ones (a module-level NumPy Generator or RandomState, a
closure's, an argument's), Python's random is controlled for the module and every random.Random, and what cannot
be controlled (a generator in a tuple, a function bound before tracing, os.urandom, a clock-driven choice, a
sampler that seeds itself, hidden state) is refused with UncontrolledRandomness naming the source and the line.
"""

from __future__ import annotations

import gc
import random
import secrets
import time
from fractions import Fraction as F
from random import random as bound_random

import numpy as np
import pytest

from specproof.errors import SpecProofError
from specproof.trace.core import UncontrolledRandomness, UnmodelledRandomness
from specproof.trace.testing import assert_lossless, compare
from specproof.trace.tracer import trace

HERE = __file__
RNG = np.random.default_rng(0)  # a textbook NumPy sampler's module-level generator
LEGACY = np.random.RandomState(0)
PRIVATE = random.Random(0)
IN_A_TUPLE = (np.random.default_rng(1),)
COUNTER = [0]
BOUND_PERF_COUNTER = time.perf_counter  # a clock bound before tracing, at import
STORED = [0.0]  # what a garbage collector's callback of the samplers below stores

# dyadic rows: every ratio p/q and every residual weight is exact in float64, so the law is exactly p
P = np.array([0.5, 0.25, 0.25])
Q = np.array([0.25, 0.25, 0.5])
P_EXACT = {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}


def textbook_numpy(p, q):
    x = RNG.choice(len(q), p=q)
    if RNG.random() < p[x] / q[x]:
        return int(x)
    r = np.maximum(p - q, 0)
    return int(RNG.choice(len(p), p=r / r.sum()))


def textbook_legacy(p, q):
    x = LEGACY.choice(len(q), p=q)
    if np.random.rand() < p[x] / q[x]:  # NumPy's global functions are controlled too
        return int(x)
    r = np.maximum(p - q, 0)
    return int(LEGACY.choice(len(p), p=r / r.sum()))


def line_of(text: str) -> int:
    """The line of this file holding ``text`` (the refusals name it)."""
    with open(HERE) as f:
        return next(i for i, line in enumerate(f, 1) if text in line and "line_of" not in line)


def test_a_module_level_numpy_generator_is_rebound_and_gets_the_exact_law():
    result = trace(textbook_numpy, (P, Q))
    assert result.law == P_EXACT
    assert "Generator.random" in result.calls and "Generator.choice" in result.calls
    assert "rebound to traced generators for the trace: test_trace_control.RNG" in result.control
    assert RNG.bit_generator.state == np.random.default_rng(0).bit_generator.state  # restored, never drawn from


def test_a_module_level_numpy_generator_gets_the_right_verdict_and_assert_lossless_agrees():
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.5, 0.3])
    result = compare(textbook_numpy, p, q)
    assert result.verdict == "float-faithful", result.report()
    assert result.tv < F(1, 10**16)
    assert "u < fl64(p/q)" in result.arithmetic and "float64 coin on [0, 1)" in result.arithmetic
    assert "randomness under control" in result.report()
    assert_lossless(textbook_numpy, p, q)


def test_a_module_level_random_state_and_numpy_global_functions_are_controlled():
    result = trace(textbook_legacy, (P, Q))
    assert result.law == P_EXACT
    assert {"RandomState.choice", "RandomState.random_sample"} <= set(result.calls)


def test_a_private_random_instance_is_controlled_on_the_2_to_the_minus_53_grid():
    result = trace(lambda: 0 if PRIVATE.random() < 0.25 else 1)
    assert result.law == {0: F(1, 4), 1: F(3, 4)}
    assert result.calls == ("random.random",)
    assert any(a.startswith("random.random") and "k/2^53" in a for a in result.assumptions)


def test_python_random_module_functions_are_controlled():
    assert trace(lambda: random.random() < 0.5).law == {False: F(1, 2), True: F(1, 2)}
    assert trace(lambda: random.choice("abc")).law == {"a": F(1, 3), "b": F(1, 3), "c": F(1, 3)}
    assert trace(lambda: random.randint(1, 4)).law == {k: F(1, 4) for k in range(1, 5)}
    assert trace(lambda: random.choices([0, 1], weights=[1, 3])[0]).law == {0: F(1, 4), 1: F(3, 4)}
    assert trace(lambda: PRIVATE.randrange(3)).law == {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}


def test_generators_in_a_closure_and_in_the_arguments_are_controlled():
    rng = np.random.default_rng(5)

    def closure():
        return int(rng.random() < 0.5)

    assert trace(closure).law == {0: F(1, 2), 1: F(1, 2)}
    # an argument used to be deep-copied for every run: the same values each time, a point mass
    assert trace(lambda g: int(g.random() < 0.5), (np.random.default_rng(3),)).law == {0: F(1, 2), 1: F(1, 2)}
    assert trace(lambda d: int(d["g"].random() < 0.25), ({"g": np.random.default_rng(3)},)).law == {
        0: F(3, 4),
        1: F(1, 4),
    }


def test_a_generator_that_cannot_be_rebound_is_refused_naming_it_and_the_line():
    def sampler():
        return int(IN_A_TUPLE[0].random() < 0.5)  # the generator in a tuple

    with pytest.raises(UncontrolledRandomness) as info:
        trace(sampler)
    assert "numpy.random.Generator (PCG64)" in str(info.value)
    assert info.value.where == f"{HERE}:{line_of('the generator in a tuple')}"
    assert isinstance(info.value, SpecProofError) and isinstance(info.value, ValueError)


def test_a_random_function_bound_before_tracing_is_refused_naming_the_line():
    def sampler():
        return 0 if bound_random() < 0.5 else 1  # bound at import

    with pytest.raises(UncontrolledRandomness) as info:
        trace(sampler)
    assert info.value.where == f"{HERE}:{line_of('bound at import')}"
    assert "python-random" in str(info.value)


def test_a_clock_driven_choice_never_gets_a_verdict():
    def sampler():
        return time.perf_counter_ns() % 2  # the clock decides

    with pytest.raises(UncontrolledRandomness, match="clock") as info:
        trace(sampler)
    assert info.value.source == "time.perf_counter_ns"
    assert info.value.where == f"{HERE}:{line_of('the clock decides')}"

    def seconds():
        return int(time.time()) % 3 == 0 if random.random() < 0.5 else 2

    with pytest.raises(UncontrolledRandomness, match="time.time"):
        trace(seconds)


@pytest.mark.parametrize(
    "choice",
    [
        lambda: int(time.perf_counter() * 1e9) % 2,  # a float clock's nanoseconds (before 2026-12-04: rounding's)
        lambda: int(time.perf_counter() * 1e3) % 3 == 0,  # milliseconds modulo 3 (the old shift was 0 modulo 3 there)
        lambda: int(time.monotonic() * 1e6) % 3,
        lambda: time.perf_counter_ns() // 1_000_000 % 3,
        lambda: time.monotonic_ns() % 2,
        lambda: int(time.time() * 1e3) % 2,
        lambda: int(time.process_time()) % 2,
    ],
    ids=["ns parity", "ms mod 3", "us mod 3", "ns clock ms mod 3", "ns clock parity", "epoch ms parity", "s parity"],
)
def test_a_choice_by_the_clock_in_any_unit_is_refused_every_time(choice):
    # the shifts 0, 1, 2, 3 x 7919.003003003 s meet every residue modulo 2 and 3 in s, ms, us and ns, from a frozen
    # clock in the middle of each unit: the refusal does not depend on where the real clock was
    for _ in range(20):
        with pytest.raises(UncontrolledRandomness, match="the sampler's output depends on the clock"):
            trace(choice)


def test_a_clock_read_only_for_timing_keeps_its_verdict_and_says_so():
    def sampler():
        start = time.perf_counter()
        x = 0 if random.random() < 0.5 else 1
        assert time.perf_counter() >= start
        return x

    result = trace(sampler)
    assert result.law == {0: F(1, 2), 1: F(1, 2)}
    assert "the clock was read (time.perf_counter at" in result.control
    assert "frozen in every run" in result.control and "shifted by 3 multiples" in result.control


def test_the_garbage_collectors_callbacks_reading_the_clock_are_not_the_samplers_reads():
    # Hypothesis times every collection with a perf_counter bound at its import. Automatic collections are off during
    # a run (one starting in some runs only made CI's replay counts vary), so its callbacks run where the sampler forces
    # a collection, in every replay; their reads are frozen and shifted like the sampler's (a callback may store the
    # time where the sampler reads it) but named as the callback's, and a callback that only times keeps the verdict
    from time import perf_counter as bound_perf_counter

    reads = []

    def timing(phase, info):
        reads.append((bound_perf_counter(), time.monotonic()))  # a name bound before tracing, and the module's

    calls = []

    def sampler():
        calls.append(1)
        gc.collect(0)  # a collection inside every run and every replay (the youngest generation: fast)
        return 0 if random.random() < 0.5 else 1

    gc.callbacks.append(timing)
    try:
        result = trace(sampler)
    finally:
        gc.callbacks.remove(timing)
    assert result.law == {0: F(1, 2), 1: F(1, 2)}
    assert reads and "the clock was read" not in result.control  # no clock read of the sampler's named
    callback = f"time.monotonic at {HERE}:{line_of('a name bound before tracing, and')}"
    assert "a garbage collector's callback read the clock in a collection the sampler forced (" in result.control
    assert callback in result.control and "10 run(s) replayed with it shifted by 3 multiples" in result.control
    assert bound_perf_counter is time.perf_counter  # the closure's clock, rebound for the trace, restored
    # every run read the clock: the runs, the replays of the first run of each output and of 8 other runs (REPLAYS),
    # and those 10 replayed 3 times with the clock shifted and once with it advancing CLOCK_STEP a read
    assert len(calls) == result.runs + 2 + 8 + 4 * 10

    # the sampler's own read inside a collection's callback is still seen: only the callbacks' frames are skipped
    def clocked():
        return time.perf_counter() >= 0 and random.random() < 0.5

    gc.callbacks.append(timing)
    try:
        result = trace(clocked)
    finally:
        gc.callbacks.remove(timing)
    assert "the clock was read (time.perf_counter at" in result.control


def test_hypothesiss_own_gc_timing_callback_keeps_the_verdict_and_is_named_as_a_callbacks_read():
    junkdrawer = pytest.importorskip("hypothesis.internal.conjecture.junkdrawer")
    if not hasattr(junkdrawer, "gc_cumulative_time"):  # .ci/oldest.txt's Hypothesis times no collection
        pytest.skip("this Hypothesis has no garbage-collection timing callback (gc_cumulative_time)")
    junkdrawer.gc_cumulative_time()  # registers Hypothesis's callback (once per process), as its tests do
    real = junkdrawer._perf_counter  # the real perf_counter, kept at its import

    def sampler():
        gc.collect(0)  # the youngest generation (fast): the callbacks run for it too
        return 0 if random.random() < 0.5 else 1

    laws = [trace(sampler) for _ in range(3)]
    assert [r.law for r in laws] == [{0: F(1, 2), 1: F(1, 2)}] * 3 and len({r.runs for r in laws}) == 1
    assert "the clock was read" not in laws[0].control
    where = f"{junkdrawer.__file__}:{line_of_file(junkdrawer.__file__, 'now = _perf_counter()')}"
    assert (
        f"a garbage collector's callback read the clock in a collection the sampler forced (time.perf_counter at {where}"
        in laws[0].control
    )
    assert junkdrawer._perf_counter is real is time.perf_counter  # rebound for the trace only


def line_of_file(path: str, text: str) -> int:
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def stored_by_module_lookup(phase, info):
    STORED[0] = time.perf_counter()  # the callback's clock, looked up at call time


def stored_by_bound_name(phase, info):
    STORED[0] = BOUND_PERF_COUNTER()  # the callback's clock, bound at import


def a_sampler_returning_what_its_gc_callback_stored():
    gc.collect(0)  # a collection in every run: the callback stores the clock
    return int(STORED[0] * 1e9) % 2  # the nanosecond's parity: CLOCK_SHIFT is odd in nanoseconds


@pytest.mark.parametrize(
    "callback, marker",
    [(stored_by_module_lookup, "looked up at call time"), (stored_by_bound_name, "the callback's clock, bound at")],
    ids=["time.", "bound"],
)
def test_a_samplers_own_gc_callback_reading_the_clock_is_refused_every_time(callback, marker):
    # a deterministic sampler whose output is the clock, read in its own gc callback (which before 2026-12-04 (2)
    # read the real clock unrecorded: 9 verdicts in 20 traces); the callback's reads are frozen and shifted too
    gc.callbacks.append(callback)
    try:
        for _ in range(20):
            with pytest.raises(UncontrolledRandomness, match="garbage collector's callback") as info:
                trace(a_sampler_returning_what_its_gc_callback_stored)
            assert info.value.source.startswith("time.perf_counter in a garbage collector's callback")
            assert info.value.where == f"{HERE}:{line_of(marker)}"
    finally:
        gc.callbacks.remove(callback)
    assert BOUND_PERF_COUNTER is time.perf_counter  # rebound for each trace, restored


def test_a_clock_refusal_names_the_read_the_output_depends_on_not_a_timing_read():
    def sampler():
        start = time.perf_counter()  # the sampler's own read, for timing only
        gc.collect(0)
        assert time.perf_counter() >= start
        return int(STORED[0] * 1e9) % 2

    def timing(phase, info):
        time.monotonic()  # a callback that only times collections

    gc.callbacks.extend([timing, stored_by_module_lookup])
    try:
        with pytest.raises(UncontrolledRandomness, match="garbage collector's callback") as info:
            trace(sampler)
    finally:
        gc.callbacks.remove(timing)
        gc.callbacks.remove(stored_by_module_lookup)
    # each read site shifted alone: only the stored read moves the output (the sampler's own read sorts first)
    assert info.value.where == f"{HERE}:{line_of('looked up at call time')}"
    assert str(info.value).startswith(
        f"the sampler's output depends on the clock (time.perf_counter in a garbage collector's callback at "
        f"{HERE}:{line_of('looked up at call time')}, time.perf_counter at {HERE}:{line_of('for timing only')}"
    )


def test_a_gc_callback_bound_in_a_closure_and_registered_by_the_sampler_is_refused():
    from time import perf_counter as bound_perf_counter  # a local name: the callback's closure holds it

    stored = [0.0]

    def callback(phase, info):
        stored[0] = bound_perf_counter()  # the closure's bound clock

    def sampler():
        if callback not in gc.callbacks:  # registered in the first run
            gc.callbacks.append(callback)
        gc.collect(0)
        return int(stored[0] * 1e6) % 2

    try:
        for _ in range(20):
            with pytest.raises(UncontrolledRandomness, match="garbage collector's callback") as info:
                trace(sampler)
            assert info.value.where == HERE + ":" + str(line_of("the closure's bound clock"))
            gc.callbacks.remove(callback)
    finally:
        if callback in gc.callbacks:
            gc.callbacks.remove(callback)
    assert bound_perf_counter is time.perf_counter  # restored after the trace


def test_assert_lossless_refuses_a_verifier_steered_by_its_gc_callbacks_clock():
    def verify(p, q):
        gc.collect(0)
        x = textbook_numpy(p, q)
        return x if int(STORED[0] * 1e6) % 2 else 0  # lossless on one parity of the clock only

    gc.callbacks.append(stored_by_bound_name)
    try:
        with pytest.raises(UncontrolledRandomness, match="garbage collector's callback") as info:
            assert_lossless(verify, P, Q)
    finally:
        gc.callbacks.remove(stored_by_bound_name)
    assert info.value.where == HERE + ":" + str(line_of("the callback's clock, bound at"))


def test_operating_system_entropy_is_refused_naming_the_line():
    with pytest.raises(UncontrolledRandomness, match="os.urandom") as info:
        trace(lambda: secrets.randbelow(2))  # secrets
    assert info.value.where == f"{HERE}:{line_of('# secrets')}"
    with pytest.raises(UncontrolledRandomness, match="os.urandom"):
        trace(lambda: __import__("os").urandom(1)[0] % 2)
    with pytest.raises(UncontrolledRandomness, match="SystemRandom"):
        trace(lambda: random.SystemRandom().random() < 0.5)


def test_a_sampler_that_seeds_itself_is_refused_and_an_unseeded_new_generator_is_traced():
    with pytest.raises(UncontrolledRandomness, match="seeds a Python random generator"):
        trace(lambda: random.Random(0).random() < 0.5)
    with pytest.raises(UncontrolledRandomness, match="seeds a NumPy generator"):
        trace(lambda: np.random.default_rng(7).random() < 0.5)
    assert trace(lambda: int(np.random.default_rng().random() < 0.5)).law == {0: F(1, 2), 1: F(1, 2)}
    assert trace(lambda: random.Random().random() < 0.5).law == {False: F(1, 2), True: F(1, 2)}


def test_hidden_state_is_caught_by_the_replay():
    def sampler():
        COUNTER[0] += 1
        return COUNTER[0] % 2

    with pytest.raises(UncontrolledRandomness, match="on a replay of a run that returned"):
        trace(sampler)


def test_a_deterministic_sampler_keeps_its_point_mass_verdict():
    result = trace(lambda p: int(np.argmax(p)), (P,))
    assert result.law == {0: F(1)}
    assert result.control.startswith("no random draw: the sampler is deterministic")
    assert "1 of the 1 runs replayed" in result.control


def test_continuous_python_random_draws_are_refused_by_name():
    with pytest.raises(UnmodelledRandomness, match=r"random\.expovariate"):
        trace(lambda: PRIVATE.expovariate(1.0) > 1)


def test_the_patches_are_undone():
    state = random.getstate()
    trace(lambda: random.random() < 0.5)
    assert random.getstate() == state
    assert random.Random(1).random() == random.Random(1).random()
    assert isinstance(time.perf_counter(), float) and len(__import__("os").urandom(3)) == 3


class Verifier:
    rng = np.random.default_rng(2)  # a class attribute, read as self.rng

    def __init__(self):
        self.own = np.random.default_rng(4)

    def coin(self):
        return int(self.rng.random() < 0.5)

    def __call__(self):
        return int(self.own.random() < 0.75)


def test_generators_of_a_bound_method_or_a_callable_object_are_controlled():
    verifier = Verifier()
    assert trace(verifier.coin).law == {0: F(1, 2), 1: F(1, 2)}
    assert trace(verifier).law == {0: F(1, 4), 1: F(3, 4)}
    assert isinstance(verifier.own, np.random.Generator) and type(Verifier.rng) is np.random.Generator  # restored


def test_assert_lossless_refuses_uncontrolled_randomness_naming_it():
    def sampler(p, q):
        return int(IN_A_TUPLE[0].random() < 0.5)  # drawn from the tuple-held generator

    with pytest.raises(UncontrolledRandomness, match="statistical=True") as info:
        assert_lossless(sampler, P, Q)
    assert info.value.where == f"{HERE}:{line_of('drawn from the tuple-held generator')}"


class Sampler:
    RNG = np.random.default_rng(6)  # named through the class, not an instance


def test_a_generator_named_through_its_class_and_generator_integers_are_controlled():
    assert trace(lambda: int(Sampler.RNG.integers(3))).law == {0: F(1, 3), 1: F(1, 3), 2: F(1, 3)}
    assert trace(lambda: int(RNG.integers(1, 2, endpoint=True))).law == {1: F(1, 2), 2: F(1, 2)}
    assert type(Sampler.RNG) is np.random.Generator
