"""Tests for specproof.laws.symbolic: the SymPy law agrees exactly with specproof.laws.exact."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from specproof.errors import FloatNotExact, InvalidDistribution, ResidualUndefined
from specproof.laws import exact, symbolic
from specproof.laws.rational import as_distribution, from_floats

# ---------------------------------------------------------------- the exhaustive grid

VALUES = sorted({Fraction(k, d) for d in range(1, 5) for k in range(d + 1)})


def distributions(v: int) -> list[tuple[Fraction, ...]]:
    """Every length-v tuple of fractions with denominators <= 4 that sums to exactly 1."""
    return [t for t in itertools.product(VALUES, repeat=v) if sum(t) == 1]


GRID = {v: distributions(v) for v in (1, 2, 3)}
PAIRS = [(p, q) for v in (1, 2, 3) for p in GRID[v] for q in GRID[v]]


def as_fraction(x: sp.Basic) -> Fraction:
    """A sympy.Rational as a Fraction; fails loudly on anything else."""
    assert isinstance(x, sp.Rational), f"{x!r} is not a sympy.Rational"
    return Fraction(int(x.p), int(x.q))


def test_grid_is_what_it_claims():
    assert GRID[1] == [(Fraction(1),)]
    assert len(GRID[2]) == 7  # (k, 1 - k) for k in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 1}
    assert (Fraction(1, 4), Fraction(1, 3), Fraction(5, 12)) not in GRID[3]  # 5/12: d > 4
    assert (Fraction(0), Fraction(1, 4), Fraction(3, 4)) in GRID[3]
    assert all(sum(t) == 1 and min(t) >= 0 for v in GRID for t in GRID[v])
    assert len(PAIRS) > 500


def test_grid_agrees_exactly_with_exact():
    for p, q in PAIRS:
        dist, alpha = symbolic.emitted_distribution(p, q)
        want_dist, want_alpha = exact.emitted_distribution(p, q)
        assert tuple(as_fraction(d) for d in dist) == want_dist, (p, q)
        assert as_fraction(alpha) == want_alpha, (p, q)
        assert tuple(as_fraction(d) for d in dist) == p, (p, q)  # lossless, from the steps
        assert as_fraction(symbolic.acceptance_probability(p, q)) == want_alpha
        assert as_fraction(symbolic.tv_distance(p, q)) == exact.tv_distance(p, q)
        if p == q:
            with pytest.raises(ResidualUndefined):
                symbolic.residual(p, q)
        else:
            got = tuple(as_fraction(r) for r in symbolic.residual(p, q))
            assert got == exact.residual(p, q), (p, q)


@pytest.mark.parametrize(
    "convert",
    [
        lambda v: [sp.Rational(x.numerator, x.denominator) for x in v],
        lambda v: [f"{x.numerator}/{x.denominator}" for x in v],
        lambda v: as_distribution(v),
    ],
    ids=["sympy.Rational", "strings", "RationalVector"],
)
def test_input_forms(convert):
    p = (Fraction(1, 3), Fraction(2, 3), Fraction(0))
    q = (Fraction(1, 2), Fraction(0), Fraction(1, 2))
    dist, alpha = symbolic.emitted_distribution(convert(p), convert(q))
    assert tuple(as_fraction(d) for d in dist) == p
    assert as_fraction(alpha) == Fraction(1, 3)


def test_from_floats_vector_is_accepted():
    p = from_floats([0.5, 0.25, 0.25])
    q = from_floats([0.25, 0.25, 0.5])
    dist, alpha = symbolic.emitted_distribution(p, q)
    assert tuple(as_fraction(d) for d in dist) == exact.emitted_distribution(p, q)[0]
    assert as_fraction(alpha) == Fraction(3, 4)


# ---------------------------------------------------------------- hand examples

F = Fraction


@pytest.mark.parametrize(
    "p, q, alpha, tv, resid",
    [
        # q(x) = 0 where p(x) > 0: token 1 is never drafted, emitted only by the residual.
        ((F(1, 2), F(1, 2)), (F(1), F(0)), F(1, 2), F(1, 2), (F(0), F(1))),
        # p(x) = 0 where q(x) > 0: token 1 is drafted, always rejected, emitted mass 0.
        ((F(1), F(0)), (F(1, 2), F(1, 2)), F(1, 2), F(1, 2), (F(1), F(0))),
        # disjoint supports: nothing is ever accepted, the residual is p itself.
        (
            (F(1, 2), F(1, 2), F(0), F(0)),
            (F(0), F(0), F(1, 3), F(2, 3)),
            F(0),
            F(1),
            (F(1, 2), F(1, 2), F(0), F(0)),
        ),
        # a larger denominator than the grid's.
        ((F(1, 7), F(6, 7)), (F(5, 11), F(6, 11)), F(1, 7) + F(6, 11), F(24, 77), (F(0), F(1))),
    ],
)
def test_hand_examples(p, q, alpha, tv, resid):
    dist, got_alpha = symbolic.emitted_distribution(p, q)
    assert tuple(as_fraction(d) for d in dist) == p
    assert as_fraction(got_alpha) == alpha == exact.acceptance_probability(p, q)
    assert as_fraction(symbolic.tv_distance(p, q)) == tv == 1 - alpha
    assert tuple(as_fraction(r) for r in symbolic.residual(p, q)) == resid


@pytest.mark.parametrize(
    "p",
    [(F(1),), (F(1, 2), F(1, 2)), (F(1, 5), F(0), F(4, 5))],
    ids=["V=1", "uniform", "with-zero"],
)
def test_p_equals_q(p):
    dist, alpha = symbolic.emitted_distribution(p, p)
    assert tuple(as_fraction(d) for d in dist) == p
    assert as_fraction(alpha) == 1
    assert as_fraction(symbolic.tv_distance(p, p)) == 0
    with pytest.raises(ResidualUndefined, match="p == q"):
        symbolic.residual(p, p)


# ---------------------------------------------------------------- symbolic inputs

P0, P1, Q0, Q1 = sp.symbols("p0 p1 q0 q1", nonnegative=True)
SYMS = (P0, P1, Q0, Q1)


@pytest.fixture(scope="module")
def generic_v2():
    dist, alpha = symbolic.emitted_distribution([P0, P1], [Q0, Q1])
    return {
        "dist": dist,
        "alpha": alpha,
        "accept": symbolic.acceptance_probability([P0, P1], [Q0, Q1]),
        "tv": symbolic.tv_distance([P0, P1], [Q0, Q1]),
        "residual": symbolic.residual([P0, P1], [Q0, Q1]),
    }


def test_symbolic_results_are_expressions(generic_v2):
    for expr in (*generic_v2["dist"], generic_v2["alpha"]):
        assert isinstance(expr, sp.Expr)
        assert expr.free_symbols <= set(SYMS)
        assert expr.free_symbols
    assert generic_v2["alpha"].has(sp.Piecewise, sp.Min)
    assert generic_v2["dist"][0].has(sp.Piecewise, sp.Max)
    assert generic_v2["tv"] == (sp.Abs(P0 - Q0) + sp.Abs(P1 - Q1)) / 2


def test_symbolic_v2_substitutes_to_exact(generic_v2):
    for p, q in itertools.product(GRID[2], repeat=2):
        values = dict(zip(SYMS, (*p, *q)))
        values = {k: sp.Rational(v.numerator, v.denominator) for k, v in values.items()}
        want_dist, want_alpha = exact.emitted_distribution(p, q)
        got = tuple(as_fraction(d.subs(values)) for d in generic_v2["dist"])
        assert got == want_dist == p, (p, q)
        assert as_fraction(generic_v2["alpha"].subs(values)) == want_alpha, (p, q)
        assert as_fraction(generic_v2["accept"].subs(values)) == want_alpha, (p, q)
        assert as_fraction(generic_v2["tv"].subs(values)) == exact.tv_distance(p, q)
        if p != q:
            got_r = tuple(as_fraction(r.subs(values)) for r in generic_v2["residual"])
            assert got_r == exact.residual(p, q), (p, q)


def test_symbolic_one_parameter_pair():
    a, b = sp.symbols("a b", nonnegative=True)
    dist, alpha = symbolic.emitted_distribution([a, 1 - a], [b, 1 - b])
    for x, y in [(F(1, 3), F(1, 2)), (F(0), F(3, 5)), (F(1), F(0)), (F(2, 9), F(2, 9))]:
        values = {a: sp.Rational(str(x)), b: sp.Rational(str(y))}
        p, q = (x, 1 - x), (y, 1 - y)
        assert tuple(as_fraction(d.subs(values)) for d in dist) == p
        assert as_fraction(alpha.subs(values)) == exact.acceptance_probability(p, q)


def test_symbolic_piecewise_forms():
    p0, q0 = sp.symbols("p0 q0", nonnegative=True)
    accept = symbolic.acceptance_probability([p0], [q0])
    assert accept == sp.Piecewise((0, sp.Eq(q0, 0)), (q0 * sp.Min(1, p0 / q0), True))
    qpos = sp.Symbol("qpos", positive=True)  # Eq(qpos, 0) is decided: no Piecewise
    assert symbolic.acceptance_probability([p0], [qpos]) == qpos * sp.Min(1, p0 / qpos)


def test_symbolic_mixed_with_rational_and_identical_pair():
    a = sp.Symbol("a", nonnegative=True)
    dist, alpha = symbolic.emitted_distribution([a, 1 - a], ["1/2", "1/2"])
    assert [d.subs(a, sp.Rational(1, 5)) for d in dist] == [sp.Rational(1, 5), sp.Rational(4, 5)]
    # The same symbols on both sides: Z is identically 0, decided without a Piecewise on Z.
    dist, alpha = symbolic.emitted_distribution([a, 1 - a], [a, 1 - a])
    assert [d.subs(a, sp.Rational(2, 7)) for d in dist] == [sp.Rational(2, 7), sp.Rational(5, 7)]
    with pytest.raises(ResidualUndefined):
        symbolic.residual([a, 1 - a], [a, 1 - a])


def test_symbolic_validation():
    a = sp.Symbol("a", nonnegative=True)
    # The sum of a symbolic vector is the caller's assumption: not checked.
    dist, _ = symbolic.emitted_distribution([a, a], ["1/2", "1/2"])
    assert len(dist) == 2
    with pytest.raises(InvalidDistribution, match=r"p has V=2 entries but q has V=3"):
        symbolic.emitted_distribution([a, 1 - a], ["1/3", "1/3", "1/3"])
    with pytest.raises(InvalidDistribution, match=r"q\[1\] is -1/2, which is negative"):
        symbolic.emitted_distribution(["1/2", "1/2"], [a, "-1/2"])
    with pytest.raises(InvalidDistribution, match=r"p\[0\] is n, which is negative"):
        symbolic.emitted_distribution([sp.Symbol("n", negative=True), 1], [a, 1 - a])
    with pytest.raises(InvalidDistribution, match=r"not an algebraic SymPy expression"):
        symbolic.emitted_distribution([a > 1, a], [a, 1 - a])
    # A fully rational vector beside a symbolic one is still validated completely.
    with pytest.raises(InvalidDistribution, match=r"q sums to 2/3, not 1"):
        symbolic.emitted_distribution([a, 1 - a], ["1/3", "1/3"])


# ---------------------------------------------------------------- rational validation


@pytest.mark.parametrize(
    "p, q",
    [
        ([], []),
        (["1/2", "1/2"], ["1/3", "1/3", "1/3"]),
        (["1/2", "1/2"], ["3/2", "-1/2"]),
        (["1/2", "1/3"], ["1/2", "1/2"]),
        (["1/2", "1/2"], ["1/2", "2/3"]),
        (["1/2", "x"], ["1/2", "1/2"]),
        ([True, 0], [1, 0]),
    ],
    ids=["empty", "lengths", "negative", "p-sum", "q-sum", "garbage", "bool"],
)
def test_invalid_rational_inputs_match_exact(p, q):
    with pytest.raises(InvalidDistribution) as want:
        exact.emitted_distribution(p, q)
    for fn in (
        symbolic.emitted_distribution,
        symbolic.acceptance_probability,
        symbolic.tv_distance,
        symbolic.residual,
    ):
        with pytest.raises(InvalidDistribution) as got:
            fn(p, q)
        assert type(got.value) is type(want.value)
        assert str(got.value) == str(want.value)


# ---------------------------------------------------------------- floats


@pytest.mark.parametrize(
    "p",
    [
        [0.5, 0.5],
        [np.float64(0.5), "1/2"],
        np.array([0.5, 0.5]),
        [sp.Float(0.5), sp.Rational(1, 2)],
        [sp.Symbol("a", nonnegative=True) * 0.5, "1/2"],
        [sp.Symbol("a", nonnegative=True), 0.5],
        [sp.Float(0.5) * sp.sqrt(2), 1 - sp.Float(0.5) * sp.sqrt(2)],
        ["0.5", "1/2"],
    ],
    ids=[
        "float",
        "numpy-float",
        "numpy-array",
        "sympy.Float",
        "float-in-expr",
        "float+symbol",
        "float-in-constant",
        "decimal-str",
    ],
)
def test_floats_refused(p):
    for fn in (
        symbolic.emitted_distribution,
        symbolic.acceptance_probability,
        symbolic.tv_distance,
        symbolic.residual,
    ):
        with pytest.raises(FloatNotExact, match=r"specproof\.laws\.rational\.from_floats"):
            fn(p, ["1/2", "1/2"])
        with pytest.raises(FloatNotExact, match=r"specproof\.laws\.rational\.from_floats"):
            fn(["1/2", "1/2"], p)


# ---------------------------------------------------------------- lemmas


def test_per_token_lemma():
    assert symbolic.per_token_lemma() is True


def test_accept_mass_lemma():
    assert symbolic.accept_mass_lemma() is True


def test_lemma_technique_rejects_a_false_identity():
    # The same pipeline must not "prove" a wrong per-token identity (Max(b - a, 0) for
    # Max(a - b, 0)): a guard against a check that returns True regardless.
    a, b = sp.symbols("a b", real=True, nonnegative=True)
    wrong = sp.Min(a, b) + sp.Max(b - a, 0) - a
    assert sp.simplify(sp.piecewise_fold(wrong.rewrite(sp.Piecewise))) != 0


def test_non_real_unordered_and_scalar_inputs_are_refused():
    import numpy as np
    import sympy as sp

    from specproof.errors import InvalidDistribution
    from specproof.laws import symbolic

    a = sp.Symbol("a", nonnegative=True)
    for p in ([a + sp.I, 1 - a - sp.I], [a * sp.I, 1], [a * sp.zoo, 1], [sp.Symbol("x"), 1]):
        with pytest.raises(InvalidDistribution, match="finite real number"):
            symbolic.emitted_distribution(p, ["1/2", "1/2"])
    with pytest.raises(InvalidDistribution, match="token order matters"):
        symbolic.emitted_distribution({0: 1}, [1])
    with pytest.raises(InvalidDistribution, match=r"shape \(\)"):
        symbolic.emitted_distribution(np.array(1), np.array(1))
