"""Runs of the tracer, three ways, on the same samplers; the laws must be equal.

- ``bisection``: every uniform bisected, every categorical enumerated (``read_thresholds=False,
  pushforward=False``);
- ``reading``: the coins' thresholds read from their comparisons (``pushforward=False``);
- ``default``: reading, and a last ``torch.multinomial`` draw that is only moved into the output read at
  every category from one run (``pushforward=True``).

Cases: transformers' ``_speculative_sampling`` on random float32 logits (needs the models extra; the
trace of ``adapters.transformers.block_law`` alone is timed, not its judgement of the law), and a
textbook speculative chain at V = 3, gamma = 2 written with torch and with NumPy's generator (random
float32 rows, one per position). Run: python benchmarks/bench_trace_runs.py (about 2-4 minutes);
``--quick`` for the small cases only.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

MODES = {
    "bisection": {"read_thresholds": False, "pushforward": False},
    "reading": {"pushforward": False},
    "default": {},
}


def torch_chain(target: Callable, draft: Callable, gamma: int) -> tuple[int, ...]:
    """Leviathan et al. 2023, Algorithm 1, drafting and verifying one token at a time (torch)."""
    import torch

    out: list[int] = []
    for _ in range(gamma):
        q, p = draft(tuple(out)), target(tuple(out))
        x = int(torch.multinomial(q, 1))
        if torch.rand(()) < p[x] / q[x]:
            out.append(x)
            continue
        out.append(int(torch.multinomial(torch.clamp(p - q, min=0), 1)))
        return tuple(out)
    return (*out, int(torch.multinomial(target(tuple(out)), 1)))


def numpy_chain(target: Callable, draft: Callable, gamma: int, rng: Any) -> tuple[int, ...]:
    """The same chain with NumPy's generator (``choice`` and ``random``)."""
    out: list[int] = []
    for _ in range(gamma):
        q, p = draft(tuple(out)), target(tuple(out))
        x = int(rng.choice(len(q), p=q))
        if rng.random() < p[x] / q[x]:
            out.append(x)
            continue
        w = np.maximum(p - q, 0)
        out.append(int(rng.choice(len(q), p=w / w.sum())))
        return tuple(out)
    return (*out, int(rng.choice(len(q), p=target(tuple(out)))))


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    got = fn()
    return got, time.process_time() - cpu, time.perf_counter() - wall


class _Traced(Exception):
    """Stops block_law right after its trace (the judgement against the float-ideal family is not timed)."""


def _trace_only(block_law: Callable, *args: Any, **kwargs: Any) -> Any:
    """The Trace block_law takes, without the judgement and the TV it computes after it."""
    from specproof.trace.adapters import transformers as adapter

    traced = adapter.trace

    def stop(*a: Any, **k: Any) -> Any:
        raise _Traced(traced(*a, **k))

    adapter.trace = stop
    try:
        block_law(*args, **kwargs)
    except _Traced as got:
        return got.args[0]
    finally:
        adapter.trace = traced
    raise SystemExit("block_law did not call the tracer")


def transformers_cases(quick: bool) -> list[tuple[str, Callable[[dict], tuple[int, dict]]]]:
    from specproof.trace.adapters.transformers import block_law

    cases = []
    sizes = ((16, 1), (8, 2)) if quick else ((16, 1), (8, 2), (4, 3), (64, 1), (16, 2))
    for v, gamma in sizes:
        rng = np.random.default_rng(v * 10 + gamma)
        target = (rng.normal(size=(gamma + 1, v)) * 2).astype(np.float32).tolist()
        draft = (rng.normal(size=(gamma, v)) * 2).astype(np.float32).tolist()

        def run(kw: dict, target=target, draft=draft) -> tuple[int, dict]:
            got = _trace_only(block_law, target, draft, **kw)
            return got.runs, got.law

        cases.append((f"transformers V = {v}, gamma {gamma}", run))
    return cases


def chain_cases() -> list[tuple[str, Callable[[dict], tuple[int, dict]]]]:
    import torch

    from specproof.trace.tracer import trace

    v, gamma = 3, 2
    rng = np.random.default_rng(3)
    rows = [rng.dirichlet(np.ones(v), size=gamma + 1).astype(np.float32) for _ in range(2)]
    tp, tq = ([torch.tensor(r) for r in rs] for rs in rows)
    np_p, np_q = ([r.astype(np.float64) / r.astype(np.float64).sum() for r in rs] for rs in rows)

    def with_torch(kw: dict) -> tuple[int, dict]:
        got = trace(lambda: torch_chain(lambda s: tp[len(s)], lambda s: tq[len(s)], gamma), **kw)
        return got.runs, got.law

    def with_numpy(kw: dict) -> tuple[int, dict]:
        got = trace(
            lambda rng: numpy_chain(lambda s: np_p[len(s)], lambda s: np_q[len(s)], gamma, rng), numpy_rng="rng", **kw
        )
        return got.runs, got.law

    return [
        (f"textbook chain (torch) V = {v}, gamma {gamma}", with_torch),
        (f"textbook chain (NumPy) V = {v}, gamma {gamma}", with_numpy),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small cases only")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    cases = chain_cases()
    try:
        cases += transformers_cases(args.quick)
    except ImportError as exc:
        print(f"transformers cases skipped: {exc}")
    for name, run in cases:
        out = {mode: _timed(lambda kw=kw, run=run: run(kw)) for mode, kw in MODES.items()}
        laws = [got[1] for got, _, _ in out.values()]
        if any(law != laws[0] for law in laws):
            raise SystemExit(f"{name}: the laws differ")
        cells = "; ".join(
            f"{mode} {got[0]} runs {cpu:.1f} s CPU {wall:.1f} s wall" for mode, (got, cpu, wall) in out.items()
        )
        print(f"{name}: {cells}; same law", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
