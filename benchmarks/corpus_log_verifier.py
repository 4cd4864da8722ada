"""Is a log's deviation the verifier's? Re-run transformers' own `_speculative_sampling` R times on every
logged step's drafted-token probabilities and compare the accepted total with the exact expectation.

Each step's (p_i(x_i), q_i(x_i)) becomes a pair of two-token rows (p_i, 1 - p_i) and (q_i, 1 - q_i) given to
the verifier as logits (float32, as transformers uses them); only the accepted count is read, whose law
depends on the drafted tokens' probabilities alone (Leviathan et al. 2023, Algorithm 1).

    python benchmarks/corpus_log_verifier.py [LOG] [--repeat 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import math


def main() -> None:
    import torch
    from transformers.generation.utils import _speculative_sampling

    from specproof.corpus.data import path
    from specproof.corpus.log import accepted_law, read_log

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", default=str(path("transformers-genuine.parquet")))
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rows, _ = read_log(a.log)
    torch.set_num_threads(1)  # tiny tensors: threads only contend
    torch.manual_seed(a.seed)
    total, mean, var = 0, 0.0, 0.0
    for r in rows:
        k = len(r["drafted"])
        law = [float(x) for x in accepted_law(r["p_drafted"], r["q_drafted"])]
        m = sum(j * x for j, x in enumerate(law))
        mean += a.repeat * m
        var += a.repeat * (sum(j * j * x for j, x in enumerate(law)) - m * m)
        p = torch.tensor(r["p_drafted"], dtype=torch.float64)
        q = torch.tensor(r["q_drafted"], dtype=torch.float64)
        new = torch.log(torch.stack([p, 1 - p]).T.clamp_min(1e-300)).float()[None]
        new = torch.cat([new, torch.zeros(1, 1, 2)], 1)
        cand = torch.log(torch.stack([q, 1 - q]).T.clamp_min(1e-300)).float()[None]
        ids = torch.zeros(1, k, dtype=torch.long)
        for _ in range(a.repeat):
            total += int(_speculative_sampling(ids, cand, k, new)[1])
    print(
        f"{len(rows)} steps x {a.repeat}: accepted {total}, exact expectation {mean:.1f}, "
        f"z = {(total - mean) / math.sqrt(var):+.2f}"
    )


if __name__ == "__main__":
    main()
