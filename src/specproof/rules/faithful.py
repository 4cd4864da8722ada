"""Verdicts that separate the float floor from faults: lossless, float-faithful, or lossy.

A correct verifier written with floats is not exactly lossless: its coin is a grid, its ratio
``p/q`` is rounded, its residual is rounded. Its exact law is off from the target's law p by a
tiny TV, the *float floor*, exactly like a faulty verifier off by a tiny TV. This module names
the difference. It computes, on the same float rows the sampler was given, the exact laws of the
*float-ideal family* (:data:`FAMILY`): the textbook verifier (Leviathan et al. 2023,
Algorithm 1) written correctly in each of a stated set of arithmetics. Then

- ``lossless``: the law equals the target's law p exactly (for a block: the stream of the
  first gamma + 1 tokens has the target's joint law);
- ``float-faithful``: the law equals one member's law exactly, and no output has target
  probability 0 (nor an id outside [0, V)); its TV from p is the float floor of that member's
  arithmetic;
- ``lossy``: anything else. An output the target gives probability 0 is always a fault.

The family
==========
Every combination of:

============== ==================================================================================
rows and steps float32, float64, bfloat16, float16 (each operation IEEE-rounded, see
               :class:`~specproof.rules.policy.Arithmetic`), and exact arithmetic on the grid coin
accept test    ``u < fl(p/q)``, ``u <= fl(p/q)``, ``fl(u * q) < p``, ``fl(u * q) <= p``; and,
               in float32 and float64 only, ``log(u) < fl(log p - log q)`` and
               ``u < exp(fl(log p - log q))`` (each also with ``<=``) with PyTorch's or
               NumPy's own log and exp (their results on this machine, evaluated as data by
               :mod:`specproof.rules.libm`, not modelled; a library's members are used only
               when the sampler's process has imported it; NumPy's with the residual divided
               by its sum, as ``Generator.choice`` needs); and NumPy >= 2's ``fl32(u) < fl32(p/q)``
               and ``fl32(fl32(u) * q) < p`` on float32 rows (``Generator.random()`` is a Python
               float, rounded to float32 when it meets one: NEP 50)
coin           float32 grid on [0, 1) (``torch.rand``), float64 grid on [0, 1)
               (``Generator.random``), and both grids on (0, 1] (``1 - rand()``); the NumPy
               log-space members use the float64 grids only
residual       ``fl(max(p - q, 0))`` as weights of an exact categorical draw
               (``torch.multinomial``), or divided first by its float sum: left to right, or
               the library's own ``r.sum()`` (PyTorch's in every format, NumPy's in float32 and
               float64; evaluated as data by :mod:`specproof.rules.libm`; they differ from the
               left-to-right sum by an ulp on some rows of 5 or more entries)
============== ==================================================================================

The draft is drawn from q's float values divided by their exact sum, and so are the residual and
the bonus token (the tracer's model of ``torch.multinomial`` and ``Generator.choice``).

What the family is not: a proof that a sampler matching a member is correct code (it has the
law of correct code in that arithmetic, on these rows); an account of arithmetic outside the
table (log-space tests on log-softmax logits rather than on the probabilities, log and exp of
another library or device, fused kernels, sum orders other than these: a sampler written so is judged
``lossy`` against the nearest member, with that member's TV reported, never silently excused).
A member is added only with a test that real code computes its law.

References
----------
Leviathan, Kalman, Matias, ICML 2023, Algorithm 1 and Appendix A.1 (the textbook verifier is
lossless); IEEE Std 754-2019 (round to nearest, ties to even).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from specproof.errors import InvalidDistribution, ResidualUndefined, SpecProofError
from specproof.laws.numtext import number_text
from specproof.laws.outcome import FLOAT32 as COIN32
from specproof.laws.outcome import FLOAT32_OPEN_CLOSED, coin_model
from specproof.rules.policy import Arithmetic, Rule, UnsupportedRule

__all__ = ["Member", "FAMILY", "Judgement", "judge", "member_law", "target_law", "DegenerateRow", "degenerate"]

Prefix = tuple[int, ...]

#: Largest V**(gamma + 1) for which a block judgement lists the differing token sequences.
SEQUENCE_LIMIT = 100_000

_COINS = (COIN32, coin_model("float64"), FLOAT32_OPEN_CLOSED, coin_model("float64-(0,1]"))
_COIN_TEXT = {
    "float32": "float32 coin on [0, 1)",
    "float64": "float64 coin on [0, 1)",
    "float32-(0,1]": "float32 coin on (0, 1]",
    "float64-(0,1]": "float64 coin on (0, 1]",
}


@dataclass(frozen=True)
class Member:
    """One correct float implementation of the textbook verifier.

    Attributes
    ----------
    rule : Rule
        The textbook rule with this member's comparison, coin and arithmetic.
    name : str
        The member in words, e.g. ``"u < fl32(p/q), residual fl32(max(p - q, 0)) as weights,
        float32 coin on [0, 1)"``.
    """

    rule: Rule
    name: str


def _members() -> tuple[Member, ...]:
    out = []
    for dtype in ("float32", "float64", "bfloat16", "float16"):
        for test, cmp, coin, norm in itertools.product(("ratio", "product"), ("<", "<="), _COINS, ("none", "divide")):
            arith = Arithmetic(dtype, test, norm)
            rule = Rule(comparison=cmp, coin=coin, arithmetic=arith)
            out.append(Member(rule, f"{arith.describe(cmp)}, {_COIN_TEXT[coin.name]}"))
    # the residual divided by a library's own sum (r / r.sum()): PyTorch's in every format, NumPy's in float64
    # (its float32 members are below, with NEP 50's coin)
    for library, dtypes, coins in (
        ("torch", ("float32", "float64", "bfloat16", "float16"), _COINS),
        ("numpy", ("float64",), _COINS[1::2]),
    ):
        for dtype, test, cmp, coin in itertools.product(dtypes, ("ratio", "product"), ("<", "<="), coins):
            arith = Arithmetic(dtype, test, "divide", library)
            out.append(
                Member(
                    Rule(comparison=cmp, coin=coin, arithmetic=arith), f"{arith.describe(cmp)}, {_COIN_TEXT[coin.name]}"
                )
            )
    # NumPy: Generator.random's float64 grids, and the residual divided by its sum (Generator.choice needs p
    # summing to 1)
    for library, coins, norms in (("torch", _COINS, ("none", "divide")), ("numpy", _COINS[1::2], ("divide",))):
        for dtype, test, cmp, coin, norm in itertools.product(
            ("float32", "float64"), ("log", "exp"), ("<", "<="), coins, norms
        ):
            arith = Arithmetic(dtype, test, norm, library)
            rule = Rule(comparison=cmp, coin=coin, arithmetic=arith)
            out.append(Member(rule, f"{arith.describe(cmp)}, {_COIN_TEXT[coin.name]}"))
    # NumPy >= 2 on float32 rows with Generator.random()'s Python-float coin: the coin is rounded to float32 (NEP 50)
    for test, cmp, coin in itertools.product(("ratio", "product"), ("<", "<="), _COINS[1::2]):
        arith = Arithmetic("float32", test, "divide", "numpy")
        out.append(
            Member(Rule(comparison=cmp, coin=coin, arithmetic=arith), f"{arith.describe(cmp)}, {_COIN_TEXT[coin.name]}")
        )
    for cmp, coin in itertools.product(("<", "<="), _COINS):
        out.append(
            Member(
                Rule(comparison=cmp, coin=coin), f"u {cmp} p/q exact, residual (p - q)+ exact, {_COIN_TEXT[coin.name]}"
            )
        )
    return tuple(out)


#: The float-ideal family, in the order a match is named (float32 first).
FAMILY: tuple[Member, ...] = _members()


def _model(rows: Any) -> Callable[[Prefix], Any]:
    """``target(prefix)``: a callable as given; one row for every prefix; or a stack of rows, row i
    after a prefix of i tokens."""
    if callable(rows):

        def call(prefix: Prefix) -> Any:
            try:
                return rows(prefix)
            except SpecProofError:
                raise
            except Exception as exc:  # noqa: BLE001 - the user's callable failed: name it, no traceback
                raise SpecProofError(
                    f"the row callable raised {type(exc).__name__} after the prefix {prefix}: {exc}"
                ) from None

        return call
    data = rows.tolist() if hasattr(rows, "tolist") else list(rows)
    if data and isinstance(data[0], (list, tuple)):
        return lambda prefix: data[min(len(prefix), len(data) - 1)]
    return lambda prefix: data


def _exact_row(values: Any, what: str) -> tuple[Fraction, ...]:
    """The row's entries at their exact values (floats, tensors, arrays or rationals)."""
    from specproof.rules.audit import _float_row

    return _float_row(values, what)[0]


