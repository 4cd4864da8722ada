"""Gumbel-max and Gumbel-top-k on torch uniforms (issue 33, item 2): traced as the exponential race they are in
disguise where the construction is one (``argmax(l - log(-log u))``, ``topk(l + G, k)``, ``w / (-log u)``), refused
by name otherwise, and then tested statistically by ``assert_lossless(..., statistical=True)``, which says so."""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest

torch = pytest.importorskip("torch")

from specproof.trace import _passed  # noqa: E402
from specproof.trace.conformance import ConformanceResult  # noqa: E402
from specproof.trace.testing import assert_lossless  # noqa: E402
from specproof.trace.tracer import ContinuousThreshold, UnmodelledRandomness, trace  # noqa: E402

W = torch.tensor([0.5, 0.25, 0.25])


def gumbel_max(w):
    u = torch.rand(w.shape)
    return int(torch.argmax(torch.log(w) - torch.log(-torch.log(u))))


def test_gumbel_max_of_log_weights_is_the_race_with_those_weights():
    got = trace(gumbel_max, (W,))
    assert got.law == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}
    assert got.calls == ("Gumbel-max",)
    assert got.runs == 3  # one run per winner: no uniform is bisected
    assert any(a.startswith("Gumbel-max") and "IDEALIZED" in a for a in got.assumptions)


def lucidrains_log(t, eps=1e-20):
    return torch.log(t.clamp(min=eps))


def lucidrains_gumbel_sample(t, temperature=1.0, dim=-1):
    noise = torch.zeros_like(t).uniform_(0, 1)
    return ((t / max(temperature, 1e-10)) + -lucidrains_log(-lucidrains_log(noise))).argmax(dim=dim)


def softmax_law(scores32):
    """exp(l - max l) in float64 of float32 scores, normalized exactly (the weights the race is stated over)."""
    row = [float(x) for x in scores32.tolist()]
    top = max(row)
    ws = [F(math.exp(x - top)) for x in row]
    return [w / sum(ws) for w in ws]


def test_lucidrains_gumbel_sample_batched_with_temperature_and_eps_guards():
    logits = torch.tensor([[1.0, 2.0, 0.5], [0.0, -math.inf, 0.0]])
    got = trace(lambda: tuple(lucidrains_gumbel_sample(logits, 0.7).tolist()))
    rows = [softmax_law(r) for r in logits / 0.7]  # the code divides in float32
    want = {(i, j): rows[0][i] * rows[1][j] for i in range(3) for j in range(3) if rows[1][j]}
    assert got.law == want
    assert rows[1][1] == 0 and got.runs == 6


def test_gumbel_top_k_draws_without_replacement_plackett_luce():
    got = trace(lambda: tuple(torch.topk(torch.log(W) + -torch.log(-torch.log(torch.rand(3))), 2).indices.tolist()))
    assert got.law == {
        (0, 1): F(1, 4),
        (0, 2): F(1, 4),
        (1, 0): F(1, 6),
        (1, 2): F(1, 12),
        (2, 0): F(1, 6),
        (2, 1): F(1, 12),
    }
    assert got.calls == ("Gumbel-top-k",)


@pytest.mark.parametrize(
    "noise",
    [
        lambda w: torch.argmax(w / -torch.log(torch.rand(3))),  # the race on uniforms: E = -log u
        lambda w: torch.argmax(torch.log(w) - torch.log(-torch.log(1 - torch.rand_like(w)))),  # 1 - u
        lambda w: torch.argmax(torch.log(w) + torch.log(torch.log(torch.rand(3)) * -1) * -1),
        lambda w: (torch.log(w) - torch.log(-torch.log(torch.rand(3) + 1e-10))).argmax(dim=-1, keepdim=True)[0],
    ],
)
def test_other_spellings_of_the_same_race(noise):
    assert trace(lambda: int(noise(W))).law == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}


