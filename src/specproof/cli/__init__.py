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
:mod:`specproof.cli.corpus` (exact acceptance along a text, an engine log's counters checked).
Exit status: 0 proved / valid / within bound; 1 not proved / rejected / bound exceeded;
2 usage error or unreadable input; 141 when standard output is a pipe its reader closed.
``--json`` prints one JSON object on standard output instead of text; progress bars (tqdm) go
to standard error (redrawn on a terminal, every 10 s to a file or pipe); ``--quiet`` silences them.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any

from specproof import __version__
from specproof.cli._common import _ArgumentParser, _broken_pipe, _error, _ParseError, _print_json, _Usage
from specproof.errors import SpecProofError

#: The subcommands: name -> (its module, which has ``add_parser(sub)`` and ``run(args) -> exit
#: status``; its one-line help, as the module's own parser gives it). Only the module of the command
#: being run is imported, so ``specproof --version`` and ``specproof check`` load no NumPy, SymPy or torch.
COMMANDS = {
    "prove": ("specproof.cli.prove", "prove every theorem on the embedded inputs, or one pair from files"),
    "check": ("specproof.cli.check", "re-verify a certificate with the trusted checker alone"),
    "transcript": ("specproof.cli.transcript", "render a certificate as a Markdown transcript"),
    "fixtures": ("specproof.cli.fixtures", "show or rebuild the real-model fixtures shipped with specproof"),
    "crosscheck": (
        "specproof.cli.crosscheck",
        "check the float path against the exact law on random pairs, the real pairs, or drafted blocks",
    ),
    "audit": (
        "specproof.cli.audit",
        "the exact law of a verifier rule (coin model, comparison, residual, ...) on one pair",
    ),
    "trace": (
        "specproof.cli.trace",
        "the exact law of a real library's speculative sampler, by controlled re-execution",
    ),
    "corpus": (
        "specproof.cli.corpus",
        "exact acceptance at every position of a text; or check an engine's counters (--log)",
    ),
}


def __getattr__(name: str) -> Any:
    """A subcommand's module, imported on first use (``cli.prove``, ``cli.corpus``: as before the lazy start)."""
    if name in COMMANDS:
        return importlib.import_module(COMMANDS[name][0])
    raise AttributeError(f"module 'specproof.cli' has no attribute {name!r}")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: ``command``'s own subparser, the others by name and help line only
    (all of them, each from its module, with ``command="*"``)."""
    parser = _ArgumentParser(
        prog="specproof",
        description="Exact laws and proofs for speculative-decoding verifiers.",
    )
    parser.add_argument("--version", action="version", version=f"specproof {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_line) in COMMANDS.items():
        if command in (name, "*"):
            importlib.import_module(module).add_parser(sub)
            sub.choices[name].add_argument(
                "--quiet",
                "-q",
                action="store_true",
                help="no progress bars or informational lines on standard error (errors still)",
            )
        else:
            sub.add_parser(name, help=help_line, add_help=False)
    return parser


def _command(words: Sequence[str]) -> str | None:
    """The subcommand ``words`` name: their first word that is not an option (None if none is)."""
    first = next((w for w in words if not w.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 rejected, 2 usage/bad input, 130 interrupted)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(_command(words))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 0 on --help and --version
        return int(exc.code or 0)
    except _ParseError as exc:
        print(exc, file=sys.stderr)
        if "--json" in words:
            command = next((w for w in words if w in COMMANDS), None)
            _print_json({"command": command, "error": str(exc)})
        return 2
    from specproof.cli import _common

    _common.QUIET = bool(getattr(args, "quiet", False))
    if _common.QUIET:
        logging.getLogger().setLevel(logging.WARNING)
    try:
        code = importlib.import_module(COMMANDS[args.command][0]).run(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:
        return _broken_pipe()
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        print(f"\nspecproof {args.command}: interrupted", file=sys.stderr)
        return 130
    except _Usage as exc:
        return _error(args, str(exc))
    except (SpecProofError, OSError) as exc:  # bad input, or a file that cannot be read or written
        return _error(args, str(exc))
    except ValueError as exc:  # e.g. numbers beyond Python's int/str conversion limit
        return _error(args, f"{exc!s:.300}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