class DegenerateRow(InvalidDistribution):
    """A target row that is no distribution at all (NaN, +/-inf, all zero): it has no valid law.

    Attributes
    ----------
    prefix : tuple of int
        The prefix after which the row was read.
    why : str
        What is wrong with it, e.g. ``"all 4 entries are NaN"``.
    """

    def __init__(self, prefix: Prefix, why: str):
        self.prefix, self.why = prefix, why
        where = f"the target row after {prefix}" if prefix else "the target row"
        super().__init__(f"{where} has no valid law: {why}")


def degenerate(values: Any) -> str | None:
    """Why a row is degenerate (a NaN or an infinite entry, or every entry zero), or None.

    Rows that are not sequences of numbers, and finite rows with negative entries (logits given
    as probabilities, say), are not degenerate: they stay refused as usage errors.

    Examples
    --------
    >>> degenerate([float("nan")] * 3), degenerate([0.0, 0.0]), degenerate([0.5, 0.5])
    ('all 3 entries are NaN', 'all 2 entries are zero', None)
    """
    if hasattr(values, "detach"):
        values = values.detach().cpu().double()
    if hasattr(values, "tolist"):
        values = values.tolist()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        return None
    try:
        xs = [float(x) for x in values]
    except (TypeError, ValueError, OverflowError):
        return None
    if not xs:
        return None
    n = len(xs)
    kinds = (
        ("NaN", [i for i, x in enumerate(xs) if math.isnan(x)]),
        ("+inf", [i for i, x in enumerate(xs) if x == math.inf]),
        ("-inf", [i for i, x in enumerate(xs) if x == -math.inf]),
    )
    parts = []
    for name, ids in kinds:
        if len(ids) == n:
            return f"all {n} entries are {name}"
        if ids:
            shown = ", ".join(map(str, ids[:4])) + (", ..." if len(ids) > 4 else "")
            parts.append(f"{name} at id{'s' if len(ids) > 1 else ''} {shown}")
    if parts:
        return "; ".join(parts)
    if all(x == 0 for x in xs):
        return f"all {n} entries are zero"
    return None


