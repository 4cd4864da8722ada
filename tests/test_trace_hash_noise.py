"""Hash-based noise is refused, never given a verdict (issue 33, item 2): vLLM 0.34 draws a Gumbel from a seeded
murmur3 hash of (seed, position, token). The stand-ins below are written here: murmur3's 32-bit finalizer on torch
integer tensors (seen where the xor-mixed integers reach a log or an argmax), and the same hash in Python integers
(invisible to torch: caught because the output moves with the seed argument while the supplied draws do not)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

torch = pytest.importorskip("torch")

from specproof.trace.testing import assert_lossless, compare  # noqa: E402
from specproof.trace.tracer import UncontrolledRandomness, trace  # noqa: E402

P = torch.tensor([0.5, 0.25, 0.25])
MASK = 0xFFFFFFFF


def fmix32(h):
    """murmur3's finalizer on an int64 tensor (or a Python int) holding 32-bit values."""
    h = h ^ (h >> 16)
    h = (h * 0x85EBCA6B) & MASK
    h = h ^ (h >> 13)
    h = (h * 0xC2B2AE35) & MASK
    return h ^ (h >> 16)


def hash_gumbel(p, seed, position):
    """A Gumbel per token from a hash of (seed, position, token), as vLLM 0.34's resampling draws it (in torch)."""
    token = torch.arange(p.shape[-1], dtype=torch.int64)
    h = fmix32((seed * 0x9E3779B1 + position * 0x85EBCA77 + token) & MASK)
    u = (h.to(torch.float64) + 0.5) / 2.0**32
    return int(torch.argmax(torch.log(p) - torch.log(-torch.log(u))))


def test_xor_mixed_integers_feeding_a_log_are_refused_naming_the_construction():
    with pytest.raises(UncontrolledRandomness, match=r"integer bit-mixing .*feeds log.*hash-based noise.*murmur3") as e:
        trace(hash_gumbel, (P, 3, 0))
    assert e.value.source == "hash-based noise (integer bit-mixing)"
    assert e.value.where is not None and e.value.where.endswith(".py:" + e.value.where.rsplit(":", 1)[1])
    with pytest.raises(UncontrolledRandomness, match="hash-based noise"):  # nor does assert_lossless give a verdict
        assert_lossless(lambda p, q: hash_gumbel(p, 3, 0), P, P)


def test_a_hashed_coin_compared_with_a_float_is_refused():
    def coin(p, seed):
        h = fmix32(torch.tensor([seed], dtype=torch.int64) & MASK)
        return int(h.to(torch.float32) / 2.0**32 < 0.5)

    with pytest.raises(UncontrolledRandomness, match="feeds (lt|__lt__)"):
        trace(coin, (P, 11))


def python_hash_sampler(p, seed):
    """The same hash in Python integers, an inverse-CDF pick: torch never sees the mixing."""
    u = (fmix32((seed * 0x9E3779B1) & MASK) + 0.5) / 2.0**32
    return int(torch.searchsorted(torch.cumsum(p, 0), torch.tensor([u], dtype=torch.float32)).clamp(max=2))


def test_an_output_that_moves_with_the_seed_argument_is_refused():
    with pytest.raises(UncontrolledRandomness, match=r"depends on its seed argument seed.*hash-based noise") as e:
        trace(python_hash_sampler, (P, 5))
    assert e.value.source == "the seed argument seed"
    with pytest.raises(UncontrolledRandomness, match=r"seed argument meta\['seed'\]"):
        trace(lambda p, meta: python_hash_sampler(p, meta["seed"]), (P, {"seed": 5}))


def test_a_seed_the_output_does_not_depend_on_and_a_greedy_sampler_keep_their_verdicts():
    def coin_with_generator(p, seed):  # a torch.Generator per request, as vLLM V1 passes: its draws are supplied
        g = torch.Generator().manual_seed(seed)
        x = int(torch.multinomial(p, 1, generator=g))
        return x

    got = trace(coin_with_generator, (P, 5))
    assert got.law == {0: F(1, 2), 1: F(1, 4), 2: F(1, 4)}
    assert "the seed argument(s) seed changed in 12 replay(s)" in got.control  # 3 runs x 4 shifts

    def greedy(p, q, draft_token: int):  # deterministic, and it depends on an integer argument that is no seed
        return draft_token if int(torch.argmax(p)) == draft_token else int(torch.argmax(p))

    assert trace(greedy, (P, P, 1)).law == {0: F(1)}
    mask = torch.tensor([0b101], dtype=torch.int32)  # a vocabulary bitmask unpacked with shifts and ands: no hash

    def masked(p):
        allowed = ((mask >> torch.arange(3, dtype=torch.int32)) & 1).bool()
        return int(torch.multinomial(torch.where(allowed, p, torch.zeros_like(p)), 1))

    assert trace(masked, (P,)).law == {0: F(2, 3), 2: F(1, 3)}
    assert compare(lambda p, q: masked(p), P, P).tv == F(1, 4)  # a verdict: lossy, exact


def hash_after_rejection(p, q, seed):
    """vLLM 0.34's form in small: a controlled draft and coin; only a rejected draft reads the seeded hash (an
    inverse-CDF pick from the residual in Python integers), so the first runs of two outputs both accept."""
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    residual = torch.clamp(p - q, min=0)
    u = (fmix32((seed * 0x9E3779B1) & MASK) + 0.5) / 2.0**32
    return int(torch.searchsorted(torch.cumsum(residual / residual.sum(), 0), torch.tensor([u])).clamp(max=2))


def test_a_hash_read_only_after_a_rejection_is_refused_not_given_a_verdict():
    # once, only the first run and the first of another output were replayed with the seed changed: both accepted,
    # and the rejections' hashed pick was traced as a point mass (vLLM 0.34: law (0.6, 0.2, 0.2) for p = (0.4, 0.4, 0.2))
    p, q = torch.tensor([0.4, 0.4, 0.2]), torch.tensor([0.2, 0.2, 0.6])
    with pytest.raises(UncontrolledRandomness, match=r"depends on its seed argument seed"):
        trace(hash_after_rejection, (p, q, 5))
