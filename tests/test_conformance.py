"""specproof.trace.conformance: the L1/TV test with a guaranteed false-alarm rate and power (fixed seeds)."""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from specproof.errors import SpecProofError
from specproof.rules.audit import position_law
from specproof.rules.policy import named_rule
from specproof.trace.conformance import conformance_test, sample_size, six_sigma_counts

P = [F(1, 2), F(1, 4), F(1, 8), F(1, 8)]
Q = [F(1, 8), F(1, 8), F(1, 4), F(1, 2)]
LAW = dict(enumerate(P))
p = np.array([float(x) for x in P])
q = np.array([float(x) for x in Q])


def draw(row, u):
    return np.minimum(np.searchsorted(np.cumsum(row), u, side="right"), len(row) - 1)


def sampler(kind, seed):
    rng = np.random.default_rng(seed)

    def sample(n):
        x = draw(q, rng.random(n))
        if kind == "accept-all":
            return x
        acc = rng.random(n) < p[x] / q[x]
        resid = np.maximum(p - q, 0)
        row = p if kind == "resample-from-target" else resid / resid.sum()
        return np.where(acc, x, draw(row, rng.random(n)))

    return sample


def test_sample_size_formula():
    n, t = sample_size(4, 0.05, alpha=1e-6, power=0.95)
    la, lb = math.log(14) + math.log(1e6), math.log(14) + math.log(20)
    assert n == math.ceil((math.sqrt(la) + math.sqrt(lb)) ** 2 / (2 * 0.05**2))
    assert t == math.sqrt(la / (2 * n))
    # the two guarantees hold at this N
    assert 14 * math.exp(-2 * n * t * t) <= 1e-6 + 1e-18
    assert 14 * math.exp(-2 * n * (0.05 - t) ** 2) <= 0.05
    # one output: the support check alone; (1 - eps)^N <= 1 - power needs N = ceil(ln(20) / 0.05) = 60
    assert sample_size(1, 0.05) == (60, 1.0)
    with pytest.raises(SpecProofError, match="eps"):
        sample_size(4, 0.0)


@pytest.mark.parametrize("seed", range(5))
def test_a_correct_sampler_conforms(seed):
    result = conformance_test(sampler("standard", seed), LAW, eps=0.05)
    assert result.conforms and result.p_value > 1e-6 and not result.outside_support
    assert result.tv_upper_bound >= result.observed_tv


@pytest.mark.parametrize("kind", ["accept-all", "resample-from-target"])
def test_faults_above_eps_are_detected(kind):
    tv = position_law(P, Q, named_rule(kind)).tv
    assert tv >= F(1, 20)
    result = conformance_test(sampler(kind, 0), LAW, eps=0.05)
    assert not result.conforms and result.p_value < 1e-6
    assert result.tv_upper_bound >= float(tv) - result.threshold


def test_an_output_outside_the_support_rejects_at_once():
    result = conformance_test(lambda n: np.full(n, 7), LAW, eps=0.5, n=3)
    assert not result.conforms and result.p_value == 0.0 and result.outside_support == {7: 3}


def test_bad_inputs():
    with pytest.raises(SpecProofError, match="sum to exactly 1"):
        conformance_test(lambda n: [0] * n, {0: F(1, 2)})
    with pytest.raises(SpecProofError, match="returned"):
        conformance_test(lambda n: [0], LAW, eps=0.5)
    with pytest.raises(SpecProofError, match="n is"):
        conformance_test(lambda n: [0] * n, LAW, n=0)


def test_six_sigma_baseline():
    assert six_sigma_counts(sampler("standard", 1), LAW, 65_536)
    assert not six_sigma_counts(sampler("accept-all", 1), LAW, 65_536)
