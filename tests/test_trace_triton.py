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
    assert got.law == {
        (1, 1): below**2,
        (1, 0): below * (1 - below),
        (0, 1): below * (1 - below),
        (0, 0): (1 - below) ** 2,
    }

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


@triton.jit
def position_coin_kernel(out_ptr, seed_ptr, pos_ptr, threshold):
    """vLLM 0.34's coin in small: tl.rand(seed, pos) with the position loaded from an int64 tensor."""
    seed = tl.load(seed_ptr)
    pos = tl.load(pos_ptr + tl.program_id(0))
    u = tl.rand(seed, pos)
    tl.store(out_ptr + tl.program_id(0), (u < threshold).to(tl.int32))


def test_int64_offsets_are_philox_counters_too_not_refused():
    # Triton splits a 64-bit offset into two 32-bit counter words and still returns 32 bits: once refused by name
    below = F(triton_below(0.25), 2**32)

    def run(positions):
        out = torch.empty(len(positions), dtype=torch.int32)
        position_coin_kernel[(len(positions),)](
            out, torch.tensor([5], dtype=torch.int64), torch.tensor(positions, dtype=torch.int64), 0.25
        )
        return tuple(out.tolist())

    assert trace(run, ([7],)).law == {(1,): below, (0,): 1 - below}
    far = [7, 7 + 2**32]  # the same low word, another high word: another counter, an independent draw
    assert trace(run, (far,)).law[(1, 1)] == below**2
    assert trace(run, ([9, 9],)).law == {(1, 1): below, (0, 0): 1 - below}  # the same offset: the same bits
