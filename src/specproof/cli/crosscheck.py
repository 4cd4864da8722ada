"""``specproof crosscheck``: the float path against the exact law."""

from __future__ import annotations

import argparse
import math
from typing import Any

from specproof.certify.crosscheck import (
    Block,
    BlockCrosscheckReport,
    CrosscheckReport,
    VariantsCrosscheckReport,
    Worst,
    crosscheck,
    crosscheck_blocks,
    crosscheck_real,
    crosscheck_variants,
)
from specproof.cli._common import _bar, _json_option, _print_json, _Usage
from specproof.laws.rational import format_fraction


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``crosscheck`` subcommand to ``sub``."""
    cc = sub.add_parser(
        "crosscheck",
        help="check the float path against the exact law on random pairs, the real pairs, or drafted blocks",
        description="Run specproof.laws.numeric against specproof.laws.exact on random rational pairs "
        "(zeros in p and q, p == q, one-hot, disjoint supports, tiny differences, V = 1) and "
        "report the worst absolute error of dist and alpha; or, with --blocks, the batched "
        "given-block law (accepted drafts, and the token emitted at each stop position) on random "
        "drafted blocks built from the same kinds of pairs. Exit 1 if it exceeds the bound.",
    )
    cc.add_argument("--pairs", type=int, default=10000, help="number of pairs (default 10000)")
    cc.add_argument("--seed", type=int, default=0, help="random seed, >= 0 (default 0)")
    cc.add_argument("--bound", type=float, default=None, help="error bound (default 1e-12)")
    cc.add_argument(
        "--backend",
        choices=("numpy", "numba"),
        default="numpy",
        help="the float path's backend for pairs and --real (default numpy; numba needs pip install 'specproof[fast]')",
    )
    mode = cc.add_mutually_exclusive_group()
    mode.add_argument(
        "--real", action="store_true", help="check every real pair shipped with specproof instead of random pairs"
    )
    mode.add_argument(
        "--blocks",
        type=int,
        metavar="N",
        help="check the batched given-block path (numeric.given_block_law) on N random drafted "
        "blocks, gamma 1..5, in batches of 8, instead of single pairs",
    )
    mode.add_argument(
        "--variants",
        type=int,
        metavar="N",
        help="check the float mirrors of multi-draft verification (numeric.multidraft_law) and of "
        "one-hot token-tree children (numeric.sibling_law) on N random pairs, k = 1..4",
    )
    _json_option(cc)


def run(args: argparse.Namespace) -> int:
    if args.blocks is None and args.variants is None and args.pairs < 1:
        raise _Usage(f"--pairs must be >= 1, got {args.pairs}")
    if args.seed < 0:
        raise _Usage(f"--seed must be >= 0, got {args.seed}")
    if args.bound is not None and not (math.isfinite(args.bound) and args.bound >= 0):
        raise _Usage(f"--bound must be a finite number >= 0, got {args.bound}")
    kwargs = {} if args.bound is None else {"bound": args.bound}
    if args.backend != "numpy" and (args.blocks is not None or args.variants is not None):
        raise _Usage(
            "--backend applies to random pairs and --real only (the block and variant laws have one backend, NumPy)"
        )
    if args.blocks is not None:
        if args.blocks < 1:
            raise _Usage(f"--blocks must be >= 1, got {args.blocks}")
        with _bar(total=args.blocks, unit="block") as bar:
            block_report = crosscheck_blocks(
                args.blocks, args.seed, progress=lambda done: bar.update(done - bar.n), **kwargs
            )
        return _crosscheck_result(
            args,
            block_report,
            {
                "mode": "blocks",
                "blocks": block_report.blocks,
                "seed": args.seed,
                "recomputed": block_report.recomputed,
                "accepted": _worst(block_report.accepted),
                "joint": _worst(block_report.joint),
                "before_rounding": _worst(block_report.before_rounding),
            },
        )
    if args.variants is not None:
        if args.variants < 1:
            raise _Usage(f"--variants must be >= 1, got {args.variants}")
        with _bar(total=args.variants, unit="pair") as bar:
            variants_report = crosscheck_variants(args.variants, args.seed, progress=lambda _: bar.update(1), **kwargs)
        return _crosscheck_result(
            args,
            variants_report,
            {
                "mode": "variants",
                "pairs": variants_report.pairs,
                "seed": args.seed,
                "dist": _worst(variants_report.dist),
                "acceptance": _worst(variants_report.acceptance),
                "accepted_at": _worst(variants_report.accepted_at),
            },
        )
    if args.real:
        with _bar(unit="pair") as bar:
            real_report = crosscheck_real(progress=lambda _: bar.update(1), backend=args.backend, **kwargs)
        return _crosscheck_result(
            args,
            real_report,
            {
                "mode": "real",
                "backend": args.backend,
                "pairs": real_report.pairs,
                "dist": _worst(real_report.dist),
                "alpha": _worst(real_report.alpha),
            },
        )
    with _bar(total=args.pairs, unit="pair") as bar:
        pairs_report = crosscheck(
            args.pairs, args.seed, progress=lambda _: bar.update(1), backend=args.backend, **kwargs
        )
    return _crosscheck_result(
        args,
        pairs_report,
        {
            "mode": "pairs",
            "backend": args.backend,
            "pairs": pairs_report.pairs,
            "seed": args.seed,
            "dist": _worst(pairs_report.dist),
            "alpha": _worst(pairs_report.alpha),
        },
    )


def _crosscheck_result(
    args: argparse.Namespace,
    report: CrosscheckReport | BlockCrosscheckReport | VariantsCrosscheckReport,
    fields: dict[str, Any],
) -> int:
    if args.json:
        _print_json({"command": "crosscheck", "passed": report.passed, "bound": report.bound, **fields})
    else:
        print(report.summary())
    return 0 if report.passed else 1


def _worst(worst: Worst) -> dict[str, Any]:
    """A worst error as JSON: exact ("n/d") and as a float, with where it occurred."""
    out: dict[str, Any] = {"error": format_fraction(worst.error), "error_float": float(worst.error)}
    pair = worst.pair
    if pair is not None:
        out["kind"] = pair.kind
        token = worst.token
        out["at"] = list(token) if isinstance(token, tuple) else token
        if isinstance(pair, Block):  # a drafted block
            out.update(gamma=len(pair.tokens), vocab_size=len(pair.target[0]), tokens=list(pair.tokens))
        else:
            out.update(
                vocab_size=len(pair.p), p=[format_fraction(x) for x in pair.p], q=[format_fraction(x) for x in pair.q]
            )
    return out
