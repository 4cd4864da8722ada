"""Exact law + exact checks at V = 128,256 (Llama 3 vocabulary), side by side with the
straightforward per-token Fraction loop, in the same run.

Both start from the same two float64 softmax rows and do the same work: make the floats
exact (exact dyadic values, exact renormalization), compute the emitted law and alpha,
and check dist == p and alpha == 1 - TV exactly.

    python benchmarks/bench_exact.py [--vocab 128256] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

from specproof.laws import exact
from specproof.laws.rational import from_floats


def softmax_rows(v: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(2):
        z = rng.standard_normal(v) * 3.0
        e = np.exp(z - z.max())
        rows.append(e / e.sum())
    return rows[0], rows[1]


def fast(p: np.ndarray, q: np.ndarray) -> bool:
    """specproof: common-denominator integer kernel."""
    law = exact.emitted_law(from_floats(p), from_floats(q))
    return law.is_lossless()


def straightforward(p: np.ndarray, q: np.ndarray) -> bool:
    """Per-token Fractions: Fraction(float) for each entry, then the reference loop."""
    pf = [Fraction(x) for x in p.tolist()]
    qf = [Fraction(x) for x in q.tolist()]
    sp, sq = sum(pf), sum(qf)
    pf = [x / sp for x in pf]
    qf = [x / sq for x in qf]
    dist, alpha = exact.reference_distribution(pf, qf)
    tv = sum(abs(a - b) for a, b in zip(pf, qf)) / 2
    return list(dist) == pf and alpha == 1 - tv


def best_of(fn, *args, repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=128_256)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    p, q = softmax_rows(args.vocab)
    t_fast, ok_fast = best_of(fast, p, q, repeat=args.repeat)
    t_slow, ok_slow = best_of(straightforward, p, q, repeat=1)  # ~5 s a run: once is enough
    print(f"exact law + checks, V = {args.vocab}, float64 softmax rows made exact")
    print(f"  specproof integer kernel : {t_fast * 1e3:9.1f} ms  (lossless: {ok_fast}, best of {args.repeat})")
    print(f"  per-token Fraction loop  : {t_slow * 1e3:9.1f} ms  (lossless: {ok_slow})")
    print(f"  speed-up                 : {t_slow / t_fast:9.1f}x  (goal >= 20x)")
    if not (ok_fast and ok_slow):
        raise SystemExit("a check failed")


if __name__ == "__main__":
    main()