def target_law(target: Any, prefix: Prefix = ()) -> tuple[Fraction, ...]:
    """The target's law after ``prefix``: its row's exact values divided by their exact sum.

    Raises
    ------
    DegenerateRow
        The row has a NaN or an infinite entry, or is all zero.
    InvalidDistribution
        Any other bad row (negative, empty, not numbers).
    """
    values = _model(target)(prefix)
    why = degenerate(values)
    if why is not None:
        raise DegenerateRow(prefix, why)
    row = _exact_row(values, f"target after {prefix}" if prefix else "target")
    total = sum(row, Fraction(0))
    return tuple(x / total for x in row)


#: Member laws already computed, by (rule, the rows' exact key, gamma): a judge compares a law with each of the
#: family's members, and a process that judges the same rows again (``compare`` then ``assert_lossless``, the floor's
#: re-trace, a test suite) reads them here. Only rows given as values (tensors, arrays, lists; not callables) of at
#: most ``_CACHED_ENTRIES`` entries are kept, the least recently used first out past ``_CACHE_SIZE`` laws.
_CACHE: dict[tuple, dict[Any, Fraction]] = {}
_CACHE_SIZE = 4096
_CACHED_ENTRIES = 4096


def _rows_key(rows: Any, budget: list[int]) -> Any:
    """A key equal for two row arguments exactly when their entries, types and formats are (None: not kept):
    a tensor or array by its dtype, shape and bytes; a list or tuple by each entry's type and value."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(rows, torch.Tensor):
        rows = rows.detach().cpu()
        budget[0] -= rows.numel()
        if budget[0] < 0 or rows.is_complex():
            return None
        return (
            "tensor",
            str(rows.dtype),
            tuple(rows.shape),
            rows.contiguous().view(-1).view(torch.uint8).numpy().tobytes(),
        )
    np = sys.modules.get("numpy")
    if np is not None and isinstance(rows, np.ndarray):
        budget[0] -= rows.size
        if budget[0] < 0 or rows.dtype.kind not in "biuf":
            return None
        return ("ndarray", rows.dtype.str, rows.shape, np.ascontiguousarray(rows).tobytes())
    if isinstance(rows, (list, tuple)):
        out = []
        for x in rows:
            if isinstance(x, (list, tuple)) or (torch is not None and isinstance(x, torch.Tensor)):
                k = _rows_key(x, budget)
            elif type(x) in (int, float, bool, str, Fraction):
                budget[0] -= 1
                k = (type(x).__name__, x)
            else:
                return None
            if k is None or budget[0] < 0:
                return None
            out.append(k)
        return (type(rows).__name__, tuple(out))
    return None


def member_law(member: Member, target: Any, draft: Any, gamma: int | None = None) -> dict[Any, Fraction]:
    """The exact law of ``member`` on these rows: over token ids (one position, ``gamma`` None)
    or over emitted blocks (tuples of 1 to gamma + 1 ids). Laws on rows given as values are kept
    (:data:`_CACHE`) and read again for the same rule, rows and gamma.

    Parameters
    ----------
    member : Member
    target, draft : row, stack of rows, or callable ``prefix -> row``
        Float or exact entries at their exact values; see :func:`judge`.
    gamma : int or None

    Returns
    -------
    dict
        Output -> exact mass (summing to 1).

    Raises
    ------
    ResidualUndefined
        The member rejects with an empty residual (a coin on (0, 1] at ``p == q``).
    """
    budget = [_CACHED_ENTRIES]
    try:
        kt = _rows_key(target, budget)
        kd = None if kt is None else _rows_key(draft, budget)
    except Exception:  # a tensor whose bytes cannot be read as such (sparse, quantized, on a device): not kept
        kt = kd = None
    key = None if kd is None else (member.rule, kt, kd, gamma)
    if key is not None and key in _CACHE:
        law = _CACHE.pop(key)
        _CACHE[key] = law  # the most recently used last
        return dict(law)
    law = _member_law(member, target, draft, gamma)
    if key is not None:
        _CACHE[key] = dict(law)
        if len(_CACHE) > _CACHE_SIZE:
            del _CACHE[next(iter(_CACHE))]
    return law


def _member_law(member: Member, target: Any, draft: Any, gamma: int | None) -> dict[Any, Fraction]:
    from specproof.rules.audit import block_law, position_law

    rule = member.rule
    tmodel, dmodel = _model(target), _model(draft)
    if rule.arithmetic.is_exact:  # exact arithmetic reads the laws (the rows divided by their sums)
        tm, dm = tmodel, dmodel
        tmodel = lambda s: target_law(tm, s)  # noqa: E731
        dmodel = lambda s: target_law(dm, s)  # noqa: E731
    if gamma is None:
        law = position_law(tmodel(()), dmodel(()), rule)
        out: dict[Any, Fraction] = {i: m for i, m in enumerate(law.law) if m}
        out.update(law.out_of_range)
        return out
    return {b: m for b, m in block_law(tmodel, dmodel, gamma, rule).emitted.items() if m}


@dataclass(frozen=True)
class Judgement:
    """The verdict on a law, against the target and the float-ideal family.

    Attributes
    ----------
    verdict : {"lossless", "float-faithful", "lossy"}
    tv : Fraction
        Exact TV from the target's law (a block: the stream's first gamma + 1 tokens against the
        target's joint law; an invalid output counts fully).
    tv_from_float_ideal : Fraction
        Exact TV from the nearest member's law (0 when lossless or float-faithful; for a
        lossless law, the TV to the nearest member is not needed and is 0 by definition).
    arithmetic : str
        The member matched, or the nearest one (``"exact (the target's law)"`` when lossless).
    member : Member or None
        The matched or nearest member.
    reference : dict
        The target's law (one position), or the target's joint law over gamma + 1 tokens when it
        was enumerated (else empty).
    differing : list of (output, traced mass, expected mass)
        Outputs whose mass differs from the reference (one position: tokens; a block: sequences
        of gamma + 1 tokens of the stream), largest difference first.
    member_differing : list of (output, traced mass, member's mass)
        Outputs whose mass differs from the nearest member's law (blocks, for a block sampler).
    outside_support : Fraction
        Mass on outputs the target gives probability 0, or ids outside [0, V).
    caveats : tuple of str
        What the models behind the verdict leave out.
    equivalents : int
        How many other members give the same law on these rows (one position; a block names its
        first match only): the code's arithmetic is one of them, not necessarily the one named.
    degenerate : bool
        A target row the judgement needs is degenerate (NaN, inf, all zero): no law is correct
        there, every emitted output is a fault.
    """

    verdict: str
    tv: Fraction
    tv_from_float_ideal: Fraction
    arithmetic: str
    member: Member | None
    reference: dict
    differing: list
    member_differing: list
    outside_support: Fraction
    caveats: tuple[str, ...] = field(default=())
    equivalents: int = 0
    degenerate: bool = False


def _difference(got: Mapping, want: Mapping) -> tuple[Fraction, list]:
    keys = list(dict.fromkeys([*want, *got]))
    diff = [(k, got.get(k, Fraction(0)), want.get(k, Fraction(0))) for k in keys]
    diff = [d for d in diff if d[1] != d[2]]
    diff.sort(key=lambda d: -abs(d[1] - d[2]))
    return sum((abs(a - b) for _, a, b in diff), Fraction(0)) / 2, diff


@dataclass(frozen=True)
class _NotAnId:
    """An output that is not an integer token id (a float, a bool, a string ...): always a fault, and
    never equal to the id it may compare equal to (1.0 == 1 in Python)."""

    value: Any

    def __str__(self) -> str:
        return f"{self.value!r} (not an integer id)"


def _as_id(t: Any) -> Any:
    return t if isinstance(t, int) and not isinstance(t, bool) else _NotAnId(t)


def _token(out: Any) -> Any:
    """A one-element output (torch.multinomial's shape [1]) is its token."""
    return _as_id(out[0] if isinstance(out, tuple) and len(out) == 1 else out)


def _is_id(t: Any, v: int) -> bool:
    return isinstance(t, int) and not isinstance(t, bool) and 0 <= t < v


def _outside_support(
    law: Mapping, tmodel: Callable, gamma: int | None, v: int, tlaw: Callable[[Prefix], tuple] | None = None
) -> Fraction:
    tlaw = tlaw or (lambda s: target_law(tmodel, s))
    bad = Fraction(0)
    for out, m in law.items():
        ids = (out,) if gamma is None else (out if isinstance(out, tuple) else (out,))
        if gamma is not None and not 1 <= len(ids) <= gamma + 1:
            bad += m
            continue
        for i, t in enumerate(ids):
            if not _is_id(t, v) or tlaw(ids[:i])[t] == 0:
                bad += m
                break
    return bad


def _stream(
    law: Mapping,
    tmodel: Callable,
    gamma: int,
    v: int,
    tlaw: Callable[[Prefix], tuple] | None = None,
    *,
    stream_only: bool = False,
) -> tuple[Fraction | None, dict, dict]:
    """TV of the stream from the target's joint law, and both laws over gamma + 1 tokens when
    V**(gamma + 1) is at most :data:`SEQUENCE_LIMIT` (else two empty dicts). ``stream_only``: the law's
    stream alone, ``(None, stream, {})`` (a member's, compared with the traced law's: the TV from the
    target and the target's joint law are the same for every member)."""
    from specproof.laws.block import extend_by_target, stream_tv, target_joint

    tlaw = tlaw or (lambda s: target_law(tmodel, s))
    valid = {
        b: m
        for b, m in law.items()
        if isinstance(b, tuple) and 1 <= len(b) <= gamma + 1 and all(_is_id(t, v) for t in b)
    }
    invalid = sum((m for b, m in law.items() if b not in valid), Fraction(0))
    tv = None if stream_only else (2 * stream_tv(valid, tlaw, gamma) + invalid) / 2
    if v ** (gamma + 1) > SEQUENCE_LIMIT:
        return tv, {}, {}

    def target(prefix: Prefix) -> tuple[Fraction, ...]:
        return tlaw(prefix)

    mine = extend_by_target(valid, target, gamma + 1)
    for b, m in law.items():
        if b not in valid:
            mine[b] = mine.get(b, Fraction(0)) + m
    return tv, mine, ({} if stream_only else target_joint(target, gamma + 1))


def _row_dtype(rows: Any) -> str | None:
    """The float format of a tensor or array of rows (``"float32"`` ...), else None."""
    name = str(getattr(rows, "dtype", "")).replace("torch.", "")
    return name if name in ("float16", "bfloat16", "float32", "float64") else None


def judge(
    law: Mapping[Any, Fraction],
    target: Any,
    draft: Any,
    *,
    gamma: int | None = None,
    family: Sequence[Member] = FAMILY,
    count_equivalents: bool = True,
    gross: Fraction | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> Judgement:
    """Judge an exact law (a traced sampler's) against the target and the float-ideal family.

    Parameters
    ----------
    law : mapping of output -> Fraction
        One position: token id -> mass (a one-element tuple counts as its id). A block: tuple of
        1 to gamma + 1 ids -> mass.
    target : row [V], stack [gamma + 1, V], or callable ``prefix -> row``
        The rows the sampler was given: float entries (tensors, arrays, lists) at their exact
        values, or exact rationals. Row i of a stack is read after a prefix of i tokens; a
        callable gives the row after each drafted prefix (a context-dependent target), so a
        position-offset fault is visible. The target's law is each row divided by its exact sum.
    draft : the same forms, [gamma, V] for a stack; or None
        None: the family is not computed (a law off from the target is then ``lossy``).
    gamma : int or None
        None: one position. Else the number of drafts of a block.
    family : sequence of Member, optional
        Default :data:`FAMILY`.
    count_equivalents : bool, optional
        One position: after a match, also count the other members with the same law (default;
        False stops at the first match, as a block always does).
    gross : Fraction, optional
        A TV from the target above which no member is sought (a gross fault: no correct float code is
        that far from the target): the verdict is ``lossy``, ``tv_from_float_ideal`` is the TV from the
        target, and ``arithmetic`` says the scan was skipped. None (default): the family is always scanned.
    progress : callable, optional
        Called as ``progress(done, total)`` after each member's law is computed (``total`` counts a
        block's shorter depths too); the scan can take minutes on a block.

    Returns
    -------
    Judgement

    Raises
    ------
    InvalidDistribution
        A bad row (negative and finite, empty, not numbers), rows of different lengths. A
        *degenerate* target row (a NaN or infinite entry, or all zero, see :func:`degenerate`) is
        not refused: it has no valid law, so the verdict is ``lossy`` with TV 1, every emitted
        output counted as a fault (``outside_support`` is all the mass) and listed in
        ``differing``; ``arithmetic`` says which row and why. A degenerate draft row leaves the
        family undefined: the law is judged against the target alone.

    Notes
    -----
    ``float-faithful`` needs an exact match: a member's law equals the traced law as Fractions.
    Members that reject with an empty residual (coins on (0, 1] when ``p == q``) are skipped on
    those rows. For one position the family's laws cost about ``|FAMILY| x V`` threshold
    roundings (the product test finds each threshold from its exact estimate in a few roundings,
    shared by the members that differ only in their residual).

    Examples
    --------
    >>> half = [0.5, 0.5]
    >>> judge({0: Fraction(1, 2), 1: Fraction(1, 2)}, half, [0.25, 0.75]).verdict
    'lossless'
    """
    if gamma is not None and (isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1):
        raise InvalidDistribution(f"gamma must be an integer >= 1 or None, got {gamma!r}")
    try:
        return _judge(law, target, draft, gamma, family, count_equivalents, gross, progress)
    except DegenerateRow as exc:
        return _no_valid_law(law, gamma, exc)


def _no_valid_law(law: Mapping[Any, Fraction], gamma: int | None, exc: DegenerateRow) -> Judgement:
    """The judgement when a target row the judgement needs is degenerate: no law is correct there,
    so every emitted output is a fault (TV 1, all mass outside the support), and the law is kept."""
    got: dict[Any, Fraction] = {}
    for out, m in law.items():
        o = _token(out) if gamma is None else (out if isinstance(out, tuple) else (out,))
        got[o] = got.get(o, Fraction(0)) + m
    differing = sorted(((o, m, Fraction(0)) for o, m in got.items() if m), key=lambda d: -d[1])
    where = f"the target row after {exc.prefix}" if exc.prefix else "the target row"
    return Judgement(
        "lossy",
        Fraction(1),
        Fraction(1),
        f"no valid law: {where} is degenerate ({exc.why}); every emitted output is a fault",
        None,
        {},
        differing,
        [],
        sum(got.values(), Fraction(0)),
        ("the TV of 1 is against no law at all: the verifier should refuse such a row, not emit",),
        degenerate=True,
    )


class _FamilyUndefined(Exception):
    """A member's law raised InvalidDistribution: the float-ideal family is undefined on this draft."""

    def __init__(self, exc: InvalidDistribution) -> None:
        super().__init__(exc)
        self.exc = exc


def _arithmetic_caveats(family: Sequence[Member], dtype: str | None, v: int) -> list[str]:
    """The caveats of the arithmetic modelled, in the rows' own format (all formats for rational rows); a library's
    only when its member is the one named."""
    return sorted(
        {
            c
            for m in family
            if m.rule.arithmetic.library is None and (dtype is None or m.rule.arithmetic.dtype == dtype)
            for c in m.rule.arithmetic.caveats(v)
        }
    )


def _not_compared(
    tv: Fraction, why: str, reference: dict, differing: list, outside: Fraction, caveats: list[str]
) -> Judgement:
    """The lossy judgement of a law not compared with the float-ideal family (its TV from the target stands for both)."""
    return Judgement(
        "lossy",
        tv,
        tv,
        f"not compared: {why}",
        None,
        reference,
        differing,
        [],
        outside,
        tuple(caveats),
    )


def _nearest_member(
    ordered: Sequence[Member],
    own: set[int],
    depths: Sequence[int | None],
    law_of: Callable[[Member, int | None], Mapping],
    distance: Callable[[Mapping, int | None], tuple[Fraction, list]],
    first_match: bool,
    progress: Callable[[int, int], Any] | None,
) -> tuple[tuple[Fraction, Member, list, int | None] | None, list[Member]]:
    """The member nearest the traced law, as (distance, member, the outputs that differ, the member's gamma), and
    the members that match it exactly; the depths are tried in order until one has a match, and the nearest is
    sought among the members in the rows' own format (``own``). Raises _FamilyUndefined when a member's law does."""
    best: tuple[Fraction, Member, list, int | None] | None = None
    matches: list[Member] = []
    done, total = 0, len(depths) * len(ordered)
    for depth in depths:
        for member in ordered:
            if progress is not None:
                progress(done, total)
            done += 1
            try:
                theirs = law_of(member, depth)
            except (ResidualUndefined, UnsupportedRule):
                continue
            except InvalidDistribution as exc:  # a degenerate draft row: no correct float code is defined on it
                raise _FamilyUndefined(exc) from exc
            d_tv, d_diff = distance(theirs, depth)
            if d_tv == 0:
                matches.append(member)
                if best is None or best[0] != 0:
                    best = (d_tv, member, d_diff, depth)
                if first_match:
                    break  # a block's first match is named (the others are not searched)
            elif id(member) in own and (best is None or d_tv < best[0]):
                best = (d_tv, member, d_diff, depth)
        if matches:
            break
    return best, matches


def _against_target(
    law: Mapping[Any, Fraction],
    gamma: int | None,
    tmodel: Callable[[Prefix], Any],
    v: int,
    tlaw: Callable[[Prefix], tuple[Fraction, ...]],
) -> tuple[dict, dict, dict, Fraction, list]:
    """The traced law against the target's: the law over ids (a block: over tuples of ids), a block's stream over
    gamma + 1 tokens (else empty), the reference (the target's law, or its joint law of the stream when enumerated),
    the TV from it and the outputs that differ."""
    mine: dict = {}  # a block's stream over gamma + 1 tokens
    if gamma is None:
        got: dict[Any, Fraction] = {}
        for out, m in law.items():
            got[_token(out)] = got.get(_token(out), Fraction(0)) + m
        reference = {i: x for i, x in enumerate(tlaw(())) if x}
        tv, differing = _difference(got, reference)
    else:
        got = {tuple(map(_as_id, b if isinstance(b, tuple) else (b,))): m for b, m in law.items()}
        block_tv, mine, reference = _stream(got, tmodel, gamma, v, tlaw)
        assert block_tv is not None  # None only for a stream alone (stream_only)
        tv = block_tv
        differing = _difference(mine, reference)[1] if reference else []
    return got, mine, reference, tv, differing


def _judge(
    law: Mapping[Any, Fraction],
    target: Any,
    draft: Any,
    gamma: int | None,
    family: Sequence[Member],
    count_equivalents: bool,
    gross: Fraction | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> Judgement:
    from specproof.rules import libm

    # a library's log and exp are evaluated only if the sampler's process imported it (a NumPy-only
    # sampler does not import torch, and cannot have used its log)
    family = [m for m in family if m.rule.arithmetic.library is None or libm.loaded(m.rule.arithmetic.library)]
    tmodel = _model(target)
    laws: dict[Prefix, tuple[Fraction, ...]] = {}

    def tlaw(prefix: Prefix) -> tuple[Fraction, ...]:  # the target's law after a prefix, read once
        if prefix not in laws:
            laws[prefix] = target_law(tmodel, prefix)
        return laws[prefix]

    v = len(tlaw(()))
    got, mine, reference, tv, differing = _against_target(law, gamma, tmodel, v, tlaw)
    outside = _outside_support(got, tmodel, gamma, v, tlaw)
    dtype = _row_dtype(target)
    caveats = _arithmetic_caveats(family, dtype, v)
    if tv == 0:
        return Judgement(
            "lossless",
            tv,
            Fraction(0),
            "exact (the target's law)",
            None,
            reference,
            differing,
            [],
            outside,
            tuple(caveats),
        )
    if draft is None:
        why = "no draft rows were given, so the float-ideal family could not be computed"
        return _not_compared(tv, why, reference, differing, outside, caveats)
    undefined = "the float-ideal family is undefined on this draft ({})"
    if gross is not None and tv > gross:
        try:  # one member's law: a degenerate draft row leaves the family undefined, and that is said instead
            member_law(family[0], target, draft, gamma)
        except (ResidualUndefined, UnsupportedRule):
            pass
        except InvalidDistribution as exc:
            return _not_compared(tv, undefined.format(exc), reference, differing, outside, caveats)
        why = (
            f"the TV from the target, {number_text(tv)}, is above {number_text(gross)}, farther than any correct "
            "float code is (a gross fault), so no nearest member of the float-ideal family was sought"
        )
        return _not_compared(tv, why, reference, differing, outside, caveats)
    # members in the rows' own format are named first, and nearest among them
    ordered = sorted(family, key=lambda m: m.rule.arithmetic.dtype != dtype) if dtype else list(family)
    own = {id(m) for m in ordered if dtype is None or m.rule.arithmetic.dtype in (dtype, "exact")}
    streams = gamma is not None and bool(reference)
    if gamma is not None and not streams:
        caveats.append(
            f"V^(gamma + 1) = {v ** (gamma + 1)} > {SEQUENCE_LIMIT}: members compared by their block laws at "
            f"gamma = {gamma} only, not by their streams"
        )

    def distance(theirs: Mapping, depth: int | None) -> tuple[Fraction, list]:  # from a member's law
        if streams:  # a block sampler is judged by its stream: equal streams, however the blocks are cut
            assert gamma is not None  # streams only for a block sampler
            d_tv, d_diff = _difference(mine, _stream(theirs, tmodel, gamma, v, tlaw, stream_only=True)[1])
            if depth == gamma:
                d_diff = _difference(got, theirs)[1]
            return d_tv, d_diff
        return _difference(got, theirs)

    depths = [None] if gamma is None else (list(range(gamma, 0, -1)) if streams else [gamma])
    try:
        best, matches = _nearest_member(
            ordered,
            own,
            depths,
            lambda member, depth: member_law(member, target, draft, depth),
            distance,
            gamma is not None or not count_equivalents,
            progress,
        )
    except _FamilyUndefined as exc:
        return _not_compared(tv, undefined.format(exc.exc), reference, differing, outside, caveats)
    if best is None:
        raise SpecProofError("no member of the float-ideal family is defined on these rows")
    d_tv, member, d_diff, depth = best
    name = member.name
    if gamma is not None and depth != gamma:
        assert depth is not None  # a block sampler's members are compared at depths gamma, ..., 1
        name += f" (verifying {depth} draft{'s' if depth > 1 else ''} of the {gamma})"
    faithful = d_tv == 0 and outside == 0
    caveats += [c for c in member.rule.arithmetic.caveats(v, member.rule.coin) if c not in caveats]
    return Judgement(
        "float-faithful" if faithful else "lossy",
        tv,
        d_tv,
        name,
        member,
        reference,
        differing,
        d_diff,
        outside,
        tuple(caveats),
        max(0, len(matches) - 1),
    )
