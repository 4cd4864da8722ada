"""The ``specproof`` command line. Thin: every computation lives in the library.

Exit status: 0 proved / within bound, 1 rejected / bound exceeded, 2 usage or bad input.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from tqdm import tqdm

from . import __version__
from .crosscheck import crosscheck
from .errors import SpecProofError

log = logging.getLogger("specproof")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specproof",
        description="Exact laws and proofs for speculative-decoding verifiers.",
    )
    parser.add_argument("--version", action="version", version=f"specproof {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cc = sub.add_parser(
        "crosscheck",
        help="check the float path against the exact law on random rational pairs",
        description="Run specproof.numeric against specproof.exact on random rational pairs "
        "(zeros in p and q, p == q, one-hot, disjoint supports, tiny differences, V = 1) and "
        "report the worst absolute error of dist and alpha. Exit 1 if it exceeds the bound.",
    )
    cc.add_argument("--pairs", type=int, default=10000, help="number of pairs (default 10000)")
    cc.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    cc.add_argument("--bound", type=float, default=None, help="error bound (default 1e-12)")
    return parser


def _crosscheck(args: argparse.Namespace) -> int:
    kwargs = {} if args.bound is None else {"bound": args.bound}
    with tqdm(total=args.pairs, unit="pair", file=sys.stderr, disable=None) as bar:
        report = crosscheck(args.pairs, args.seed, progress=lambda _: bar.update(1), **kwargs)
    print(report.summary())
    return 0 if report.passed else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 rejected, 2 usage/bad input)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        if args.command == "crosscheck":
            return _crosscheck(args)
    except SpecProofError as exc:
        print(f"specproof: error: {exc}", file=sys.stderr)
        return 2
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
