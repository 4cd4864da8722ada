"""The exponential race inside a Triton kernel under ``TRITON_INTERPRET=1`` (issue 33, item 2): vLLM V1's
``inv_q = q.exponential_().reciprocal()`` in torch, then ``argmax(max(p - q, 0) * inv_q)`` in a kernel. The kernel
below is a stand-in of that form written here (vLLM's own is traced by examples/engines/vllm_v1.py). Skipped
without triton."""

from __future__ import annotations

import os
from fractions import Fraction as F

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before the kernels below are decorated
torch = pytest.importorskip("torch")
try:
    import triton
except ImportError:  # pragma: no cover - depends on the machine
    if os.environ.get("SPECPROOF_REQUIRE_ENGINES") == "1":
        raise
    triton = pytest.importorskip("triton", reason="triton is not installed (pip install triton)")
if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover
    pytest.skip("TRITON_INTERPRET is set to something other than 1", allow_module_level=True)
import triton.language as tl  # noqa: E402

from specproof.trace.testing import compare  # noqa: E402
from specproof.trace.tracer import UnmodelledRandomness, trace  # noqa: E402


@triton.jit
def recovered_kernel(out_ptr, target_ptr, draft_ptr, inv_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < V
    p = tl.load(target_ptr + row * V + offs, mask=mask, other=0.0)
    q = tl.load(draft_ptr + row * V + offs, mask=mask, other=0.0)
    inv = tl.load(inv_ptr + row * V + offs, mask=mask, other=0.0)
    score = tl.where(mask, tl.maximum(p - q, 0.0) * inv, float("-inf"))
    _, best = tl.max(score, axis=0, return_indices=True)
    tl.store(out_ptr + row, best)


def recovered(p, q, block=4):
    """The recovered token of each row, as vLLM V1 draws it: E in torch, its reciprocal read by the kernel."""
    p, q = p.reshape(-1, p.shape[-1]), q.reshape(-1, q.shape[-1])
    inv_q = torch.empty_like(p).exponential_().reciprocal()
    out = torch.empty(p.shape[0], dtype=torch.int64)
    recovered_kernel[(p.shape[0],)](out, p.contiguous(), q.contiguous(), inv_q, p.shape[-1], BLOCK=block)
    return tuple(out.tolist())


def step(p, q):
    """One position: draft from q, the float64 coin of vLLM V1 (p/q >= u), else the kernel's recovered token."""
    x = int(torch.multinomial(q, 1))
    if p[x] / q[x] >= torch.rand((), dtype=torch.float64):
        return x
    return recovered(p, q)[0]


def t32(values):
    return torch.tensor(values, dtype=torch.float32)


def test_the_race_in_a_kernel_is_the_normalized_residual():
    # once refused: "the exponential draw E ... is used by untyped_storage (on E.reciprocal())"
    p, q = t32([0.5, 0.25, 0.25]), t32([0.25, 0.0, 0.5])
    got = trace(recovered, (p, q))
    assert got.law == {(0,): F(1, 2), (1,): F(1, 2)}  # the residual (1/4, 1/4, 0)
    assert got.calls == ("Tensor.exponential_",)
    rows = trace(recovered, (torch.stack([p, q]), torch.stack([q, p])))  # a race per row (a program per row)
    assert rows.law == {(0, 2): F(1, 2), (1, 2): F(1, 2)}


def test_a_vllm_v1_form_step_with_the_race_in_a_kernel_gets_the_right_verdicts():
    result = compare(step, t32([0.5, 0.25, 0.25]), t32([0.25, 0.25, 0.5]))
    assert result.verdict == "float-faithful" and result.tv == F(1, 2**54), result.report()
    result = compare(step, t32([0.5, 0.5, 0.0]), t32([0.25, 0.25, 0.5]))  # p/q = 0 >= u at u = 0
    assert result.verdict == "lossy" and result.outside_support == F(1, 2**54)


def test_other_uses_of_the_tagged_reciprocal_in_a_kernel_are_refused():
    @triton.jit
    def added(out_ptr, inv_ptr, V, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        inv = tl.load(inv_ptr + offs, mask=offs < V, other=0.0)
        _, best = tl.max(inv + 1.0, axis=0, return_indices=True)
        tl.store(out_ptr, best)

    @triton.jit
    def argmax_only(out_ptr, inv_ptr, V, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        inv = tl.load(inv_ptr + offs, mask=offs < V, other=0.0)
        _, best = tl.max(inv, axis=0, return_indices=True)
        tl.store(out_ptr, best)

    def run(kernel):
        inv = torch.empty(3).exponential_().reciprocal()
        out = torch.empty(1, dtype=torch.int64)
        kernel[(1,)](out, inv, 3, BLOCK=4)
        return int(out[0])

    with pytest.raises(UnmodelledRandomness, match="E.reciprocal.. is used by the Triton interpreter's create_fadd"):
        trace(run, (added,))
    with pytest.raises(UnmodelledRandomness, match="read E.reciprocal.. and did not multiply it"):
        trace(run, (argmax_only,))
    with pytest.raises(UnmodelledRandomness, match="in parts"):  # a row wider than the kernel's tile
        trace(recovered, (t32([0.5, 0.25, 0.25]), t32([0.25, 0.25, 0.5]), 2))
