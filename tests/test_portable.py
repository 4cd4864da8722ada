"""specproof.models.portable: the fixtures' softmax, the same bits on every machine."""

import math

import mpmath
import numpy as np
import pytest

from specproof.errors import InvalidDistribution, InvalidOption
from specproof.models.portable import exp_nonpositive, pairwise_sum, power, softmax


def _ulps_from_exp(x: float, y: float) -> float:
    with mpmath.workprec(200):
        exact = mpmath.exp(mpmath.mpf(x))
        return float(abs(mpmath.mpf(y) - exact) / mpmath.mpf(math.ulp(y)))


def test_exp_is_within_two_ulp_of_the_correctly_rounded_exp():
    rng = np.random.default_rng(0)
    x = -np.concatenate(
        [
            rng.exponential(3.0, 3000),
            rng.uniform(0, 708, 300),
            [0.0, 5e-324, 1e-300, math.log(2) / 2, math.log(2), 1.0, 700.0],
        ]
    )
    y = exp_nonpositive(x)
    worst = max(_ulps_from_exp(float(a), float(b)) for a, b in zip(x, y))
    assert worst < 2, worst


def test_exp_edges():
    y = exp_nonpositive(np.array([0.0, -0.0, -np.inf, -746.0, -745.0]))
    assert y[0] == y[1] == 1.0
    assert y[2] == y[3] == 0.0
    assert y[4] == 5e-324  # the smallest subnormal, as exp(-745) rounds
    for bad in ([1e-300], [np.nan], [0.5, -1.0]):
        with pytest.raises(InvalidDistribution, match="<= 0"):
            exp_nonpositive(np.array(bad))


def test_pairwise_sum_adds_in_its_fixed_order():
    assert pairwise_sum(np.array([7.0])) == 7.0
    assert pairwise_sum(np.array([1.0, 2.0, 3.0])) == 6.0
    # padded to (t, t, 1, 0), halves added: (t + 1, t + 0) = (1, t), then 1 + t = 1 (ties to even);
    # left to right, t + t = 2^-52 first and the sum is 1 + 2^-52
    tiny = 2.0**-53
    assert pairwise_sum(np.array([tiny, tiny, 1.0])) == 1.0
    assert math.fsum([tiny, tiny, 1.0]) == 1.0 + 2 * tiny
    assert list(pairwise_sum(np.ones((2, 5)))) == [5.0, 5.0]


def test_softmax_rows_sum_to_one_and_follow_the_logits():
    logits = np.random.default_rng(1).normal(size=(3, 1000)).astype(np.float32)
    rows = softmax(logits, 0.7)
    assert rows.shape == (3, 1000) and rows.dtype == np.float64
    assert np.abs(rows.sum(axis=-1) - 1).max() < 1e-14
    expected = np.exp(logits.astype(np.float64) / 0.7 - (logits.astype(np.float64) / 0.7).max(-1, keepdims=True))
    np.testing.assert_allclose(rows, expected / expected.sum(-1, keepdims=True), rtol=1e-14)
    # one row is its own softmax, not the stack's
    assert np.array_equal(softmax(logits[1], 0.7), rows[1])


def test_softmax_refuses_bad_input():
    with pytest.raises(InvalidOption, match="temperature"):
        softmax(np.zeros(3), 0.0)
    with pytest.raises(InvalidDistribution, match="finite"):
        softmax(np.array([0.0, np.inf]))


def test_power_is_the_correctly_rounded_power():
    from fractions import Fraction

    base = 1.0001
    for n in (0, 1, -1, 7, -3, -137, -1999, 2000, -20000):
        assert power(base, n) == float(Fraction(base) ** n), n
    assert power(2.0, -3) == 0.125
    assert power(0.5, 1074) == 5e-324


def test_power_refuses_bad_arguments():
    for base, n in ((0.0, 1), (-2.0, 1), (float("inf"), 1), (2, 1), (1.0001, 1.5)):
        with pytest.raises(InvalidOption, match="power takes"):
            power(base, n)
