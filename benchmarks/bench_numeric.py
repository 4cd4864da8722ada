"""The float path on [64, 128256] float64, side by side with np.copy of the same array
(the memory-bandwidth reference), in the same run.

    python benchmarks/bench_numeric.py [--batch 64] [--vocab 128256] [--repeat 15]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from specproof.laws import numeric


def rows(batch: int, v: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((batch, v)) * 3.0
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=128_256)
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    p, q = rows(args.batch, args.vocab, 0), rows(args.batch, args.vocab, 1)
    t_copy = best_of(lambda: np.copy(p), args.repeat)
    t_law = best_of(lambda: numeric.emitted_distribution(p, q), args.repeat)
    dist, alpha = numeric.emitted_distribution(p, q)
    print(f"numeric.emitted_distribution, [{args.batch}, {args.vocab}] float64 (best of {args.repeat})")
    print(f"  np.copy (reference)      : {t_copy * 1e3:8.2f} ms")
    print(f"  emitted_distribution     : {t_law * 1e3:8.2f} ms  (max |dist - p| = {np.abs(dist - p).max():.1e})")
    print(f"  ratio                    : {t_law / t_copy:8.2f}x of the copy  (goal <= 2.5x)")


if __name__ == "__main__":
    main()
