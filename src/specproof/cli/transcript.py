"""``specproof transcript``: check a certificate, then render its Markdown or LaTeX transcript."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specproof import checker
from specproof.cli._common import _terminal, _Usage
from specproof.cli.check import _read_once
from specproof.cli.record import _check_record, _is_record
from specproof.report import transcript


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``transcript`` subcommand to ``sub``."""
    tr = sub.add_parser(
        "transcript",
        help="render a certificate as a Markdown transcript",
        description="Check the certificate, then print (or write) its transcript.",
    )
    tr.add_argument("certificate", metavar="CERT.json")
    tr.add_argument("--out", metavar="FILE", help="write here instead of standard output")
    tr.add_argument(
        "--format",
        choices=("markdown", "latex"),
        default="markdown",
        help="Markdown (default), or a standalone LaTeX document of the same transcript "
        "(needs the 'report' extra: markdown-it-py)",
    )
    tr.add_argument(
        "--plots",
        action="store_true",
        help="also draw each certificate's law as SVG beside --out (FILE-0.svg, ...) and link it "
        "(needs the 'report' extra: matplotlib)",
    )
    tr.add_argument("--log", action="store_true", help="with --plots: a log-scale probability axis")


def run(args: argparse.Namespace) -> int:
    doc, verdict = _read_once(args.certificate)
    if verdict is None and _is_record(doc):
        if _check_record(args.certificate, doc) != 0:  # a record is re-checked, never trusted
            return 1
        verdict, ok = None, True
    else:
        if verdict is None:  # (a Verdict is falsy when invalid: an unreadable file keeps its own)
            verdict = checker.check(doc)
        ok = verdict.valid
        if doc is None:  # unreadable, or not JSON: nothing to render
            assert verdict.reason is not None  # an invalid verdict names its reason
            print(
                _terminal(f"{args.certificate}: cannot render ({verdict.reason.value}): {verdict.detail}"),
                file=sys.stderr,
            )
            return 2
    figures: list[tuple[str, str]] = []
    if args.plots:
        if not args.out or verdict is None or not verdict.valid:
            raise _Usage("--plots needs --out (the figures are written beside it) and a valid certificate")
        try:
            from specproof.report.plots import figures_for

            figures = figures_for(doc, verdict.facts, Path(args.out).with_suffix(""), log=args.log)
        except ModuleNotFoundError as exc:
            raise _Usage(f"--plots needs {exc.name} (pip install 'specproof[report]')") from None
    try:
        text = transcript.render(doc, verdict, json_name=Path(args.certificate).name, figures=figures)
    except (Exception, RecursionError) as exc:  # a last resort: a clean refusal, never a traceback
        print(
            _terminal(
                f"{args.certificate}: cannot render: the document lacks or garbles {type(exc).__name__}: {exc!s:.200}"
            ),
            file=sys.stderr,
        )
        return 2
    if args.format == "latex":
        try:
            from specproof.report.latex import to_latex

            text = to_latex(text, f"Proof transcript: {Path(args.certificate).name}")
        except ModuleNotFoundError as exc:
            raise _Usage(f"--format latex needs {exc.name} (pip install 'specproof[report]')") from None
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8", newline="\n")
    else:
        sys.stdout.write(text)
    return 0 if ok else 1
