"""``specproof fixtures``: list or rebuild the real-model pairs shipped with specproof."""

from __future__ import annotations

import argparse
from pathlib import Path

import specproof
from specproof.cli._common import _Usage


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``fixtures`` subcommand to ``sub``."""
    fx = sub.add_parser(
        "fixtures",
        help="show or rebuild the real-model fixtures shipped with specproof",
        description="List the real (p, q) pairs shipped with specproof. With --regenerate, query the "
        "real models again (needs the [models] extra) and rewrite the fixture files in --dir.",
    )
    fx.add_argument("--regenerate", action="store_true", help="query the models and rewrite the fixtures")
    fx.add_argument(
        "--dir",
        metavar="DIR",
        default=DEFAULT_FIXTURES_DIR,
        help=f"where to write regenerated fixtures (default ./{DEFAULT_FIXTURES_DIR}, created if "
        "missing); never the installed package",
    )


#: Where ``fixtures --regenerate`` writes by default: a directory under the current one.
DEFAULT_FIXTURES_DIR = "specproof-fixtures"


def run(args: argparse.Namespace) -> int:
    from specproof.models import fixtures

    if args.regenerate:
        out = Path(args.dir)
        package = Path(specproof.__file__).resolve().parent
        where = out.resolve()
        if where == package or package in where.parents:
            raise _Usage(
                f"--dir {out} lies inside the installed specproof package ({package}); regenerate into "
                "another directory and compare the files with the shipped ones"
            )
        for path in fixtures.regenerate(out):
            print(f"wrote {path}")
        return 0
    for rp in fixtures.real_pairs():
        print(f"{rp.name}: V = {len(rp.p)}; context {rp.context!r}; draft: {rp.draft}")
    return 0
