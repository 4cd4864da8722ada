"""Runs of the tracer on transformers' verifier, bisecting every uniform vs reading thresholds from comparisons (same laws).

Run: python benchmarks/bench_trace_runs.py (needs the models extra)."""
import time, numpy as np, torch, specproof.trace as T
from specproof.adapters.transformers import block_law
orig = T.trace
rows = []
for v, g in ((16, 1), (8, 2), (4, 3), (64, 1), (16, 2)):
    rng = np.random.default_rng(v * 10 + g)
    t = (rng.normal(size=(g + 1, v)) * 2).astype(np.float32).tolist()
    d = (rng.normal(size=(g, v)) * 2).astype(np.float32).tolist()
    out = {}
    for rt in (False, True):
        T.trace = lambda *a, **k: orig(*a, **k, read_thresholds=rt)
        import specproof.adapters.transformers as A; A.trace = T.trace
        s = time.process_time(); r = block_law(t, d); e = time.process_time() - s
        out[rt] = (r.runs, e, r.law)
    assert out[False][2] == out[True][2]
    print(f"V={v} gamma={g}: bisection {out[False][0]} runs {out[False][1]:.1f} s CPU; read {out[True][0]} runs {out[True][1]:.1f} s CPU; same law")
