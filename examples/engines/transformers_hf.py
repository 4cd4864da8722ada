"""transformers (5.24.x): ``transformers.generation.utils._speculative_sampling``, traced.

transformers is a dependency of specproof's ``models`` extra (pinned to 5.24.0), so its installed copy
is used (no download). The models are stubbed: the draft's and the target's logits are ``log q`` and
``log p`` for rows that float32 softmax maps to themselves; the drafted token is drawn by
``torch.multinomial`` from q (as assisted generation samples its candidates). transformers accepts
while ``rand_like <= p / q`` (float32 coin) and draws the next token from ``clamp(p - q, min=0)``
normalized. One speculative position (gamma 1); the first emitted token.

Run: ``python examples/engines/transformers_hf.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wheel import WheelUnavailable, cpu_seconds, need, report  # noqa: E402

NAME, VERSION = "transformers", "5.24.0"
P, Q = (0.6, 0.3, 0.1), (0.2, 0.5, 0.3)
P_ZERO, Q_ZERO = (0.5, 0.5, 0.0), (0.25, 0.25, 0.5)  # a drafted token the target gives 0


def load() -> Any:
    """transformers' ``generation.utils`` module (the installed transformers; its version is checked)."""
    transformers = need("transformers", "specproof's models extra installs it")
    if transformers.__version__ != VERSION:
        raise WheelUnavailable(f"transformers {transformers.__version__} is installed, not {VERSION}")
    from transformers.generation import utils

    return utils


def rows(p: tuple[float, ...]) -> Any:
    """Float32 rows that ``softmax(log p)`` maps to themselves."""
    import torch

    row = torch.tensor(p, dtype=torch.float32)
    for _ in range(20):
        again = torch.softmax(torch.log(row), dim=-1)
        if torch.equal(again, row):
            return row
        row = again
    raise AssertionError(f"softmax(log p) has no fixed point near {p}")


def make_step(utils: Any) -> Any:
    """``step(p, q)``: the first token of ``_speculative_sampling`` at gamma 1."""
    import torch

    def step(target: Any, draft: Any) -> int:
        drafted = torch.multinomial(draft, 1)  # the assistant model, stubbed
        candidate_logits = torch.log(draft)[None, None]
        new_logits = torch.log(target)[None].expand(2, -1)[None]
        valid, _ = utils._speculative_sampling(drafted[None], candidate_logits, 1, new_logits)
        return int(valid[0, 0])

    return step


def main() -> list[Any]:
    """Trace transformers' verifier on (p, q) and on a row where a drafted token has p = 0."""
    from specproof.testing import compare

    try:
        utils = load()
    except WheelUnavailable as why:
        print(f"transformers {VERSION}: skipped: {why}")
        return []
    results = []
    for p, q in ((P, Q), (P_ZERO, Q_ZERO)):
        result, seconds = cpu_seconds(lambda p=p, q=q: compare(make_step(utils), rows(p), rows(q)))
        results.append((result, seconds))
        print(report(f"transformers {VERSION}", "_speculative_sampling", result, seconds, f"p={p} q={q}"))
    return results


if __name__ == "__main__":
    main()
