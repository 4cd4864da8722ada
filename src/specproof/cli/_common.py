"""What every subcommand shares: argparse that raises, JSON and terminal output, errors."""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import unicodedata
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the command line's start loads neither NumPy nor tqdm
    from tqdm import tqdm

    from specproof.cli.loaders import Distributions


log = logging.getLogger("specproof")
#: Exit status when the reader of standard output went away (as for a process killed by SIGPIPE).
EXIT_BROKEN_PIPE = 141


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is raised (so that ``--json`` can report it) instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise _ParseError(f"{self.prog}: error: {message}")


class _ParseError(Exception):
    """A usage error found by argparse (exit 2)."""


def _json_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--json",
        action="store_true",
        help="print exactly one JSON object on standard output instead of text (rationals as "
        "'n/d' strings, each with its nearest float beside it as KEY_decimal; progress and "
        "errors still go to standard error); exit status unchanged",
    )


_EXACT = re.compile(r"-?[0-9]+/[0-9]+")


def _decimal(text: str) -> float | None:
    """The nearest float to an exact 'n/d' string (None past the float range)."""
    try:
        return float(Fraction(text))
    except (OverflowError, ZeroDivisionError):
        return None


def _with_decimals(obj: Any) -> Any:
    """``obj`` with a ``KEY_decimal`` beside every ``KEY`` whose value is an exact number ('n/d') or a
    list of them: the nearest float, for readers that want a number (the exact string stays)."""
    if isinstance(obj, list):
        return [_with_decimals(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict[Any, Any] = {}
    for key, value in obj.items():
        out[key] = _with_decimals(value)
        if not isinstance(key, str) or key.lstrip("-").isdigit() or f"{key}_decimal" in obj:
            continue  # a map of token ids -> mass gets its decimals as one map beside it, below
        if isinstance(value, str) and _EXACT.fullmatch(value):
            out[f"{key}_decimal"] = _decimal(value)
        elif isinstance(value, list) and value and all(isinstance(v, str) and _EXACT.fullmatch(v) for v in value):
            out[f"{key}_decimal"] = [_decimal(v) for v in value]
        elif (
            isinstance(value, dict)
            and value
            and all(isinstance(v, str) and _EXACT.fullmatch(v) for v in value.values())
        ):
            out[f"{key}_decimal"] = {k: _decimal(v) for k, v in value.items()}
    return out


def _print_json(obj: Any, indent: int | None = None) -> None:
    """One JSON object on standard output, with DEL, C1 and bidi controls escaped as well (JSON
    escapes only C0 itself), so that nothing in it is a terminal control. Every exact number ('n/d',
    alone or in a list) gets its nearest float beside it under ``KEY_decimal``."""
    text = json.dumps(_with_decimals(obj), sort_keys=True, ensure_ascii=False, indent=indent)
    print(
        "".join(f"\\u{ord(c):04x}" if c in _BIDI or "\x7f" <= c <= "\x9f" or c in "\u2028\u2029" else c for c in text)
    )


#: ``--quiet`` (every subcommand): no progress bars and no informational log lines on standard error.
QUIET = False
#: Seconds before a bar first shows: a command that ends sooner (or fails on its arguments) prints none.
DELAY = 2.0


def _bar(**kwargs: Any) -> _LazyBar:
    """A progress bar on standard error (silenced by ``--quiet``), shown once the command has run
    :data:`DELAY` seconds: redrawn in place on a terminal (and cleared at the end); to a file or
    pipe, one state every 10 s, so a long run in a log is never silent, and the final state when it
    closes, so a log never ends on a state the run went past. tqdm is imported only when the bar is
    first drawn: a command that ends sooner does not pay its import (about 0.1 s of CPU)."""
    return _LazyBar(kwargs)


class _LazyBar:
    """A tqdm bar made only once :data:`DELAY` seconds have passed since this object was: until then it counts
    (``n``, ``total``, the description), and the bar it makes starts from that count. The calls the commands make:
    ``update``, ``refresh``, ``set_description``, ``close``, iteration, ``with``."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self._kwargs = dict(kwargs)
        self._iterable = self._kwargs.pop("iterable", None)
        self.total = self._kwargs.pop("total", len(self._iterable) if hasattr(self._iterable, "__len__") else None)
        self.desc = self._kwargs.pop("desc", None)
        self.n = 0
        self.disable = QUIET
        self._shown: tqdm | None = None
        self._real()

    def _real(self) -> tqdm | None:
        """The tqdm bar, made (drawn at the count so far) once DELAY has passed; None before that."""
        if self._shown is None and not self.disable and self._clock() >= self._start + DELAY:
            self._shown = _tqdm_bar(total=self.total, desc=self.desc, initial=self.n, **self._kwargs)
        return self._shown

    def update(self, n: int = 1) -> None:
        self.n += n
        shown = self._shown
        if shown is not None:
            shown.update(n)
        else:
            self._real()  # made now, it starts from the count, this step included

    def refresh(self) -> None:
        shown = self._shown
        if shown is not None:
            shown.refresh()
        else:
            self._real()

    def set_description(self, desc: str) -> None:
        self.desc = desc
        shown = self._shown
        if shown is not None:
            shown.set_description(desc)
        else:
            self._real()

    def close(self) -> None:
        if self._shown is not None:
            self._shown.close()

    def __iter__(self) -> Any:
        for item in self._iterable if self._iterable is not None else ():
            yield item
            self.update(1)

    def __enter__(self) -> _LazyBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tqdm_bar(**kwargs: Any) -> tqdm:
    """tqdm on standard error as :func:`_bar` describes, drawn from now."""
    from tqdm import tqdm

    class _Bar(tqdm):
        """tqdm whose forced redraws (``refresh``, ``set_description``) keep its ``delay`` and count as shown:
        tqdm's own draw the bar before ``delay`` and leave ``last_print_t`` alone, so a command that ended
        sooner left the state of its last redraw (``checking: 33%``) on standard error, neither finished nor
        cleared, and ``close`` never drew the final state."""

        def refresh(self, nolock: bool = False, lock_args: Any = None) -> Any:
            start = getattr(self, "start_t", None)  # None: tqdm's first draw, in __init__ (delay <= 0)
            if self.disable or (start is not None and self._time() < start + self.delay):
                return None
            shown = super().refresh(nolock=nolock, lock_args=lock_args)
            if shown and start is not None:
                self.last_print_t = self._time()
            return shown

    tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    kwargs.setdefault("leave", not tty)
    return _Bar(file=sys.stderr, disable=QUIET, mininterval=0.1 if tty else 10.0, **kwargs)


def _check_atol(atol: float | None) -> None:
    if atol is not None and not 0 < atol < 1:  # NaN fails both comparisons
        raise _Usage(f"--atol must lie in (0, 1), got {atol!r}")


def _pairs(target: Distributions, draft: Distributions, form: str) -> list[tuple[Any, Any]]:
    """(p, q) for each pair: row i with row i, or a single row with every row; for a compact
    certificate each as float64 rows, else as exact vectors."""
    n, m = len(target.vectors), len(draft.vectors)
    if n != m and 1 not in (n, m):
        raise _Usage(f"--target holds {n} rows and --draft {m}; give the same number of rows, or one row for all")
    if target.vocab_size != draft.vocab_size:
        raise _Usage(f"--target has V = {target.vocab_size} tokens and --draft V = {draft.vocab_size}; they must match")
    rows = [_float_rows(d) if form == "compact" else list(d.vectors) for d in (target, draft)]
    return [(rows[0][min(i, n - 1)], rows[1][min(i, m - 1)]) for i in range(max(n, m))]


def _exact_float64(vec: Any) -> Any:
    """The exact vector as float64s if every value is one exactly (a one-hot row is), else None."""
    import numpy as np

    values = vec.fractions()
    floats = np.array([float(x) for x in values], dtype=np.float64)
    return floats if all(Fraction(f) == x for f, x in zip(floats.tolist(), values)) else None


def _float_rows(loaded: Distributions) -> list[Any]:
    """The float rows of a float file; an exact file's rows as float64 where exact (else None)."""
    if loaded.floats is not None:
        return list(loaded.floats)
    return [_exact_float64(v) for v in loaded.vectors]


def _terminal(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1, line and paragraph separators, bidi
    controls) written as a visible escape, so that no name in a document can move the cursor,
    erase a line or recolor what the terminal shows."""
    return "".join(_escaped(c) if c in _BIDI or unicodedata.category(c) in ("Cc", "Zl", "Zp") else c for c in text)


def _escaped(c: str) -> str:
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


#: Unicode's bidirectional controls (embeddings, overrides, isolates, marks).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _say(text: str) -> None:
    """One line of ``check`` output on standard output, control characters escaped."""
    print(_terminal(text))


class _Usage(Exception):
    """A usage error found after parsing (exit 2)."""


def _error(args: argparse.Namespace, message: str) -> int:
    """Report a usage or input error (exit 2); with --json also as the one object on stdout."""
    print(f"specproof {args.command}: error: {_terminal(message)}", file=sys.stderr)
    if getattr(args, "json", False):
        try:
            _print_json({"command": args.command, "error": message})
            sys.stdout.flush()
        except BrokenPipeError:
            return _broken_pipe()
    return 2


def _broken_pipe() -> int:
    """The reader of standard output went away (``specproof fixtures | head``): stop quietly.

    Python's documented recipe: point standard output at ``os.devnull`` so that the flush at
    interpreter exit does not fail again, and exit with a status that says so.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured)
        pass
    return EXIT_BROKEN_PIPE
