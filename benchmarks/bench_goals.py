"""Issue 22's three timed goals measured in one run, beside a fixed reference workload: the main job
(`specproof prove --jobs 2`, goal under 60 s), the default test suite (`python -m pytest`, goal
under 150 s) and the float path on [64, 128256] float64 (goal at most 2.5x `np.copy`).

    python benchmarks/bench_goals.py [--skip-suite] [--json]

The machine is shared, so every figure depends on what else runs. The reference workload is a
fixed single-threaded pure-Python task (exact Fraction sums, about 0.2 s of CPU), timed before,
between and after the goals: its wall time over its CPU time (1.0 on an idle core) says how
much of a core this process got while the goals ran, beside the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def reference() -> dict:
    """Wall and CPU seconds of the fixed reference workload (the same work on every run)."""
    wall, cpu = time.perf_counter(), time.process_time()
    total = Fraction(0)
    for i in range(1, 60_000):
        total += Fraction(1, i % 997 + 1)
    if total <= 0:
        raise SystemExit("the reference workload computed nonsense")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall": wall, "cpu": cpu, "slowdown": wall / cpu, "load": os.getloadavg()[0]}


def suite() -> dict:
    """The default `python -m pytest -q` (its addopts: two xdist workers, slow tests excluded)."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    return {
        "wall": wall,
        "exit": proc.returncode,
        "summary": last,
        "load_before": load,
        "load_after": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-suite", action="store_true", help="do not run the test suite")
    ap.add_argument("--json", action="store_true", help="print the measurements as one JSON object")
    args = ap.parse_args()
    from bench_numeric import measure
    from bench_prove import run

    refs = [reference()]
    prove = run(2)
    refs.append(reference())
    tests = None if args.skip_suite else suite()
    refs.append(reference())
    numeric = measure()
    try:  # the compiled backend (the fast extra), on one thread: its CPU time against the copy's
        import numba  # noqa: F401

        numeric_numba = measure(backend="numba", threads=1)
    except ImportError:
        numeric_numba = None
    refs.append(reference())
    out = {
        "cpus": os.cpu_count(),
        "reference": refs,
        "prove": prove,
        "suite": tests,
        "numeric": numeric,
        "numeric_numba": numeric_numba,
    }
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return
    print(
        f"{os.cpu_count()} CPUs; reference workload before, between and after (wall / CPU; load): "
        + ", ".join(f"{r['wall']:.2f}/{r['cpu']:.2f} s = {r['slowdown']:.1f}x ({r['load']:.1f})" for r in refs)
    )
    print(
        f"main job (--jobs 2): {prove['wall']:.1f} s wall, {prove['cpu']:.1f} s CPU, proved={prove['proved']}; "
        f"load {prove['load_before']:.1f} -> {prove['load_after']:.1f}  (goal < 60 s)"
    )
    slowest = sorted(prove["theorems"].items(), key=lambda kv: -kv[1])[:3]
    print("  slowest theorems: " + ", ".join(f"{k} {v:.1f} s" for k, v in slowest))
    if tests is not None:
        print(
            f"default suite: {tests['wall']:.1f} s wall, exit {tests['exit']} ({tests['summary']}); "
            f"load {tests['load_before']:.1f} -> {tests['load_after']:.1f}  (goal < 150 s)"
        )
    print(
        f"float path [64, 128256]: {numeric['ratio']:.2f}x np.copy wall, {numeric['cpu_ratio']:.2f}x CPU "
        f"(copy {numeric['copy'] * 1e3:.1f} ms, law {numeric['law'] * 1e3:.1f} ms); load "
        f"{numeric['load_before']:.1f} -> {numeric['load_after']:.1f}  (goal <= 2.5x)"
    )
    if numeric_numba is not None:
        m = numeric_numba
        print(
            f"  backend='numba', one thread: {m['ratio']:.2f}x np.copy wall, {m['cpu_ratio']:.2f}x CPU "
            f"(copy {m['copy'] * 1e3:.1f} ms, law {m['law'] * 1e3:.1f} ms); load "
            f"{m['load_before']:.1f} -> {m['load_after']:.1f}"
        )


if __name__ == "__main__":
    main()
