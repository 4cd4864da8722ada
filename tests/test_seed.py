"""The seed drill's two visible tests (shared/seed/rejection-sampler-drill.txt), run on the public
paths of the float law (``from specproof import emitted_distribution``, ``specproof.numeric``), and
the full suite's edge cases (an identical draft, tokens the draft never proposes, tokens the target
never wants, the acceptance probability)."""

import numpy as np
import pytest

import specproof
import specproof.laws.numeric
import specproof.numeric
from specproof import emitted_distribution


@pytest.fixture(params=["top-level", "specproof.numeric"])
def ns(request):
    function = {"top-level": emitted_distribution, "specproof.numeric": specproof.numeric.emitted_distribution}
    return {"emitted_distribution": function[request.param]}


def test_the_public_paths_are_the_float_path():
    assert emitted_distribution is specproof.emitted_distribution is specproof.laws.numeric.emitted_distribution
    assert specproof.numeric.emitted_distribution is specproof.laws.numeric.emitted_distribution
    assert specproof.exact.emitted_distribution is specproof.laws.exact.emitted_distribution
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        specproof.nonexistent  # noqa: B018


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


def test_identical_draft_gives_a_finite_answer_and_alpha_one(ns):
    p = np.array([0.5, 0.3, 0.2])
    dist, alpha = ns["emitted_distribution"](p, p.copy())
    assert dist.tolist() == p.tolist() and float(alpha) == 1.0


def test_tokens_the_draft_never_proposes_and_the_target_never_wants(ns):
    p, q = np.array([0.5, 0.5, 0.0, 0.0]), np.array([0.0, 0.25, 0.25, 0.5])
    dist, alpha = ns["emitted_distribution"](p, q)
    assert dist.tolist() == [0.5, 0.5, 0.0, 0.0]  # token 0 only by resampling; 2 and 3 never emitted
    assert float(alpha) == 0.25


def test_alpha_is_one_minus_tv(ns):
    for p, q in _pairs(2, 50):
        _, alpha = ns["emitted_distribution"](p, q)
        assert abs(float(alpha) - (1 - 0.5 * np.abs(p - q).sum())) < 1e-12
