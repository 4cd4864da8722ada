"""Tests for specproof.laws.rational: the exact boundary."""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import sympy

from specproof.errors import FloatNotExact, InvalidDistribution, SpecProofError
from specproof.laws.rational import (
    RationalVector,
    as_distribution,
    format_fraction,
    from_floats,
    to_fraction,
)


@pytest.mark.parametrize(
    "value, expected",
    [
        (3, Fraction(3)),
        (np.int64(2), Fraction(2)),
        (Fraction(2, 6), Fraction(1, 3)),
        (sympy.Rational(3, 9), Fraction(1, 3)),
        (sympy.Integer(0), Fraction(0)),
        ("3/9", Fraction(1, 3)),
        (" -2 / 4 ", Fraction(-1, 2)),
        ("7", Fraction(7)),
    ],
)
def test_to_fraction_accepts_exact_values(value, expected):
    assert to_fraction(value) == expected
    assert type(to_fraction(value)) is Fraction


@pytest.mark.parametrize(
    "value", [0.5, np.float64(0.5), np.float32(0.25), sympy.Float(0.5), "0.5", "1e-3", sympy.Float(0.5) * sympy.sqrt(2)]
)
def test_floats_are_refused_with_the_conversion_named(value):
    with pytest.raises(FloatNotExact, match="from_floats"):
        to_fraction(value, what="p[0]")


@pytest.mark.parametrize(
    "value",
    [
        True,
        np.bool_(True),
        None,
        "1/0",
        "a/b",
        "١/٢",
        sympy.Symbol("x"),
        [1],
        Decimal("0.5"),
        np.timedelta64(1, "ns"),
        "1" * 5000,
    ],
)
def test_non_rationals_are_refused(value):
    with pytest.raises(InvalidDistribution):
        to_fraction(value)


def test_errors_are_value_errors():
    assert issubclass(FloatNotExact, InvalidDistribution)
    assert issubclass(InvalidDistribution, SpecProofError)
    assert issubclass(SpecProofError, ValueError)


def test_as_distribution_common_denominator():
    v = as_distribution(["1/2", Fraction(1, 3), sympy.Rational(1, 6)])
    assert v.numerators == (3, 2, 1)
    assert v.denominator == 6
    assert v.fractions() == (Fraction(1, 2), Fraction(1, 3), Fraction(1, 6))
    assert v.policy is None


@pytest.mark.parametrize(
    "values, message",
    [
        ([], "p is empty"),
        (["1/2", "1/3"], "p sums to 5/6, not 1"),
        ([1, 1], "p sums to 2, not 1"),
        (["3/2", "-1/2"], r"p\[1\] is -1/2, which is negative"),
        ([0.5, 0.5], r"p\[0\] is the float 0.5"),
        (np.array([0.5, 0.5]), "float64 array"),
        (np.array([[1, 0]]), r"shape \(1, 2\)"),
        ("1/2", "sequence"),
        (5, "sequence"),
    ],
)
def test_as_distribution_refuses(values, message):
    with pytest.raises(InvalidDistribution, match=message):
        as_distribution(values)


def test_as_distribution_checks_a_rational_vector():
    with pytest.raises(InvalidDistribution, match="sums to 3/4"):
        as_distribution(RationalVector((1, 2), 4), "q")


def test_rescaled():
    v = RationalVector((1, 1), 2)
    assert v.rescaled(6) == (3, 3)
    with pytest.raises(InvalidDistribution, match="not a multiple"):
        v.rescaled(5)


def test_format_fraction():
    assert format_fraction(Fraction(-6, 4)) == "-3/2"
    assert format_fraction(Fraction(5)) == "5/1"


def test_from_floats_exact_dyadic_values_then_renormalized():
    x = np.array([0.1, 0.2, 0.7])
    v = from_floats(x)
    exact = [Fraction(float(a)) for a in x]  # Fraction(float) is the float's exact value
    total = sum(exact)
    assert v.fractions() == tuple(e / total for e in exact)
    assert sum(v.fractions()) == 1
    assert v.policy.name == "dyadic-renormalize"
    assert v.policy.float_sum == total
    assert v.policy.source_dtype == "float64"
    assert v.policy.as_dict()["float_sum"] == format_fraction(total)


def test_from_floats_float32_and_subnormals():
    x32 = np.array([0.25, 0.75, 1e-30], dtype=np.float32)
    v = from_floats(x32)
    exact = [Fraction(float(a)) for a in x32]
    assert v.fractions() == tuple(e / sum(exact) for e in exact)
    assert v.policy.source_dtype == "float32"
    tiny = np.array([1.0, 5e-324, 2.5e-320, 0.0])
    v = from_floats(tiny)
    exact = [Fraction(float(a)) for a in tiny]
    assert v.fractions() == tuple(e / sum(exact) for e in exact)
    assert v.fractions()[3] == 0


