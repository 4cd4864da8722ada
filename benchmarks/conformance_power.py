"""Measure specproof.trace.conformance beside the engines' own statistical tests, on the same faults.

Each fault of the engine-rules issue is a small vectorized NumPy sampler of one verification
position (V = 10); its exact law comes from specproof.rules.audit.position_law under the named rule.
For each sampler and each of R seeds this runs:

- specproof.trace.conformance (eps, alpha, power as printed; N chosen by the bound);
- the 6-sigma count test of the strongest public engine test (each count within
  6 sqrt(n p (1 - p)) + 5 of n p, n = 65,536);
- vLLM's ratio-of-L2 test (tests/v1/sample/test_rejection_sampler.py,
  test_rejection_sampling_approximates_target_distribution, rewritten on NumPy: L2 distance of the
  histogram from the target at n = 10 and n = 100,000, against the same for 100 random softmax rows;
  pass iff the target ratio is > 20 times the reference ratio),

and prints the rejection rate of each (detection on faults, false alarms on correct samplers).

Run: ``PYTHONPATH=src python benchmarks/conformance_power.py [R]`` (R = 200 by default).
"""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np

from specproof.rules.audit import position_law
from specproof.rules.policy import named_rule
from specproof.trace.conformance import conformance_test, sample_size, six_sigma_counts

V = 10
P = [Fraction(k, 55) for k in range(1, V + 1)]  # 1/55 .. 10/55
FAR = [Fraction(k, 55) for k in range(V, 0, -1)]  # reversed: TV(p, q) = 5/11
NEAR = [Fraction(9, 10) * a + Fraction(1, 10) * b for a, b in zip(P, FAR)]  # TV(p, q) = 1/22
p = np.array([float(x) for x in P])
Q = q = resid = None


def use(draft):
    global Q, q, resid
    Q = draft
    q = np.array([float(x) for x in Q])
    resid = np.maximum(p - q, 0)
    resid /= resid.sum()


def draw(row, u):
    return np.minimum(np.searchsorted(np.cumsum(row), u, side="right"), V - 1)


def make(kind):
    def sample(n, rng):
        if kind in ("race-reuse", "standard-race"):
            e = rng.exponential(size=(n, V))
            x = np.argmax(q / e, axis=1)
        else:
            x = draw(q, rng.random(n))
        u = rng.random(n)
        acc = u < p[x] / q[x]
        if kind == "accept-all":
            return x
        if kind == "match-rule":
            return draw(p, rng.random(n))
        if kind == "resample-from-target":
            y = draw(p, rng.random(n))
        elif kind.startswith("residual-floor:"):
            w = np.maximum(p - q, float(Fraction(kind.split(":")[1])))
            y = draw(w / w.sum(), rng.random(n))
        elif kind == "coin-reuse-inverse-cdf":
            y = draw(resid, u)
        elif kind == "race-reuse":
            y = np.argmax(resid / e, axis=1)
        elif kind == "standard-race":
            y = np.argmax(resid / rng.exponential(size=(n, V)), axis=1)
        else:
            y = draw(resid, rng.random(n))
        return np.where(acc, x, y)

    return sample


RULES = {
    "standard": "standard",
    "standard-race": "standard",
    "match-rule": "match-rule",
    "accept-all": "accept-all",
    "resample-from-target": "resample-from-target",
    "residual-floor:1/100": "residual-floor:1/100",
    "residual-floor:1/1000": "residual-floor:1/1000",
    "coin-reuse-inverse-cdf": "coin-reuse-inverse-cdf",
    "race-reuse": "race-reuse",
}


def vllm_l2_ratio(sample, rng) -> bool:
    """True if the sampler passes vLLM's test."""
    refs = np.exp(rng.random((100, V)))
    refs /= refs.sum(axis=1, keepdims=True)
    dt, dr = [], []
    for n in (10, 100, 1_000, 10_000, 100_000):
        hist = np.bincount(sample(n, rng), minlength=V)[:V] / n
        dt.append(np.linalg.norm(p - hist))
        dr.append(np.linalg.norm(refs - hist) / 100)
    return dt[0] / dt[-1] > 20 * (dr[0] / dr[-1])


def main(reps: int = 200, eps: float = 0.02, alpha: float = 1e-6, power: float = 0.95) -> None:
    n, t = sample_size(V, eps, alpha, power)
    print(
        f"specproof.trace.conformance: eps = {eps}, alpha = {alpha}, power = {power}: N = {n}, reject at TV >= {t:.4f}; "
        f"{reps} seeds per sampler"
    )
    print(
        f"| q | sampler | exact TV from p | specproof (N = {n}) | 6-sigma counts (n = 65,536) | vLLM L2 ratio (n up to 100,000) |"
    )
    print("|---|---|---|---|---|---|")
    ref = {i: x for i, x in enumerate(P)}
    for name, draft in (("far", FAR), ("near", NEAR)):
        use(draft)
        run_pair(name, reps, eps, alpha, power, ref)


def run_pair(name, reps, eps, alpha, power, ref):
    for kind, rule in RULES.items():
        law = position_law(P, Q, named_rule(rule))
        sampler = make(kind)
        hits = [0, 0, 0]
        for seed in range(reps):
            rng = np.random.default_rng(seed)
            hits[0] += not conformance_test(
                lambda m, s=sampler, r=rng: s(m, r), ref, eps=eps, alpha=alpha, power=power
            ).conforms
            hits[1] += not six_sigma_counts(lambda m, s=sampler, r=rng: s(m, r), ref, 65_536)
            hits[2] += not vllm_l2_ratio(sampler, rng)
        print(
            f"| {name} | {kind} | {float(law.tv):.4f} | " + " | ".join(f"{h / reps:.3f}" for h in hits) + " |",
            flush=True,
        )


def false_alarms(reps: int = 1000, eps: float = 0.02) -> None:
    """Observed false-alarm rate of specproof.trace.conformance on the correct samplers at larger alphas."""
    use(NEAR)
    ref = {i: x for i, x in enumerate(P)}
    print(f"false alarms over {reps} seeds (q near), eps = {eps}:")
    for alpha in (0.05, 0.01):
        n, t = sample_size(V, eps, alpha, 0.95)
        for kind in ("standard", "standard-race", "match-rule"):
            sampler = make(kind)
            bad = 0
            for seed in range(reps):
                rng = np.random.default_rng(10_000 + seed)
                bad += not conformance_test(lambda m, s=sampler, r=rng: s(m, r), ref, eps=eps, alpha=alpha).conforms
            print(f"  alpha = {alpha}: N = {n}, {kind}: {bad}/{reps} = {bad / reps:.4f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "false-alarms":
        false_alarms(int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
