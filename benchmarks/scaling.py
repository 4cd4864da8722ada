"""Scaling curves: how each cost grows with V, gamma and document size, measured in one run and
drawn as figures, with the fitted growth and the machine they were measured on.

    python benchmarks/scaling.py --out docs/figures/ [--quick] [--parts law chain trace checker main_job]

Writes into the output folder ``scaling.json`` (every measurement, the machine, the load
average at the start and end of each part, the fitted growth: exponents fitted on log-log over
the three largest sizes of each curve, bases of b^gamma over the three largest gamma) and one
SVG per figure:

- ``law_vs_v.svg``: one position's exact law (floats made exact, the law, the exact checks)
  and the float path (one row, and np.copy of it) vs V = 10^3 .. 10^6;
- ``chain_vs_gamma.svg``: the exact chain law of one verification step (every draft the
  verifier can accept, O(V^gamma) prefixes) vs gamma = 1..5 for several V, and the given-block
  law (one drafted block, O(gamma V)) vs gamma;
- ``trace_runs.svg``: the tracer's runs of transformers' verifier vs V (gamma 1) and vs gamma
  (V = 4): the default (thresholds read, the last draw pushed forward), reading thresholds only,
  and bisecting (the first way) where that is cheap (V * gamma^2 <= 16;
  benchmarks/bench_trace_runs.py has larger cases);
- ``checker_vs_size.svg``: the trusted checker's time vs document size for each kind of
  document, genuine and hostile (the adversarial review's builders in bench_checker.py);
- ``main_job.svg``: the seconds of each theorem of ``specproof prove --jobs 2``.

About two minutes on the 2-core machine (half of it the main job) (``--quick``: tiny sizes, a few seconds, for the
test that the script runs). The machine is shared: every figure is one run's, beside whatever
else was running (the load average is in the JSON and in each figure's title). With ``--parts``,
the parts not measured keep their data from the ``scaling.json`` already in the output folder, and
every figure is drawn again from the merged data.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _seconds(fn: Callable[[], Any], budget: float = 0.3, most: int = 7) -> float:
    """Median wall time of ``fn`` over repeats until about ``budget`` seconds or ``most`` runs."""
    times: list[float] = []
    while len(times) < most and (not times or sum(times) < budget):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fit_power(xs: list[float], ys: list[float], last: int = 3) -> float | None:
    """The exponent k of y ~ c x^k: least squares on log-log over the ``last`` largest x (the
    growth, not the fixed costs that dominate small sizes); None with fewer than two points."""
    pts = sorted((x, y) for x, y in zip(xs, ys) if x > 0 and y > 0)[-last:]
    if len(pts) < 2:
        return None
    return float(np.polyfit([math.log(x) for x, _ in pts], [math.log(y) for _, y in pts], 1)[0])


def fit_base(xs: list[float], ys: list[float], last: int = 3) -> float | None:
    """The base b of y ~ c b^x (x = gamma): least squares on log y over the ``last`` largest x."""
    pts = sorted((x, y) for x, y in zip(xs, ys) if y > 0)[-last:]
    if len(pts) < 2:
        return None
    return float(math.exp(np.polyfit([x for x, _ in pts], [math.log(y) for _, y in pts], 1)[0]))


def _softmax(v: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(v) * 3.0
    e = np.exp(z - z.max())
    return e / e.sum()


# ---------------------------------------------------------------- one position vs V


def law_vs_v(sizes: list[int]) -> dict[str, Any]:
    """Exact law (from float rows: made exact, law, checks) and float path vs V."""
    from specproof.laws import exact, numeric
    from specproof.laws.rational import from_floats

    out: dict[str, Any] = {"v": sizes, "exact": [], "float": [], "copy": []}
    for v in sizes:
        p, q = _softmax(v, 0), _softmax(v, 1)

        def exact_law(p: np.ndarray = p, q: np.ndarray = q, v: int = v) -> None:
            law = exact.emitted_law(from_floats(p), from_floats(q))
            if not law.is_lossless():
                raise SystemExit(f"V={v}: the exact law is not lossless")

        out["exact"].append(_seconds(exact_law, budget=1.0, most=5))
        # np.copy and the float path interleaved, so that both see the same load
        copies, floats = [], []
        for _ in range(9):
            copies.append(_seconds(lambda p=p: np.copy(p), budget=0, most=1))
            floats.append(_seconds(lambda p=p, q=q: numeric.emitted_distribution(p, q), budget=0, most=1))
        out["copy"].append(statistics.median(copies))
        out["float"].append(statistics.median(floats))
    out["fit"] = {k: fit_power(sizes, out[k]) for k in ("exact", "float", "copy")}
    return out


# ---------------------------------------------------------------- chains vs gamma


def _chain_rows(v: int, shift: int) -> Callable[[tuple[int, ...]], list[Fraction]]:
    """Rows that depend on the last token (every prefix has its own row), all entries > 0."""

    def row(prefix: tuple[int, ...]) -> list[Fraction]:
        last = prefix[-1] if prefix else 0
        weights = [1 + (i * 7 + last * 3 + shift) % 11 for i in range(v)]
        total = sum(weights)
        return [Fraction(w, total) for w in weights]

    return row


def chain_vs_gamma(vocabs: list[int], gammas: list[int], block_v: int, limit: float) -> dict[str, Any]:
    """The exact chain law vs gamma for each V (stopping a V once a point took over ``limit``
    seconds), and the given-block law (one drafted block) at V = ``block_v``."""
    from specproof.laws import chain

    out: dict[str, Any] = {"gamma": gammas, "chain": {}, "block_v": block_v, "block": []}
    for v in vocabs:
        target, draft = _chain_rows(v, 0), _chain_rows(v, 5)
        times = []
        for g in gammas:
            if times and times[-1] > limit:
                break
            times.append(_seconds(lambda t=target, d=draft, g=g: chain.verification_law(t, d, g), budget=0.5, most=3))
        out["chain"][str(v)] = times
    target, draft = _chain_rows(block_v, 0), _chain_rows(block_v, 5)
    for g in gammas:
        tokens = [t % block_v for t in range(1, g + 1)]
        prefixes = [tuple(tokens[:i]) for i in range(g + 1)]
        rows_t = [target(s) for s in prefixes]
        rows_d = [draft(s) for s in prefixes[:-1]]
        out["block"].append(
            _seconds(lambda t=rows_t, d=rows_d, b=tokens: chain.given_block_law(t, d, b), budget=0.5, most=5)
        )
    out["fit"] = {
        "chain_base": {v: fit_base(gammas[: len(t)], t) for v, t in out["chain"].items()},
        "block_power": fit_power(gammas, out["block"]),
    }
    return out


# ---------------------------------------------------------------- the tracer


def trace_runs(by_v: list[int], by_gamma: list[int], gamma_v: int, bisect_up_to: int) -> dict[str, Any]:
    """Runs and CPU seconds of the tracer on transformers' verifier (random float32 logits): the
    default (thresholds read, the last draw pushed forward) and reading thresholds alone for every
    case, and bisecting where V * gamma^2 is at most ``bisect_up_to`` (bisection's runs grow fast
    with gamma); the laws must be equal."""
    from bench_trace_runs import _trace_only

    from specproof.trace.adapters.transformers import block_law

    block_law([[0.0, 1.0], [0.0, 0.0]], [[1.0, 0.0]])  # warm up (torch's first calls), not timed

    def case(v: int, gamma: int) -> dict[str, Any]:
        rng = np.random.default_rng(v * 10 + gamma)
        target = (rng.normal(size=(gamma + 1, v)) * 2).astype(np.float32).tolist()
        draft = (rng.normal(size=(gamma, v)) * 2).astype(np.float32).tolist()
        row: dict[str, Any] = {"v": v, "gamma": gamma}
        laws = {}
        for key, kw in (
            ("default", {}),
            ("read", {"pushforward": False}),
            ("bisect", {"read_thresholds": False, "pushforward": False}),
        ):
            if key == "bisect" and v * gamma**2 > bisect_up_to:
                continue
            start = time.process_time()
            got = _trace_only(block_law, target, draft, **kw)  # the trace alone (not the judgement after it)
            row[key + "_runs"], row[key + "_cpu"] = got.runs, time.process_time() - start
            laws[key] = got.law
        if any(law != laws["default"] for law in laws.values()):
            raise SystemExit(f"V={v} gamma={gamma}: the tracer's modes give different laws")
        return row

    out = {"by_v": [case(v, 1) for v in by_v], "by_gamma": [case(gamma_v, g) for g in by_gamma]}
    out["fit"] = {
        f"{key}_runs{what}": fit(xs, [r[key + "_runs"] * 1e-3 for r in rows])
        for key in ("default", "read")
        for what, fit, xs, rows in (
            ("_vs_v", fit_power, by_v, out["by_v"]),
            ("_base_vs_gamma", fit_base, by_gamma, out["by_gamma"]),
        )
    }
    return out


# ---------------------------------------------------------------- the checker


def checker_vs_size(
    position_v: list[int], compact_v: list[int], chain_gammas: list[int], hostile_kb: list[int]
) -> dict[str, Any]:
    """Seconds of checker.check on the document's bytes (parsing included) vs its size, for
    each kind: genuine position, compact, chain and outcome certificates, and the adversarial
    review's hostile outcome and block certificates (bench_checker.py)."""
    from bench_checker import _block_hostile, _genuine, _outcome_hostile

    from specproof import checker
    from specproof.certify.certificate import build_certificate, build_compact_certificate, dumps

    kinds: dict[str, list[tuple[int, float, bool]]] = {}

    def add(kind: str, data: bytes) -> None:
        verdict_box = []
        seconds = _seconds(lambda: verdict_box.append(checker.check(data)), budget=0.5, most=3)
        kinds.setdefault(kind, []).append((len(data), seconds, verdict_box[-1].valid))

    for v in position_v:
        rng = np.random.default_rng(v)
        wp, wq = rng.integers(1, 1000, v), rng.integers(1, 1000, v)
        p = [Fraction(int(w), int(wp.sum())) for w in wp]
        q = [Fraction(int(w), int(wq.sum())) for w in wq]
        add("genuine position certificate", dumps(build_certificate(p, q, name=f"V {v}")).encode())
    for v in compact_v:
        add(
            "genuine compact certificate",
            dumps(build_compact_certificate(_softmax(v, 0), _softmax(v, 1), name=f"V {v}", atol=1e-3)).encode(),
        )
    for gamma in chain_gammas:
        add("genuine chain certificate", _genuine(gamma, 12))
    for kb in hostile_kb:
        for name, data in _outcome_hostile(kb).items():
            add(name if name.startswith("genuine") else f"hostile outcome: {name}", data)
        for name, data in _block_hostile(kb).items():
            add("hostile block: " + name.split(",")[0], data)
    fits = {k: fit_power([b for b, _, _ in pts], [s for _, s, _ in pts]) for k, pts in kinds.items()}
    return {
        "kinds": {k: [{"bytes": b, "seconds": s, "valid": ok} for b, s, ok in pts] for k, pts in kinds.items()},
        "fit": fits,
    }


