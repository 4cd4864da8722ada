"""pytest helpers for engine developers: is MY sampler lossless, and if not, by exactly how much.

:func:`assert_law` traces a sampler (:func:`specproof.trace.tracer.trace`) and compares its exact law with
an expected one; :func:`assert_lossless` compares it with the target's law (one position: the
sampler returns a token id; a block: it returns a tuple of ids and the target is given row by row).
On a difference both raise :class:`AssertionError` with the outputs whose mass differs and the
exact TV, so a failing test says by exactly how much the sampler is off.

The exact path needs a traceable sampler (the random calls :mod:`specproof.trace.tracer` models). A
one-position sampler that asks for other randomness is tested statistically by
:func:`assert_lossless` instead (:func:`specproof.trace.conformance.conformance_test`: false-alarm rate
alpha, power at TV >= eps, both guaranteed); :func:`assert_law`, a block sampler, or
``statistical=False`` re-raise :class:`~specproof.trace.tracer.UnmodelledRandomness`, naming the call.

Examples
--------
>>> import torch
>>> def textbook(p, q):
...     x = int(torch.multinomial(q, 1))
...     if torch.rand(()) < p[x] / q[x]:
...         return x
...     return int(torch.multinomial(torch.clamp(p - q, min=0), 1))
>>> p, q = torch.tensor([0.5, 0.25, 0.25]), torch.tensor([0.25, 0.5, 0.25])
>>> assert_lossless(textbook, p, q).law
{0: Fraction(1, 2), 1: Fraction(1, 4), 2: Fraction(1, 4)}
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import InvalidDistribution, InvalidOption, SpecProofError, renamed
from specproof.laws.numtext import number_text
from specproof.trace import _passed
from specproof.trace.tracer import (
    ContinuousThreshold,
    SamplerRaised,
    Trace,
    UncontrolledRandomness,
    UnmodelledRandomness,
    trace,
)

__all__ = [
    "Comparison",
    "compare",
    "assert_law",
    "assert_lossless",
    "law_difference",
    "LossyInput",
    "search_lossy",
    "ReferenceRaised",
]

#: How many differing outputs a failure message lists.
SHOWN = 20


def _fraction(x: Any, what: str) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise SpecProofError(f"{what} is {x!r}, not a number")
    if isinstance(x, (int, str)):
        from specproof.laws.rational import to_fraction

        return to_fraction(x, what=what)
    try:
        return Fraction(float(x))  # a float, a NumPy or 0-d torch scalar: its exact binary value
    except (TypeError, ValueError):
        raise SpecProofError(f"{what} is {x!r}, not a number") from None


def _row(values: Any, what: str) -> tuple[Fraction, ...]:
    """A probability row made exact: each entry's exact value, renormalized exactly (as
    torch.multinomial is modelled). A row whose sum is off from 1 by more than float rounding is
    refused (:func:`_refuse_off_sum`)."""
    dtype = getattr(values, "dtype", None)
    if hasattr(values, "tolist"):
        values = values.tolist()
    row = [_fraction(x, f"{what}[{i}]") for i, x in enumerate(values)]
    total = sum(row, Fraction(0))
    if not row or total <= 0 or any(x < 0 for x in row):
        raise SpecProofError(f"{what} is not a nonnegative row with positive mass")
    _refuse_off_sum(total, what, dtype)
    return tuple(x / total for x in row)


def _refuse_off_sum(total: Fraction, what: str, dtype: Any = None) -> None:
    """Refuse a row whose exact sum ``total`` is off from 1 by more than float rounding: the float
    tolerance of the command line (``DEFAULT_FLOAT_ATOL``), or, for a row held in a format whose
    rounding alone moves the sum further (bfloat16: each entry within 2^-8 of itself, relative, so
    the sum within 2^-8 of 1), twice that format's unit roundoff. Judging such a row would
    renormalize it silently."""
    from specproof.laws.floats import FORMATS
    from specproof.laws.rational import DEFAULT_FLOAT_ATOL

    fmt = FORMATS.get(str(dtype).replace("torch.", ""))
    atol = max(Fraction(DEFAULT_FLOAT_ATOL), Fraction(2, 1 << fmt.precision) if fmt is not None else Fraction(0))
    if abs(total - 1) > atol:
        raise InvalidDistribution(
            f"{what} sums to {float(total):.6g}, not 1 (off by more than {float(atol):g}, "
            "more than float rounding); pass probability rows"
        )


class ReferenceRaised(SpecProofError):
    """The reference (plain) sampler of a differential comparison raised: it is named, and a search
    never reports it as the speculative step's counterexample."""


def _check_sizes(target: Any, draft: Any) -> None:
    """Refuse target and draft rows (the first position's) of different vocabulary sizes, before the sampler runs
    on them (it would raise an IndexError, or worse read past a row)."""
    from specproof.rules import faithful

    if target is None or draft is None:
        return
    sizes = []
    for rows in (target, draft):
        try:
            sizes.append(len(faithful._model(rows)(())))
        except (TypeError, SpecProofError):  # a callable that needs its own prefix, a scalar: the trace reports it
            return
    if sizes[0] != sizes[1]:
        raise InvalidDistribution(
            f"the target's row has V = {sizes[0]} tokens and the draft's V = {sizes[1]}; they must match"
        )


def _check_sums(target: Any, draft: Any) -> list[str]:
    """Refuse a target or draft row (the first position's) whose sum is off from 1 by more than float
    rounding (:func:`_refuse_off_sum`). Degenerate rows are judged, not refused. Returns a caveat for each row
    accepted but off from 1 by more than a correctly rounded softmax's rounding explains ((V + 2) units of
    roundoff of float32, or of the row's format if narrower): the judge renormalizes it, so part of the TV
    from the target's law can come from the row, not from the code's arithmetic."""
    from specproof.laws.floats import FORMATS
    from specproof.rules import faithful

    caveats = []
    for rows, what in ((target, "target"), (draft, "draft")):
        if rows is None:  # a sampler judged without a draft
            continue
        values = faithful._model(rows)(())
        if faithful.degenerate(values) is not None:
            continue
        dtype = getattr(values, "dtype", None) or getattr(rows, "dtype", None)  # a callable's row, or the stack's
        total = _exact_sum(values, what)
        _refuse_off_sum(total, what, dtype)
        fmt = FORMATS.get(str(dtype).replace("torch.", ""))
        precision = min(24, fmt.precision) if fmt is not None else 24
        explained = (len(values) + 2) * Fraction(1, 1 << precision)
        if abs(total - 1) > explained:
            caveats.append(
                f"the {what} row sums to {float(total):.10g}, not 1 (off by {float(abs(total - 1)):.3g}, more than "
                f"the {float(explained):.3g} that rounding of its {len(values)} entries explains): it was renormalized "
                "to its exact sum, so a TV of that order can come from the row, not from the code's arithmetic"
            )
    return caveats


def _exact_sum(values: Any, what: str) -> Fraction:
    """The exact sum of a row's entries: by integer arithmetic where every entry is a finite float >= 0 (long
    rows in milliseconds), else entry by entry as exact rationals (which names a bad entry)."""
    from specproof.rules import faithful
    from specproof.trace.core import exact_float_sum

    data = values.tolist() if hasattr(values, "tolist") else values
    exact = exact_float_sum(data) if isinstance(data, (list, tuple)) else None
    if exact is not None and all(n >= 0 for n in exact[0]):
        return Fraction(sum(exact[0]), exact[1])
    return sum(faithful._exact_row(values, what), Fraction(0))


