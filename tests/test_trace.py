"""specproof.trace.tracer: the exact law of real samplers by controlled re-execution.

Each named rule of the engine-rules issue is written here as a small PyTorch (or NumPy) sampler;
its traced law must equal, as exact Fractions, the law specproof.rules.audit computes from the rule.
p and q are dyadic, so the float weights the samplers see are exactly the rationals.
"""

from __future__ import annotations

import random
from fractions import Fraction as F

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from specproof.errors import SpecProofError  # noqa: E402
from specproof.laws.outcome import FLOAT32_OPEN_CLOSED  # noqa: E402
from specproof.rules.audit import position_law  # noqa: E402
from specproof.rules.policy import Rule, named_rule  # noqa: E402
from specproof.trace.tracer import (  # noqa: E402
    ContinuousThreshold,
    NotPiecewiseConstant,
    SamplerRaised,
    TraceTimeout,
    TraceTooLarge,
    UnmodelledRandomness,
    trace,
)

# pair C: every ratio p/q and every residual CDF entry is a multiple of 2^-24 (grid coins are exact)
P_C = (F(1, 2), F(1, 4), F(1, 4), F(0))
Q_C = (F(1, 4), F(0), F(1, 2), F(1, 4))
# pair B: the ratio at token 3 is 1/3 (not on the float32 grid; fl32(1/3) is not a grid point either); p(1) = 0
P_B = (F(5, 8), F(0), F(1, 4), F(1, 8))
Q_B = (F(1, 4), F(1, 4), F(1, 8), F(3, 8))
PAIRS = {"C": (P_C, Q_C), "B": (P_B, Q_B)}


def t32(row):
    return torch.tensor([float(x) for x in row], dtype=torch.float32)


def exact(name_or_rule, p, q):
    rule = named_rule(name_or_rule) if isinstance(name_or_rule, str) else name_or_rule
    law = position_law(p, q, rule)
    out = {i: m for i, m in enumerate(law.law) if m}
    out.update(law.out_of_range)
    return out


# --------------------------------------------------------------------------- samplers (PyTorch)


def ratio_sampler(p, q, *, cmp="<", residual="positive-part", eps=None):
    p, q = t32(p), t32(q)

    def run():
        x = int(torch.multinomial(q, 1))
        u = torch.rand(())
        ratio = p[x] / q[x]
        if (u < ratio) if cmp == "<" else (u <= ratio):
            return x
        if residual == "target":
            w = p
        elif residual == "floor":
            w = torch.clamp(p - q, min=eps)
        else:
            w = torch.clamp(p - q, min=0)
        return int(torch.multinomial(w, 1))

    return run


def accept_all_sampler(p, q):
    q = t32(q)
    return lambda: int(torch.multinomial(q, 1))


def coin_reuse_sampler(p, q, *, open_closed=False, last="last"):
    p, q = t32(p), t32(q)
    v = len(p)

    def run():
        x = int(torch.multinomial(q, 1))
        u = 1 - torch.rand(()) if open_closed else torch.rand(())
        if u < p[x] / q[x]:
            return x
        resid = torch.clamp(p - q, min=0)
        cdf = torch.cumsum(resid / resid.sum(), 0)
        for i in range(v):
            if u < cdf[i]:
                return i
        return v - 1 if last == "last" else v

    return run


def match_sampler(p, q):
    p, q = t32(p), t32(q)

    def run():
        x = int(torch.multinomial(q, 1))
        y = int(torch.multinomial(p, 1))
        return y if y == x else y

    return run


def greedy_sampler(p, q):
    p, q = t32(p), t32(q)

    def run():
        x = int(torch.argmax(q))
        top = int(torch.argmax(p))
        return x if x == top else top

    return run


CASES = [
    ("standard", "C", ratio_sampler),
    ("lt-float32-coin", "C", ratio_sampler),
    ("lt-float32-coin", "B", ratio_sampler),
    ("le-float32-coin", "B", lambda p, q: ratio_sampler(p, q, cmp="<=")),
    ("le-float32-coin", "C", lambda p, q: ratio_sampler(p, q, cmp="<=")),
    ("accept-all", "B", accept_all_sampler),
    ("resample-from-target", "C", lambda p, q: ratio_sampler(p, q, residual="target")),
    ("residual-floor:1/1024", "C", lambda p, q: ratio_sampler(p, q, residual="floor", eps=2.0**-10)),
    ("coin-reuse-inverse-cdf", "C", coin_reuse_sampler),
    ("inverse-cdf-last-id", "C", lambda p, q: coin_reuse_sampler(p, q, open_closed=True)),
    ("match-rule", "B", match_sampler),
    ("greedy", "B", greedy_sampler),
]