# ---------------------------------------------------------------- the main job


def main_job() -> dict[str, Any]:
    """One ``specproof prove --jobs 2`` (bench_prove.run): seconds per theorem, wall and CPU."""
    from bench_prove import run

    return run(2)


# ---------------------------------------------------------------- figures


def _machine() -> dict[str, Any]:
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "system": platform.system(),
    }


def _fmt(k: float | None, what: str = "") -> str:
    return "n/a" if k is None else f"{what}{k:.2f}"


def draw(data: dict[str, Any], out: Path) -> list[Path]:
    """One SVG per part that was measured; no dates in the files (they change only with the data)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "specproof"
    plt.rcParams["svg.fonttype"] = "none"
    machine = data["machine"]
    where = f"{machine['cpus']} x {machine['cpu']}"
    written = []

    def save(fig: Any, name: str, part: str) -> None:
        load = data["load"].get(part)
        fig.suptitle(f"{where}; load average {load[0]:.1f} -> {load[1]:.1f}" if load else where, fontsize=7)
        fig.tight_layout()
        path = out / name
        fig.savefig(path, metadata={"Date": None})
        plt.close(fig)
        written.append(path)

    if "law" in data:
        d = data["law"]
        fig, ax = plt.subplots(figsize=(6, 4))
        for key, label in (
            ("exact", "exact law + checks (from floats)"),
            ("float", "float path (NumPy)"),
            ("copy", "np.copy of one row"),
        ):
            ax.loglog(d["v"], d[key], "o-", label=f"{label}: V^{_fmt(d['fit'][key])}")
        ax.set_xlabel("V (tokens)")
        ax.set_ylabel("seconds per position")
        ax.set_title("One position vs V")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "law_vs_v.svg", "law")
    if "chain" in data:
        d = data["chain"]
        fig, ax = plt.subplots(figsize=(6, 4))
        for v, times in d["chain"].items():
            ax.semilogy(
                d["gamma"][: len(times)],
                times,
                "o-",
                label=f"chain law, V = {v}: {_fmt(d['fit']['chain_base'][v])}^gamma",
            )
        ax.semilogy(
            d["gamma"],
            d["block"],
            "s--",
            label=f"given-block law, V = {d['block_v']}: gamma^{_fmt(d['fit']['block_power'])}",
        )
        ax.set_xlabel("gamma (drafted tokens)")
        ax.set_ylabel("seconds")
        ax.set_title("Exact chain law vs gamma")
        ax.set_xticks(d["gamma"])
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "chain_vs_gamma.svg", "chain")
    if "trace" in data:
        d = data["trace"]
        fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.6))
        for ax, rows, x, xlabel in (
            (left, d["by_v"], "v", "V (gamma 1)"),
            (right, d["by_gamma"], "gamma", f"gamma (V = {d['by_gamma'][0]['v']})"),
        ):
            for key, label in (
                ("default", "default: thresholds read, last draw pushed forward"),
                ("read", "thresholds read only"),
                ("bisect", "bisection (the first tracer)"),
            ):
                pts = [(r[x], r[key + "_runs"]) for r in rows if key + "_runs" in r]
                if pts:
                    ax.plot(*zip(*pts), "o-", label=label)
            ax.set_yscale("log")
            if x == "v":
                ax.set_xscale("log", base=2)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("runs of the sampler")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fit = d["fit"]
        left.set_title(
            f"default ~ V^{_fmt(fit['default_runs_vs_v'])}, read only ~ V^{_fmt(fit['read_runs_vs_v'])}", fontsize=8
        )
        right.set_title(
            f"default ~ {_fmt(fit['default_runs_base_vs_gamma'])}^gamma, read only ~ "
            f"{_fmt(fit['read_runs_base_vs_gamma'])}^gamma",
            fontsize=8,
        )
        save(fig, "trace_runs.svg", "trace")
    if "checker" in data:
        d = data["checker"]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for kind, pts in d["kinds"].items():
            style = "o-" if kind.startswith("genuine") else "x--"
            ax.loglog(
                [p["bytes"] for p in pts], [p["seconds"] for p in pts], style, label=f"{kind}: n^{_fmt(d['fit'][kind])}"
            )
        ax.set_xlabel("document size (bytes)")
        ax.set_ylabel("seconds of checker.check")
        ax.set_title("Trusted checker vs document size (genuine: solid; hostile: dashed)")
        ax.legend(fontsize=5.5)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "checker_vs_size.svg", "checker")
    if "main_job" in data:
        d = data["main_job"]
        names = list(d["theorems"])
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.barh(names, [d["theorems"][n] for n in names])
        ax.invert_yaxis()
        ax.set_xlabel("seconds (each theorem in one of 2 worker processes)")
        ax.set_title(f"specproof prove --jobs 2: {d['wall']:.1f} s wall, {d['cpu']:.1f} s CPU", fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
        save(fig, "main_job.svg", "main_job")
    return written


# ---------------------------------------------------------------- the command

PARTS = ("law", "chain", "trace", "checker", "main_job")


def measure(quick: bool, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    """Measure the named parts (:data:`PARTS`); ``quick``: tiny sizes."""
    data: dict[str, Any] = {"machine": _machine(), "quick": quick, "load": {}}

    def part(name: str, fn: Callable[[], Any]) -> None:
        if name not in parts:
            return
        before = os.getloadavg()[0]
        start = time.perf_counter()
        data[name] = fn()
        data["load"][name] = [before, os.getloadavg()[0]]
        print(f"  {name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)

    if quick:
        part("law", lambda: law_vs_v([100, 1000]))
        part("chain", lambda: chain_vs_gamma([2], [1, 2], 10, 1.0))
        part("trace", lambda: trace_runs([2], [1], 2, 2))
        part("checker", lambda: checker_vs_size([10], [100], [1], []))
    else:
        part("law", lambda: law_vs_v([1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]))
        part("chain", lambda: chain_vs_gamma([2, 4, 8], [1, 2, 3, 4, 5], 1000, 3.0))
        part("trace", lambda: trace_runs([4, 8, 16, 32, 64], [1, 2, 3], 4, 16))
        part(
            "checker",
            lambda: checker_vs_size([100, 1000, 10_000], [1_000, 10_000, 100_000], [1, 2, 3, 4], [10, 25, 60]),
        )
        part("main_job", main_job)
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE.parent / "docs" / "figures")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds): to check that the script runs")
    ap.add_argument(
        "--parts",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="what to measure (default: all; main_job runs specproof prove, about 30-60 s)",
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"measuring into {args.out} ...", file=sys.stderr)
    data = measure(args.quick, tuple(args.parts))
    old = args.out / "scaling.json"
    if set(args.parts) != set(PARTS) and old.exists():  # keep the parts not measured this time
        kept = json.loads(old.read_text(encoding="utf-8"))
        if kept.get("quick") == args.quick:
            for name in PARTS:
                if name not in args.parts and name in kept:
                    data[name] = kept[name]
                    data["load"][name] = kept.get("load", {}).get(name)
    (args.out / "scaling.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for path in draw(data, args.out):
        print(path)


if __name__ == "__main__":
    main()
