"""vLLM 0.34.x (model runner V2): ``vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py``'s
``rejection_sample``, traced or refused, never given a verdict from noise specproof does not control.

vLLM's files (the rejection sampler and the Triton helpers it calls: ``sample/gumbel.py``,
``sample/watermark.py``, ``spec_decode/draft_logits.py``, ``spec_decode/fly.py``,
``watermarking/prfs/``) are loaded from the wheel by path, the rest of ``vllm`` stubbed by an import
hook; the kernels run under ``TRITON_INTERPRET=1``, with ``tldevice.log1p`` (libdevice, which the interpreter does
not run) as NumPy's ``log1p``. The models are stubbed: the target's logits are
``log p`` at the draft's position and at the bonus position, the draft's cached logits ``log q``, and
the drafted token is drawn by ``torch.multinomial`` from q. V2 draws its coin with ``tl.rand(seed,
pos)`` (a source specproof controls) and resamples by a Gumbel-max whose noise is a murmur3 hash of
(seed, position, token): deterministic given the request's seed, which vLLM draws once per request
(``np.random.randint`` when the user gives none). The request's seed is an argument of the traced
step here, as a user-given ``SamplingParams.seed``; specproof replays runs with it changed.

Run: ``python examples/engines/vllm_v2.py`` (downloads vllm==0.34.0, about 239 MB, once).
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernels run on CPU

import logging
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wheel import StubPackage, WheelUnavailable, cpu_seconds, load_file, need, refusal, wheel_files  # noqa: E402

NAME, VERSION = "vllm", "0.34.0"
FILES = {
    "vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils": "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py",
    "vllm.v1.worker.gpu.sample.gumbel": "vllm/v1/worker/gpu/sample/gumbel.py",
    "vllm.v1.worker.gpu.sample.watermark": "vllm/v1/worker/gpu/sample/watermark.py",
    "vllm.v1.worker.gpu.spec_decode.draft_logits": "vllm/v1/worker/gpu/spec_decode/draft_logits.py",
    "vllm.v1.worker.gpu.spec_decode.fly": "vllm/v1/worker/gpu/spec_decode/fly.py",
    "vllm.v1.watermarking.prfs.philox": "vllm/v1/watermarking/prfs/philox.py",
    "vllm.v1.watermarking.prfs.base": "vllm/v1/watermarking/prfs/base.py",
}
# Rows whose residual max(p - q, 0) has two tokens, so that the hashed noise chooses the resampled token (on
# p = (0.6, 0.3, 0.1), q = (0.2, 0.5, 0.3) the residual is one token: the noise chooses nothing there)
P, Q = (0.4, 0.4, 0.2), (0.2, 0.2, 0.6)
SEED = 1234  # the request's seed (SamplingParams.seed)


def _libdevice() -> types.SimpleNamespace:
    """``tldevice`` for the interpreter: Triton's interpreter runs ``triton.language.extra.libdevice``'s functions
    as their empty stubs (they return None), so ``log1p`` (the one vLLM 0.34 uses) is NumPy's ``log1p`` on the
    block, in the block's dtype (a libm's log1p, as CUDA's libdevice is one)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def log1p(x: Any) -> Any:
        data = np.asarray(x.handle.data)
        return tl.tensor(TensorHandle(np.log1p(data).astype(data.dtype), x.handle.dtype.scalar), x.type)

    return types.SimpleNamespace(log1p=log1p)


def load() -> types.ModuleType:
    """vLLM V2's rejection sampler module, from the wheel, with the rest of ``vllm`` stubbed."""
    need("triton", "vLLM's kernels run under Triton's interpreter")
    import triton
    import triton.language as tl

    root = wheel_files(NAME, VERSION, FILES.values())
    stubs = StubPackage(
        "vllm",
        real={name: root / path for name, path in FILES.items()},
        attributes={
            "vllm.logger": {"init_logger": logging.getLogger},
            "vllm.triton_utils": {"triton": triton, "tl": tl, "tldevice": _libdevice(), "HAS_TRITON": True},
        },
    )
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[name]
    with stubs:
        name = "vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils"
        return load_file(name, root / FILES[name])


def make_step(module: types.ModuleType) -> Any:
    """``step(p, q, seed)``: one speculative position through V2's ``rejection_sample`` (gamma 1, one
    request at temperature 1); the first emitted token."""
    import torch

    def step(target: Any, draft: Any, seed: int = SEED) -> int:
        vocab = target.shape[-1]
        drafted = torch.multinomial(draft, 1)  # the draft model, stubbed
        target_logits = torch.log(target).to(torch.float32).expand(2, vocab).contiguous()
        cache = types.SimpleNamespace(
            values=torch.log(draft).to(torch.float32).reshape(1, 1, vocab).contiguous(), row_mapping=None
        )
        sampled, _ = module.rejection_sample(
            target_logits,
            cache,
            torch.cat([torch.tensor([0]), drafted]).to(torch.int64),  # [last sampled token, draft]
            torch.tensor([0, 2], dtype=torch.int32),  # cu_num_logits
            torch.tensor([7, 8], dtype=torch.int64),  # positions
            torch.tensor([0], dtype=torch.int32),
            torch.tensor([0, 0], dtype=torch.int32),
            torch.tensor([0, 1], dtype=torch.int32),
            torch.tensor([1.0], dtype=torch.float32),
            torch.tensor([seed], dtype=torch.int64),
            1,
        )
        return int(sampled[0, 0])

    return step


def main() -> list[Any]:
    """Trace V2's rejection sampler on (p, q) with the request's seed as an argument."""
    import torch

    from specproof.trace.tracer import SamplerRaised, UnmodelledRandomness, trace

    try:
        module = load()
    except WheelUnavailable as why:
        print(f"vllm {VERSION}: skipped: {why}")
        return []
    step = make_step(module)
    target, draft = torch.tensor(P, dtype=torch.float32), torch.tensor(Q, dtype=torch.float32)
    start = time.process_time()
    try:
        got, seconds = cpu_seconds(lambda: trace(step, (target, draft), {"seed": SEED}))
    except (UnmodelledRandomness, SamplerRaised) as why:
        seconds = time.process_time() - start
        print(refusal(f"vllm {VERSION}", "rejection_sample", why) + f" ({seconds:.1f} s CPU)")
        return [(why, seconds)]
    print(
        f"vllm {VERSION} rejection_sample: traced, law {got.law}, {got.runs} runs, {seconds:.1f} s CPU "
        "(no refusal: check the seed replays)"
    )
    return [(got, seconds)]


if __name__ == "__main__":
    main()
