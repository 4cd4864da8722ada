"""Uniforms handed to a Triton kernel under ``TRITON_INTERPRET=1`` that the kernel never loads (SGLang's last coin):
given the law at their default instead of being bisected, and only where no run of that law read them. Skipped
without triton."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before the kernels below are decorated

from fractions import Fraction as F  # noqa: E402

import pytest  # noqa: E402

torch = pytest.importorskip("torch")
if os.environ.get("SPECPROOF_REQUIRE_ENGINES") == "1":  # CI, after installing the engines extra
    import triton
else:
    triton = pytest.importorskip("triton", reason="triton is not installed (pip install triton)")
if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover
    pytest.skip("TRITON_INTERPRET is set to something other than 1", allow_module_level=True)
import triton.language as tl  # noqa: E402

from specproof.trace.tracer import trace  # noqa: E402

UNREAD = "were read by no run of their law"


@triton.jit
def verify_kernel(out_ptr, coins_ptr, threshold, MASKED: tl.constexpr):
    c0 = tl.load(coins_ptr)
    accept = (c0 < threshold).to(tl.int32)
    if MASKED:  # the second coin is loaded only after a rejection
        if c0 >= threshold:
            c1 = tl.load(coins_ptr + 1)
            accept = (c1 < 0.5).to(tl.int32) * 2
    tl.store(out_ptr, accept)


def sampler(masked: bool, torch_use: bool = False):
    def step():
        coins = torch.rand(2)  # coin 1 is never loaded unless MASKED
        out = torch.zeros(1, dtype=torch.int32)
        verify_kernel[(1,)](out, coins, 0.25, MASKED=masked)
        extra = int(coins[1] < 2.0) if torch_use else 1  # always 1: a torch use of coin 1, not a kernel load
        return int(out[0]) * extra

    return step


def test_a_coin_the_kernel_never_loads_gets_the_law_at_its_default():
    read, bisected = trace(sampler(False)), trace(sampler(False), read_thresholds=False)
    assert read.law == bisected.law == {0: F(3, 4), 1: F(1, 4)}  # coin 0 < 0.25 on the float32 grid
    assert read.runs < bisected.runs
    assert any(UNREAD in a for a in read.assumptions)  # coin 1, at each of coin 0's grid points traced
    assert not any(UNREAD in a for a in bisected.assumptions)


def test_a_coin_loaded_only_after_a_rejection_is_not_taken_as_unread():
    """At the default (coin 0 = 0, accepted) coin 1 is never loaded, but the law at coin 0 >= 0.25 loads it: there
    it is read (bisected), while at coin 0 < 0.25 it is rightly unread."""
    read, bisected = trace(sampler(True)), trace(sampler(True), read_thresholds=False)
    assert read.law == bisected.law == {0: F(3, 8), 1: F(1, 4), 2: F(3, 8)}


def test_a_coin_used_by_torch_is_not_taken_as_unread():
    read, bisected = trace(sampler(False, torch_use=True)), trace(sampler(False, torch_use=True), read_thresholds=False)
    assert read.law == bisected.law
    assert not any(UNREAD in a for a in read.assumptions)


@pytest.mark.parametrize("read", ["numpy", "tolist", "item"])
def test_a_coin_read_outside_torch_and_the_interpreter_is_not_taken_as_unread(read):
    """Coin 1 never reaches a kernel load or a torch computation: the host reads its value through NumPy's view of
    its memory, a Python list or a Python float, and decides with it. It is a read coin, bisected, not given the law
    at its default (which would give P(1) = 1/4, the law with coin 1 at 0)."""

    def step():
        coins = torch.rand(2)
        out = torch.zeros(1, dtype=torch.int32)
        verify_kernel[(1,)](out, coins, 0.25, MASKED=False)
        if read == "numpy":
            second = float(coins.numpy()[1])
        elif read == "tolist":
            second = coins.tolist()[1]
        else:
            second = coins[1].item()
        return int(out[0]) * int(second < 0.5)

    got = trace(step)
    assert got.law == {0: F(7, 8), 1: F(1, 8)}  # coin 0 < 0.25 and coin 1 < 0.5, on the float32 grid
    assert not any(UNREAD in a for a in got.assumptions)
