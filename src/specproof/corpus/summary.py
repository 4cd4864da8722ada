"""The corpus job's summary: mean alpha, the per-position acceptance curve, E[emitted] per gamma
exact against Leviathan et al.'s Eq. 1 at the mean alpha, the best gamma (Thm 3.8), and plots.

Means over many positions have exact denominators far too large to print (products of the rows'
denominators), so every mean is given as an exact interval on the grid of multiples of
``2**-bits``: the sum of the per-position values rounded down, and rounded up, over the count.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from ..errors import InvalidOption
from ..laws.chain import expected_tokens
from ..laws.rational import format_fraction
from .job import exact_number

__all__ = ["summarize", "write_summary", "render_markdown", "cost_ratio"]


def cost_ratio(value: Any, what: str = "cost ratio c") -> Fraction:
    """The cost ratio c of Leviathan et al. 2023, Thm 3.8 (a draft step's time over a target step's),
    exact (:func:`~specproof.corpus.job.exact_number`: ``"1/20"`` or ``"0.05"``).

    Raises
    ------
    InvalidOption
        Not an exact number, or c < 0 (the speedup ``E[emitted] / (gamma c + 1)`` needs c >= 0).
    """
    c = exact_number(value, what)
    if c < 0:
        raise InvalidOption(f"{what} is {value}; the cost ratio c is >= 0")
    return c


def _floor(x: Fraction, bits: int) -> int:
    return (x.numerator << bits) // x.denominator


def _ceil(x: Fraction, bits: int) -> int:
    return -((-x.numerator << bits) // x.denominator)


def _mean(values: Sequence[Fraction], bits: int) -> tuple[Fraction, Fraction]:
    n, scale = len(values), 1 << bits
    return (
        Fraction(sum(_floor(v, bits) for v in values), n * scale),
        Fraction(sum(_ceil(v, bits) for v in values), n * scale),
    )


def _interval(lo: Fraction, hi: Fraction) -> dict[str, Any]:
    return {"lo": format_fraction(lo), "hi": format_fraction(hi), "lo_float": float(lo), "hi_float": float(hi)}


def summarize(rows: list[dict[str, Any]], cfg: Any) -> dict[str, Any]:
    """Summary per model pair (see the module docstring); plain JSON types, rationals as ``"n/d"``.

    Raises
    ------
    InvalidOption
        If ``cfg.cost_ratio`` is not an exact rational >= 0 (:func:`cost_ratio`).
    """
    c = cost_ratio(cfg.cost_ratio)
    out: dict[str, Any] = {
        "schema": "specproof.corpus-summary/1",
        "gamma_max": cfg.gamma_max,
        "grid_bits": cfg.bits,
        "cost_ratio": format_fraction(c),
        "mass_bound": cfg.mass_bound,
        "max_explore": cfg.max_explore,
        "pairs": {},
    }
    for pair in sorted({r["pair"] for r in rows}):
        sel = [r for r in rows if r["pair"] == pair]
        alphas = [Fraction(r["alpha"]) for r in sel]
        a_lo, a_hi = _mean(alphas, cfg.bits)
        per_gamma: list[dict[str, Any]] = []
        for g in range(1, cfg.gamma_max + 1):
            lo, _ = _mean([Fraction(r["e_lo"][g - 1]) for r in sel], cfg.bits)
            _, hi = _mean([Fraction(r["e_hi"][g - 1]) for r in sel], cfg.bits)
            eq_lo, eq_hi = expected_tokens(a_lo, g), expected_tokens(a_hi, g)
            width = max(Fraction(r["e_hi"][g - 1]) - Fraction(r["e_lo"][g - 1]) for r in sel)
            per_gamma.append(
                {
                    "gamma": g,
                    "exact": _interval(lo, hi),
                    "eq1_at_mean_alpha": _interval(eq_lo, eq_hi),
                    "eq1_minus_exact": _interval(eq_lo - hi, eq_hi - lo),
                    "max_gap_per_position": float(width),
                    "speedup_thm38": _interval(lo / (g * c + 1), hi / (g * c + 1)),
                }
            )
        best = max(per_gamma, key=lambda e: (Fraction(e["speedup_thm38"]["lo"]), -e["gamma"]))
        # certain when the best lower bound beats every other gamma's upper bound
        certain = all(
            Fraction(best["speedup_thm38"]["lo"]) > Fraction(e["speedup_thm38"]["hi"])
            for e in per_gamma
            if e is not best
        )
        eq1_best = max(range(1, cfg.gamma_max + 1), key=lambda g: (expected_tokens(a_lo, g) / (g * c + 1), -g))
        by_pos: dict[int, list[float]] = {}
        for r in sel:
            by_pos.setdefault(r["position"], []).append(r["alpha_exact_float"])
        out["pairs"][pair] = {
            "positions": len(sel),
            "documents": len({r["doc"] for r in sel}),
            "mean_alpha": _interval(a_lo, a_hi),
            "float_path_max_abs_error": max(abs(r["alpha_float"] - r["alpha_exact_float"]) for r in sel),
            "explored_nodes": sum(r["explored"] for r in sel),
            "per_gamma": per_gamma,
            "best_gamma_thm38": {"gamma": best["gamma"], "certain": certain, "eq1_at_mean_alpha": eq1_best},
            "acceptance_curve": [[t, sum(v) / len(v), len(v)] for t, v in sorted(by_pos.items())],
        }
    return out


def render_markdown(summary: dict[str, Any]) -> str:
    """A short Markdown report of :func:`summarize`'s result (rendered from it, never by hand)."""
    lines = [
        "# specproof corpus",
        "",
        f"gamma = 1..{summary['gamma_max']}, cost ratio c = {summary['cost_ratio']}; means are exact "
        f"intervals on the 2^-{summary['grid_bits']} grid (printed to 6 digits).",
        "",
    ]
    for pair, s in summary["pairs"].items():
        ma = s["mean_alpha"]
        lines += [
            f"## {pair}",
            "",
            f"{s['positions']} positions in {s['documents']} documents; mean alpha = {ma['lo_float']:.6f} "
            f"(float path within {s['float_path_max_abs_error']:.1e}); {s['explored_nodes']} off-text nodes explored.",
            "",
            "| gamma | E[emitted] exact (lo..hi) | Eq. 1 at mean alpha | Eq. 1 - exact | widest position gap |",
            "|---|---|---|---|---|",
        ]
        for e in s["per_gamma"]:
            x, q, d = e["exact"], e["eq1_at_mean_alpha"], e["eq1_minus_exact"]
            lines.append(
                f"| {e['gamma']} | {x['lo_float']:.6f}..{x['hi_float']:.6f} | {q['lo_float']:.6f} | "
                f"{d['lo_float']:+.6f}..{d['hi_float']:+.6f} | {e['max_gap_per_position']:.2e} |"
            )
        b = s["best_gamma_thm38"]
        lines += [
            "",
            f"Best gamma (Leviathan et al. Thm 3.8, c = {summary['cost_ratio']}): {b['gamma']} from the exact "
            f"per-position law ({'certain' if b['certain'] else 'not separated by the bounds'}), "
            f"{b['eq1_at_mean_alpha']} from Eq. 1 at the mean alpha.",
            "",
        ]
    return "\n".join(lines)


