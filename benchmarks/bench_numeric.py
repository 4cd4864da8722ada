"""The float path on [64, 128256] float64 against np.copy of the same array (the memory-bandwidth
reference), in the same run: the two are timed interleaved (copy, law, copy, law, ...), and the
ratio reported is the median of the per-pair ratios, with the load average before and after (the
machine is shared: other jobs on the same cores and memory change every figure).

    python benchmarks/bench_numeric.py [--batch 64] [--vocab 128256] [--repeat 31]
                                       [--backend numpy|numba] [--threads 1|2] [--json]

``--backend numba`` times the compiled kernel (``pip install 'specproof[fast]'``; compiled, or
loaded from numba's cache, in the warm-up); ``--threads 1`` keeps the law on one thread (the CPU
time is then one thread's: compare it with the copy's, which is single-threaded too).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time

import numpy as np

from specproof.laws import numeric


def rows(batch: int, v: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((batch, v)) * 3.0
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _seconds(fn) -> tuple[float, float]:
    """Wall and CPU seconds (CPU of the whole process: both threads of a threaded call)."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


@contextlib.contextmanager
def _threads(n: int):
    """``n == 1``: the law's inputs are never split over two threads (restored on exit)."""
    saved = numeric._THREADED_ELEMENTS
    if n == 1:
        numeric._THREADED_ELEMENTS = 1 << 62
    try:
        yield
    finally:
        numeric._THREADED_ELEMENTS = saved


def measure(batch: int = 64, vocab: int = 128_256, repeat: int = 31, backend: str = "numpy", threads: int = 2) -> dict:
    """Interleaved timings of np.copy and numeric.emitted_distribution(backend=...) on the same rows.

    Returns the medians (wall and CPU seconds), the median of the per-pair ratios of wall time and of
    CPU time (the law's CPU time counts both of its threads; the process clock's resolution
    makes the CPU ratio coarse), the worst absolute
    difference of dist from p (the law is lossless: dist is p up to rounding), and the load
    average (1 min) before and after.
    """
    p, q = rows(batch, vocab, 0), rows(batch, vocab, 1)

    def law():
        return numeric.emitted_distribution(p, q, backend=backend)

    with _threads(threads):
        law()  # warm up: first-touch page faults, thread pool, numba's compilation or cache
        np.copy(p)
        load = os.getloadavg()[0]
        copies, laws = [], []
        for _ in range(repeat):
            copies.append(_seconds(lambda: np.copy(p)))
            laws.append(_seconds(law))
        dist, _ = law()
    wall = [(a[0], b[0]) for a, b in zip(copies, laws)]
    cpu = [(a[1], b[1]) for a, b in zip(copies, laws) if a[1] > 0]
    return {
        "batch": batch,
        "vocab": vocab,
        "repeat": repeat,
        "backend": backend,
        "threads": threads,
        "copy": statistics.median(a for a, _ in wall),
        "law": statistics.median(b for _, b in wall),
        "ratio": statistics.median(b / a for a, b in wall),
        "cpu_ratio": statistics.median(b / a for a, b in cpu) if cpu else float("nan"),
        "copy_cpu": statistics.median(a[1] for a in copies),
        "law_cpu": statistics.median(b[1] for b in laws),
        "max_error": float(np.abs(dist - p / p.sum(axis=1, keepdims=True)).max()),
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=128_256)
    ap.add_argument("--repeat", type=int, default=31)
    ap.add_argument(
        "--backend",
        choices=numeric.BACKENDS,
        default="numpy",
        help="the float path's backend (default numpy; numba needs the fast extra)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        choices=(1, 2),
        default=2,
        help="2 (default): the law's rows split over two threads as the library does; 1: one thread",
    )
    ap.add_argument("--json", action="store_true", help="print the measurement as one JSON object")
    args = ap.parse_args()
    m = measure(args.batch, args.vocab, args.repeat, args.backend, args.threads)
    if args.json:
        print(json.dumps(m, sort_keys=True))
        return
    print(
        f"numeric.emitted_distribution(backend={m['backend']!r}), {m['threads']} thread(s), "
        f"[{m['batch']}, {m['vocab']}] float64, interleaved with np.copy, "
        f"median of {m['repeat']}; {m['cpus']} CPUs, load average {m['load_before']:.1f} -> {m['load_after']:.1f}"
    )
    print(f"  np.copy (reference)      : {m['copy'] * 1e3:8.2f} ms")
    print(
        f"  emitted_distribution     : {m['law'] * 1e3:8.2f} ms  (max |dist - p/sum p| = {m['max_error']:.1e}, "
        f"bound {numeric.ERROR_BOUND:.0e})"
    )
    print(f"  ratio (median of pairs)  : {m['ratio']:8.2f}x of the copy's wall time  (goal <= 2.5x, stretch 1.8x)")
    print(
        f"  CPU-time ratio           : {m['cpu_ratio']:8.2f}x of the copy's CPU time (all threads counted; "
        f"medians {m['copy_cpu'] * 1e3:.1f} ms and {m['law_cpu'] * 1e3:.1f} ms)"
    )


if __name__ == "__main__":
    main()
