"""``specproof corpus``: the CLI wiring (``add_parser`` and ``run``); all logic lives in the package."""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]

log = logging.getLogger("specproof.corpus")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``corpus`` subcommand to an argparse subparsers object; return its parser."""
    co = sub.add_parser(
        "corpus",
        help="exact acceptance at every position of a text; or check an engine's counters (--log)",
        description="With no arguments: the shipped text through the phone trigram model (V = 41) and "
        "SmolLM2-135M with its 3-bit draft (V = 49,152). Writes corpus.parquet (per position: alpha exact "
        "as n/d and the float path's, E[emitted] bounds per gamma), summary.json/.md and plots into --out. "
        "With --log FILE: the counter check of an engine log (see docs/corpus.md).",
    )
    co.add_argument("--text", type=Path, help="a UTF-8 text file (paragraphs are documents); default: the shipped text")
    co.add_argument(
        "--pair",
        action="append",
        dest="pairs",
        metavar="PAIR",
        help="a model pair: phone, smollm2, or TARGET,DRAFT (two HF causal LMs, names or paths); "
        "repeat for several (default: phone and smollm2)",
    )
    co.add_argument("--gamma-max", type=int, default=6, help="largest gamma (default %(default)s)")
    co.add_argument(
        "--mass-bound",
        type=float,
        default=0.05,
        help="explore off-text prefixes (any depth, largest first) until their unexplored mass, reach times "
        "the depth left below --gamma-max, is at most this (default %(default)s)",
    )
    co.add_argument(
        "--max-explore",
        type=int,
        default=16,
        help="at most this many off-text prefixes explored per position (default %(default)s)",
    )
    co.add_argument("--cost-ratio", default="1/20", help="c of Leviathan et al. Thm 3.8, exact (default %(default)s)")
    co.add_argument("--out", type=Path, default=Path("specproof-corpus"), help="output directory (default %(default)s)")
    co.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="run on Ray Data: a local cluster (num_cpus=2) or join ADDRESS",
    )
    co.add_argument("--workers", type=int, default=2, help="model actors on Ray (default %(default)s)")
    co.add_argument("--log", type=Path, help="an engine log (Parquet) to check against the exact law")
    co.add_argument(
        "--level", default="1/1000", help="false-alarm rate of the counter test, in [1e-300, 1) (default %(default)s)"
    )
    co.add_argument(
        "--bias",
        default="1/20",
        help="bias (tokens per step) at which the test's power is stated, >= 0 (default %(default)s)",
    )
    co.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    return co


#: Largest --gamma-max (the exact E[emitted] per gamma grows with every drafted prefix).
MAX_GAMMA = 32


def _check_options(args: argparse.Namespace) -> None:
    """Refuse bad options before any model or exact work (exit 2 with the option named); exact
    settings become ``"n/d"`` strings."""
    import math

    from specproof.corpus.log import false_alarm_level, power_bias
    from specproof.corpus.summary import cost_ratio
    from specproof.errors import InvalidOption
    from specproof.laws.rational import format_fraction

    if not 1 <= args.gamma_max <= MAX_GAMMA:
        raise InvalidOption(f"--gamma-max is {args.gamma_max}; give 1 to {MAX_GAMMA}")
    if not (math.isfinite(args.mass_bound) and args.mass_bound >= 0):
        raise InvalidOption(f"--mass-bound is {args.mass_bound}; give a finite number >= 0")
    if args.max_explore < 0:
        raise InvalidOption(f"--max-explore is {args.max_explore}; give a count >= 0")
    if args.workers < 1:
        raise InvalidOption(f"--workers is {args.workers}; give a count >= 1")
    args.cost_ratio = format_fraction(cost_ratio(args.cost_ratio, what="--cost-ratio"))
    args.level = format_fraction(false_alarm_level(args.level, what="--level"))
    args.bias = format_fraction(power_bias(args.bias, what="--bias"))


def run(args: argparse.Namespace) -> int:
    """Run ``specproof corpus``; 0 on success (log check: 0 passed, 1 flagged)."""
    from specproof.errors import SpecProofError

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SpecProofError("specproof corpus needs pyarrow: pip install 'specproof[corpus]'") from None
    _check_options(args)
    if args.log is not None:
        from specproof.corpus.log import check_log, render_check

        report = check_log(args.log, level=args.level, bias=args.bias)
        if args.json:
            print(json.dumps(report, sort_keys=True))
        else:
            print(render_check(report))
        return 0 if report["passed"] else 1
    from specproof.corpus.pipeline import Config, default_text, finish, plan, run_local

    cfg = Config(
        pairs=tuple(args.pairs or ("phone", "smollm2")),
        gamma_max=args.gamma_max,
        mass_bound=args.mass_bound,
        max_explore=args.max_explore,
        cost_ratio=args.cost_ratio,
    )
    text = args.text.read_text(encoding="utf-8") if args.text else default_text()
    out = args.out
    start = time.monotonic()
    try:
        units, todo = plan(text, cfg, out)
    except (OSError, ValueError) as exc:  # a model or tokenizer that does not load (Hugging Face's errors)
        if isinstance(exc, SpecProofError):
            raise
        raise SpecProofError(f"--pair {' --pair '.join(cfg.pairs)}: {type(exc).__name__}: {exc!s:.300}") from None
    if not units:
        from specproof.errors import InvalidOption

        raise InvalidOption(
            f"--text {args.text or '(the shipped text)'} has no paragraph of at least two tokens "
            f"for {', '.join(cfg.pairs)}: nothing to compute"
        )
    out.mkdir(parents=True, exist_ok=True)
    log.info(
        "specproof corpus: %d units, %d to compute (%d shards already in %s)",
        len(units),
        len(todo),
        len(units) - len(todo),
        out / "shards",
    )
    from specproof.cli._common import _bar

    bar = _bar(total=len(todo), desc="units", unit="doc")
    if args.ray is not None:
        from specproof.corpus.ray import run_ray

        run_ray(
            todo,
            cfg,
            out,
            address=None if args.ray == "local" else args.ray,
            workers=args.workers,
            progress=lambda u: bar.update(1),
        )
    else:
        nodes: list[Any] = []

        def stage(text: str, total: int | None) -> Any:  # a second bar: the current unit's stage and its nodes
            for b in nodes:
                b.close()
            nodes[:] = [_bar(total=total, desc=text, unit="node")]
            return None if total is None else (lambda: nodes[0].update(1))

        run_local(todo, cfg, out, progress=lambda u: bar.update(1), stage=stage)
        for b in nodes:
            b.close()
    bar.close()
    summary = finish(units, cfg, out)
    log.info("specproof corpus: %.1f s; wrote %s", time.monotonic() - start, out / "corpus.parquet")
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        from specproof.corpus.summary import render_markdown

        print(render_markdown(summary))
    return 0
