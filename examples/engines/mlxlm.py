"""MLX-LM (0.32.x): ``mlx_lm.generate.speculative_generate_step`` with its own sampler, traced.

The ``mlx_lm`` package is unpacked from its wheel and imported from there (its dependencies, mlx and
transformers, from the environment). The models are stubbed: the target returns the logits ``log p``
at every position, the draft ``log q``, with no layers (so an empty, trimmable KV cache). The sampler
is MLX-LM's own ``make_sampler(temp=1.0)``: ``mx.random.categorical`` on the log-probabilities, for
the draft's token and for the target's; MLX-LM accepts a draft token when the target's own sample
equals it (the match rule). One speculative step (one draft token); the first token it yields.

Run: ``python examples/engines/mlxlm.py`` (needs mlx: ``pip install -e '.[engines]'``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wheel import WheelUnavailable, cpu_seconds, need, report, wheel_files  # noqa: E402

NAME, VERSION = "mlx-lm", "0.32.2"
P, Q = (0.6, 0.3, 0.1), (0.2, 0.5, 0.3)


def load() -> Any:
    """MLX-LM's ``generate`` and ``sample_utils`` modules, imported from the unpacked wheel."""
    need("mlx.core", "MLX-LM runs on MLX (its CPU wheel on Linux)")
    root = wheel_files(NAME, VERSION, ["mlx_lm/"])
    for name in [m for m in sys.modules if m == "mlx_lm" or m.startswith("mlx_lm.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        generate = importlib.import_module("mlx_lm.generate")  # (the package also exports a function generate)
        sample_utils = importlib.import_module("mlx_lm.sample_utils")
    finally:
        sys.path.remove(str(root))
    assert str(root) in generate.__file__, generate.__file__
    return generate, sample_utils


def make_step(generate: Any, sample_utils: Any) -> Any:
    """``step(p, q)``: the first token of ``speculative_generate_step`` with stub models of rows p, q."""
    import mlx.core as mx

    class Model:  # a stub model: the same row at every position, no layers (no KV cache)
        layers: list = []

        def __init__(self, row: Any):
            wide = getattr(row, "dtype", None) == "float64"  # the rows' own format (float64 when re-traced)
            self.logits = mx.log(mx.array(row, dtype=mx.float64 if wide else mx.float32))

        def __call__(self, tokens: Any, cache: Any = None) -> Any:
            n = tokens.shape[-1]
            return mx.broadcast_to(self.logits, (1, n, self.logits.shape[-1]))

    def step(target: Any, draft: Any) -> int:
        tokens = generate.speculative_generate_step(
            mx.array([0], mx.uint32),
            Model(target),
            Model(draft),
            num_draft_tokens=1,
            max_tokens=1,
            sampler=sample_utils.make_sampler(temp=1.0),
        )
        token, _, _ = next(tokens)
        tokens.close()
        return int(token)

    return step


def main() -> list[Any]:
    """Trace MLX-LM's speculative step on (p, q)."""
    from specproof.testing import compare

    try:
        generate, sample_utils = load()
    except WheelUnavailable as why:
        print(f"mlx-lm {VERSION}: skipped: {why}")
        return []
    import numpy as np

    target, draft = np.array(P, dtype=np.float32), np.array(Q, dtype=np.float32)
    result, seconds = cpu_seconds(lambda: compare(make_step(generate, sample_utils), target, draft))
    print(report(f"mlx-lm {VERSION}", "speculative_generate_step", result, seconds, f"p={P} q={Q}"))
    return [(result, seconds)]


if __name__ == "__main__":
    main()
