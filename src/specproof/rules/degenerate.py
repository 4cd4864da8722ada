"""What a rule emits on a degenerate row (a NaN or infinite entry, or all zero), where its float
arithmetic determines it.

A degenerate row has no valid law, so every token a verifier emits on it is a fault; a correct
verifier refuses it. Engines do not always: vLLM #53029's all-NaN target row emitted id 8191. This
module gives the number: :func:`degenerate_law` follows the rule's steps on the row as the code holds
it, with IEEE semantics for NaN and infinities, and splits the outcome three ways:

================ ==================================================================================
``law``          the mass on each emitted id: the drafted token where the accept test passes, the
                 residual's token, or the fallback's
``raised``       the mass on which the code raises instead: a draw from weights with a NaN, an
                 infinite or a negative entry, or with mass 0, raises (``torch.multinomial`` and
                 NumPy's ``Generator.choice`` do), as a rejection with an empty residual under the
                 fallback ``"error"`` does
``undetermined`` the mass on which the rule does not say what code does (an argmax over NaN is the
                 library's own), each with its reason in ``notes``
================ ==================================================================================

The IEEE semantics used (IEEE Std 754-2019, Sections 6.2 and 7.2): a comparison with NaN is false;
``NaN`` propagates through ``-``, ``/`` and ``max(., 0)`` (``torch.clamp`` and ``np.maximum``
propagate it); ``x / 0`` is ``+inf`` for ``x > 0`` and NaN for ``x = 0``; ``inf - inf`` and
``inf / inf`` are NaN. The accept test ``u < t`` with ``t = +inf`` passes every coin, with ``t`` NaN
or ``-inf`` none; the same holds for the product, log and exp forms (``log u < log p - log q`` with
``p = +inf`` is ``log u < inf``). A rule's fallback fires when the residual's weights are not
positive in sum: a NaN sum fires it, as a guard written ``if not r.sum() > 0`` does (code written
``if r.sum() == 0`` draws from the NaN weights and raises instead; trace it to tell).

Not modelled here (reported as not modelled, with why): exact arithmetic on NaN or infinite entries
(rationals have none), processing steps, residual draws that reuse the coin or the race, greedy
acceptance and argmax drafts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.errors import InvalidDistribution
from specproof.laws.outcome import Bound, Coin, Rows
from specproof.rules.policy import STANDARD, Rule

__all__ = ["DegenerateLaw", "degenerate_law"]

Entry = "Fraction | float"  # a finite exact value, or +-inf or NaN (a float)

_NAN_DRAW = (
    "a draw from weights with a NaN, an infinite or a negative entry, or with mass 0, raises "
    "(torch.multinomial and NumPy's Generator.choice do)"
)


@dataclass(frozen=True)
class DegenerateLaw:
    """The outcome of one verification position on rows that may be degenerate.

    Attributes
    ----------
    modelled : bool
        False when the rule's outcome on these rows is not modelled at all (``notes`` says why);
        ``law``, ``raised`` and ``undetermined`` are then empty and 0.
    law : dict of int -> Fraction
        Mass on each emitted id (``raised + undetermined + sum(law) == 1`` when modelled).
    raised : Fraction
        Probability that the code raises instead of emitting a token.
    undetermined : Fraction
        Probability of outcomes the rule does not determine.
    notes : tuple of str
        What raises, what is undetermined and why, in words.
    target_valid : bool
        True iff the target row is a distribution (then ``tv`` is defined).
    tv : Fraction or None
        With a valid target and nothing undetermined: the exact TV between the emitted law and the
        target's law, a raise counting as mass off the target (it emits nothing).
    outside_support : Fraction
        Mass emitted on ids outside [0, V) or outside the target's support (every emitted id when
        the target row is degenerate: it has no support).
    """

    modelled: bool
    law: dict[int, Fraction]
    raised: Fraction
    undetermined: Fraction
    notes: tuple[str, ...]
    target_valid: bool
    tv: Fraction | None
    outside_support: Fraction = Fraction(0)


def _nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _finite(v) -> bool:
    return not isinstance(v, float)


def _entries(values: Any, name: str) -> list:
    """The row's entries as the code holds them: Fractions, or NaN / +-inf as floats."""
    from specproof.rules.audit import row_entries

    out = []
    for i, v in enumerate(row_entries(values, name)):
        if _finite(v) and v < 0:
            raise InvalidDistribution(f"{name}[{i}] is {v}, negative: not a probability row")
        out.append(v)
    if not out:
        raise InvalidDistribution(f"{name} is empty")
    return out