def _expected(expected: Any) -> dict[Any, Fraction]:
    if isinstance(expected, Mapping):
        return {k: _fraction(v, f"expected mass of {k!r}") for k, v in expected.items()}
    if hasattr(expected, "tolist"):
        expected = expected.tolist()
    return {i: _fraction(v, f"expected mass of token {i}") for i, v in enumerate(expected)}


def law_difference(got: Mapping[Any, Fraction], want: Mapping[Any, Fraction]) -> tuple[Fraction, list]:
    """The exact TV between two laws and the outputs whose mass differs.

    Returns
    -------
    tv : Fraction
        ``(1/2) sum_o |got(o) - want(o)|`` over every output of either law.
    differing : list of (output, got mass, expected mass)
        Largest difference first.
    """
    keys = list(dict.fromkeys([*want, *got]))
    diff = [(k, got.get(k, Fraction(0)), want.get(k, Fraction(0))) for k in keys]
    diff = [d for d in diff if d[1] != d[2]]
    diff.sort(key=lambda d: -abs(d[1] - d[2]))
    return sum((abs(a - b) for _, a, b in diff), Fraction(0)) / 2, diff


def _message(title: str, tv: Fraction, diff: list, traced: Trace) -> str:
    lines = [
        f"{title}: exact TV = {number_text(tv)}; {len(diff)} output(s) differ:",
        f"  {'output':<16} {'traced':<28} expected",
    ]
    for out, a, b in diff[:SHOWN]:
        lines.append(f"  {str(out):<16} {number_text(a):<28} {number_text(b)}")
    if len(diff) > SHOWN:
        lines.append(f"  ... and {len(diff) - SHOWN} more")
    lines.append(f"(traced exactly over {traced.runs} runs; assumptions: " + "; ".join(traced.assumptions) + ")")
    return "\n".join(lines)


def assert_law(
    sampler: Callable[..., Any],
    expected_law: Any,
    *,
    args: tuple = (),
    kwargs: dict | None = None,
    numpy_rng: str | None = None,
    key: Callable[[Any], Any] | None = None,
    max_runs: int = 200_000,
    read_thresholds: bool = True,
    pushforward: bool = True,
) -> Trace:
    """Assert that ``sampler(*args, **kwargs)`` has exactly ``expected_law``.

    Parameters
    ----------
    sampler : callable
        Traceable by :func:`specproof.trace.tracer.trace`.
    expected_law : mapping of output -> rational, or a sequence of length V
        The law the outputs should have (a sequence gives token id i the mass at i); rationals as
        Fraction, int, ``"n/d"`` or a float (its exact binary value).
    args, kwargs, numpy_rng, key, max_runs, read_thresholds, pushforward
        As :func:`specproof.trace.tracer.trace`.

    Returns
    -------
    Trace
        The traced law (for further checks).

    Raises
    ------
    AssertionError
        The laws differ: the message lists the outputs whose mass differs (largest first) and the
        exact TV.
    SpecProofError
        The tracer's errors (unmodelled randomness, a non-monotone sampler ...), a bad expected law.

    Examples
    --------
    >>> import torch
    >>> assert_law(lambda: int(torch.rand(()) < 0.5), {0: "1/2", 1: "1/2"}).runs <= 31
    True
    """
    want = _expected(expected_law)
    traced = trace(
        sampler,
        args,
        kwargs,
        numpy_rng=numpy_rng,
        key=key,
        max_runs=max_runs,
        read_thresholds=read_thresholds,
        pushforward=pushforward,
    )
    tv, diff = law_difference(traced.law, want)
    if diff:
        raise AssertionError(_message("the sampler's law differs from the expected law", tv, diff, traced))
    return traced


