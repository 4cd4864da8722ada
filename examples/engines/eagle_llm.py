"""EAGLE (the ``eagle-llm`` wheel, 1.2.1): ``eagle/model/utils.py``'s own ``evaluate_posterior``, traced.

EAGLE's file is loaded from its wheel by path (it needs torch and transformers' logits processors, both
in the environment). The models are stubbed: the target's logits are ``log p`` for rows p that float32
softmax maps to themselves; the draft is a stub that, like EAGLE's draft head at temperature 1, draws
``K`` children of the root without replacement from q (``torch.multinomial(q, K, replacement=False)``)
and states each one's probability given the earlier ones (q(x1), then q(x2) / (1 - q(x1))). EAGLE
evaluates the children in turn: a Python ``random.random()`` coin against p(x) / q(x); on a
rejection it subtracts the draft row (with the rejected siblings zeroed) from the target row and
renormalizes. The emitted token is the accepted child, or a ``torch.multinomial`` draw from the
``sample_p`` it returns (as EAGLE's ``update_inference_inputs`` does).

Run: ``python examples/engines/eagle_llm.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _wheel import WheelUnavailable, cpu_seconds, load_file, report, wheel_files  # noqa: E402

NAME, VERSION = "eagle-llm", "1.2.1"
FILE = "eagle/model/utils.py"
P, Q = (0.6, 0.3, 0.1), (0.2, 0.5, 0.3)
K = 2  # children of the root (a tree of depth 1)


def load() -> Any:
    """EAGLE's ``eagle.model.utils`` module, from the wheel."""
    root = wheel_files(NAME, VERSION, [FILE])
    return load_file("eagle.model.utils", root / FILE)


def rows(p: tuple[float, ...]) -> Any:
    """Float32 rows that ``softmax(log p)`` maps to themselves."""
    import torch

    row = torch.tensor(p, dtype=torch.float32)
    for _ in range(20):
        again = torch.softmax(torch.log(row), dim=0)
        if torch.equal(again, row):
            return row
        row = again
    raise AssertionError(f"softmax(log p) has no fixed point near {p}")


def make_step(utils: Any, k: int = K) -> Any:
    """``step(p, q)``: one position of EAGLE's tree verification with ``k`` drafted children."""
    import torch
    from transformers.generation.logits_process import LogitsProcessorList

    def step(target: Any, draft: Any) -> int:
        root = target.shape[-1]  # the root token's id: outside the vocabulary, never emitted here
        children = torch.multinomial(draft, k, replacement=False)  # the draft head, stubbed
        taken = draft[children]
        before = torch.cat([torch.zeros(1, dtype=draft.dtype), torch.cumsum(taken, 0)[:-1]])
        conditional = taken / (1 - before)
        candidates = torch.stack([torch.full((k,), root), children], dim=1)
        cart_prob = torch.stack([torch.ones(k, dtype=draft.dtype), conditional], dim=1)
        tree_candidates = torch.cat([torch.tensor([root]), children])[None]
        logits = torch.log(target).expand(k, 2, -1)
        p_indices = [[0, 0] for _ in range(k)]
        b_indices = [[[], list(range(1, j + 1))] for j in range(k)]  # the earlier siblings
        best, accepted, sample_p = utils.evaluate_posterior(
            logits,
            candidates,
            LogitsProcessorList(),
            cart_prob,
            draft[None, None],
            p_indices,
            tree_candidates,
            b_indices,
        )
        if accepted >= 1:
            return int(candidates[int(best), 1])
        return int(torch.multinomial(sample_p, 1))

    return step


def main() -> list[Any]:
    """Trace EAGLE's posterior evaluation on (p, q)."""
    from specproof.testing import compare

    try:
        utils = load()
    except WheelUnavailable as why:
        print(f"eagle-llm {VERSION}: skipped: {why}")
        return []
    result, seconds = cpu_seconds(lambda: compare(make_step(utils), rows(P), rows(Q)))
    print(report(f"eagle-llm {VERSION}", f"evaluate_posterior ({K} children)", result, seconds, f"p={P} q={Q}"))
    return [(result, seconds)]


if __name__ == "__main__":
    main()