def _draw(row: Sequence) -> tuple[Fraction, ...] | None:
    """The law of a draw from the weights ``row`` (their exact values normalized), or None when the
    library's draw raises on them."""
    if any(not _finite(x) or x < 0 for x in row):
        return None
    total = sum(row, Fraction(0))
    return None if total == 0 else tuple(x / total for x in row)


def _sub(a, b):
    """IEEE ``a - b`` with NaN and infinities (a finite difference is rounded by the caller's format)."""
    if _nan(a) or _nan(b):
        return math.nan
    if not _finite(a) or not _finite(b):
        return float(a) - float(b)  # inf - inf is NaN, inf - x is inf, x - inf is -inf
    return a - b


def _accept(a, b, rule: Rule) -> Fraction:
    """P(the accept test passes) for target entry ``a`` and draft entry ``b`` at the drafted token."""
    strict = rule.comparison == "<"
    coin = rule.coin
    if _nan(a) or _nan(b):
        return Fraction(0)
    product = rule.arithmetic.test == "product" and not rule.arithmetic.is_exact
    if product:  # fl(u * b) cmp a
        if b == math.inf:  # u = 0 gives 0 * inf = NaN; u > 0 gives inf, which passes only inf <= inf
            return coin.interval((Fraction(0), True), None) if (a == math.inf and not strict) else Fraction(0)
        if not _finite(a):
            return Fraction(a == math.inf)
    else:  # the ratio t = a / b, and the log and exp forms, which agree with it on NaN and infinities
        if b == 0:
            return Fraction(a > 0)  # a / 0: +inf (every coin passes) or NaN (none)
        if b == math.inf:
            return Fraction(0) if a == math.inf else coin.below(Fraction(0), strict)  # inf / inf NaN; x / inf = 0
        if not _finite(a):
            return Fraction(a == math.inf)
    from specproof.rules.audit import accept_bound

    rows = Rows(target=(a,), draft=(b,))
    source, strict_bound = accept_bound(rows, 0, rule)
    return Coin(coin, upper=Bound(source, strict_bound)).probability(rows)


def _not_modelled(why: str, target_valid: bool) -> DegenerateLaw:
    return DegenerateLaw(False, {}, Fraction(0), Fraction(0), (why,), target_valid, None)


def _unmodelled(rule: Rule, P: list, Q: list, exact: bool) -> str | None:
    """Why the rule's law on these rows (target p, draft q; rounded to its format unless the arithmetic is ``exact``)
    is not modelled, or None when it is."""
    tested = rule.acceptance == "ratio" and rule.unchecked_drafts == 0  # the only steps that compute on the rows
    if exact and tested and any(not _finite(x) for x in (*P, *Q)):
        return (
            "the rule's arithmetic is exact: a NaN or infinite entry has no rational value, so the rule "
            "does not say what code does with it; give a rule with a float arithmetic (le-float32-coin, "
            "say) or trace the code"
        )
    unmodelled = [
        name
        for name, proc in (
            ("target_processing", rule.target_processing),
            ("draft_processing", rule.draft_processing),
            ("proposal_processing", rule.proposal_processing),
            ("reference_processing", rule.reference_processing),
        )
        if proc is not None and not proc.identity
    ]
    if unmodelled:
        return f"processing steps ({', '.join(unmodelled)}) on a degenerate row are not modelled"
    if rule.acceptance == "greedy" or rule.proposal == "argmax":
        return (
            "an argmax over a row with NaN is the library's own (torch.argmax takes NaN as the largest); "
            "greedy rules on degenerate rows are not modelled"
        )
    if rule.residual_draw != "independent":
        return f"the residual draw {rule.residual_draw!r} reuses the coin or the race: not modelled on degenerate rows"
    if rule.residual == "floor" and any(not _finite(x) for x in (*P, *Q)):
        return "the floored residual is exact only"
    return None


