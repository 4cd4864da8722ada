"""vLLM V1 (0.33.x): ``vllm/v1/sample/rejection_sampler.py``'s own ``rejection_sample``, traced.

vLLM's file is loaded from its wheel by path; the rest of the ``vllm`` package is stubbed by an import
hook (logging, configs, the warmup/JIT dispatcher: replaced by a plain Triton launch that binds the
dispatcher's arguments to the kernel's by name, as vLLM's does). Its Triton kernels run under
``TRITON_INTERPRET=1`` on CPU tensors. The draft model is stubbed: the drafted token is drawn by
``torch.multinomial`` from q; the target model is stubbed: its logits are ``log p`` for rows p that
float32 softmax maps to themselves. vLLM draws the coin with ``torch.rand(dtype=float64)`` and the
recovered token by an exponential race (``q.exponential_()``, ``inv_q = q.reciprocal()``, then
``argmax(max(p - q, 0) * inv_q)`` inside ``sample_recovered_tokens_kernel``).

Run: ``python examples/engines/vllm_v1.py`` (downloads vllm==0.33.0, about 336 MB, once).
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: the kernels run on CPU

import inspect
import logging
import sys
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wheel import StubPackage, WheelUnavailable, cpu_seconds, load_file, need, refusal, report, wheel_files  # noqa: E402

NAME, VERSION = "vllm", "0.33.0"
FILE = "vllm/v1/sample/rejection_sampler.py"
P, Q = (0.6, 0.3, 0.1), (0.2, 0.5, 0.3)
P_ZERO, Q_ZERO = (0.5, 0.5, 0.0), (0.25, 0.25, 0.5)  # a drafted token the target gives 0


def _dispatcher(*, kernel: Any, warmup_inputs: Any) -> Any:
    """Stands in for vLLM's ``triton_kernel_dispatcher_with_warmup`` (warmup and JIT caching are
    infrastructure): the decorated function returns ``(grid, launch kwargs)``; its arguments go to the
    kernel's parameters of the same name, or the name plus ``_ptr``."""

    def decorate(dispatch: Any) -> Any:
        names = tuple(inspect.signature(dispatch).parameters)
        kernel_args = kernel.arg_names

        def launch(*args: Any, **kwargs: Any) -> Any:
            grid, launch_kwargs = dispatch(*args, **kwargs)[:2]
            bound = inspect.signature(dispatch).bind(*args, **kwargs)
            bound.apply_defaults()
            values = dict(launch_kwargs)
            for name in names:
                for target in (name, name + "_ptr"):
                    if target in kernel_args and target not in values:
                        values[target] = bound.arguments[name]
            return kernel[grid](**values)

        return launch

    return decorate


def load() -> types.ModuleType:
    """vLLM's rejection sampler module, from the wheel, with the rest of ``vllm`` stubbed."""
    need("triton", "vLLM's kernels run under Triton's interpreter")
    import triton
    import triton.language as tl

    root = wheel_files(NAME, VERSION, [FILE])
    stubs = StubPackage(
        "vllm",
        real={"vllm.v1.sample.rejection_sampler": root / FILE},
        attributes={
            "vllm.logger": {"init_logger": logging.getLogger},
            "vllm.triton_utils": {"triton": triton, "tl": tl},
            "vllm.model_executor.warmup.jit_warmup_triton_helper": {
                "triton_kernel_dispatcher_with_warmup": _dispatcher
            },
        },
    )
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[name]
    with stubs:
        return load_file("vllm.v1.sample.rejection_sampler", root / FILE)


def rows(p: tuple[float, ...]) -> Any:
    """Float32 rows that vLLM's ``softmax(log p, dtype=float32)`` maps to themselves (so the law is
    judged against the rows vLLM really uses)."""
    import torch

    row = torch.tensor(p, dtype=torch.float32)
    for _ in range(20):
        again = torch.softmax(torch.log(row), dim=-1, dtype=torch.float32)
        if torch.equal(again, row):
            return row
        row = again
    raise AssertionError(f"softmax(log p) has no fixed point near {p}")


def make_step(module: types.ModuleType) -> Any:
    """One speculative position through vLLM's ``rejection_sample``: gamma 1, one request, random
    sampling at temperature 1; returns the first emitted token (the draft or the recovered token)."""
    import torch

    def step(target: Any, draft: Any) -> int:
        vocab = target.shape[-1]
        drafted = torch.multinomial(draft, 1).to(torch.int32)  # the draft model, stubbed
        metadata = types.SimpleNamespace(
            all_greedy=False, all_random=True, generators={}, temperature=torch.tensor([1.0], dtype=torch.float32)
        )
        out = module.rejection_sample(
            drafted.reshape(1).contiguous(),
            [1],
            1,
            torch.tensor([1], dtype=torch.int32),
            draft.reshape(1, vocab).to(torch.float32).contiguous(),
            torch.log(target).reshape(1, vocab).to(torch.float32),
            torch.tensor([[vocab]], dtype=torch.int64),  # the bonus token: never read at position 0
            metadata,
        )
        return int(out[0, 0])

    return step


def main() -> list[Any]:
    """Trace vLLM's rejection sampler on (p, q) and on a row where a drafted token has p = 0."""
    from specproof.testing import compare
    from specproof.trace.tracer import UnmodelledRandomness

    try:
        module = load()
    except WheelUnavailable as why:
        print(f"vllm {VERSION}: skipped: {why}")
        return []
    step = make_step(module)
    results = []
    for p, q in ((P, Q), (P_ZERO, Q_ZERO)):
        target, draft = rows(p), rows(q)
        try:
            result, seconds = cpu_seconds(lambda target=target, draft=draft: compare(step, target, draft))
        except UnmodelledRandomness as why:  # refused: no verdict
            print(refusal(f"vllm {VERSION}", "rejection_sample", why))
            results.append((why, None))
            break
        results.append((result, seconds))
        print(report(f"vllm {VERSION}", "rejection_sample", result, seconds, f"p={p} q={q}"))
    return results


if __name__ == "__main__":
    main()