def write_summary(summary: dict[str, Any], rows: list[dict[str, Any]], cfg: Any, out: Path) -> list[Path]:
    """Write ``summary.json``, ``summary.md`` and, if matplotlib is installed, one SVG per pair."""
    out = Path(out)
    paths = [out / "summary.json", out / "summary.md"]
    paths[0].write_text(json.dumps(summary, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    paths[1].write_text(render_markdown(summary) + "\n", encoding="utf-8")
    try:
        from ..report.plots import _pyplot, _save

        plt = _pyplot()
    except ImportError:
        return paths
    for pair, s in summary["pairs"].items():
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3))
        sel = [r for r in rows if r["pair"] == pair]
        ax1.plot(range(len(sel)), [r["alpha_exact_float"] for r in sel], lw=0.6, label="alpha at each position")
        window = 15
        run = [
            sum(r["alpha_exact_float"] for r in sel[max(0, i - window + 1) : i + 1])
            / len(sel[max(0, i - window + 1) : i + 1])
            for i in range(len(sel))
        ]
        ax1.plot(range(len(sel)), run, lw=1.2, label=f"running mean ({window})")
        ax1.set_xlabel("position along the corpus")
        ax1.set_ylabel("exact alpha")
        ax1.set_ylim(0, 1)
        ax1.legend(loc="lower right")
        gam = [e["gamma"] for e in s["per_gamma"]]
        lo = [e["exact"]["lo_float"] for e in s["per_gamma"]]
        hi = [e["exact"]["hi_float"] for e in s["per_gamma"]]
        ax2.fill_between(gam, lo, hi, alpha=0.3, label="exact bounds (unexplored mass)")
        ax2.plot(gam, lo, "o-", label="exact, lower bound")
        ax2.plot(gam, [e["eq1_at_mean_alpha"]["lo_float"] for e in s["per_gamma"]], "s--", label="Eq. 1 at mean alpha")
        ax2.set_xlabel("gamma")
        ax2.set_ylabel("E[emitted tokens per step]")
        ax2.legend()
        fig.suptitle(pair)
        path = out / f"corpus-{pair.replace('/', '_').replace(',', '_')}.svg"
        paths.append(_save(fig, path))
        plt.close(fig)
    return paths