@pytest.mark.parametrize("name,pair,make", CASES, ids=[f"{n}-{p}" for n, p, _ in CASES])
def test_traced_law_equals_the_rules_exact_law(name, pair, make):
    p, q = PAIRS[pair]
    got = trace(make(p, q))
    assert got.law == exact(name, p, q)
    assert sum(got.law.values()) == 1


def test_the_float32_coin_is_visible_off_the_grid():
    # pair B: ratios 1/3 and 2/3 are not on the grid, so the float32 sampler is not the textbook law
    got = trace(ratio_sampler(*PAIRS["B"])).law
    assert got == exact("lt-float32-coin", *PAIRS["B"])
    assert got != exact("standard", *PAIRS["B"])
    # the <= rule accepts token 1 (p = 0) when u == 0: mass q(1) * 2^-24
    le = trace(ratio_sampler(*PAIRS["B"], cmp="<=")).law
    assert le[1] == F(1, 4) * F(1, 2**24)


def test_a_rounded_float_ratio_shifts_the_law_by_one_grid_point():
    # p/q = 2/3 at token 3: fl32(2/3) = 11184811/2^24 is itself a grid point above 2/3, so
    # "u <= p/q" in float32 accepts one grid point more than the exact ratio on the same grid says;
    # the float32 rule, which rounds the ratio as the code does, has the code's law exactly
    p, q = (F(1, 2), F(0), F(1, 4), F(1, 4)), Q_B
    got = trace(ratio_sampler(p, q, cmp="<=")).law
    grid = exact("le-float32-grid", p, q)
    assert got[3] - grid[3] == q[3] * F(1, 2**24)  # token 3 is not in the residual's support
    assert sum(got.values()) == 1 and got != grid
    assert got == exact("le-float32-coin", p, q)


def test_out_of_range_output_is_kept_as_its_own_key():
    rule = Rule(residual_draw="inverse-cdf-reuse", coin=FLOAT32_OPEN_CLOSED, fallthrough="out-of-range")
    got = trace(coin_reuse_sampler(P_C, Q_C, open_closed=True, last="out")).law
    want = exact(rule, P_C, Q_C)
    assert 4 in want and got == want


def test_numpy_sampler_with_the_provided_generator():
    p, q = np.array([float(x) for x in P_C]), np.array([float(x) for x in Q_C])

    def run(rng):
        x = int(rng.choice(4, p=q))
        if rng.random() < p[x] / q[x]:
            return x
        w = np.maximum(p - q, 0)
        return int(rng.choice(4, p=w / w.sum()))

    got = trace(run, numpy_rng="rng")
    assert got.law == exact("standard", P_C, Q_C)
    assert got.calls == ("Generator.choice", "Generator.random")
    assert any("2^53" in a for a in got.assumptions)


