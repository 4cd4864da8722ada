"""Triton's ``tl.rand`` / ``tl.randint`` under ``TRITON_INTERPRET=1`` (issue 33, item 2): Philox's bits from slots,
memoized by (seed, offset), and Triton's own float conversion run by the interpreter. Skipped without triton."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before the kernels below are decorated

from fractions import Fraction as F  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
if os.environ.get("SPECPROOF_REQUIRE_ENGINES") == "1":  # CI, after installing the engines extra
    import triton
else:
    triton = pytest.importorskip("triton", reason="triton is not installed (pip install triton)")
if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover
    pytest.skip("TRITON_INTERPRET is set to something other than 1", allow_module_level=True)
import triton.language as tl  # noqa: E402

from specproof.trace.tracer import UnmodelledRandomness, trace  # noqa: E402


@triton.jit
def coin_kernel(out_ptr, seed, threshold, N: tl.constexpr):
    offs = tl.arange(0, N)
    u = tl.rand(seed, offs)
    tl.store(out_ptr + offs, (u < threshold).to(tl.int32))


def coins(n, threshold, seed=123):
    out = torch.empty(n, dtype=torch.int32)
    coin_kernel[(1,)](out, seed, threshold, N=n)
    return tuple(out.tolist())


def triton_below(t):
    """#{k in 0 .. 2^32 - 1: Triton's uint_to_uniform_float of k's bits < t} (each j from x = j and x = ~j)."""
    scale = np.float32(4.6566127342e-10)
    j = np.arange(int(t * 2**31) - 2**12, int(t * 2**31) + 2**12, dtype=np.int64)
    u = j.astype(np.float32) * scale
    return 2 * (int(j[0]) + int(np.count_nonzero(u < np.float32(t))))


def test_a_triton_coin_is_exact_for_triton_arithmetic():
    got = trace(lambda: coins(1, 0.25))
    below = F(triton_below(0.25), 2**32)
    assert got.law == {(1,): below, (0,): 1 - below}
    assert abs(below - F(1, 4)) < F(1, 2**24) and got.calls == ("tl.randint",)
    assert any("Philox as a random function of (seed, offset)" in a for a in got.assumptions)


def test_offsets_are_independent_and_the_same_offset_gives_the_same_bits():
    below = F(triton_below(0.5), 2**32)
    got = trace(lambda: coins(2, 0.5))
    assert got.law == {(1, 1): below**2, (1, 0): below * (1 - below), (0, 1): below * (1 - below),
                       (0, 0): (1 - below) ** 2}

    @triton.jit
    def twice(out_ptr, seed):
        u1 = tl.rand(seed, 7)
        u2 = tl.rand(seed, 7)
        tl.store(out_ptr, (u1 == u2).to(tl.int32) + 2 * (u1 < 0.5).to(tl.int32))

    def run():
        out = torch.empty(1, dtype=torch.int32)
        twice[(1,)](out, 5)
        return int(out[0])

    assert trace(run).law == {3: below, 1: 1 - below}  # always equal: one draw, read twice


def test_a_seed_argument_is_not_mistaken_for_hash_noise():
    got = trace(lambda seed: coins(1, 0.25, seed), (11,))
    assert got.law[(1,)] == F(triton_below(0.25), 2**32)


def test_randn_is_refused():
    @triton.jit
    def normal(out_ptr, seed):
        tl.store(out_ptr, tl.randn(seed, 0))

    def run():
        out = torch.empty(1)
        normal[(1,)](out, 1)
        return float(out[0]) > 0

    with pytest.raises(UnmodelledRandomness, match=r"tl\.randn"):
        trace(run, max_runs=5)
