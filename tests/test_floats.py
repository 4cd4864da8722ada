"""specproof.laws.floats: exact IEEE rounding, compared with the hardware's own arithmetic."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.errors import SpecProofError
from specproof.laws.floats import BFLOAT16, FLOAT16, FLOAT32, FLOAT64, FORMATS, INF, UnknownFormat, float_format

NUMPY = {"float16": np.float16, "float32": np.float32, "float64": np.float64}


def _as_fraction(x) -> Fraction | float:
    x = float(x)
    return x if math.isinf(x) else Fraction(x)


def _random_value(rng: random.Random, fmt) -> Fraction:
    """A random finite float of ``fmt``, subnormals and extremes included."""
    e = rng.randint(fmt.emin - fmt.precision, fmt.emax)
    m = rng.randrange(1, 2**fmt.precision)
    return fmt.round(Fraction(m) * Fraction(2) ** (e - fmt.precision + 1) * rng.choice((1, -1)))


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_operations_equal_numpy(name):
    fmt, dtype = FORMATS[name], NUMPY[name]
    rng = random.Random(1)
    with np.errstate(all="ignore"):
        for _ in range(3000):
            a, b = _random_value(rng, fmt), _random_value(rng, fmt)
            x, y = dtype(float(a)), dtype(float(b))
            assert fmt.add(a, b) == _as_fraction(x + y)
            assert fmt.sub(a, b) == _as_fraction(x - y)
            assert fmt.mul(a, b) == _as_fraction(x * y)
            assert fmt.div(a, b) == _as_fraction(x / y)


def test_bfloat16_equals_torch():
    torch = pytest.importorskip("torch")
    rng = random.Random(2)
    for _ in range(2000):
        a, b = _random_value(rng, BFLOAT16), _random_value(rng, BFLOAT16)
        x, y = (torch.tensor(float(v), dtype=torch.bfloat16) for v in (a, b))
        assert BFLOAT16.div(a, b) == _as_fraction((x / y).item())
        assert BFLOAT16.sub(a, b) == _as_fraction((x - y).item())


@settings(max_examples=300, deadline=None)
@given(st.fractions(min_value=0, max_value=10**6, max_denominator=10**12))
def test_round_of_a_rational_equals_numpy(x):
    # numpy rounds a float64 once more to float32: compare only where the float64 is exact
    for name in ("float32", "float16"):
        fmt = FORMATS[name]
        if FLOAT64.contains(x):
            with np.errstate(over="ignore"):  # a float16 overflow is +inf on both sides
                assert fmt.round(x) == _as_fraction(NUMPY[name](float(x)))
    assert FLOAT64.round(x) == Fraction(x.numerator / x.denominator)  # int / int is correctly rounded


def test_edges():
    assert FLOAT32.round(Fraction(2, 3)) == Fraction(11184811, 2**24)
    # ties to even at the subnormal boundary and at 1 + ulp/2
    assert FLOAT32.round(Fraction(2) ** -150) == 0
    assert FLOAT32.round(3 * Fraction(2) ** -150) == Fraction(2) ** -148
    assert FLOAT32.round(1 + Fraction(2) ** -24) == 1
    assert FLOAT32.round(1 + 3 * Fraction(2) ** -24) == 1 + Fraction(2) ** -22
    assert FLOAT16.round(Fraction(65520)) == INF and FLOAT16.round(-Fraction(65520)) == -INF
    assert FLOAT16.max_finite == 65504 and FLOAT16.round(Fraction(65519)) == 65504
    assert FLOAT32.min_subnormal == Fraction(2) ** -149
    assert FLOAT32.div(1, 0) == INF and FLOAT32.div(-1, 0) == -INF
    assert FLOAT32.add(INF, 1) == INF
    assert FLOAT16.sum([Fraction(1), Fraction(2) ** -11, Fraction(2) ** -11]) == 1  # left to right: 1 + 2^-11 -> 1
    assert FLOAT16.sum([Fraction(2) ** -11, Fraction(2) ** -11, Fraction(1)]) == 1 + Fraction(2) ** -10
    with pytest.raises(SpecProofError, match="NaN"):
        FLOAT32.div(0, 0)
    with pytest.raises(SpecProofError, match="NaN"):
        FLOAT32.sub(INF, INF)
    with pytest.raises(SpecProofError, match="NaN"):
        FLOAT32.round(math.nan)
    with pytest.raises(UnknownFormat, match="float8"):
        float_format("float8")
    assert float_format("float64") is FLOAT64