def test_uniform_and_randint_and_float64():
    def run():
        t = torch.empty(()).uniform_(0.0, 4.0)  # 4 u: P(4u < 1) = 1/4
        k = int(torch.randint(0, 3, ()))
        return int(t < 1.0) + 2 * k

    got = trace(run).law
    assert got == {2 * k + b: F(1, 3) * (F(1, 4) if b else F(3, 4)) for k in range(3) for b in (0, 1)}
    half = trace(lambda: int(torch.rand((), dtype=torch.float64) < 1 / 3)).law
    assert half[1] == F(-(-(2**53) // 3), 2**53)  # ceil(2^53 fl64(1/3)) grid points lie below fl64(1/3)
    uni = trace(lambda rng: int(rng.uniform(0.0, 2.0) < 0.5), numpy_rng="rng").law
    assert uni == {0: F(3, 4), 1: F(1, 4)}


def test_two_coins_in_one_call_are_two_uniforms():
    def run():
        u = torch.rand(2)
        return tuple(int(x) for x in (u < torch.tensor([0.5, 0.25])))

    got = trace(run).law
    assert got == {(a, b): (F(1, 2)) * (F(1, 4) if b else F(3, 4)) for a in (0, 1) for b in (0, 1)}


def test_later_uniform_behaviour_changing_inside_a_piece_is_found():
    # the output with the second coin at its default (0) is the same on both sides of u1 = 1/2,
    # but the second threshold is not: the law of the rest is compared at both ends of each piece
    def run():
        u1, u2 = torch.rand(()), torch.rand(())
        return int(u2 < (0.25 if u1 < 0.5 else 0.75))

    assert trace(run).law == {1: F(1, 2), 0: F(1, 2)}
    assert trace(run, read_thresholds=False).law == {1: F(1, 2), 0: F(1, 2)}
    # bisecting without the check, the second threshold is read at u1 = 0 only: the stated assumption fails here
    fast = trace(run, check_pieces=False, read_thresholds=False)
    assert fast.law == {1: F(1, 4), 0: F(3, 4)} and "check_pieces=False" in fast.assumptions[1]
    # thresholds read from the comparisons need no such check: exact with check_pieces=False too
    read = trace(run, check_pieces=False)
    assert read.law == {1: F(1, 2), 0: F(1, 2)} and "read from the comparison itself" in read.assumptions[1]


def test_without_replacement_multinomial():
    w = torch.tensor([0.5, 0.25, 0.25])
    got = trace(lambda: tuple(torch.multinomial(w, 2).tolist())).law
    assert got[(0, 1)] == F(1, 2) * F(1, 2)
    assert got[(1, 0)] == F(1, 4) * F(2, 3)
    assert sum(got.values()) == 1


# --------------------------------------------------------------------------- hostile samplers


@pytest.mark.parametrize(
    "call,run",
    [
        ("torch.randn", lambda: int(torch.randn(()) > 0)),
        ("torch.bernoulli", lambda: int(torch.bernoulli(torch.tensor(0.5)))),
        ("torch.normal", lambda: int(torch.normal(torch.tensor(0.0), torch.tensor(1.0)) > 0)),
        ("Tensor.geometric_", lambda: int(torch.empty(()).geometric_(0.5) > 1)),
        ("random.gauss", lambda: int(random.gauss(0, 1) > 0)),
        ("numpy.random.randn", lambda: int(np.random.randn() > 0)),
        ("numpy.random.default_rng", lambda: int(np.random.default_rng(0).random() < 0.5)),  # seeds itself
    ],
)
def test_unmodelled_randomness_is_refused_by_name(call, run):
    with pytest.raises(UnmodelledRandomness, match=call.replace(".", r"\.")):
        trace(run)


def test_unmodelled_generator_method_is_refused_by_name():
    with pytest.raises(UnmodelledRandomness, match=r"Generator\.normal"):
        trace(lambda rng: int(rng.normal() > 0), numpy_rng="rng")


def test_randomness_through_an_unintercepted_path_is_refused():
    # dropout draws from PyTorch's default generator inside C++: the state check sees it
    def run():
        return tuple(torch.nn.functional.dropout(torch.ones(4), 0.5).tolist())

    with pytest.raises(UnmodelledRandomness, match="did not intercept"):
        trace(run)


def test_non_monotone_sampler_is_refused():
    def run():
        u = float(torch.rand(()))
        return int(0.25 <= u < 0.5)  # outcome 0 on [0, 1/4) and again on [1/2, 1)

    with pytest.raises(NotPiecewiseConstant, match="not monotone"):
        trace(run)


def test_a_uniform_used_as_a_value_is_named_before_the_budget():
    # the output changes at every grid point: named after 32 consecutive breakpoints, well within 500 runs
    with pytest.raises(ContinuousThreshold, match="used as a value"):
        trace(lambda: float(torch.rand(())), max_runs=500)


def test_the_budget_names_where_the_runs_went():
    def draws(p):
        return tuple(int(torch.multinomial(p, 1)) for _ in range(4))

    with pytest.raises(TraceTooLarge, match=r"max_runs = 50 runs.*grows exponentially"):
        trace(draws, (torch.tensor([0.25] * 4),), max_runs=50)
    with pytest.raises(TraceTooLarge, match=r"stopped while bisecting the output on uniform #0 from torch\.rand"):
        trace(lambda: int(torch.rand(()) < 0.3), max_runs=10, read_thresholds=False)
    # read: a run per piece and the checks (the run at grid point 0 is the first run itself)
    assert trace(lambda: int(torch.rand(()) < 0.3), max_runs=10).runs == 7


def test_sampler_errors_are_wrapped_and_patches_restored():
    originals = (
        torch.rand,
        torch.rand_like,
        torch.multinomial,
        torch.randint,
        torch.randn,
        torch.Tensor.uniform_,
        torch.Tensor.exponential_,
        np.random.rand,
        random.random,
    )

    def run():
        if torch.rand(()) < 0.5:
            raise RuntimeError("boom")
        return 0

    with pytest.raises(SamplerRaised, match="RuntimeError: boom"):
        trace(run)
    assert (
        torch.rand,
        torch.rand_like,
        torch.multinomial,
        torch.randint,
        torch.randn,
        torch.Tensor.uniform_,
        torch.Tensor.exponential_,
        np.random.rand,
        random.random,
    ) == originals
    assert "uniform_" not in vars(torch.Tensor)
    assert torch.rand(3).shape == (3,)  # the real function again


def test_errors_are_specproof_errors():
    assert issubclass(UnmodelledRandomness, SpecProofError)
    with pytest.raises(SpecProofError, match="max_runs"):
        trace(lambda: 0, max_runs=0)
    with pytest.raises(SamplerRaised, match="sum to 0"):
        trace(lambda: int(torch.multinomial(torch.zeros(3), 1)))
    with pytest.raises(UnmodelledRandomness, match="dtype"):
        trace(lambda: int(torch.rand((), dtype=torch.float16) < 0.5))


def test_deterministic_sampler_and_cost():
    got = trace(lambda: 7)
    assert got.law == {7: 1} and got.runs == 1 and got.calls == ()
    # one float32 coin with one breakpoint: 5 probes plus about 24 bisection steps
    assert trace(lambda: int(torch.rand(()) < 0.3)).runs <= 5 + 24 + 2


# ---------------------------------------------------------------- an adversarial review's cases


def test_a_loop_the_defaults_never_end_is_refused(monkeypatch):
    from specproof.trace import core

    monkeypatch.setattr(core, "MAX_VALUES_PER_RUN", 1000)  # the mechanism, not 100,000 draws (12 s of CPU)

    def geometric():
        n = 0
        while float(torch.rand(())) < 0.5:  # the trace's default u = 0 never leaves the loop
            n += 1
        return n

    with pytest.raises(TraceTooLarge, match="drew more than 1000 random values"):
        trace(geometric)


def test_a_threshold_that_varies_continuously_is_refused_not_traced_wrongly():
    def continuous():
        u1, u2 = torch.rand((), dtype=torch.float64), torch.rand((), dtype=torch.float64)
        return int(u2 < 4 * u1 * (1 - u1))  # P(1) = 2/3; the law of u2's test differs at every u1

    with pytest.raises(ContinuousThreshold, match=r"lt compares two values computed from different uniforms"):
        trace(continuous, max_runs=20)  # seen on the first run, by the torch-function mode

    def continuous_in_python():  # the values leave torch: the piece search names it instead (within 2,000 runs)
        u1, u2 = float(torch.rand(())), float(torch.rand(()))
        return int(u2 < 4 * u1 * (1 - u1))

    with pytest.raises(ContinuousThreshold, match=r"law of the rest of the run changes at each of 32 consecutive"):
        trace(continuous_in_python, max_runs=2000)


def test_a_sampler_that_seeds_itself_is_refused():
    def seeded():
        torch.manual_seed(0)
        return int(torch.rand(()) < 0.5)

    with pytest.raises(UnmodelledRandomness, match="manual_seed"):
        trace(seeded)


def test_numpy_random_fills_out():
    def coin(rng):
        buf = np.zeros(2)
        rng.random(out=buf)
        return int(buf[1] < 0.5)

    assert trace(coin, numpy_rng="rng").law == {0: F(1, 2), 1: F(1, 2)}


def test_a_sampler_may_write_into_its_inputs():
    def textbook_in_place(p, q):  # the residual is written into p, as engines reuse buffers
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            return x
        p.sub_(q).clamp_(min=0)
        return int(torch.multinomial(p / p.sum(), 1))

    p, q = torch.tensor([0.5, 0.25, 0.25]), torch.tensor([0.25, 0.25, 0.5])
    assert trace(textbook_in_place, (p, q)).law == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}
    assert p.tolist() == [0.5, 0.25, 0.25]  # the caller's buffers are untouched


def test_uniform_with_bounds_follows_pytorchs_arithmetic():
    def scaled():
        return int(torch.empty(()).uniform_(0.1, 0.7) < 0.4)

    # the bounds in float32, then u * (b - a) + a in double, rounded to float32: count the grid
    # points k/2^24 whose image is below float32(0.4), by the same arithmetic in NumPy
    a, b = float(np.float32(0.1)), float(np.float32(0.7))
    k = np.arange(2**24, dtype=np.float64)
    below = int(((k / 2**24 * (b - a) + a).astype(np.float32) < np.float32(0.4)).sum())
    assert trace(scaled).law[1] == F(below, 2**24)


def test_read_thresholds_fall_back_to_bisection_where_a_uniform_is_used_as_a_value():
    def tricky():
        u = torch.rand(())
        if u < 0.5:
            return 0
        return int(u.item() > 0.75)  # on this path u is used as a value: not readable

    read, bisected = trace(tricky), trace(tricky, read_thresholds=False)
    assert read.law == bisected.law == {0: 1 - F(4194303, 2**24), 1: F(4194303, 2**24)}
    assert "ASSUMED" in read.assumptions[1]  # the bisection assumption is stated: this uniform was bisected


def test_read_thresholds_of_a_vector_of_coins_compared_elementwise_and_by_index():
    t = torch.tensor([0.3, 0.6])

    def elementwise():
        r = torch.rand(2)
        return tuple((r < t).tolist())

    def indexed():
        r = torch.rand(2)
        return (bool(r[0] < 0.3), bool(r[1] <= 0.6))

    for f in (elementwise, indexed):
        read, bisected = trace(f), trace(f, read_thresholds=False)
        assert read.law == bisected.law and read.runs < bisected.runs
        assert any("read from the comparison itself" in a for a in read.assumptions)
    a, b = F(5033165, 2**24), F(10066330, 2**24)  # P(u < fl32(0.3)), P(u < fl32(0.6)) on the float32 grid
    assert trace(elementwise).law[(True, True)] == a * b


def test_read_thresholds_of_a_uniform_whose_threshold_a_later_draw_chooses():
    """The first run compares u1 with 0.3 only (u2 at its default 0); at u2 >= 0.5 it is compared with 0.7. Reading
    the breakpoints of that run alone gave the piece [0.3, 1) the law at 0.3 (P(1) = 0.65 instead of 0.5)."""

    def chosen_later():
        u1 = torch.rand(())
        u2 = torch.rand(())
        if u2 < 0.5:
            return int(u1 < 0.3)
        return int(u1 < 0.7)

    read, bisected = trace(chosen_later), trace(chosen_later, read_thresholds=False)
    assert read.law == bisected.law == {0: F(1, 2), 1: F(1, 2)}
    assert read.runs < bisected.runs

    # the same masking one level down: u3 chooses u1's threshold, u2 is never read
    def deeper():
        u1, u2, u3 = torch.rand(()), torch.rand(()), torch.rand(())
        return int(u1 < (0.3 if u3 < 0.25 else 0.9)) + 0 * int(u2 < 2)

    # u1 < 0.3 and u1 < 0.9 compare with fl32(0.3) = 5033165 * 2^-24 and fl32(0.9) = 15099494 * 2^-24: the coin's
    # 2^-24 grid has that many points below each (bisection without reading gives the same law, in 1,895 runs)
    one = F(1, 4) * F(5033165, 1 << 24) + F(3, 4) * F(15099494, 1 << 24)
    assert trace(deeper).law == {0: 1 - one, 1: one}


def test_uses_the_function_mode_cannot_see_send_a_uniform_to_bisection():
    """Found by an adversarial review: TorchScript, out= buffers, a returned uniform, formatting."""

    @torch.jit.script
    def hidden(u: torch.Tensor) -> bool:
        return bool(u >= 0.875)

    def jit_fast_path(p, q):
        x = int(torch.multinomial(q, 1))
        u = torch.rand(())
        if hidden(u):  # a use the mode never sees
            return 0
        if u < p[x] / q[x]:
            return x
        return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

    p, q = torch.tensor([0.5, 0.25, 0.25]), torch.tensor([0.25, 0.25, 0.5])
    got = trace(jit_fast_path, (p, q))
    assert got.law == trace(jit_fast_path, (p, q), read_thresholds=False).law
    assert got.law == {0: F(17, 32), 1: F(7, 32), 2: F(1, 4)}  # by hand: token 0 takes u >= 7/8 of draft 1

    def out_buffer():
        buf = torch.zeros(3)
        torch.rand(1, out=buf[1:2])
        return int(buf[1] < 0.5)

    def formatted():
        u = torch.rand(())
        return int(float(f"{u:.6f}") < 0.5)

    for f in (out_buffer, formatted):
        assert trace(f).law == trace(f, read_thresholds=False).law
    with pytest.raises(ContinuousThreshold):
        trace(lambda: (int(torch.rand(()) < 0.5), torch.rand(())), max_runs=5000)


def test_a_hanging_sampler_ends_at_the_time_budget():
    def hangs():
        if torch.rand(()) < 0.5:
            while True:
                pass
        return 0

    with pytest.raises(TraceTimeout, match=r"passed its time budget of 0\.3 s after \d+ runs? of the sampler") as info:
        trace(hangs, max_seconds=0.3)
    assert isinstance(info.value, TraceTooLarge)
    assert trace(lambda: int(torch.rand(()) < 0.5), max_seconds=60).law == {0: F(1, 2), 1: F(1, 2)}
    assert torch.rand(()).dtype == torch.float32  # the patches are undone after a timeout
    with pytest.raises(SpecProofError, match="max_seconds"):
        trace(lambda: 0, max_seconds=0)