def test_from_floats_matches_fraction_on_random_softmax_rows():
    rng = np.random.default_rng(3)
    for _ in range(20):
        z = rng.standard_normal(50) * 10
        x = np.exp(z - z.max())
        x /= x.sum()
        exact = [Fraction(float(a)) for a in x]
        assert from_floats(x).fractions() == tuple(e / sum(exact) for e in exact)


@pytest.mark.parametrize(
    "values, message",
    [
        ([0.5, np.nan], r"x\[1\] is nan"),
        ([0.5, np.inf], r"x\[1\] is inf"),
        ([1.5, -0.5], r"x\[1\] is -0.5, which is negative"),
        ([0.0, 0.0], "all zeros"),
        ([], "empty"),
        ([[0.5, 0.5]], "shape"),
        ([1, 0], "not a float dtype"),
        ([0.5, 0.6], r"off from 1 by 0.0999\d*, more than atol"),
    ],
)
def test_from_floats_refuses(values, message):
    with pytest.raises(InvalidDistribution, match=message):
        from_floats(np.array(values))


def test_from_floats_atol_is_explicit():
    x = np.array([0.5, 0.502])  # a row off by 2e-3: refused by default (1e-3)
    with pytest.raises(InvalidDistribution, match="atol=0.001"):
        from_floats(x)
    v = from_floats(x, atol=1e-2)
    assert sum(v.fractions()) == 1
    assert v.policy.atol == 1e-2
    assert from_floats(np.array([0.5, 0.5002])).policy.atol == 1e-3  # an n-gram row off by 2e-4


@pytest.mark.parametrize("atol", [-1e-9, float("nan"), 1.0, 5.0])
def test_from_floats_refuses_bad_atol(atol):
    with pytest.raises(InvalidDistribution, match="atol"):
        from_floats(np.array([0.5, 0.5]), atol=atol)


def test_from_floats_refuses_longdouble():
    with pytest.raises(InvalidDistribution, match="wider than float64"):
        from_floats(np.array([0.5, 0.5], dtype=np.longdouble))


def test_fraction_subclasses_become_plain_fractions():
    class F(Fraction):
        pass

    assert type(to_fraction(F(1, 2))) is Fraction


@pytest.mark.parametrize(
    "vec, message",
    [
        (RationalVector((0.1, 0.9), 1), r"numerators\[0\] is 0.1 of type float"),
        (RationalVector((True, False), 1), "of type bool"),
        (RationalVector(tuple(np.array([1, 0])), 1), "of type int64"),
        (RationalVector((1, 1), 2.0), "denominator 2.0"),
        (RationalVector([1, 1], 2), "not a tuple of int"),
        (RationalVector((1, 1), 0), "denominator 0"),
    ],
)
def test_malformed_rational_vectors_are_refused(vec, message):
    with pytest.raises(InvalidDistribution, match=message):
        as_distribution(vec)


@pytest.mark.parametrize("values", [{0: "1/2", 1: "1/2"}, {1}, np.ma.array([1, 0])])
def test_unordered_or_masked_containers_are_refused(values):
    with pytest.raises(InvalidDistribution):
        as_distribution(values)


def test_huge_numbers_in_messages():
    with pytest.raises(InvalidDistribution, match="bit numerator"):
        as_distribution([Fraction(10**5000 + 1, 10**5000), 0])
    with pytest.raises(InvalidDistribution, match="sums to more than 1.8e308"):
        from_floats(np.array([1e308, 1e308]))
    with pytest.raises(InvalidDistribution, match="not a rectangular array"):
        from_floats([[0.5, 0.5], [1.0]])
    with pytest.raises(InvalidDistribution, match="atol"):
        from_floats(np.array([0.5, 0.5]), atol="x")


def test_from_floats_atol_boundary_is_inclusive():
    # [0.75, 0.5] sums to 1.25 exactly, off by exactly atol = 1/4: accepted, divided by 5/4
    for atol in (0.25, Fraction(1, 4)):
        v = from_floats(np.array([0.75, 0.5]), atol=atol)
        assert v.fractions() == (Fraction(3, 5), Fraction(2, 5))
    with pytest.raises(InvalidDistribution, match="more than atol"):
        from_floats(np.array([0.75, 0.5]), atol=Fraction(1, 4) - Fraction(1, 10**9))


def test_from_floats_atol_zero_accepts_exactly_normalized_rows_only():
    assert from_floats(np.array([0.5, 0.5]), atol=0).fractions() == (Fraction(1, 2), Fraction(1, 2))
    assert from_floats(np.array([0.5, 0.25, 0.25]), atol=0.0).fractions() == (
        Fraction(1, 2),
        Fraction(1, 4),
        Fraction(1, 4),
    )
    with pytest.raises(InvalidDistribution, match="more than atol"):
        from_floats(np.array([0.5, 0.5 + 2.0**-52]), atol=0)


def test_a_decimal_string_names_both_readings():
    # '0.6' is an exact decimal (3/5) or the float 0.6's text: the message offers both, by name
    with pytest.raises(FloatNotExact, match=r"a decimal, .*Fraction\('0\.6'\) \(the exact decimal\).*from_floats"):
        to_fraction("0.6", what="p[0]")