@dataclass(frozen=True)
class Comparison:
    """A traced sampler's exact law, judged against the target and the float-ideal family.

    Attributes
    ----------
    verdict : {"lossless", "float-faithful", "lossy", "undecided"}
        See :mod:`specproof.rules.faithful`; ``float-faithful`` either by the family (``floor`` None) or by
        re-tracing the code on the same rows in float64 (``floor``, :mod:`specproof.trace.floor`);
        ``undecided``: the TV is small enough to be a float floor, the family does not explain it, and the
        widening argument could not be made (``floor.reason`` says why).
    tv : Fraction
        Exact TV from the target's law (a block: the stream's first gamma + 1 tokens against the
        target's joint law).
    tv_from_float_ideal : Fraction
        Exact TV from the nearest correct float implementation (0 unless lossy).
    arithmetic : str
        The float-ideal member matched, or the nearest one.
    law : dict
        The traced law: output -> Fraction.
    reference : dict
        The target's law (one position) or its joint law over gamma + 1 tokens.
    differing, member_differing : list of (output, traced, expected)
        Outputs whose mass differs from the reference, and from the nearest member.
    outside_support : Fraction
        Mass on outputs the target gives probability 0 (or invalid ids): always a fault.
    gamma : int or None
    trace : Trace
        Runs and the modelling assumptions of the trace.
    caveats : tuple of str
    equivalents : int or None
        How many other float-ideal members give the same law (see :class:`~specproof.rules.faithful.Judgement`);
        None where they were not counted (a float-faithful law at V above :data:`EQUIVALENTS_MAX_V`, unless
        :func:`compare` was asked to with ``equivalents=True``).
    degenerate : bool
        A target row was degenerate (NaN, inf, all zero): no valid law, every output a fault.
    floor : FloorArgument or None
        The widening argument (:class:`specproof.trace.floor.FloorArgument`: which argument, the exact TV
        as given and re-traced in float64, and the reason), when it was made or tried; None otherwise.
    """

    verdict: str
    tv: Fraction
    tv_from_float_ideal: Fraction
    arithmetic: str
    law: dict
    reference: dict
    differing: list
    member_differing: list
    outside_support: Fraction
    gamma: int | None
    trace: Trace
    caveats: tuple[str, ...] = ()
    equivalents: int | None = 0
    degenerate: bool = False
    floor: Any = None

    def report(self, *, command_line: bool = False) -> str:
        """The comparison in at most about 20 lines: verdict, TVs, the outputs that differ.

        ``command_line``: point to ``--json`` for what is left out, not to this object's attributes.
        """
        lines = [
            f"verdict: {self.verdict.upper()}; TV from the target's law {number_text(self.tv)}",
            *verdict_lines(self),
        ]
        what, field_name = ("token" if self.gamma is None else f"first {self.gamma + 1} tokens"), "differing"
        shown = self.differing
        if self.verdict == "lossy" and self.member_differing and self.gamma is not None:
            shown, what, field_name = self.member_differing, "block (vs the nearest member)", "member_differing"
        if shown:
            lines.append(
                f"  {len(shown)} output(s) differ; {what}: traced - expected, traced, expected; largest first:"
            )
            for out, a, b in shown[: SHOWN // 2]:
                lines.append(f"    {str(out):<12} {float(a - b):+.3g}  {number_text(a)}  {number_text(b)}")
            if len(shown) > SHOWN // 2:
                more = f"--json: {field_name}" if command_line else f"Comparison.{field_name}"
                lines.append(f"    ... and {len(shown) - SHOWN // 2} more ({more})")
        listed = "listed by --json" if command_line else "Comparison.trace.assumptions"
        lines.append(
            f"  traced exactly over {self.trace.runs} runs ({len(self.trace.assumptions)} modelling "
            f"assumptions: {listed})"
        )
        if getattr(self.trace, "control", ""):
            lines.append(f"  {self.trace.control}")
        lines.extend(f"  caveat: {c}" for c in self.caveats)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()


def verdict_lines(judged: Any) -> list[str]:
    """What a verdict rests on, as indented lines: the member a float-faithful law equals (the TV is
    its float floor), or why a lossy one is lossy (the nearest member, or a member it equals that emits
    tokens the target gives probability 0), then the mass outside the target's support.

    ``judged``: a :class:`Comparison` or a :class:`specproof.rules.faithful.Judgement` (the fields
    ``verdict``, ``arithmetic``, ``tv_from_float_ideal``, ``outside_support``, ``equivalents``,
    ``degenerate``).
    """
    lines = []
    floor = getattr(judged, "floor", None)
    if floor is not None:
        lines.append(f"  {floor.line()}")
        if judged.verdict != "float-faithful" and not judged.arithmetic.startswith("differential"):
            lines.append(
                f"  TV from the nearest correct float implementation {number_text(judged.tv_from_float_ideal)}: "
                f"{judged.arithmetic}"
            )
    elif judged.verdict == "float-faithful":
        lines.append(f"  equals the textbook verifier with {judged.arithmetic} exactly: the TV is its float floor")
        if judged.equivalents:
            lines.append(f"  ({judged.equivalents} other arithmetic(s) of the family give the same law on these rows)")
        elif judged.equivalents is None:
            lines.append(
                f"  (other arithmetics of the family that give the same law were not counted (they are at V <= "
                f"{EQUIVALENTS_MAX_V}, or with equivalents=True): the code's arithmetic is one of them, not "
                "necessarily the one named)"
            )
    elif judged.degenerate:
        lines.append(f"  {judged.arithmetic}")
    elif judged.verdict == "lossy" and "(a gross fault)" in judged.arithmetic:
        lines.append(f"  {judged.arithmetic}")
    elif judged.verdict == "lossy" and judged.tv_from_float_ideal == 0 and judged.outside_support:
        lines.append(
            f"  equals {judged.arithmetic} exactly, but that arithmetic emits tokens the target gives "
            "probability 0: always a fault, not a float floor"
        )
    elif judged.verdict == "lossy":
        lines.append(
            f"  TV from the nearest correct float implementation {number_text(judged.tv_from_float_ideal)}: "
            f"{judged.arithmetic}"
        )
    if judged.outside_support:
        lines.append(
            f"  mass on outputs the target gives probability 0 (or invalid ids): {number_text(judged.outside_support)}"
        )
    return lines


def _stack_length(rows: Any) -> int | None:
    """The number of rows of a [N, V] stack (None for one row or a callable)."""
    if rows is None or callable(rows):
        return None
    data = rows.tolist() if hasattr(rows, "tolist") else list(rows)
    return len(data) if data and isinstance(data[0], (list, tuple)) else None


def _shape(rows: Any, n: int | None) -> list[int]:
    """The shape of rows as the user gave them, ``[2, 3]`` or ``[3]`` (``n``: the stack's length, or None)."""
    shape = getattr(rows, "shape", None)
    if shape is not None:
        return [int(k) for k in shape]
    data = list(rows)
    return [n, len(data[0])] if n is not None else [len(data)]


def _check_stacks(target: Any, draft: Any, n_target: int | None, n_draft: int | None) -> None:
    """Refuse, before the sampler runs, a stack of rows on one side and one row on the other (no gamma given):
    a [gamma + 1, V] target with a [V] draft, or a [V] target with a [gamma, V] draft. The sampler would get
    rows of two kinds (and fail inside its own code, or run and be judged on a block it did not draw)."""
    if (n_target is None) == (n_draft is None) or (n_target is not None and n_target < 2):
        return  # a stack of one target row is refused by its length, next
    t, d = _shape(target, n_target), _shape(draft, n_draft)
    if n_target is not None:
        g = n_target - 1
        raise InvalidDistribution(
            f"the target is a stack of {n_target} rows, shape {t} (a block: gamma = {g} inferred), but the draft "
            f"is one row, shape {d}; a block needs one draft row per drafted position, shape [gamma, V] = "
            f"[{g}, {t[-1]}] (one draft row as a stack: [[...]]); for one position give one target row, shape "
            f"[{t[-1]}]"
        )
    assert n_draft is not None  # exactly one of the two is a stack, and it is not the target
    raise InvalidDistribution(
        f"the target is one row, shape {t} (one position), but the draft is a stack of {n_draft} rows, shape {d}; "
        f"a block of gamma = {n_draft} drafts needs gamma + 1 target rows, shape [{n_draft + 1}, {d[-1]}]; for "
        f"one position give one draft row, shape [{d[-1]}]"
    )


def _gamma_of(target: Any, gamma: int | None, draft: Any = None) -> int | None:
    """The block's gamma: as given, or from a [gamma + 1, V] target; the stacks must fit it."""
    if gamma is not None and (isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1):
        raise InvalidOption(f"gamma must be an integer >= 1 or None, got {gamma!r}")
    n_target, n_draft = _stack_length(target), _stack_length(draft)
    if gamma is not None and n_target is None and not callable(target):
        raise InvalidOption(
            f"gamma = {gamma} asks for a block of {gamma} drafts, which needs gamma + 1 = {gamma + 1} "
            "target rows ([gamma + 1, V]) or a callable prefix -> row; got one row [V]"
        )
    if gamma is not None and n_draft is None and draft is not None and not callable(draft):
        raise InvalidOption(
            f"gamma = {gamma} asks for a block of {gamma} drafts, which needs {gamma} draft rows "
            "([gamma, V]) or a callable prefix -> row; got one row [V]"
        )
    if gamma is None and draft is not None and not callable(draft) and not callable(target):
        _check_stacks(target, draft, n_target, n_draft)
    if n_target is not None:
        if n_target < 2:
            raise InvalidOption(f"a stack of target rows needs gamma + 1 >= 2 rows, got {n_target}")
        if gamma is not None and n_target != gamma + 1:
            raise InvalidOption(f"gamma = {gamma} needs gamma + 1 = {gamma + 1} target rows, got {n_target}")
        inferred = gamma is None
        gamma = n_target - 1
    else:
        inferred = False
    if n_draft is not None and gamma is not None and n_draft != gamma:
        how = f" (inferred from the {gamma + 1} target rows: no gamma was given)" if inferred else ""
        raise InvalidOption(f"gamma = {gamma}{how} needs {gamma} draft rows, got {n_draft}")
    return gamma


def compare(
    sampler: Callable[..., Any],
    target: Any,
    draft: Any,
    *,
    gamma: int | None = None,
    reference: Any = None,
    numpy_rng: str | None = None,
    key: Callable[[Any], Any] | None = None,
    max_runs: int = 200_000,
    check_pieces: bool = True,
    exponential_zeros: bool = False,
    progress: Callable[[int], Any] | bool | None = None,
    read_thresholds: bool = True,
    pushforward: bool = True,
    max_seconds: float | None = None,
    widen: bool = True,
    nearest: bool = False,
    equivalents: bool | None = None,
) -> Comparison:
    """Trace ``sampler(target, draft)`` and judge its exact law; never raises on a difference.

    Parameters
    ----------
    sampler : callable
        Called as ``sampler(target, draft)`` (plus the NumPy generator as ``numpy_rng``); returns
        a token id (one position) or a sequence of ids (a block of 1 to gamma + 1 tokens).
    target : tensor, array or sequence [V] or [gamma + 1, V], or callable ``prefix -> row``
        The target's rows as the sampler gets them; their exact values divided by their exact
        sum are the target's law. Row i of a stack is the target after i tokens; a callable gives
        the row after each prefix (a context-dependent target: a position-offset fault then
        shows). Passed to the sampler as is, as :func:`~specproof.trace.tracer.trace` passes its arguments
        (Python lists stay lists, as code in pure Python wants them; a torch sampler needs tensors).
    draft : the same forms ([gamma, V] for a stack), or None
        Passed to the sampler as is; the float-ideal family is computed from it (None: not). A stack on one
        side needs a stack on the other: a [gamma + 1, V] target with a [V] draft (or a [V] target with a
        [gamma, V] draft) is refused before the sampler runs.
    gamma : int, optional
        The number of drafts of a block; inferred from a [gamma + 1, V] target, needed with a
        callable target for a block (None: one position).
    reference : mapping or callable, optional
        An expected law to compare with instead of the target's, or the engine's own plain
        (non-speculative) sampler ``reference(row) -> token id``, traced on the target's row at
        each prefix: the differential test, whose reference is the law of gamma + 1 tokens that
        the plain sampler draws one after another. Either way the verdict is ``lossless`` iff the
        laws are equal (a block: the stream's first gamma + 1 tokens), else ``lossy`` with the
        exact TV; the float-ideal family is not used (a float floor against a reference sampler
        is not separated).
    numpy_rng, key, max_runs, check_pieces, exponential_zeros, read_thresholds, pushforward, max_seconds
        As :func:`specproof.trace.tracer.trace` (``max_seconds``: a time budget for the trace of the
        sampler, past it :class:`~specproof.trace.tracer.TraceTimeout`; ``exponential_zeros=True``: PyTorch's CPU
        ``exponential_`` returning -0.0 is in the law of an exponential race; ``read_thresholds``
        reads a coin's breakpoints from its comparisons, default True; ``pushforward`` reads a last
        ``torch.multinomial`` draw that is only moved into the output at every category from one run,
        default True).
    progress : callable or bool, optional
        Called with 1 after each run of the sampler; True shows a progress bar on standard error
        (tqdm, only on a terminal).
    widen : bool, optional
        Default True: a ``lossy`` verdict with a small TV (at most
        :func:`specproof.trace.floor.gross_threshold` of the rows' format, nothing outside the target's
        support), against the target's law or a callable ``reference``, is argued again by re-tracing the
        same code (and the reference) on the same rows widened to float64, PyTorch's default dtype float64
        (:mod:`specproof.trace.floor`): a TV that falls with the unit roundoff is a float artefact
        (``float-faithful``), one that does not is ``lossy``; where the argument cannot be made
        (rows already float64, code that raises or keeps a narrower format on float64 rows) the
        verdict is ``undecided``. ``Comparison.floor`` says which argument was used. False: no re-trace.
    nearest : bool, optional
        Default False: a gross fault (a TV from the target above :func:`gross_tv`, farther than any
        correct float code is) is ``lossy`` without scanning the float-ideal family for its nearest
        member (minutes on a block); ``arithmetic`` says so and ``tv_from_float_ideal`` is the TV from
        the target. True: always name the nearest member. A scan past a few seconds shows its progress
        on standard error.
    equivalents : bool, optional
        After a float-faithful match, count the other members that give the same law
        (``Comparison.equivalents``): that takes every member's law, seconds at V = 64. Default None:
        count where V is at most :data:`EQUIVALENTS_MAX_V`; True: always; False: never. Not counted,
        ``Comparison.equivalents`` is None and the report says so.

    Returns
    -------
    Comparison

    Raises
    ------
    SpecProofError
        The tracer's errors (unmodelled randomness, too many runs, a sampler that raised) and bad
        rows (InvalidDistribution: a row whose sum is off from 1 by more than float rounding, target and
        draft rows of different sizes, or a stack of rows against one row, both shapes named);
        never for a law that differs. A sampler that raised on rows given as Python lists, using them as
        tensors or arrays (SamplerRaised), is told that the lists reached it as given and how to pass tensors.
    ReferenceRaised
        A callable ``reference`` raised (it is named as the reference, not as ``sampler``).

    Notes
    -----
    A *degenerate* target row (a NaN or infinite entry, or all zero:
    :func:`specproof.rules.faithful.degenerate`) is not refused: the sampler is traced on it as given and
    its law is judged against no valid law, so the verdict is ``lossy`` with TV 1, every emitted
    output (ids outside [0, V) included) is in ``differing`` and ``outside_support`` is 1, and the
    report names the row. A sampler that raises on such a row raises
    :class:`~specproof.trace.tracer.SamplerRaised` here, as it would in the engine. With a callable
    ``reference`` the rows are not checked (they may be logits): the plain sampler is the reference.

    References
    ----------
    Leviathan et al. 2023, Algorithm 1 and Appendix A.1; the family: :mod:`specproof.rules.faithful`.

    Examples
    --------
    >>> import torch
    >>> def textbook(p, q):
    ...     x = int(torch.multinomial(q, 1))
    ...     if torch.rand(()) < p[x] / q[x]:
    ...         return x
    ...     return int(torch.multinomial(torch.clamp(p - q, min=0), 1))
    >>> c = compare(textbook, torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3]))
    >>> c.verdict, c.tv_from_float_ideal, float(c.tv) < 1e-8
    ('float-faithful', Fraction(0, 1), True)
    >>> c.arithmetic
    'u < fl32(p/q), residual fl32(max(p - q, 0)) as weights, float32 coin on [0, 1)'
    """
    from specproof.rules.faithful import judge

    gamma = _gamma_of(target, gamma, draft)
    _check_sizes(target, draft)
    row_caveats: list[str] = []
    if reference is None:  # judged against the target's law: the rows must be probability rows
        row_caveats = _check_sums(target, draft)
    bar = None
    if progress is True:
        import sys

        from tqdm import tqdm

        bar = tqdm(unit="run", file=sys.stderr, disable=None, desc="tracing")
    on_run: Callable[[int], Any] | None
    if bar is not None:
        on_run = bar.update
    else:
        assert progress is not True  # True made the bar
        on_run = progress or None
    try:
        with bar if bar is not None else contextlib.nullcontext():
            traced = trace(
                sampler,
                (target, draft),
                numpy_rng=numpy_rng,
                key=key,
                max_runs=max_runs,
                check_pieces=check_pieces,
                exponential_zeros=exponential_zeros,
                progress=on_run,
                read_thresholds=read_thresholds,
                pushforward=pushforward,
                max_seconds=max_seconds,
            )
    except SamplerRaised as exc:
        raise _on_lists(exc, target, draft) from exc.__cause__
    if gamma is not None:
        single = next((o for o in traced.law if not isinstance(o, tuple)), None)
        if single is not None:
            raise SpecProofError(
                f"gamma = {gamma} asks for a block, but the sampler returned one token ({single!r}), "
                "not a sequence of 1 to gamma + 1 tokens: it verifies one position; trace it "
                "without gamma"
            )
    if callable(reference):
        result = _differential(traced, reference, target, draft, gamma, numpy_rng, max_runs, check_pieces)
    elif reference is not None:
        want = _expected(reference)
        tv, diff = law_difference(traced.law, want)
        return Comparison(
            "lossless" if not diff else "lossy",
            tv,
            tv,
            "not compared: an expected law was given",
            traced.law,
            want,
            diff,
            [],
            Fraction(0),
            gamma,
            traced,
        )
    else:
        count = equivalents
        if count is None:
            count = _vocabulary(target) <= EQUIVALENTS_MAX_V
        j = judge(
            traced.law,
            target,
            draft,
            gamma=gamma,
            count_equivalents=count,
            gross=None if nearest else gross_tv(gamma),
            progress=_ScanProgress(),
        )
        counted = j.equivalents if count or gamma is not None or j.verdict != "float-faithful" else None
        result = Comparison(
            j.verdict,
            j.tv,
            j.tv_from_float_ideal,
            j.arithmetic,
            traced.law,
            j.reference,
            j.differing,
            j.member_differing,
            j.outside_support,
            gamma,
            traced,
            j.caveats,
            counted,
            j.degenerate,
        )
    if row_caveats:
        result = dataclasses.replace(result, caveats=(*result.caveats, *row_caveats))
    if widen:
        result = _argue_floor(
            result,
            sampler,
            target,
            draft,
            gamma,
            reference,
            dict(
                numpy_rng=numpy_rng,
                key=key,
                max_runs=max_runs,
                check_pieces=check_pieces,
                exponential_zeros=exponential_zeros,
                read_thresholds=read_thresholds,
                pushforward=pushforward,
                max_seconds=max_seconds,
            ),
        )
    return result


def _on_lists(exc: SamplerRaised, target: Any, draft: Any) -> SamplerRaised:
    """``exc``, said plainly where the sampler raised on rows given as Python lists that it used as tensors or
    arrays: :func:`compare` passes the rows to the sampler as given (as :func:`~specproof.trace.tracer.trace`
    does, and as a sampler in pure Python wants them), so the user's lists reached code that wanted tensors."""
    cause = exc.__cause__
    lists = [what for what, rows in (("target", target), ("draft", draft)) if isinstance(rows, (list, tuple))]
    if not lists or not isinstance(cause, (TypeError, AttributeError)):
        return exc
    if not any(f"'{kind}'" in str(cause) or f"not {kind}" in str(cause) for kind in ("list", "tuple")):
        return exc
    given = (
        "the target and the draft were given as Python lists"
        if len(lists) > 1
        else f"the {lists[0]} was given as a Python list"
    )
    return SamplerRaised(
        f"{exc}: {given}, and compare passes rows to the sampler as given (as "
        "specproof.trace.trace does); this sampler uses them as tensors or arrays: pass torch.tensor(rows, "
        "dtype=torch.float32) (the dtype your engine uses; torch.float64 keeps a Python float's value) or "
        "numpy.asarray(rows)"
    )


#: The largest V at which :func:`compare` counts, by default, the other members giving a float-faithful law.
EQUIVALENTS_MAX_V = 16


def _vocabulary(target: Any) -> int:
    """V of the target's first row (0 where it cannot be read: then the equivalents are counted)."""
    from specproof.rules import faithful

    try:
        return len(faithful._model(target)(()))
    except Exception:  # noqa: BLE001 - a callable that fails: the judgement reports it
        return 0


def gross_tv(gamma: int | None) -> Fraction:
    """The TV from the target above which :func:`compare` calls a law ``lossy`` without naming the nearest
    member of the float-ideal family (scanning its members' laws takes minutes on a block): the float
    floor of the narrowest format, :func:`specproof.trace.floor.gross_threshold` of bfloat16 (2^-6), times
    the gamma + 1 rows a block's law is made from. No correct float code is that far from the target.

    Examples
    --------
    >>> gross_tv(None), gross_tv(2)
    (Fraction(1, 64), Fraction(3, 64))
    """
    from specproof.trace import floor

    return floor.gross_threshold("bfloat16") * (1 + (gamma or 0))


class _ScanProgress:
    """Progress of the float-family scan on standard error: one line every few seconds once it has taken
    :data:`SCAN_QUIET` seconds of wall time (members done of all, seconds so far, an estimate of the rest)."""

    def __init__(self) -> None:
        import time

        self.clock = time.monotonic
        self.start = self.clock()
        self.shown = self.start

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if now - self.start < SCAN_QUIET or now - self.shown < SCAN_EVERY or done == 0:
            return
        import sys

        self.shown = now
        spent = now - self.start
        left = spent / done * (total - done)
        print(
            f"judging: {done}/{total} float-family members' laws computed ({spent:.0f} s; up to about {left:.0f} s "
            "more)",
            file=sys.stderr,
            flush=True,
        )


#: Seconds of the float-family scan before its progress is shown, and between two lines.
SCAN_QUIET, SCAN_EVERY = 3.0, 5.0

WIDE_FORMAT = "float64"

#: What a small lossy TV rests on where narrower arithmetic was looked for (issue 33, item 3).
_UNWATCHED = (
    "lossy on the assumption that the code computes in its rows' format ({fmt}) or wider: no narrower "
    "PyTorch tensor was made in its code, but narrower arithmetic outside PyTorch (NumPy's "
    "astype(float32), a compiled kernel) is not watched, and would read lossy here"
)


def _argue_floor(
    result: Comparison,
    sampler: Callable[..., Any],
    target: Any,
    draft: Any,
    gamma: int | None,
    reference: Any,
    options: dict,
) -> Comparison:
    """A small ``lossy`` TV argued by re-tracing in float64 (:mod:`specproof.trace.floor`): the verdict
    becomes ``float-faithful`` (it fell with the unit roundoff), stays ``lossy`` (it did not) or becomes
    ``undecided`` (the argument could not be made); a gross TV, an output outside the target's support or
    a degenerate row keep ``lossy`` without a re-trace."""
    import dataclasses

    from specproof.rules.faithful import judge
    from specproof.trace import floor

    if result.verdict != "lossy" or result.degenerate or result.outside_support or result.tv == 0:
        return result
    fmt = floor.row_format(target) or "float64"
    err = floor.sum_error(target, draft)
    codes = floor.code_of(sampler) | (floor.code_of(reference) if callable(reference) else set())
    if result.tv > floor.gross_threshold(fmt, err):
        if result.tv > floor.gross_threshold("bfloat16"):  # gross in any format
            return result
        # Gross for the rows' format, but the code may compute in a narrower one (float64 rows made float32
        # inside it): its floor is that format's. Trace it once more, watching for narrower torch tensors.
        with floor.narrower_than(fmt, codes) as found:
            again = trace(sampler, (target, draft), **options)
            if callable(reference):
                _differential(
                    again,
                    reference,
                    target,
                    draft,
                    gamma,
                    options["numpy_rng"],
                    options["max_runs"],
                    options["check_pieces"],
                )
        inner = floor.narrowest({f for f, _ in found})
        if inner is not None and result.tv <= floor.gross_threshold(inner, err):
            argued = floor.FloorArgument(
                "widening",
                "not made",
                fmt,
                "",
                result.tv,
                None,
                None,
                f"the code computes in {inner} on {fmt} rows ({found[0][1]}), and its TV is within {inner}'s "
                f"float floor range; its rows cannot be widened past it (make its dtype follow the rows' to have "
                "it argued)",
            )
            caveat = (
                f"lossy on the textbook float family alone: no member in consistent arithmetic explains the "
                f"law, but the code computes in {inner} on {fmt} rows, so correct code outside that family "
                f"would read lossy here too"
            )
            return dataclasses.replace(result, floor=argued, caveats=(*result.caveats, caveat))
        return dataclasses.replace(result, caveats=(*result.caveats, _UNWATCHED.format(fmt=fmt)))

    def retrace(wide_target: Any, wide_draft: Any) -> tuple[Fraction, int]:
        wide = trace(sampler, (wide_target, wide_draft), **options)
        if callable(reference):
            c = _differential(
                wide,
                reference,
                wide_target,
                wide_draft,
                gamma,
                options["numpy_rng"],
                options["max_runs"],
                options["check_pieces"],
            )
            return c.tv, c.trace.runs
        j = judge(wide.law, wide_target, None, gamma=gamma)
        if j.outside_support:
            raise SpecProofError(
                f"on float64 rows the code emits outputs the target gives probability 0 "
                f"(mass {number_text(j.outside_support)})"
            )
        return j.tv, wide.runs

    argued = floor.argue(result.tv, target, draft, retrace, (SpecProofError,), codes)
    verdict = {"float artefact": "float-faithful", "fault": "lossy", "not made": "undecided"}[argued.outcome]
    if verdict == "lossy":
        # the argument re-traced the code on its rows widened: the format it is assumed to compute in is the wide one
        wide = f"{WIDE_FORMAT} in the re-trace, its {fmt} rows widened" if fmt != WIDE_FORMAT else fmt
        result = dataclasses.replace(result, caveats=(*result.caveats, _UNWATCHED.format(fmt=wide)))
    arithmetic = result.arithmetic
    if verdict == "float-faithful":
        arithmetic = (
            f"the same code re-traced on the same rows' laws in {argued.wide} (a float artefact: its TV fell "
            f"with the unit roundoff; not a member of the family)"
        )
    return dataclasses.replace(result, verdict=verdict, arithmetic=arithmetic, floor=argued)


def _differential(
    traced: Trace,
    plain: Callable[..., Any],
    target: Any,
    draft: Any,
    gamma: int | None,
    numpy_rng: str | None,
    max_runs: int,
    check_pieces: bool,
) -> Comparison:
    """A speculative step's law against the plain sampler's, drawn token by token on the same rows."""
    from specproof.rules.faithful import _model, _outside_support, _stream, _token

    tmodel = _model(target)
    if not callable(target) and hasattr(target, "shape") and hasattr(target, "__getitem__"):
        # a tensor or an array: the plain sampler gets its rows as the same kind, not as lists
        stack = len(target.shape) > 1
        tmodel = lambda prefix: target[min(len(prefix), target.shape[0] - 1)] if stack else target  # noqa: E731
    laws: dict[tuple, tuple[Fraction, ...]] = {}
    runs = traced.runs

    def plain_row(prefix: tuple) -> tuple[Fraction, ...]:
        nonlocal runs
        if prefix not in laws:
            row = tmodel(prefix)
            size = len(row.tolist() if hasattr(row, "tolist") else row)
            try:
                got = trace(plain, (row,), numpy_rng=numpy_rng, max_runs=max_runs, check_pieces=check_pieces)
            except SamplerRaised as exc:  # the reference's fault, not the speculative step's
                raise ReferenceRaised(
                    f"the reference sampler raised after {prefix}: {str(exc).removeprefix('the sampler raised ')}"
                ) from exc
            runs += got.runs
            law = [Fraction(0)] * size
            for out, m in got.law.items():
                t = _token(out)
                if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < size:
                    raise SpecProofError(
                        f"the reference sampler emitted {t!r} after {prefix}, not a token id in [0, {size})"
                    )
                law[t] += m
            laws[prefix] = tuple(law)
        return laws[prefix]

    if gamma is None:
        got_law: dict[Any, Fraction] = {}
        for out, m in traced.law.items():
            got_law[_token(out)] = got_law.get(_token(out), Fraction(0)) + m
        want = {i: m for i, m in enumerate(plain_row(())) if m}
        tv, diff = law_difference(got_law, want)
        outside = sum((m for o, m in got_law.items() if o not in want), Fraction(0))
    else:
        blocks = {(b if isinstance(b, tuple) else (b,)): m for b, m in traced.law.items()}
        v = len(plain_row(()))
        block_tv, mine, want = _stream(blocks, plain_row, gamma, v)
        assert block_tv is not None  # None only for a stream alone (stream_only)
        tv = block_tv
        diff = law_difference(mine, want)[1] if want else []
        outside = _outside_support(blocks, plain_row, gamma, v)
    result = Trace(traced.law, runs, traced.assumptions, traced.calls)
    return Comparison(
        "lossless" if tv == 0 else "lossy",
        tv,
        tv,
        "differential: against the plain sampler's law (the float-ideal family is not used)",
        traced.law,
        want,
        diff,
        [],
        outside,
        gamma,
        result,
    )


def assert_lossless(
    sampler: Callable[..., Any],
    target: Any,
    draft: Any,
    *,
    gamma: int | None = None,
    float_floor: str = "allow",
    max_tv: Any = None,
    numpy_rng: str | None = None,
    key: Callable[[Any], Any] | None = None,
    max_runs: int = 200_000,
    check_pieces: bool = True,
    progress: Callable[[int], Any] | bool | None = None,
    statistical: bool = False,
    eps: float = 0.05,
    alpha: float = 1e-6,
    power: float = 0.95,
    max_seconds: float | None = None,
) -> Any:
    """Assert that the verifier ``sampler(target, draft)`` emits the target's law.

    Parameters
    ----------
    sampler, target, draft, gamma, numpy_rng, key, max_runs, check_pieces, progress, max_seconds
        As :func:`compare`.
    float_floor : {"allow", "fail"}
        ``"allow"`` (default): a ``float-faithful`` sampler passes (it is the textbook verifier
        in float arithmetic, off only by the float floor). ``"fail"``: only exactly lossless
        passes.
    max_tv : rational or float, optional
        Also pass a sampler whose exact TV from the target is at most this (a stated tolerance;
        an output outside the target's support still fails).
    statistical : bool, optional
        Default False: a sampler that cannot be traced raises
        :class:`~specproof.trace.tracer.UnmodelledRandomness` (or
        :class:`~specproof.trace.tracer.ContinuousThreshold`: Gumbel-max on uniforms outside the forms traced
        as a race, a comparison of two uniforms). True: for one position, fall back to
        :func:`specproof.trace.conformance.conformance_test` (false-alarm rate ``alpha``, power
        ``power`` at TV >= ``eps``; a sampler off by less than ``eps`` may pass).
    eps, alpha, power : float
        The statistical test's tolerance, false-alarm rate and power.

    Returns
    -------
    Comparison or ConformanceResult
        The exact comparison, or the statistical result when the fallback ran.

    Raises
    ------
    AssertionError
        The sampler fails: the message (at most about 20 lines) gives the verdict, the TV from
        the target and from the nearest correct float implementation (decimals first, exact
        after), mass outside the target's support, and the outputs that differ (for a block:
        the joint law, not per-position marginals).
    SpecProofError
        The tracer's errors; bad rows; a bad ``float_floor``.

    Examples
    --------
    >>> import torch
    >>> def accept_all(p, q):
    ...     return int(torch.multinomial(q, 1))
    >>> assert_lossless(accept_all, torch.tensor([0.5, 0.5]), torch.tensor([0.75, 0.25]))
    Traceback (most recent call last):
    ...
    AssertionError: the sampler is not lossless: verdict: LOSSY; TV from the target's law 0.25 (1/4)
    ...
    """
    __tracebackhide__ = True
    if float_floor not in ("allow", "fail"):
        raise SpecProofError(f"float_floor is {float_floor!r}, not 'allow' or 'fail'")
    bound = None if max_tv is None else _fraction(max_tv, "max_tv")
    try:
        result = compare(
            sampler,
            target,
            draft,
            gamma=gamma,
            numpy_rng=numpy_rng,
            key=key,
            max_runs=max_runs,
            check_pieces=check_pieces,
            progress=progress,
            max_seconds=max_seconds,
        )
    except (UnmodelledRandomness, ContinuousThreshold) as exc:
        if not statistical:
            message = (
                f"{exc}; pass statistical=True to test it statistically instead (it then detects only a TV "
                f"of at least eps = {eps})"
            )
            if isinstance(exc, UncontrolledRandomness):  # keep what drew and where
                raise UncontrolledRandomness(message, exc.source, exc.where) from None
            if isinstance(exc, ContinuousThreshold):  # Gumbel-max outside the race forms, u2 < f(u1): no exact route
                raise ContinuousThreshold(message) from None
            raise UnmodelledRandomness(message) from None
        rows = target.tolist() if hasattr(target, "tolist") else list(target)
        if _gamma_of(target, gamma) is not None or numpy_rng is not None or callable(target):
            raise
        return _statistical(sampler, target, draft, rows, key, eps, alpha, power, str(exc))
    ok = result.verdict == "lossless" or (result.verdict == "float-faithful" and float_floor == "allow")
    if not ok and bound is not None:
        ok = result.tv <= bound and result.outside_support == 0
    if not ok:
        why = " (float_floor='fail')" if result.verdict == "float-faithful" else ""
        raise AssertionError(f"the sampler is not lossless{why}: {result.report()}")
    _passed.PASSED.append(_passed_line(result))
    return result


def _passed_line(result: Comparison) -> str:
    """What a passing :func:`assert_lossless` passed, in one line (pytest's "specproof verdicts")."""
    line = f"{result.verdict}, TV {number_text(result.tv)} from the target's law"
    if result.verdict == "float-faithful" and result.floor is not None:
        line += (
            f" (a float floor by re-tracing the same code in {result.floor.wide}: TV "
            f"{number_text(result.floor.tv_wide)} there)"
        )
    elif result.verdict == "float-faithful":
        line += f" (the float floor of {result.arithmetic})"
    elif result.verdict == "lossy":
        line += f" (within max_tv; TV {number_text(result.tv_from_float_ideal)} from {result.arithmetic})"
    for caveat in result.caveats:  # what the verdict rests on, as the report says it (a renormalized row, ...)
        line += f"; caveat: {caveat}"
    return line


@dataclass(frozen=True)
class LossyInput:
    """The smallest input found on which a traced sampler is ``lossy``.

    Attributes
    ----------
    p, q : tuple of Fraction
        The rows as exact rationals (given to the sampler rounded to its dtype).
    comparison : Comparison or None
        The judgement on them (its ``tv`` is the exact TV from the target); None when the
        sampler raised on them.
    pairs : int
        How many pairs were tried, this one included.
    raised : str or None
        The error the sampler raised on these valid rows (a fault too: a verifier must not fail
        on a distribution), else None.
    skipped : tuple of (p, q, str)
        The pairs tried before this one on which the sampler raised (the search goes on past them),
        each with the error; empty when it raised on none.
    """

    p: tuple[Fraction, ...]
    q: tuple[Fraction, ...]
    comparison: Comparison | None
    pairs: int
    raised: str | None = None
    skipped: tuple = ()


def _compositions(total: int, parts: int):
    """Tuples of ``parts`` integers >= 0 summing to ``total``, in lexicographic order (lazily, O(parts)
    per tuple)."""
    ks = [0] * parts
    ks[-1] = total
    while True:
        yield tuple(ks)
        # the successor: raise the entry just before the last nonzero one (not the first entry's
        # own), move what is left of the suffix to the end
        last = next((i for i in range(parts - 1, 0, -1) if ks[i]), None)
        if last is None:
            return
        rest = ks[last] - 1
        ks[last] = 0
        ks[last - 1] += 1
        ks[-1] += rest


def _small_rows(v: int, max_denominator: int):
    """Distributions of V = ``v`` entries k/d, by d, then in lexicographic order (edge rows first:
    one-hot and zero entries come with the small d); each row once, at its smallest denominator.
    Lazy: a huge V yields its first rows at once."""
    for d in range(1, max_denominator + 1):
        for ks in _compositions(d, v):
            if math.gcd(d, *ks) == 1:  # else the same row came at the denominator d / gcd
                yield d, tuple(Fraction(k, d) for k in ks)


def _small_pairs(v: int, max_denominator: int):
    """Pairs of :func:`_small_rows` by the larger of their denominators, then the first row's order,
    then the second's (lazily)."""
    for m in range(1, max_denominator + 1):
        for da, a in _small_rows(v, m):
            for db, b in _small_rows(v, m):
                if max(da, db) == m:
                    yield a, b


def search_lossy(
    sampler: Callable[..., Any],
    *,
    gamma: int | None = None,
    max_vocab: int = 4,
    max_denominator: int = 4,
    dtype: str = "float32",
    array: str = "torch",
    numpy_rng: str | None = None,
    max_pairs: int = 5_000,
    max_runs: int = 200_000,
    progress: Callable[[int], Any] | None = None,
    reference: Callable[..., Any] | None = None,
) -> LossyInput | None:
    """The smallest small rational input on which ``sampler`` is judged ``lossy`` (as
    :func:`specproof.rules.audit.search_counterexample` does for rules).

    Pairs (p, q) are tried by vocabulary size V = 2..``max_vocab``, then by the larger of their
    denominators (1..``max_denominator``), then in order; each row is given to the sampler as a
    tensor (or array) of ``dtype`` (so 1/3 arrives as fl(1/3)), the same row at every position of
    a block of ``gamma`` drafts. ``float-faithful`` pairs are not counterexamples (by the family, or argued
    by re-tracing in float64: :mod:`specproof.trace.floor`), nor are ``undecided`` ones (a small TV the
    argument could not be made for, as on float64 rows: the search goes on past them).

    Parameters
    ----------
    sampler : callable
        As :func:`compare`.
    gamma : int, optional
        Drafts per block (None: one position).
    max_vocab, max_denominator : int
        The search space (defaults 4 and 4).
    dtype : str
        ``float16``, ``bfloat16`` (torch only), ``float32`` or ``float64``.
    array : {"torch", "numpy"}
        What the rows are given as.
    numpy_rng, max_runs
        As :func:`compare`.
    max_pairs : int
        Stop after this many pairs (default 5,000).
    progress : callable, optional
        Called with 1 after each pair.
    reference : callable, optional
        The engine's plain (non-speculative) sampler ``reference(row) -> token id``: each pair is
        judged by the differential test of :func:`compare` (the speculative step's law against
        the plain sampler's on the same target rows, exact, no float-ideal family), so the search
        finds the smallest input on which the two differ, float floors included.

    Returns
    -------
    LossyInput or None
        The first pair on which the sampler is lossy (pairs on which it raises are skipped and listed
        in ``LossyInput.skipped``); where there is none but the sampler raised on some, the first of
        those (``comparison`` None, ``raised`` its error: a verifier must not fail on a distribution);
        None if it neither is lossy nor raises within the limits.

    Raises
    ------
    SpecProofError
        A bad dtype or array kind; a ``reference`` that is not callable; the tracer's errors on a
        pair (a sampler that cannot be traced is not searched around), and the reference
        sampler's, named (it emits no token id, say).

    Examples
    --------
    >>> import torch
    >>> def accept_all(p, q):
    ...     return int(torch.multinomial(q, 1))
    >>> found = search_lossy(accept_all)
    >>> found.p, found.q, found.comparison.tv
    ((Fraction(0, 1), Fraction(1, 1)), (Fraction(1, 1), Fraction(0, 1)), Fraction(1, 1))
    """
    if gamma is not None and (isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1):
        raise InvalidOption(f"gamma must be an integer >= 1 or None, got {gamma!r}")
    if reference is not None and not callable(reference):
        raise SpecProofError(
            f"reference must be the plain sampler, a callable row -> token id, not "
            f"{type(reference).__name__} (a fixed expected law does not fit every searched row)"
        )
    for name, value, least in (
        ("max_vocab", max_vocab, 2),
        ("max_denominator", max_denominator, 1),
        ("max_pairs", max_pairs, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise SpecProofError(f"{name} must be an integer >= {least}, got {value!r}")
    make = _row_maker(array, dtype)
    pairs = 0
    raised: list[LossyInput] = []

    def none_lossy() -> LossyInput | None:
        if not raised:
            return None
        import dataclasses

        return dataclasses.replace(raised[0], skipped=tuple((r.p, r.q, r.raised) for r in raised))

    for v in range(2, max_vocab + 1):
        for a, b in _small_pairs(v, max_denominator):
            if pairs >= max_pairs:
                return none_lossy()
            pairs += 1
            p_t, q_t = make([a] * (gamma + 1) if gamma else a), make([b] * gamma if gamma else b)
            try:
                result = compare(
                    sampler,
                    p_t,
                    q_t,
                    gamma=gamma,
                    numpy_rng=numpy_rng,
                    max_runs=max_runs,
                    reference=reference,
                    equivalents=False,
                )
            except InvalidDistribution:
                continue  # a row that the dtype rounds to no distribution (all zero)
            except SamplerRaised as exc:  # a fault too, but not a law: search on, and say so
                raised.append(LossyInput(a, b, None, pairs, str(exc)))
                if progress is not None:
                    progress(1)
                continue
            if progress is not None:
                progress(1)
            if result.verdict == "lossy" and not result.degenerate:
                return LossyInput(a, b, result, pairs, skipped=tuple((r.p, r.q, r.raised) for r in raised))
    return none_lossy()


def _row_maker(array: str, dtype: str) -> Callable[[Any], Any]:
    """Rows of rationals to tensors or arrays of ``dtype`` (each entry rounded to nearest)."""
    if array == "torch":
        import torch

        kinds = {
            "float16": torch.float16,
            "bfloat16": torch.bfloat16,
            "float32": torch.float32,
            "float64": torch.float64,
        }
        if dtype not in kinds:
            raise SpecProofError(f"dtype {dtype!r} is not one of {', '.join(kinds)}")
        return lambda rows: torch.tensor(_floats(rows), dtype=torch.float64).to(kinds[dtype])
    if array == "numpy":
        import numpy as np

        np_kinds = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
        if dtype not in np_kinds:
            raise SpecProofError(f"dtype {dtype!r} is not one of {', '.join(np_kinds)} for NumPy arrays")
        return lambda rows: np.asarray(_floats(rows), dtype=np.float64).astype(np_kinds[dtype])
    raise SpecProofError(f"array is {array!r}, not 'torch' or 'numpy'")


def _floats(rows: Any) -> Any:
    """Rationals to the nearest float64; rounding that once more to float32, bfloat16 or float16 is
    the nearest value of the narrower format (53 >= 2 * 24 + 2 bits: no double-rounding error)."""
    if rows and isinstance(rows[0], (list, tuple)):
        return [[float(x) for x in r] for r in rows]
    return [float(x) for x in rows]


def _statistical(sampler, target, draft, rows, key, eps, alpha, power, why: str):
    """The fallback of :func:`assert_lossless` for a sampler that cannot be traced."""
    from specproof.trace.conformance import conformance_test

    want = dict(enumerate(_row(rows, "target")))

    def sample(n: int) -> list:
        out = []
        for _ in range(n):
            x = sampler(target, draft)
            x = key(x) if key is not None else x
            out.append(int(x) if hasattr(x, "__index__") or hasattr(x, "item") else x)
        return out

    result = conformance_test(sample, want, eps=eps, alpha=alpha, power=power)
    if not result.conforms:
        raise AssertionError(
            f"the sampler is not lossless (statistical test, the sampler could not be traced: {why}): observed TV "
            f"{result.observed_tv:.4g} >= threshold {result.threshold:.4g} over N = {result.n} draws; p-value "
            f"{result.p_value:.3g}; TV upper bound {result.tv_upper_bound:.4g} at level 1 - {alpha}"
            + (f"; outputs outside the target's support: {result.outside_support}" if result.outside_support else "")
        )
    _passed.PASSED.append(
        f"passed a statistical test only (not traced: {why}): TV below eps = {eps} not excluded; "
        f"observed TV {result.observed_tv:.4g} over N = {result.n} draws"
    )
    return result


_RENAMED = {"Counterexample": ("LossyInput", "specproof.rules.audit.Counterexample is a rule's lossy pair")}

__getattr__ = renamed(__name__, _RENAMED, globals())
