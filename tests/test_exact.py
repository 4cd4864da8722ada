"""Tests for specproof.laws.exact: exact equality (==) everywhere."""

from dataclasses import FrozenInstanceError, replace
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from strategies import normalize_fractions, weight_pairs

from specproof.errors import FloatNotExact, InvalidDistribution, ResidualUndefined
from specproof.laws import exact
from specproof.laws.rational import from_floats
from specproof.theorems import distributions

F = Fraction


GRID = [(p, q) for v in (1, 2, 3) for p in distributions(v, 6) for q in distributions(v, 6)]


def test_grid_size():
    # Counted by hand, not by the code: a distribution of length V with entries k/d (d <= 6) has
    # a least common denominator e <= 6. With N_V(e) the number of points of exact denominator
    # e, sum over e | d of N_V(e) = C(d + V - 1, V - 1) (the compositions of d into V parts).
    # V = 2: N = 2, 1, 2, 2, 4, 2 for e = 1..6 -> 13 (the Farey sequence of order 6).
    # V = 3: C(d + 2, 2) = 3, 6, 10, 15, 21, 28 -> N = 3, 3, 7, 9, 18, 15 -> 55.
    assert len(distributions(1, 6)) == 1
    assert len(distributions(2, 6)) == 13
    assert len(distributions(3, 6)) == 55
    assert len(GRID) == 1 + 13**2 + 55**2


def _sampler_alpha(p, q):
    """P(accept) by enumerating the sampler's outcomes: draft x w.p. q(x), coin w.p. min(1, p(x)/q(x))."""
    return sum((b * min(F(1), a / b) for a, b in zip(p, q) if b), F(0))


def test_exhaustive_grid_is_lossless():
    # Oracles that do not restate the module: alpha by enumerating the draft and the coin;
    # the residual as the only law r with accept + (1 - alpha) r == p (what a lossless
    # verifier must resample from, Leviathan et al. App. A.1), from the same enumeration.
    for p, q in GRID:
        law = exact.emitted_law(p, q)
        dist, alpha = law.dist(), law.alpha
        assert dist == p, (p, q)
        assert alpha == _sampler_alpha(p, q)
        assert alpha == 1 - sum(abs(a - b) for a, b in zip(p, q)) / 2
        assert law.tv == 1 - alpha
        assert law.is_lossless()
        assert (dist, alpha) == exact.reference_distribution(p, q)
        if p != q:
            r = exact.residual(p, q)
            accept = [b * min(F(1), a / b) if b else F(0) for a, b in zip(p, q)]
            assert r == tuple((a - m) / (1 - alpha) for a, m in zip(p, accept))
            assert sum(r) == 1


@pytest.mark.parametrize(
    "p, q, alpha",
    [
        # identical draft: residual empty, alpha = 1
        (("1/3", "2/3"), ("1/3", "2/3"), F(1)),
        # token 1 never proposed by the draft (q = 0 where p > 0)
        (("1/2", "1/2"), (1, 0), F(1, 2)),
        # token 2 never wanted by the target (p = 0 where q > 0)
        (("1/3", "2/3", 0), ("1/2", 0, "1/2"), F(1, 3)),
        # disjoint supports: every draft is rejected
        ((1, 0, 0), (0, "1/4", "3/4"), F(0)),
        # V = 1
        ((1,), (1,), F(1)),
    ],
)
def test_seed_cases(p, q, alpha):
    dist, a = exact.emitted_distribution(p, q)
    assert dist == tuple(F(x) for x in p)
    assert a == alpha
    assert exact.acceptance_probability(p, q) == alpha
    assert exact.tv_distance(p, q) == 1 - alpha


def test_hand_computed_law():
    # p = (1/2, 1/2, 0), q = (1/4, 1/4, 1/2): accept masses 1/4, 1/4, 0 -> alpha = 1/2;
    # residual (1/4, 1/4, 0) normalized = (1/2, 1/2, 0); emitted = 1/4 + 1/2 * 1/2 = 1/2.
    law = exact.emitted_law(["1/2", "1/2", 0], ["1/4", "1/4", "1/2"])
    assert law.denominator == 4
    assert law.target_numerators.tolist() == [2, 2, 0]
    assert law.accept_numerators.tolist() == [1, 1, 0]
    assert law.residual_numerators.tolist() == [1, 1, 0]
    assert (law.alpha_numerator, law.reject_numerator, law.normalizer) == (2, 2, 2)
    assert law.emitted.tolist() == [4, 4, 0]  # over D * Z = 8
    assert law.dist() == (F(1, 2), F(1, 2), F(0))
    assert exact.residual(["1/2", "1/2", 0], ["1/4", "1/4", "1/2"]) == (F(1, 2), F(1, 2), F(0))


