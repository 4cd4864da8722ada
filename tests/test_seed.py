"""The seed drill's two visible tests (shared/seed/rejection-sampler-drill.txt), run on
specproof.laws.numeric.emitted_distribution."""

import numpy as np
import pytest

import specproof.laws.numeric


@pytest.fixture
def ns():
    return {"emitted_distribution": specproof.laws.numeric.emitted_distribution}


def _pairs(seed, n):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        V = int(rng.integers(2, 40))
        yield rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V) * 0.3)


def test_emits_the_target_distribution(ns):
    worst = 0.0
    for p, q in _pairs(0, 300):
        dist, _ = ns["emitted_distribution"](p, q)
        worst = max(worst, float(np.abs(np.asarray(dist) - p).max()))
    assert worst < 1e-12, f"emitted distribution differs from the target by up to {worst:.3g}"


def test_output_is_a_distribution(ns):
    for p, q in _pairs(1, 50):
        dist, _ = ns["emitted_distribution"](p, q)
        dist = np.asarray(dist)
        assert (dist >= 0).all(), "negative probability"
        assert abs(dist.sum() - 1) < 1e-12, f"sums to {dist.sum():.6f}, not 1"
