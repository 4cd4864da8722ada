"""The main job, `specproof prove`, per theorem: seconds of each theorem, wall time and CPU time of
the whole run, in worker processes (--jobs 2, the default) and in one process (--jobs 1), with the
machine's load average beside them (other jobs on the same cores change every number).

    python benchmarks/bench_prove.py [--jobs 2 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def run(jobs: int) -> dict:
    """One `specproof prove --json --jobs N` in a scratch directory: per-theorem seconds, wall, CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "specproof", "prove", "--json", "--jobs", str(jobs), "--out", out],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"specproof prove --jobs {jobs} exited {proc.returncode}:\n{proc.stderr}")
    doc = json.loads(proc.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "jobs": jobs,
        "wall": wall,
        "cpu": cpu,
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "theorems": {t["theorem"]: t["seconds"] for t in doc["theorems"]},
        "proved": doc["proved"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[2, 1])
    ap.add_argument("--json", action="store_true", help="print the measurements as one JSON object")
    args = ap.parse_args()
    runs = [run(j) for j in args.jobs]
    if args.json:
        print(json.dumps({"cpus": os.cpu_count(), "runs": runs}, sort_keys=True))
        return
    names = list(runs[0]["theorems"])
    width = max(map(len, names))
    print(f"specproof prove, {os.cpu_count()} CPUs; seconds per theorem (each in its own process with --jobs > 1)")
    print(f"  {'theorem':{width}s}  " + "  ".join(f"--jobs {r['jobs']:<2d}" for r in runs))
    for name in names:
        print(f"  {name:{width}s}  " + "  ".join(f"{r['theorems'][name]:9.1f}" for r in runs))
    for key in ("wall", "cpu"):
        print(f"  {key + ' (whole run)':{width}s}  " + "  ".join(f"{r[key]:9.1f}" for r in runs))
    print(
        f"  {'load average (1 min)':{width}s}  "
        + "  ".join(f"{r['load_before']:4.1f}-{r['load_after']:<4.1f}" for r in runs)
    )


if __name__ == "__main__":
    main()
