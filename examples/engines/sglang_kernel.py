"""SGLang (0.5.23): ``sglang/kernels/ops/speculative/reject_sampling.py``'s Triton chain kernel, traced.

SGLang's file (only ``triton`` imports in it) is loaded from its wheel by path and its kernel runs under
``TRITON_INTERPRET=1``. The models are stubbed: the target's rows are p at every position, the draft's
q, and the drafted tokens are drawn by ``torch.multinomial`` from q. The coins are drawn as SGLang's
``eagle_utils._verify_coins`` draws them without a sampling seed (``torch.rand_like(candidates,
dtype=float32)`` and ``torch.rand((bs,), dtype=float32)``; written here, not loaded: that module needs
the whole server). ``chain_speculative_sampling_triton`` accepts on ``coin * q < p`` and draws the
residual by an inverse CDF on the final coin; ``block_verification=True`` is block verification
(Sun et al. 2024, Algorithm 2).

Run: ``python examples/engines/sglang_kernel.py [--gamma G] [--block]`` (gamma 1 chain by default).
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernel runs on CPU

import argparse
import sys
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wheel import (  # noqa: E402
    WheelUnavailable,
    cpu_seconds,
    interpreter_without_overflow_checks,
    load_file,
    need,
    report,
    wheel_files,
)

NAME, VERSION = "sglang", "0.5.23"
FILE = "sglang/kernels/ops/speculative/reject_sampling.py"
P, Q = (0.6, 0.3, 0.1), (0.2, 0.5, 0.3)


def load() -> types.ModuleType:
    """SGLang's ``reject_sampling`` module, from the wheel."""
    need("triton", "SGLang's kernel runs under Triton's interpreter")
    root = wheel_files(NAME, VERSION, [FILE])
    interpreter_without_overflow_checks()  # checks whose results the interpreter discards outside debug mode
    return load_file("sglang_reject_sampling", root / FILE)


def make_step(module: types.ModuleType, gamma: int = 1, block: bool = False) -> Any:
    """``step(p, q)``: one call of ``chain_speculative_sampling_triton`` with ``gamma`` drafts (one
    request). gamma 1: the first emitted token; gamma > 1: the emitted block (accepted drafts, then the
    kernel's final token), p and q given as stacks ``[gamma + 1, V]`` and ``[gamma, V]``."""
    import torch

    def step(target: Any, draft: Any) -> Any:
        target = target.reshape(-1, target.shape[-1])
        draft = draft.reshape(-1, draft.shape[-1])
        vocab, slots = target.shape[-1], gamma + 1
        drafts = [int(torch.multinomial(draft[i], 1)) for i in range(gamma)]  # the draft model, stubbed
        candidates = torch.tensor([[vocab] + drafts], dtype=torch.int64)  # the root token, then the drafts
        retrive_index = torch.arange(slots, dtype=torch.int64)[None]
        coins = torch.rand_like(candidates, dtype=torch.float32)  # as SGLang's _verify_coins
        coins_final = torch.rand((1,), dtype=torch.float32)
        target_probs = (
            target.to(torch.float32).expand(slots, vocab)[None].contiguous()
            if target.shape[0] == 1
            else target.to(torch.float32)[None].contiguous()
        )
        draft_probs = (
            torch.cat([draft.to(torch.float32).expand(gamma, vocab), torch.zeros(1, vocab)])[None]
            if draft.shape[0] == 1
            else torch.cat([draft.to(torch.float32), torch.zeros(1, vocab)])[None]
        )
        predicts = torch.full((slots,), -1, dtype=torch.int32)
        accept_index = torch.full((1, slots), -1, dtype=torch.int32)
        accept_num = torch.zeros(1, dtype=torch.int32)
        module.chain_speculative_sampling_triton(
            predicts,
            accept_index,
            accept_num,
            candidates,
            retrive_index,
            None,
            None,
            coins,
            coins_final,
            target_probs,
            draft_probs.contiguous(),
            1.0,
            1.0,
            True,
            block_verification=block,
        )
        emitted = tuple(int(predicts[int(i)]) for i in accept_index[0, : int(accept_num[0]) + 1])
        return emitted[0] if gamma == 1 else emitted

    return step


def main(argv: list[str] | None = None) -> list[Any]:
    """Trace SGLang's chain kernel on (p, q) at gamma 1, or at ``--gamma G`` (``--block``: block verification)."""
    import torch

    from specproof.testing import compare

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gamma", type=int, default=1)
    parser.add_argument("--block", action="store_true", help="block verification (block_verification=True)")
    args = parser.parse_args(argv)
    try:
        module = load()
    except WheelUnavailable as why:
        print(f"sglang {VERSION}: skipped: {why}")
        return []
    p, q = torch.tensor(P, dtype=torch.float32), torch.tensor(Q, dtype=torch.float32)
    if args.gamma > 1:
        p, q = p.expand(args.gamma + 1, -1), q.expand(args.gamma, -1)
    step = make_step(module, args.gamma, args.block)
    result, seconds = cpu_seconds(lambda: compare(step, p, q, gamma=args.gamma if args.gamma > 1 else None))
    what = f"chain_speculative_sampling_triton ({'block verification, ' if args.block else ''}gamma {args.gamma})"
    print(report(f"sglang {VERSION}", what, result, seconds, f"p={P} q={Q}"))
    return [(result, seconds)]


if __name__ == "__main__":
    main()