def test_a_verifier_whose_draft_and_residual_are_gumbel_max_is_lossless():
    p, q = torch.tensor([0.5, 0.25, 0.25]), torch.tensor([0.25, 0.5, 0.25])

    def verify(p, q):
        x = int(torch.argmax(torch.log(q) - torch.log(-torch.log(torch.rand(q.shape)))))
        if torch.rand(()) < p[x] / q[x]:
            return x
        r = torch.clamp(p - q, min=0)
        return int(torch.argmax(torch.log(r) - torch.log(-torch.log(torch.rand(r.shape)))))

    result = assert_lossless(verify, p, q)
    assert result.verdict == "lossless" and result.law == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "run,match",
    [
        (
            lambda: (lambda g: (int(torch.argmax(torch.log(W) + g)), float(g.sum())))(
                -torch.log(-torch.log(torch.rand(3)))
            ),
            r"Gumbel noise \(G\) is used by sum",
        ),
        (
            lambda: float(torch.topk(torch.log(W) - torch.log(-torch.log(torch.rand(3))), 2).values[0]),
            r"values returned by topk",
        ),
        (
            lambda: (lambda g: (int(torch.argmax(torch.log(W) + g)), int(torch.argmax(W + g))))(
                -torch.log(-torch.log(torch.rand(3)))
            ),
            r"used by add|ordered twice",
        ),
        (
            lambda: int(
                torch.argmax(torch.log(W) - torch.log(-torch.log(torch.rand(3))), dim=0)
                if False
                else torch.argmax(torch.log(W).expand(2, 3) - torch.log(-torch.log(torch.rand(2, 3))))
            ),
            r"flattened",
        ),
    ],
)
def test_other_uses_of_a_gumbel_noise_are_refused_by_name(run, match):
    with pytest.raises(UnmodelledRandomness, match=match):
        trace(run, max_runs=50)


def squared_gumbel(w, q=None):  # not a race form (the noise is also squared), and the law of w^2 / sum(w^2)
    g = -torch.log(-torch.log(torch.rand(w.shape)))
    return int(torch.argmax(2 * torch.log(w) + g + 0 * g * g))


def test_a_gumbel_construction_outside_the_race_forms_is_refused_then_tested_statistically():
    with pytest.raises(ContinuousThreshold, match="Gumbel-max"):
        trace(squared_gumbel, (W,), max_runs=50)
    with pytest.raises(ContinuousThreshold, match="pass statistical=True"):
        assert_lossless(squared_gumbel, W, W, max_runs=50)
    before = len(_passed.PASSED)
    torch.manual_seed(0)  # the fallback samples with torch's own generator
    with pytest.raises(AssertionError, match=r"statistical test, the sampler could not be traced: .*Gumbel-max"):
        assert_lossless(squared_gumbel, W, W, max_runs=50, statistical=True, eps=0.1, alpha=1e-3, power=0.9)
    lucky = assert_lossless(lambda p, q: gumbel_max(p), W, W)  # the race form needs no fallback: an exact verdict
    assert lucky.verdict == "lossless" and len(_passed.PASSED) == before + 1


def test_the_statistical_fallback_states_that_it_ran():
    def shifted(w, q):  # a Gumbel sampler of w through a non-race form: the noise is cubed then cube-rooted
        g = -torch.log(-torch.log(torch.rand(w.shape)))
        return int(torch.argmax(torch.log(w) + torch.sign(g) * torch.abs(g * g * g) ** (1 / 3)))

    before = len(_passed.PASSED)
    torch.manual_seed(0)
    got = assert_lossless(shifted, W, W, max_runs=50, statistical=True, eps=0.1, alpha=1e-3, power=0.9)
    assert isinstance(got, ConformanceResult) and got.conforms
    assert _passed.PASSED[before].startswith("passed a statistical test only (not traced:")


def test_the_exponential_race_written_in_log_space_is_the_same_race():
    # vLLM's race argmax(w / E), written as argmax(log w - log E) (E from Tensor.exponential_): traced, not refused
    got = trace(lambda: int(torch.argmax(torch.log(W) - torch.log(torch.empty_like(W).exponential_()))))
    assert got.law == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)} and got.calls == ("Gumbel-max", "Tensor.exponential_")
    logits = torch.tensor([[1.0, 0.0, -1.0]])
    law = trace(lambda: int((logits / 0.5 - torch.empty_like(logits).exponential_().log()).argmax(-1)[0])).law
    assert law == dict(enumerate(softmax_law((logits / 0.5)[0])))
    with pytest.raises(UnmodelledRandomness, match="two races sharing one noise"):

        def twice():
            e = torch.empty_like(W).exponential_()
            return int(torch.argmax(torch.log(W) - torch.log(e))), int(torch.argmax(W / e))

        trace(twice, max_runs=10)
