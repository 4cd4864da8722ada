"""Runs of the tracer on transformers' verifier: bisecting every uniform against reading the
coins' thresholds from their comparisons (the default), on random float32 logits; the laws must
be equal. Run: python benchmarks/bench_trace_runs.py (needs the models extra; about 2 minutes)."""

import time

import numpy as np

from specproof.trace.adapters.transformers import block_law


def main() -> None:
    for v, gamma in ((16, 1), (8, 2), (4, 3), (64, 1), (16, 2)):
        rng = np.random.default_rng(v * 10 + gamma)
        target = (rng.normal(size=(gamma + 1, v)) * 2).astype(np.float32).tolist()
        draft = (rng.normal(size=(gamma, v)) * 2).astype(np.float32).tolist()
        out = {}
        for read in (False, True):
            start = time.process_time()
            got = block_law(target, draft, read_thresholds=read)
            out[read] = (got.runs, time.process_time() - start, got.law)
        if out[False][2] != out[True][2]:
            raise SystemExit(f"V={v} gamma={gamma}: the laws differ")
        print(f"V={v} gamma={gamma}: bisection {out[False][0]} runs {out[False][1]:.1f} s CPU; "
              f"read {out[True][0]} runs {out[True][1]:.1f} s CPU; same law")


if __name__ == "__main__":
    main()