def _residual_weights(rule: Rule, P: list, Q: list, fmt: Any) -> tuple[list, bool]:
    """The residual's weights after a rejection (the target p, the floored or the positive part of p - q, rounded to
    the format ``fmt`` when there is one), normalized as the rule's arithmetic divides; and whether its mass is
    positive (no NaN, a positive sum)."""
    if rule.residual == "target":
        weights = list(P)
    elif rule.residual == "floor":
        weights = [max(P[i] - Q[i], rule.floor) for i in range(len(P))]
    else:
        diffs = [_sub(P[i], Q[i]) for i in range(len(P))]
        if fmt is not None:
            diffs = [fmt.round(d) if _finite(d) else d for d in diffs]
        weights = [
            d if _nan(d) else (max(d, Fraction(0)) if _finite(d) else (d if d > 0 else Fraction(0))) for d in diffs
        ]
    mass_positive = all(not _nan(w) for w in weights) and sum(w if _finite(w) else 1 for w in weights) > 0
    if mass_positive and fmt is not None and rule.arithmetic.normalization == "divide" and all(map(_finite, weights)):
        from specproof.rules import libm

        # as audit's residual: the library's own sum when the rule names one
        total = libm.row_sum(rule.arithmetic.library, fmt.name, weights, fmt.accumulated_sum(weights))
        weights = [fmt.div(w, total) for w in weights]
    return weights, mass_positive


