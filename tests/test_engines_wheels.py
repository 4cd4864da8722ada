"""The engines' own verifiers, loaded from their published wheels and traced (issue 33, item 5): one test per harness
of examples/engines/, asserting its verdict and exact TV on the rows it uses. Slow (downloads: vllm 0.33 and 0.34
about 575 MB together, once, into $SPECPROOF_ENGINE_CACHE or <tmp>/specproof-engines); each test skips with the
reason where its wheel cannot be downloaded or its runtime (triton, mlx: the engines extra) is missing.

The rows are float32 rows that the engine's softmax of ``log p`` maps to themselves, so their values (and the exact
TVs below) rest on PyTorch's and MLX's float32 log and exp on this machine kind."""

from __future__ import annotations

import os
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the engines' kernels run on CPU
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "engines"))

import _wheel  # noqa: E402

pytestmark = pytest.mark.slow


def loaded(harness, *names):
    """``harness.load()`` (and the modules it returns), or a skip naming why it cannot be had here."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("TRITON_INTERPRET is set to something other than 1")
    try:
        return harness.load()
    except _wheel.WheelUnavailable as why:
        pytest.skip(str(why))


def test_vllm_v1_rejection_sample_is_float_faithful_and_accepts_a_zero_p_draft_at_u_0():
    import vllm_v1

    step = vllm_v1.make_step(loaded(vllm_v1))
    from specproof.testing import compare

    good = compare(step, vllm_v1.rows(vllm_v1.P), vllm_v1.rows(vllm_v1.Q))
    assert good.verdict == "float-faithful", good.report()
    assert good.tv == F(55409104494210141336371, 20282409754767397875775898124288)
    assert "u <= fl32(p/q)" in good.arithmetic and "float64 coin" in good.arithmetic
    assert "Tensor.exponential_" in good.trace.calls  # the race decided inside vLLM's Triton kernel
    zero = compare(step, vllm_v1.rows(vllm_v1.P_ZERO), vllm_v1.rows(vllm_v1.Q_ZERO))
    assert zero.verdict == "lossy" and zero.tv == zero.outside_support == F(1, 2**54)  # q(2) 2^-53 of a float64 coin


def test_vllm_v2_rejection_sample_is_refused_naming_its_seeded_noise():
    import vllm_v2

    from specproof.trace.tracer import UncontrolledRandomness, trace

    step = vllm_v2.make_step(loaded(vllm_v2))
    p, q = torch.tensor(vllm_v2.P), torch.tensor(vllm_v2.Q)
    with pytest.raises(UncontrolledRandomness, match="depends on its seed argument seed.*hash-based noise"):
        trace(step, (p, q), {"seed": vllm_v2.SEED})


def test_mlx_lm_speculative_step_is_float_faithful():
    pytest.importorskip("mlx.core", reason="mlx is not installed (pip install -e '.[engines]')")
    import mlxlm as harness
    import numpy as np

    from specproof.testing import compare

    generate, sample_utils = loaded(harness)
    got = compare(
        harness.make_step(generate, sample_utils), np.array(harness.P, np.float32), np.array(harness.Q, np.float32)
    )
    assert got.verdict == "float-faithful", got.report()
    assert got.tv == F(116557865743890224, 8059505550058395604556229)
    assert got.floor.argument == "widening" and got.floor.tv_wide < F(1, 10**15)


def test_eagle_evaluate_posterior_is_float_faithful():
    import eagle_llm as eagle

    from specproof.testing import compare

    got = compare(eagle.make_step(loaded(eagle)), eagle.rows(eagle.P), eagle.rows(eagle.Q))
    assert got.verdict == "float-faithful", got.report()
    assert got.tv == F(4827472429732174683569652725385496107155, 255762784082874936403032542946379676615455014912)
    assert "random.random" in got.trace.calls


def test_sglang_chain_kernel_is_float_faithful():
    import sglang_kernel as sglang

    from specproof.testing import compare

    got = compare(sglang.make_step(loaded(sglang)), torch.tensor(sglang.P), torch.tensor(sglang.Q))
    assert got.verdict == "float-faithful", got.report()
    assert got.tv == F(12079596, 1801439944900609)


def test_transformers_speculative_sampling_is_float_faithful_and_accepts_a_zero_p_draft_at_u_0():
    import transformers_hf as hf

    from specproof.testing import compare

    step = hf.make_step(loaded(hf))
    good = compare(step, hf.rows(hf.P), hf.rows(hf.Q))
    assert good.verdict == "float-faithful" and good.tv == F(891337439112943, 18889466072216069210112)
    zero = compare(step, hf.rows(hf.P_ZERO), hf.rows(hf.Q_ZERO))
    assert zero.verdict == "lossy" and zero.tv == zero.outside_support == F(1, 2**25)  # q(2) 2^-24, float32 coin
