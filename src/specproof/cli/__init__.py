"""The ``specproof`` command line. Thin: every computation lives in the library.

One module per subcommand, each with ``add_parser(sub)`` and ``run(args)``:
:mod:`~specproof.cli.prove` (every theorem on the embedded inputs, or one pair from files),
:mod:`~specproof.cli.check` (re-verify a certificate with the trusted checker alone),
:mod:`~specproof.cli.transcript` (render a certificate as Markdown or LaTeX),
:mod:`~specproof.cli.fixtures` (list or rebuild the real-model pairs),
:mod:`~specproof.cli.crosscheck` (float path vs exact law), :mod:`~specproof.cli.audit` (the
exact law of a rule, a variant or a real pair) and :mod:`~specproof.cli.trace` (a library's
verifier or one's own sampler, traced); :mod:`~specproof.cli.loaders` reads p and q from files
and :mod:`~specproof.cli._common` holds what they share; ``corpus`` is wired from
:mod:`specproof.corpus.cli` (exact acceptance along a text, an engine log's counters checked).
Exit status: 0 proved / valid / within bound; 1 not proved / rejected / bound exceeded;
2 usage error or unreadable input; 141 when standard output is a pipe its reader closed.
``--json`` prints one JSON object on standard output instead of text; progress bars (tqdm) go
to standard error when it is a terminal.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from specproof import __version__
from specproof.cli import audit, check, crosscheck, fixtures, prove, trace, transcript
from specproof.corpus import cli as corpus
from specproof.errors import SpecProofError
from specproof.cli._common import _ArgumentParser, _ParseError, _Usage, _broken_pipe, _error, _print_json


#: The subcommands: each module has ``add_parser(sub)`` and ``run(args) -> exit status``.
COMMANDS = {"prove": prove.run, "check": check.run, "transcript": transcript.run, "fixtures": fixtures.run,
            "crosscheck": crosscheck.run, "audit": audit.run, "trace": trace.run, "corpus": corpus.run}



def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="specproof",
        description="Exact laws and proofs for speculative-decoding verifiers.",
    )
    parser.add_argument("--version", action="version", version=f"specproof {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for command in (prove, check, transcript, fixtures, crosscheck, audit, trace, corpus):
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 rejected, 2 usage/bad input)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 0 on --help and --version
        return int(exc.code or 0)
    except _ParseError as exc:
        print(exc, file=sys.stderr)
        words = list(sys.argv[1:] if argv is None else argv)
        if "--json" in words:
            command = next((w for w in words if w in COMMANDS), None)
            _print_json({"command": command, "error": str(exc)})
        return 2
    try:
        code = COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:
        return _broken_pipe()
    except _Usage as exc:
        return _error(args, str(exc))
    except (SpecProofError, OSError) as exc:  # bad input, or a file that cannot be read or written
        return _error(args, str(exc))
    except ValueError as exc:  # e.g. numbers beyond Python's int/str conversion limit
        return _error(args, f"{exc!s:.300}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
