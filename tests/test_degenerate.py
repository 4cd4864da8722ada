"""What a rule emits on degenerate rows (NaN, +/-inf, all zero): exact values by hand, and agreement with the
traced law of small torch code (a raise of the rule is a raise of the code)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from specproof.errors import InvalidDistribution
from specproof.laws.outcome import FLOAT32
from specproof.rules.degenerate import degenerate_law
from specproof.rules.policy import Arithmetic, Processing, Rule, named_rule

NAN, INF = float("nan"), float("inf")
LT32 = named_rule("lt-float32-coin")
LE32 = named_rule("le-float32-coin")
LAST = Rule(coin=FLOAT32, arithmetic=Arithmetic("float32"), fallback="last")
LE_LAST = Rule(comparison="<=", coin=FLOAT32, arithmetic=Arithmetic("float32"), fallback="last")


def test_an_all_nan_target_row_raises_or_emits_the_fallback_id():
    out = degenerate_law([NAN, NAN], [0.5, 0.5], LE32)
    assert out.modelled and out.law == {} and out.raised == 1 and out.undetermined == 0
    assert "residual's mass is NaN and the fallback is 'error'" in out.notes[0]
    # vLLM #53029's class: every ratio test fails on NaN, the residual's mass is NaN, the guard emits the last id
    v = 8192
    out = degenerate_law([NAN] * v, [1 / 8] * 8 + [0.0] * (v - 8), LAST)
    assert out.law == {v - 1: F(1)} and out.raised == 0 and out.outside_support == 1 and out.tv is None
    assert not out.target_valid


def test_an_all_zero_target_row_accepts_only_at_the_zero_coin_under_le():
    out = degenerate_law([0.0, 0.0], [0.25, 0.75], LE32)  # u <= fl32(0 / q) = 0 passes at u = 0 only
    assert out.law == {0: F(1, 4) / 2**24, 1: F(3, 4) / 2**24} and out.raised == 1 - F(1, 2**24)
    assert degenerate_law([0.0, 0.0], [0.25, 0.75], LT32).law == {}
    out = degenerate_law([0.0, 0.0, 0.0], [0.25, 0.25, 0.5], LE_LAST)
    assert out.law == {0: F(1, 4) / 2**24, 1: F(1, 4) / 2**24, 2: 1 - F(1, 2) / 2**24} and out.raised == 0
    # exact arithmetic has no NaN, but an all-zero row is rational: u < 0 never passes, the residual is empty
    std = degenerate_law([0.0, 0.0], [0.5, 0.5])
    assert std.modelled and std.law == {} and std.raised == 1
    uniform = degenerate_law([0.0, 0.0], [0.5, 0.5], Rule(fallback="uniform"))
    assert uniform.law == {0: F(1, 2), 1: F(1, 2)}


def test_an_infinite_target_entry_is_accepted_and_its_residual_raises():
    out = degenerate_law([INF, 0.0], [0.5, 0.5], LT32)  # x = 0: inf / q passes; x = 1: 0 fails, residual (inf, 0)
    assert out.law == {0: F(1, 2)} and out.raised == F(1, 2)
    assert "infinite entry" in out.notes[0]
    out = degenerate_law([-INF, 1.0], [0.5, 0.5], LAST)  # -inf / q fails; residual (0, 1/2): id 1
    assert out.law == {1: F(1)} and out.raised == 0


def test_a_degenerate_draft_row_raises_at_the_draft_draw_and_a_valid_target_has_a_tv():
    out = degenerate_law([0.5, 0.5], [NAN, NAN], LE32)
    assert out.raised == 1 and out.target_valid and out.tv == 1
    assert "draft is drawn from the draft row" in out.notes[0]
    # the draft drawn from a valid proposal, the ratio's q NaN at id 1: NaN fails the test, the residual's mass is NaN
    out = degenerate_law([0.5, 0.5], [0.5, NAN], LE32, proposal=[0.5, 0.5])
    assert out.law == {0: F(1, 2)} and out.raised == F(1, 2) and out.tv == F(1, 2)
    assert out.outside_support == 0


def test_on_finite_entries_the_degenerate_law_is_the_audits_law():
    from specproof.rules.audit import position_law

    # on finite rows nothing is degenerate: the outcome is the audit's float law, and its TV from the given p
    for rule in (LE32, LT32, LAST, Rule(coin=FLOAT32, arithmetic=Arithmetic("float16", "product"))):
        got = degenerate_law([0.6, 0.3, 0.1], [0.2, 0.5, 0.3], rule)
        want = position_law([0.6, 0.3, 0.1], [0.2, 0.5, 0.3], rule)
        assert got.law == {i: m for i, m in enumerate(want.law) if m} and got.raised == 0 and got.tv == want.tv
    # 16 entries, whose residual torch sums in blocks: the rule's own sum in both (le-float32-coin names torch's)
    torch = pytest.importorskip("torch")
    import numpy as np

    p, q = (r.tolist() for r in torch.tensor(np.random.default_rng(0).normal(size=(2, 16)) * 2).softmax(-1).float())
    got, want = degenerate_law(p, q, LE32), position_law(p, q, LE32)
    assert got.law == {i: m for i, m in enumerate(want.law) if m} and got.tv == want.tv


def test_rules_that_do_not_determine_the_outcome_say_so():
    std = degenerate_law([NAN, 1.0], [0.5, 0.5])
    assert not std.modelled and "exact" in std.notes[0] and std.law == {}
    greedy = degenerate_law([0.0, 0.0], [0.5, 0.5], named_rule("greedy"))
    assert not greedy.modelled and "argmax" in greedy.notes[0]
    proc = Rule(coin=FLOAT32, arithmetic=Arithmetic("float32"), target_processing=Processing(top_k=1))
    assert "processing" in degenerate_law([NAN, 1.0], [0.5, 0.5], proc).notes[0]
    argmax = degenerate_law(
        [NAN, NAN], [0.5, 0.5], Rule(coin=FLOAT32, arithmetic=Arithmetic("float32"), fallback="argmax")
    )
    assert argmax.modelled and argmax.undetermined == 1 and argmax.law == {}
    everything = degenerate_law([NAN, NAN], [0.25, 0.75], named_rule("accept-all"))
    assert everything.law == {0: F(1, 4), 1: F(3, 4)} and everything.outside_support == 1
    assert degenerate_law([NAN, NAN], [0.5, 0.5], named_rule("match-rule")).raised == 1
    with pytest.raises(InvalidDistribution, match="negative"):
        degenerate_law([-0.5, 1.0], [0.5, 0.5], LE32)
    with pytest.raises(InvalidDistribution, match="V=2"):
        degenerate_law([0.5, 0.5], [1.0], LE32)


# ------------------------------------------------------------------ agreement with torch code

torch = pytest.importorskip("torch")

from specproof.trace.tracer import SamplerRaised, trace  # noqa: E402


def torch_verifier(rule):
    """The float32 textbook verifier as the rule says: u < (or <=) p/q with torch.rand, the residual clamped and, for
    the fallback 'last', a guard `if not r.sum() > 0: return V - 1`."""

    def run(p, q):
        x = int(torch.multinomial(q.double(), 1))
        u = torch.rand(())
        t = p[x] / q[x]
        if bool(u < t) if rule.comparison == "<" else bool(u <= t):
            return x
        r = torch.clamp(p - q, min=0)
        if rule.fallback == "last" and not bool(r.sum() > 0):
            return len(p) - 1
        return int(torch.multinomial(r.double(), 1))

    return run


ROWS = {
    "all NaN": ([NAN, NAN, NAN], [0.25, 0.25, 0.5]),
    "NaN at one id": ([0.5, NAN, 0.5], [0.25, 0.25, 0.5]),
    "+inf at one id": ([INF, 0.5, 0.5], [0.25, 0.25, 0.5]),
    "-inf at one id": ([-INF, 0.5, 0.5], [0.25, 0.25, 0.5]),
    "all zero": ([0.0, 0.0, 0.0], [0.25, 0.25, 0.5]),
    "all +inf": ([INF, INF, INF], [0.25, 0.25, 0.5]),
    "all -inf": ([-INF, -INF, -INF], [0.25, 0.25, 0.5]),
    "a NaN draft row": ([0.5, 0.25, 0.25], [NAN, NAN, NAN]),
}


@pytest.mark.parametrize(
    "rule",
    [LT32, Rule(comparison="<=", coin=FLOAT32, arithmetic=Arithmetic("float32")), LAST, LE_LAST],
    ids=["lt", "le", "lt-last", "le-last"],
)
@pytest.mark.parametrize("name", list(ROWS))
def test_the_degenerate_law_is_the_traced_law_of_torch_code(rule, name):
    p, q = ROWS[name]
    want = degenerate_law(p, q, rule)
    assert want.modelled and want.undetermined == 0
    pt, qt = torch.tensor(p), torch.tensor(q)
    if want.raised:  # some run of the code raises (torch refuses the weights): the trace says so
        with pytest.raises(SamplerRaised):
            trace(torch_verifier(rule), (pt, qt))
    else:
        assert trace(torch_verifier(rule), (pt, qt)).law == want.law
