"""Issue 33's speed goals for the tracer and its judge (item 4), measured in CPU time in one run.

    python benchmarks/bench_trace_goals.py [--full] [--json]

1. The judge on a gross fault: a gamma-2 block sampler that accepts every draft (V = 8, float32 torch
   rows) is judged lossy without scanning the float-ideal family for its nearest member; ``--full`` also
   times the scan (``nearest=True``, minutes), the judge as it was before.
2. A textbook torch position at V = 128,256 (float32 softmax rows) is refused with the reason and the
   estimate: goal under 5 s of CPU.
3. A textbook float32 position at V = 64 (``compare``: trace and judgement): goal under 2 s of CPU.
4. ``--engines``: SGLang 0.5.23's block verification at gamma 2, its own Triton kernel from its wheel under the
   interpreter (``examples/engines/sglang_kernel.py --gamma 2 --block``): goal under 10 min of CPU. Needs triton
   (the engines extra) and the wheel (downloaded once into ``$SPECPROOF_ENGINE_CACHE``); else not available.
   Printed with the judge's and the float floor's shares of that time (the rest is the trace of the kernel).
(Item 4's batched probes, one call of a batched sampler answering many probes, are not built yet.)

The machine is shared (see the README's performance notes): CPU time of this process is the figure, with
the load average beside it. A warm-up comparison on V = 4 rows runs first, so import costs are not counted.
Against another checkout: ``PYTHONPATH=/path/to/checkout/src python benchmarks/bench_trace_goals.py``
(goals a checkout lacks are reported as not available).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import time

import torch

from specproof.trace.testing import compare


def textbook(p, q):
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))


def accept_all_block(p, q):
    """A gamma-2 block that accepts both drafts and adds the bonus token: a gross fault."""
    drafts = [int(torch.multinomial(q[i], 1)) for i in range(2)]
    return (*drafts, int(torch.multinomial(p[2], 1)))


def rows(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g), -1)


def timed(f) -> tuple[float, object]:
    start = time.process_time()
    out = f()
    return time.process_time() - start, out


def goal_gross(full: bool) -> dict:
    p, q = rows((3, 8), 1), rows((2, 8), 2)
    has_nearest = "nearest" in inspect.signature(compare).parameters
    cpu, got = timed(lambda: compare(accept_all_block, p, q, gamma=2))
    out = {
        "cpu": cpu,
        "verdict": got.verdict,
        "tv": float(got.tv),
        "runs": got.trace.runs,
        "scan_skipped": "(a gross fault)" in got.arithmetic,
        "load": os.getloadavg()[0],
    }
    if full and has_nearest:
        cpu, near = timed(lambda: compare(accept_all_block, p, q, gamma=2, nearest=True))
        out["full_scan"] = {"cpu": cpu, "verdict": near.verdict, "tv": float(near.tv), "arithmetic": near.arithmetic}
    return out


def goal_refusal() -> dict:
    from specproof.errors import SpecProofError

    p, q = rows((128_256,), 3), rows((128_256,), 4)
    start = time.process_time()
    try:
        compare(textbook, p, q)
        message = None
    except SpecProofError as exc:
        message = f"{type(exc).__name__}: {exc}"
    return {"cpu": time.process_time() - start, "message": message, "load": os.getloadavg()[0]}


def goal_v64() -> dict:
    p, q = rows((64,), 5), rows((64,), 6)
    cpu, got = timed(lambda: compare(textbook, p, q))
    return {"cpu": cpu, "verdict": got.verdict, "tv": float(got.tv), "runs": got.trace.runs, "load": os.getloadavg()[0]}


def goal_sglang_block() -> dict:
    import sys
    from pathlib import Path

    os.environ.setdefault("TRITON_INTERPRET", "1")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "engines"))
    import sglang_kernel
    from _wheel import WheelUnavailable

    try:
        module = sglang_kernel.load()
    except WheelUnavailable as why:
        return {"available": False, "why": str(why)}
    p = torch.tensor(sglang_kernel.P, dtype=torch.float32).expand(3, -1)
    q = torch.tensor(sglang_kernel.Q, dtype=torch.float32).expand(2, -1)
    step = sglang_kernel.make_step(module, 2, True)
    from specproof.rules import faithful
    from specproof.trace import floor

    # the shares of compare's CPU time: the float floor's argument (its float64 re-trace) and the judge (the
    # float-ideal family); the rest is the trace of the kernel
    spent: dict[str, list[float]] = {"floor": [], "judge": []}
    originals = {"floor": (floor, "argue", floor.argue), "judge": (faithful, "judge", faithful.judge)}

    def timing(part, f):
        def timed_part(*a, **k):
            cpu, out = timed(lambda: f(*a, **k))
            spent[part].append(cpu)
            return out

        return timed_part

    for part, (where, name, f) in originals.items():
        setattr(where, name, timing(part, f))
    try:
        cpu, got = timed(lambda: compare(step, p, q, gamma=2))
    finally:
        for where, name, f in originals.values():
            setattr(where, name, f)
    floor_cpu, judge_cpu = sum(spent["floor"]), sum(spent["judge"])
    return {
        "available": True,
        "cpu": cpu,
        "floor_cpu": floor_cpu,
        "judge_cpu": judge_cpu,  # a judge inside the floor's re-trace is counted in both
        "floor": got.floor.line() if got.floor is not None else None,
        "verdict": got.verdict,
        "tv": str(got.tv),
        "runs": got.trace.runs,
        "load": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="also time the full float-family scan of goal 1 (minutes)")
    ap.add_argument("--json", action="store_true", help="print the measurements as one JSON object")
    ap.add_argument("--engines", action="store_true", help="also trace SGLang's gamma-2 block kernel (minutes)")
    args = ap.parse_args()
    warm = rows((4,), 0)
    compare(textbook, warm, rows((4,), 9))  # imports and first-use costs, not counted
    out = {
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],
        "gross": goal_gross(args.full),
        "refusal": goal_refusal(),
        "v64": goal_v64(),
    }
    if args.engines:
        out["sglang_block"] = goal_sglang_block()
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return
    g = out["gross"]
    print(f"{out['cpus']} CPUs, load average {out['load_before']:.1f} at the start")
    print(
        f"1. gamma-2 gross fault, V = 8: {g['cpu']:.2f} s CPU for compare ({g['runs']} runs), {g['verdict']}, "
        f"TV {g['tv']:.4f}, nearest-member scan skipped: {g['scan_skipped']}"
    )
    if "full_scan" in g:
        f = g["full_scan"]
        print(f"   with nearest=True (the full scan): {f['cpu']:.1f} s CPU, {f['verdict']}, TV {f['tv']:.4f}")
    r = out["refusal"]
    print(f"2. textbook torch position, V = 128,256: {r['cpu']:.2f} s CPU (goal < 5 s): {r['message']}")
    v = out["v64"]
    print(f"3. textbook float32 position, V = 64: {v['cpu']:.2f} s CPU (goal < 2 s), {v['verdict']}, {v['runs']} runs")
    if "sglang_block" in out:
        b = out["sglang_block"]
        if not b["available"]:
            print(f"4. SGLang block verification, gamma 2: not available ({b['why']})")
        else:
            print(
                f"4. SGLang block verification, gamma 2: {b['cpu']:.0f} s CPU (goal < 600 s), {b['verdict']}, "
                f"TV {b['tv']}, {b['runs']} runs; of it the judge {b['judge_cpu']:.1f} s, the float floor's argument "
                f"{b['floor_cpu']:.1f} s"
                f"{': ' + b['floor'] if b['floor'] else ''} (load average {b['load']:.1f} at the end)"
            )


if __name__ == "__main__":
    main()