def test_p_equal_q_gives_finite_law_but_residual_is_undefined():
    p = ("1/5", "4/5")
    dist, alpha = exact.emitted_distribution(p, p)
    assert dist == (F(1, 5), F(4, 5)) and alpha == 1
    with pytest.raises(ResidualUndefined, match="p == q"):
        exact.residual(p, p)


def test_is_lossless_can_fail():
    law = exact.emitted_law(["1/2", "1/2"], ["1/4", "3/4"])
    assert law.is_lossless()
    # a verifier that forgot to reject: emitted = accept mass only
    assert not replace(law, reject_numerator=0).is_lossless()
    # residual taken from (q - p)+ instead of (p - q)+
    wrong = replace(law, residual_numerators=np.maximum(law.draft_numerators - law.target_numerators, 0))
    assert not wrong.is_lossless()
    # alpha off by one unit
    assert not replace(law, alpha_numerator=law.alpha_numerator + 1).is_lossless()


def test_input_types_agree():
    forms = [
        (["1/6", "1/3", "1/2"], ["1/2", "1/2", 0]),
        ([F(1, 6), F(1, 3), F(1, 2)], [F(1, 2), F(1, 2), 0]),
        ([sympy.Rational(1, 6), sympy.Rational(1, 3), sympy.Rational(1, 2)], [sympy.Rational(1, 2)] * 2 + [0]),
    ]
    results = {exact.emitted_distribution(p, q) for p, q in forms}
    assert results == {((F(1, 6), F(1, 3), F(1, 2)), F(1, 2))}  # alpha = 1/6 + 1/3 + 0


@pytest.mark.parametrize(
    "p, q, error, message",
    [
        ([], [], InvalidDistribution, "p is empty"),
        ([1], [F(1, 2), F(1, 2)], InvalidDistribution, "p has V=1 entries but q has V=2"),
        (["1/2", "1/3"], [1, 0], InvalidDistribution, "p sums to 5/6, not 1"),
        ([1, 0], ["1/2", "1/2", "1/100"], InvalidDistribution, "q sums to 101/100, not 1"),
        ([2, -1], [1, 0], InvalidDistribution, r"p\[1\] is -1, which is negative"),
        ([0.5, 0.5], [1, 0], FloatNotExact, "from_floats"),
        ([1, 0], np.array([0.5, 0.5]), FloatNotExact, "from_floats"),
        (["1/2", "x"], [1, 0], InvalidDistribution, r"p\[1\] is the string 'x'"),
    ],
)
def test_bad_inputs(p, q, error, message):
    for f in (
        exact.emitted_distribution,
        exact.acceptance_probability,
        exact.tv_distance,
        exact.residual,
        exact.emitted_law,
        exact.reference_distribution,
    ):
        with pytest.raises(error, match=message):
            f(p, q)


@settings(max_examples=300, deadline=None)
@given(weight_pairs())
def test_property_lossless(pairs):
    p = normalize_fractions([a for a, _ in pairs])
    q = normalize_fractions([b for _, b in pairs])
    law = exact.emitted_law(p, q)
    assert law.dist() == p
    assert law.alpha == 1 - law.tv
    assert law.is_lossless()


def test_real_vocabulary_size_softmax_rows():
    rng = np.random.default_rng(7)
    v = 128_256

    def softmax(z):
        e = np.exp(z - z.max())
        return e / e.sum()

    pv, qv = from_floats(softmax(rng.standard_normal(v) * 4)), from_floats(softmax(rng.standard_normal(v) * 4))
    law = exact.emitted_law(pv, qv)
    assert law.is_lossless()
    assert law.dist() == pv.fractions()
    assert law.alpha == 1 - law.tv
    assert 0 < law.alpha < 1


def test_is_lossless_can_fail_with_an_empty_residual():
    # p == q = (1/2, 1/2): Z = 0, alpha = 1. Accept masses moved to (0, 2) over D = 2 keep
    # alpha (their sum) and sum |P - Q| == 2 (D - A) == 0, but the emitted law is (0, 1), not p.
    law = exact.emitted_law(["1/2", "1/2"], ["1/2", "1/2"])
    assert law.normalizer == 0 and law.denominator == 2 and law.is_lossless()
    tampered = replace(law, accept_numerators=np.array([0, 2], dtype=object))
    assert tampered.dist() == (F(0), F(1))
    assert not tampered.is_lossless()


def _definition(law, p):
    """What is_lossless must decide, from its docstring: dist == p and alpha == 1 - TV, in Fractions."""
    return law.dist() == tuple(F(x) for x in p) and law.alpha == 1 - law.tv