def degenerate_law(p: Any, q: Any, rule: Rule = STANDARD, *, proposal: Any = None) -> DegenerateLaw:
    """What ``rule`` emits at one position on rows that may be degenerate (NaN, +/-inf, all zero).

    Parameters
    ----------
    p, q : sequences of numbers, shape [V]
        The target's and the draft's rows as the code holds them (floats at their exact values;
        NaN and infinities allowed; negative finite entries refused).
    rule : Rule, optional
        The verifier (default the textbook rule, whose exact arithmetic models NaN and infinities
        not at all: only all-zero rows are modelled for it).
    proposal : sequence of numbers, shape [V], optional
        The law the draft token is drawn from, if not q.

    Returns
    -------
    DegenerateLaw

    Raises
    ------
    InvalidDistribution
        Rows of different lengths, an empty row, a negative or non-numeric entry.

    Notes
    -----
    See the module docstring for the IEEE semantics. The draft is drawn first: a degenerate
    proposal row raises before any test. Float rows are rounded to the rule's format (finite
    entries), as the code holds them.

    References
    ----------
    IEEE Std 754-2019, Sections 6.2 (NaN), 7.2 (invalid operation) and 5.11 (comparisons);
    vLLM issue #53029 (an all-NaN target row emitting id 8191).

    Examples
    --------
    >>> from specproof.rules.policy import named_rule
    >>> nan = float("nan")
    >>> out = degenerate_law([nan, nan], [0.5, 0.5], named_rule("le-float32-coin"))
    >>> out.law, out.raised
    ({}, Fraction(1, 1))
    >>> out = degenerate_law([0.0, 0.0], [0.5, 0.5], named_rule("le-float32-coin"))
    >>> out.law == {0: Fraction(1, 2**25), 1: Fraction(1, 2**25)}, out.raised == 1 - Fraction(1, 2**24)
    (True, True)
    """
    P, Q = _entries(p, "p"), _entries(q, "q")
    D = Q if proposal is None else _entries(proposal, "proposal")
    if not len(P) == len(Q) == len(D):
        raise InvalidDistribution(
            f"p has V={len(P)} entries but q has V={len(Q)}"
            + ("" if proposal is None else f" and the proposal V={len(D)}")
        )
    v = len(P)
    fmt = rule.arithmetic.format()
    target = _draw(P)  # the target's law: the row as given, exactly normalized (as the audit's reference)
    target_valid = target is not None
    if fmt is not None:
        P, Q, D = ([fmt.round(x) if _finite(x) else x for x in row] for row in (P, Q, D))
    why = _unmodelled(rule, P, Q, fmt is None)
    if why is not None:
        return _not_modelled(why, target_valid)

    law: dict[int, Fraction] = {}
    raised, undetermined, notes = Fraction(0), Fraction(0), []

    def emit(i: int, m: Fraction) -> None:
        if m:
            law[i] = law.get(i, Fraction(0)) + m

    def note(text: str) -> None:
        if text not in notes:
            notes.append(text)

    drafts = _draw(D)
    if drafts is None:
        note(
            f"the draft is drawn from the {'proposal' if proposal is not None else 'draft'} row, which is degenerate: "
            f"{_NAN_DRAW}"
        )
        return DegenerateLaw(
            True, {}, Fraction(1), Fraction(0), tuple(notes), target_valid, Fraction(1) if target_valid else None
        )  # nothing emitted: TV 1 from a valid target
    for x, m in enumerate(drafts):
        if not m:
            continue
        if rule.unchecked_drafts > 0 or rule.acceptance == "all":
            emit(x, m)
            continue
        if rule.acceptance == "match":  # an independent target sample, emitted either way
            p_draw = _draw(P)
            if p_draw is None:
                raised += m
                note(f"the match rule draws from the target row: {_NAN_DRAW}")
            else:
                for y, t in enumerate(p_draw):
                    emit(y, m * t)
            continue
        a = _accept(P[x], Q[x], rule)
        emit(x, m * a)
        rest = m * (1 - a)
        if not rest:
            continue
        weights, mass_positive = _residual_weights(rule, P, Q, fmt)
        if mass_positive:
            drawn = _draw(weights)
            if drawn is None:
                raised += rest
                note(f"after a rejection the residual weights have an infinite entry: {_NAN_DRAW}")
            else:
                for y, r in enumerate(drawn):
                    emit(y, rest * r)
            continue
        # the residual's mass is 0 or NaN: the rule's fallback
        fb = rule.fallback
        why = "NaN" if any(_nan(w) for w in weights) else "0"
        if fb == "error":
            raised += rest
            note(f"after a rejection the residual's mass is {why} and the fallback is 'error': {_NAN_DRAW}")
        elif fb == "target":
            p_draw = _draw(P)
            if p_draw is None:
                raised += rest
                note(f"the fallback draws from the target row: {_NAN_DRAW}")
            else:
                for y, t in enumerate(p_draw):
                    emit(y, rest * t)
        elif fb == "argmax":
            if any(not _finite(x) for x in P):
                undetermined += rest
                note(
                    "the fallback is the target's argmax, over a row with NaN or infinite entries: the library's own "
                    "(torch.argmax takes NaN as the largest), not modelled"
                )
            else:
                emit(max(range(v), key=lambda i: (P[i], -i)), rest)
        elif fb == "last":
            emit(v - 1, rest)
            note(f"after a rejection the residual's mass is {why}: the fallback emits the last id {v - 1}")
        else:
            for y in range(v):
                emit(y, rest / v)
            note(f"after a rejection the residual's mass is {why}: the fallback draws a uniform id")
    emitted = sum(law.values(), Fraction(0))
    tv, off = None, emitted
    if target is not None:  # target_valid
        off = sum((mass for i, mass in law.items() if not 0 <= i < v or target[i] == 0), Fraction(0))
        if not undetermined:
            tv = (
                sum((abs(law.get(i, Fraction(0)) - target[i]) for i in range(v)), Fraction(0))
                + raised
                + sum((mass for i, mass in law.items() if not 0 <= i < v), Fraction(0))
            ) / 2
    return DegenerateLaw(True, dict(sorted(law.items())), raised, undetermined, tuple(notes), target_valid, tv, off)