def test_is_lossless_decides_its_definition_on_tampered_laws():
    # Laws whose fields no longer come from emitted_law: is_lossless must still say exactly
    # whether dist() == p and alpha == 1 - TV (each checked here with Fractions).
    p, q = ["1/2", "1/2"], ["1/4", "3/4"]  # D = 4: P = (2, 2), Q = (1, 3), accept (1, 2), residual (1, 0), Z = 1
    law = exact.emitted_law(p, q)
    same = exact.emitted_law(["1/2", "1/2"], ["1/2", "1/2"])  # Z = 0, rejected = 0
    cases = {
        # rejection mass doubled and residual masses halved: the emitted law is unchanged (lossless),
        # though rejected != Z; residual_numerators = (1, 0) * 2 first so that halving stays integral
        "rejected x2, residual /2": (
            replace(
                law,
                denominator=8,
                target_numerators=law.target_numerators * 2,
                draft_numerators=law.draft_numerators * 2,
                accept_numerators=law.accept_numerators * 2,
                residual_numerators=law.residual_numerators,
                alpha_numerator=law.alpha_numerator * 2,
                reject_numerator=law.reject_numerator * 4,
                normalizer=law.normalizer * 2,
            ),
            p,
        ),
        # rejected != Z and the emitted law is not p
        "rejected x2": (replace(law, reject_numerator=law.reject_numerator * 2), p),
        # p == q: the rejection is never sampled, so a changed rejection mass changes nothing
        "p == q, rejected 1": (replace(same, reject_numerator=1), ["1/2", "1/2"]),
        "p == q, accept (0, 2)": (replace(same, accept_numerators=np.array([0, 2], dtype=object)), ["1/2", "1/2"]),
        "untampered": (law, p),
    }
    verdicts = {name: (t.is_lossless(), _definition(t, pp)) for name, (t, pp) in cases.items()}
    assert verdicts == {
        "rejected x2, residual /2": (True, True),
        "rejected x2": (False, False),
        "p == q, rejected 1": (True, True),
        "p == q, accept (0, 2)": (False, False),
        "untampered": (True, True),
    }


def test_emitted_law_is_frozen_and_compared_by_identity():
    law = exact.emitted_law(["1/2", "1/2"], ["1/4", "3/4"])
    with pytest.raises(FrozenInstanceError):
        law.alpha_numerator = 4
    # arrays have no single truth value: a law equals only itself (and never raises on ==)
    assert law == law
    assert law != exact.emitted_law(["1/2", "1/2"], ["1/4", "3/4"])
    assert len({law, law}) == 1


def test_emitted_law_keeps_its_old_names_with_a_warning():
    law = exact.emitted_law(["1/2", "1/2"], ["1/4", "3/4"])
    old = {
        "target": "target_numerators",
        "draft": "draft_numerators",
        "accept": "accept_numerators",
        "accepted": "alpha_numerator",
        "rejected": "reject_numerator",
    }
    for name, new in old.items():
        with pytest.warns(DeprecationWarning, match=f"EmittedLaw.{name} is deprecated; use EmittedLaw.{new}"):
            value = getattr(law, name)
        assert value is getattr(law, new)
    with pytest.raises(AttributeError):
        law.accepted = 4


@pytest.mark.parametrize(
    "entry, given, kind",
    [
        ("nan", "the string 'nan'", "not a number (NaN)"),
        (float("nan"), "the float nan", "not a number (NaN)"),
        (np.float32("nan"), f"the float {np.float32('nan')!r}", "not a number (NaN)"),  # NumPy's repr
        ("-Infinity", "the string '-Infinity'", "infinite"),
        (float("inf"), "the float inf", "infinite"),
    ],
)
def test_a_nan_or_inf_entry_says_it_is_no_probability_and_what_to_do(entry, given, kind):
    # a new user's trap (issue 34): 'nan' was refused as a decimal string with the advice to pass
    # fractions.Fraction('nan') (which raises) or from_floats (which refuses NaN too), a float NaN as "not exact"
    with pytest.raises(InvalidDistribution) as refused:
        exact.emitted_distribution([entry, "1/2", "1/2"], ["1/3", "1/3", "1/3"])
    assert not isinstance(refused.value, FloatNotExact)  # exactness is not what is wrong with it
    assert str(refused.value).startswith(f"p[0] is {given}, {kind}: no probability, exact or float")
    assert "fix the row where it is computed, then pass its values as fractions.Fraction or 'n/d' strings" in str(
        refused.value
    )
    assert "Fraction('nan')" not in str(refused.value)


def test_a_float_refused_by_the_exact_path_names_the_float_path_too():
    # the reverse of the float path's advice (Fractions and strings: use specproof.exact): a float row here
    # is not exact; its float law is the float path's
    with pytest.raises(FloatNotExact, match=r"from_floats\(values\) .*; for the float law of float rows, use the "):
        exact.emitted_distribution([0.5, 0.5], ["1/2", "1/2"])
    with pytest.raises(FloatNotExact, match=r"use the float path, specproof\.emitted_distribution$"):
        exact.emitted_distribution(np.array([0.5, 0.5]), ["1/2", "1/2"])
    with pytest.raises(FloatNotExact, match=r"'1e400', a decimal"):  # finite, however large: a decimal, not inf
        exact.emitted_distribution(["1e400", "0"], ["0", "1"])
